// Exercise private-pointers: fix the bug.
//
// Each block of the parent adds up its segment of the input in __shared__ memory, and the
// block's thread 0 works out the segment's scale in a local variable. A child grid per segment
// then computes out[i] = in[i] * segment_sum + segment_scale. The program as handed out passes
// the child the ADDRESSES of the shared sum and of the local scale. Shared memory belongs to
// one block of one grid and local memory to one thread: in the child those addresses mean
// nothing (on an H100 the child faults). The fix stages both values in global memory, the one
// memory a parent may hand to a child.
//
// The result, for element i of segment s = i / kSegmentThreads:
//   out[i] = in[i] * (sum of in over segment s) + segment_scale(s),  segment_scale(s) = 0.5 * (s % 4)
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/visibility.h"

#include <cstddef>
#include <stdexcept>

namespace cdplab::visibility {

/// Elements per segment: one block of the parent, and one block of its child, per segment.
inline constexpr unsigned kSegmentThreads = 256;

/// The child of segment `begin / kSegmentThreads`: out[i] = in[i] * *sum + *scale for the
/// elements [begin, end) of the segment. `sum` and `scale` must point into global memory.
__global__ void apply_segment(const float* in, float* out, unsigned begin, unsigned end, const float* sum,
                              const float* scale) {
  const unsigned i = begin + threadIdx.x;
  if (i < end) out[i] = in[i] * *sum + *scale;
}

/// The parent: block s sums its segment in shared memory, then its thread 0 launches
/// apply_segment over the segment. `segment_sums` and `segment_scales` hold one float per block.
__global__ void segment_parent(const float* in, float* out, unsigned n, float* segment_sums, float* segment_scales) {
  __shared__ float segment_sum;
  const unsigned begin = blockIdx.x * kSegmentThreads;
  const unsigned i = begin + threadIdx.x;
  if (threadIdx.x == 0) segment_sum = 0.0f;
  __syncthreads();
  if (i < n) atomicAdd(&segment_sum, in[i]);
  __syncthreads();  // the sum is complete
  if (threadIdx.x != 0) return;

  float scale = 0.5f * static_cast<float>(blockIdx.x % 4);  // a local variable of thread 0
  const unsigned end = begin + kSegmentThreads < n ? begin + kSegmentThreads : n;
  // BUG: &segment_sum is an address of this block's __shared__ memory and &scale one of this
  // thread's local memory. The child runs in another grid: neither address means anything
  // there. (segment_sums and segment_scales, one float per block in global memory, are unused.)
  // TODO(private-pointers): hand the child global memory instead, and check its launch with
  // CDPLAB_CHECK_LAUNCH() on the line after it.
  apply_segment<<<1, kSegmentThreads>>>(in, out, begin, end, &segment_sum, &scale);
}

std::vector<float> scale_by_segment_sums(const std::vector<float>& in) {
  if (in.size() >= (std::size_t{1} << 31)) throw std::invalid_argument("scale_by_segment_sums: at most 2^31 - 1 values");
  if (in.empty()) return {};  // a grid of zero blocks is a launch error
  const auto n = static_cast<unsigned>(in.size());
  const unsigned blocks = (n + kSegmentThreads - 1) / kSegmentThreads;

  // One child per block, all pending at once: make room for them in the pending launch pool.
  std::size_t pool = 0;
  CDPLAB_CHECK(cudaDeviceGetLimit(&pool, cudaLimitDevRuntimePendingLaunchCount));
  if (pool < blocks) CDPLAB_CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, blocks));

  DeviceArray<float> device_in(in);
  DeviceArray<float> device_out(in.size());
  DeviceArray<float> segment_sums(blocks), segment_scales(blocks);  // global scratch, one per block

  reset_device_report();
  segment_parent<<<blocks, kSegmentThreads>>>(device_in.data(), device_out.data(), n, segment_sums.data(),
                                              segment_scales.data());
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());  // a child that used a private address faults here
  throw_if_device_reported();
  return device_out.download();
}

}  // namespace cdplab::visibility
