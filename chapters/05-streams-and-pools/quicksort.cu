// Exercise quicksort: a quicksort whose two halves run side by side, each in its own stream.
//
// A grid of one block sorts the range data[left .. right] (both ends included, as on the
// slides). A short range (at most kBlockSortSize values) is sorted by the whole block in shared
// memory. A longer one is partitioned around a pivot by one thread, and that thread launches
// the two parts as children, one level deeper. Launched into the NULL stream, the right part
// would wait for the left one to finish: the launches of a block into the NULL stream run one
// after the other. Each part therefore goes into a cudaStreamNonBlocking stream of its own,
// which the thread creates in device code and may destroy right after the launch (the work
// already in it still runs).
//
// Nothing waits for the children: a parent's range is final once it is partitioned, and the
// children sort disjoint parts of it. The host's cudaDeviceSynchronize() waits for the whole
// tree, because a grid is not complete before its children are.
//
// Depth: a bad pivot peels off a few values per level, and the recursion would go as deep as
// the input is long. At kQuicksortMaxDepth a grid sorts its range in place instead, however
// long (a slow single-thread heapsort: a fallback for rare inputs, not the normal path).
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/host_part.h"
#include "cdplab/launch_pool.h"
#include "cdplab/streams.h"

#include <climits>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace cdplab::streams {

/// Threads of every sort grid (one block): half of kBlockSortSize, so that in each step of the
/// block sort every thread compares and swaps one pair.
inline constexpr unsigned kQuicksortThreads = kBlockSortSize / 2;
/// The longest input quicksort() accepts: ranges and indices are int, and the heapsort's child
/// index 2 * i + 1 must not overflow.
inline constexpr std::size_t kMaxSortValues = std::size_t{1} << 30;
/// Pending launches to allow beyond the sort's own (a small margin), for reserve_sort_launches.
inline constexpr std::size_t kPendingLaunchMargin = 64;

/// What the grids of one sort record, in global memory (given).
struct SortStats {
  int max_depth;   ///< the deepest level a grid ran at
  unsigned grids;  ///< how many grids ran
};

/// Given building blocks of the sort. Each works on one range and documents who must call it.
namespace sorting {

/// Sorts data[0 .. count) ascending, count <= kBlockSortSize, with the whole block: a bitonic
/// sort in shared memory, the values padded with INT_MAX up to kBlockSortSize (the padding
/// sorts to the end and is never written back). Every thread of the block must call it.
__device__ void block_sort(int* data, int count) {
  __shared__ int keys[kBlockSortSize];
  const auto size = static_cast<int>(kBlockSortSize);
  for (int i = static_cast<int>(threadIdx.x); i < size; i += static_cast<int>(blockDim.x)) {
    keys[i] = i < count ? data[i] : INT_MAX;
  }
  __syncthreads();
  // Bitonic sort: sorted runs of `run` values are merged pairwise, the pairs at distance
  // `stride` compared and swapped; a run's direction depends on which `run`-sized half it is in.
  for (int run = 2; run <= size; run *= 2) {
    for (int stride = run / 2; stride > 0; stride /= 2) {
      for (int pair = static_cast<int>(threadIdx.x); pair < size / 2; pair += static_cast<int>(blockDim.x)) {
        const int i = 2 * stride * (pair / stride) + pair % stride;  // the lower index: its bit `stride` is 0
        const int j = i + stride;
        const bool ascending = (i & run) == 0;
        const int a = keys[i];
        const int b = keys[j];
        if ((a > b) == ascending) {
          keys[i] = b;
          keys[j] = a;
        }
      }
      __syncthreads();
    }
  }
  for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x)) data[i] = keys[i];
}

/// Moves data[root] down the max-heap data[0 .. end) to its place.
__device__ void sift_down(int* data, int root, int end) {
  const int value = data[root];
  for (int child = 2 * root + 1; child < end; child = 2 * root + 1) {
    if (child + 1 < end && data[child + 1] > data[child]) ++child;
    if (data[child] <= value) break;
    data[root] = data[child];
    root = child;
  }
  data[root] = value;
}

/// Sorts data[0 .. count) ascending with the calling thread alone: heapsort, O(count log count)
/// steps and no extra memory. One thread is slow, but this runs only for a range that reached
/// kQuicksortMaxDepth, which a reasonable pivot makes rare.
__device__ void heap_sort(int* data, int count) {
  for (int root = count / 2 - 1; root >= 0; --root) sift_down(data, root, count);
  for (int end = count - 1; end > 0; --end) {
    const int top = data[0];
    data[0] = data[end];
    data[end] = top;
    sift_down(data, 0, end);
  }
}

/// Partitions data[left .. right] (at least three values) with the calling thread alone and
/// returns `split`, left <= split < right: every value of [left, split] is <= every value of
/// [split + 1, right]. The pivot is the median of the range's first, middle and last value (the
/// slides read data[0], which lies outside every range but the first). Hoare's scheme swaps
/// values equal to the pivot too, so a range of equal values splits in the middle.
__device__ int partition_range(int* data, int left, int right) {
  const int mid = left + (right - left) / 2;
  // Order the three samples in place: the median lands in the middle, and the two others stop
  // the scans below at the ends of the range.
  if (data[mid] < data[left]) { const int t = data[mid]; data[mid] = data[left]; data[left] = t; }
  if (data[right] < data[mid]) { const int t = data[right]; data[right] = data[mid]; data[mid] = t; }
  if (data[mid] < data[left]) { const int t = data[mid]; data[mid] = data[left]; data[left] = t; }
  const int pivot = data[mid];
  int i = left - 1;
  int j = right + 1;
  for (;;) {
    do ++i; while (data[i] < pivot);
    do --j; while (data[j] > pivot);
    if (i >= j) return j;
    const int t = data[i];
    data[i] = data[j];
    data[j] = t;
  }
}

}  // namespace sorting

/// Sorts data[left .. right] (both included, right >= left) as a grid of one block at recursion
/// level `depth` (the first grid is level 0); every grid records itself in *stats.
__global__ void quicksort_kernel(int* data, int left, int right, int depth, SortStats* stats) {
  if (threadIdx.x == 0) {  // given: each grid counts itself and its level
    atomicMax(&stats->max_depth, depth);
    atomicAdd(&stats->grids, 1u);
  }
  // TODO(quicksort): sort data[left .. right], count = right - left + 1 values.
  // - count <= kBlockSortSize: the whole block calls sorting::block_sort(data + left, count)
  //   (every thread: it synchronises the block), and the grid is done.
  // - Else, at depth kQuicksortMaxDepth: thread 0 sorts the range alone with
  //   sorting::heap_sort(data + left, count), and the grid is done.
  // - Else thread 0 alone: split = sorting::partition_range(data, left, right); create two
  //   streams with cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); launch
  //   quicksort_kernel with 1 block of blockDim.x threads over [left, split] into one and
  //   over [split + 1, right] into the other, one level deeper (depth + 1), checking each
  //   launch with CDPLAB_CHECK_LAUNCH() on the next line; then cudaStreamDestroy both.
  if (threadIdx.x == 0) CDPLAB_TODO();
}

/// Host part (cdplab/host_part.h): sizes the pending launch pool for every launch a sort of `n`
/// values can make, before the first launch.
CDPLAB_HOST_PART void reserve_sort_launches(std::size_t n) {
  // TODO(quicksort): size the pending launch pool for a sort of n values. Every launch of
  // the sort holds an entry at least until its grid starts, and how many wait at once
  // depends on timing: the safe pool holds them all. Derive from n how many launches
  // the sort can make at most (which grids launch? how many of them can one level hold?),
  // add kPendingLaunchMargin, and pass the sum to cdplab::reserve_pending_launches
  // (cdplab/launch_pool.h): the same get-then-raise you wrote in the pools exercise.
  (void)n;
  CDPLAB_TODO();
}

SortRun quicksort(const std::vector<int>& data) {
  if (data.size() > kMaxSortValues) {
    throw std::invalid_argument("quicksort: at most " + std::to_string(kMaxSortValues) + " values, found " +
                                std::to_string(data.size()));
  }
  SortRun run;
  if (data.empty()) return run;  // nothing to sort: no grid runs
  const int n = static_cast<int>(data.size());

  reserve_sort_launches(data.size());  // the host part above: before the first launch

  DeviceArray<int> device_data(data);
  DeviceArray<SortStats> stats(1);  // zero: depth 0, no grid yet
  reset_device_report();
  quicksort_kernel<<<1, kQuicksortThreads>>>(device_data.data(), 0, n - 1, 0, stats.data());
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());  // the first grid and every grid below it
  throw_if_device_reported();

  run.sorted = device_data.download();
  const SortStats recorded = stats.download().front();
  run.max_depth = recorded.max_depth;
  run.grids = recorded.grids;
  return run;
}

}  // namespace cdplab::streams
