// CDP2 version of a kernel that launches three dependent grids (X, Y, Z) and, in CDP1, waited
// for them with a device-side cudaDeviceSynchronize() before carrying on with their results.
//
// Each block of the parent owns one segment of the data. The work after the wait becomes a
// kernel of its own, launched into cudaStreamTailLaunch.
#include "launch_check.cuh"

#include <cuda_runtime.h>

namespace migration::nested {

/// Elements per segment, and threads per block of every grid here.
constexpr unsigned kSegment = 256;

/// X: the first step over one segment.
__global__ void step_x(float* segment, unsigned count) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) segment[i] = 2.0f * segment[i];
}

/// Y: needs what X wrote.
__global__ void step_y(float* segment, unsigned count) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) segment[i] = segment[i] + 1.0f;
}

/// Z: needs what Y wrote.
__global__ void step_z(float* segment, unsigned count) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) segment[i] = segment[i] * segment[i];
}

// [cdp2]
/// What CDP1 did after the wait ("do more stuff"): here, the sum of the segment. One block.
__global__ void segment_sum(const float* segment, unsigned count, float* sum) {
  __shared__ float partial[kSegment];
  float own = 0.0f;
  for (unsigned i = threadIdx.x; i < count; i += blockDim.x) own += segment[i];
  partial[threadIdx.x] = own;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) *sum = partial[0];
}

/// The parent ("kernel B"): kSegment threads per block, one segment per block.
__global__ void parent_b(float* data, unsigned n, float* segment_sums) {
  const unsigned begin = blockIdx.x * kSegment;
  const unsigned count = n - begin < kSegment ? n - begin : kSegment;
  float* segment = data + begin;

  // "Do stuff": every thread prepares its element.
  if (threadIdx.x < count) segment[threadIdx.x] = static_cast<float>(begin + threadIdx.x);
  // A launch orders only the launching thread's own writes before the child: the barrier makes
  // the whole block's writes visible to the children that thread 0 launches.
  __syncthreads();

  if (threadIdx.x == 0) {
    // One thread, the NULL stream: X, Y and Z run one after another, as before.
    step_x<<<1, kSegment>>>(segment, count);
    migration::check_launch("step_x");
    step_y<<<1, kSegment>>>(segment, count);
    migration::check_launch("step_y");
    step_z<<<1, kSegment>>>(segment, count);
    migration::check_launch("step_z");
    // No cudaDeviceSynchronize(): the work that needs Z's results is a grid of its own, which
    // the tail launch stream starts after this parent grid and all its children have finished.
    segment_sum<<<1, kSegment, 0, cudaStreamTailLaunch>>>(segment, count, &segment_sums[blockIdx.x]);
    migration::check_launch("segment_sum");
  }
}
// [cdp2]

/// Host side: `data` holds n floats and `segment_sums` one float per segment, both in global
/// memory. The host waits for the whole tree of grids, tail launches included.
cudaError_t run(float* data, unsigned n, float* segment_sums) {
  if (n == 0) return cudaSuccess;
  const unsigned segments = (n + kSegment - 1) / kSegment;
  parent_b<<<segments, kSegment>>>(data, n, segment_sums);
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) return launched;
  return cudaDeviceSynchronize();
}

}  // namespace migration::nested
