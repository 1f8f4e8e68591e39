// CDP2 version of a parent whose thread 0 launches a child, waits for it in device code, and
// whose whole block then goes on working on the data the child produced.
//
// The part after the wait becomes a kernel with the parent's own grid shape, launched once into
// cudaStreamTailLaunch: it starts when every block of the parent and every child have finished.
#include "launch_check.cuh"

#include <cuda_runtime.h>

namespace migration::parent_child {

/// Elements per block of the parent; the parent runs with kSlice threads per block.
constexpr unsigned kSlice = 32;

/// The child: one block of kSlice threads prepares one slice.
__global__ void child_kernel(float* slice) { slice[threadIdx.x] = static_cast<float>(threadIdx.x); }

// [cdp2]
/// The parent's work after the wait ("operate on data"), one block per block of the parent.
/// State a parent thread kept in registers across the wait must now travel in global memory
/// or in the parameters: this is a new grid.
__global__ void parent_after_child(float* data) {
  float* slice = data + blockIdx.x * kSlice;
  const unsigned mirror = kSlice - 1 - threadIdx.x;
  const float own = slice[threadIdx.x] + slice[mirror];  // reads what the child wrote
  __syncthreads();  // every read is done before any thread overwrites its element
  slice[threadIdx.x] = own;
}

/// The parent: kSlice threads per block; block b owns data[b * kSlice .. (b + 1) * kSlice).
__global__ void parent_kernel(float* data) {
  if (threadIdx.x == 0) {
    child_kernel<<<1, kSlice>>>(data + blockIdx.x * kSlice);
    migration::check_launch("child_kernel");
  }
  // One thread of the whole grid launches the continuation, for every block: a tail launch
  // waits for the entire parent grid anyway, so one grid of the parent's shape is enough.
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    parent_after_child<<<gridDim.x, kSlice, 0, cudaStreamTailLaunch>>>(data);
    migration::check_launch("parent_after_child");
  }
}
// [cdp2]

/// Host side, as the course launches it: 8 blocks of 32 threads; `data` holds blocks * kSlice
/// floats in global memory.
cudaError_t run(float* data, unsigned blocks) {
  if (blocks == 0) return cudaSuccess;
  parent_kernel<<<blocks, kSlice>>>(data);
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) return launched;
  return cudaDeviceSynchronize();
}

}  // namespace migration::parent_child
