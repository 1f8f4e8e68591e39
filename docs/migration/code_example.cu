// CDP2 version of a one-block kernel that sums pairs of its input into a buffer in global
// memory, refines the buffer in a child grid, and copies it back over its input. In CDP1 the
// parent waited twice in device code: once for the child, once for its own device-side copy.
#include "launch_check.cuh"

#include <cuda_runtime.h>

namespace migration::code_example {

/// Pairs summed by the parent: it runs as one block of 2 * kPairs threads.
constexpr unsigned kPairs = 512;

/// The buffer: a __device__ array is global memory, so its address may be handed to a child.
__device__ float pair_sums[kPairs];

/// The child (the slide calls it `launch`): some work on the buffer.
__global__ void refine(float* sums, unsigned count) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) sums[i] = 0.5f * sums[i];
}

// [cdp2]
/// What the parent did after its second wait: copy the refined buffer over the input.
__global__ void copy_back(float* data, const float* sums, unsigned count) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) data[i] = sums[i];
}

/// The parent: one block of 2 * kPairs threads over data[0 .. 2 * kPairs).
__global__ void pair_then_refine(float* data) {
  const unsigned t = threadIdx.x;
  // Every odd thread sums its pair (t-1, t): no thread reads past the end of the data.
  if (t % 2 == 1) pair_sums[t / 2] = data[t - 1] + data[t];
  __syncthreads();  // all pairs written before thread 0 hands the buffer to the child

  // One thread launches: a launch, like a copy, is made by every thread that reaches it.
  if (t == 0) {
    refine<<<(kPairs + 255) / 256, 256>>>(pair_sums, kPairs);
    migration::check_launch("refine");
    // The copy needs the child's result, so it cannot follow in this kernel: it becomes a
    // kernel in the tail launch stream, which starts once this grid and the child are done.
    copy_back<<<(kPairs + 255) / 256, 256, 0, cudaStreamTailLaunch>>>(data, pair_sums, kPairs);
    migration::check_launch("copy_back");
  }
}
// [cdp2]

/// Host side: `data` holds 2 * kPairs floats in global memory; afterwards its first kPairs
/// floats hold the refined sums.
cudaError_t run(float* data) {
  pair_then_refine<<<1, 2 * kPairs>>>(data);
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) return launched;
  return cudaDeviceSynchronize();
}

}  // namespace migration::code_example
