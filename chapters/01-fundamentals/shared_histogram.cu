// Exercise shared-histogram: block-shared counters and shared-memory atomics.
//
// Counting straight into the global histogram makes every thread of the GPU contend for a
// few global counters. Here each block counts its keys into its own copy of the counters in
// shared memory, with shared-memory atomics (contention only inside the block), and then
// adds each non-zero counter to the global histogram with one global atomic per bucket.
// The quadtree of chapter 03 counts its points per quadrant the same way.
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/fundamentals.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace cdplab::fundamentals {

/// Threads per block.
inline constexpr unsigned kHistogramThreads = 256;
/// The most blocks launched; the blocks loop over the keys when there are more.
inline constexpr unsigned kMaxHistogramBlocks = 1024;

/// Adds the keys[0 .. n) of this block's share to counts[key % buckets]. Launched with
/// buckets * sizeof(unsigned) bytes of dynamic shared memory.
__global__ void histogram_kernel(const unsigned* keys, unsigned long long n, unsigned buckets, unsigned* counts) {
  extern __shared__ unsigned block_counts[];  // `buckets` counters, sized at launch
  // TODO(shared-histogram):
  // 1. Zero the block's counters block_counts[0 .. buckets), the threads of the block
  //    sharing the work (there may be more buckets than threads), then __syncthreads().
  // 2. Loop over this block's keys (start at the global thread index, step by the number
  //    of threads in the grid) and atomicAdd 1 to block_counts[key % buckets].
  // 3. __syncthreads(), then add every non-zero counter to counts[b] with one atomicAdd.
  CDPLAB_TODO();
}

std::vector<unsigned> histogram(const std::vector<unsigned>& keys, unsigned buckets) {
  if (buckets == 0 || buckets > kMaxHistogramBuckets) {
    throw std::invalid_argument("histogram: buckets must be in [1, " + std::to_string(kMaxHistogramBuckets) +
                                "], found " + std::to_string(buckets));
  }
  if (keys.size() > UINT_MAX) throw std::invalid_argument("histogram: at most 2^32 - 1 keys (counts are 32-bit)");

  DeviceArray<unsigned> device_keys(keys);
  DeviceArray<unsigned> counts(buckets);  // zero-filled
  const unsigned long long n = keys.size();
  // At least one block, so that an empty input runs the kernel too.
  const unsigned long long wanted = (n + kHistogramThreads - 1) / kHistogramThreads;
  const auto blocks = static_cast<unsigned>(std::clamp<unsigned long long>(wanted, 1, kMaxHistogramBlocks));
  const std::size_t shared_bytes = buckets * sizeof(unsigned);

  reset_device_report();
  histogram_kernel<<<blocks, kHistogramThreads, shared_bytes>>>(device_keys.data(), n, buckets, counts.data());
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());
  throw_if_device_reported();
  return counts.download();
}

}  // namespace cdplab::fundamentals
