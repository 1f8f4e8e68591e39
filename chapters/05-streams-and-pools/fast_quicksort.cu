// Exercise fast-quicksort: a quicksort that keeps the whole GPU busy, with every decision taken
// on the device.
//
// The quicksort exercise partitions a range with one thread. Here a range is partitioned by a
// grid sized to it: every block classifies a tile of values against the pivot, reserves its
// places in the output with one atomic operation, and scatters the tile into the other buffer
// (the data and a scratch array of the same length take turns). Values equal to the pivot are
// neither below nor above it: they are already in their final places, the middle of the range,
// so a range of equal values is done after one pass.
//
// The halves can only be launched once the whole partition grid has finished: their lengths are
// the totals of all its blocks. CDP2 has no device-side cudaDeviceSynchronize; instead block 0 of
// the partition grid launches partition_done into cudaStreamTailLaunch, and that kernel runs
// after every block of the grid has finished. It reads the two totals and launches each half into
// cudaStreamFireAndForget, so that the two subtrees run side by side. (A cudaStreamNonBlocking
// stream created per launch does that too; measured on an H100 the whole sort was 7 to 10 % slower
// with them: each launch then also creates and destroys a stream.)
//
// A half of at most kFastSortBlockMax values is sorted by one block, a radix sort: in registers
// and shared memory when it fits one tile, else in a few passes over the range. Partitioning it
// further would cost a partition grid, a tail launch and the launches of its halves for little
// work each: launches, not memory traffic, are what a deep quicksort spends its time on. For the
// same reason the partitions stop at level kFastSortMaxDepth, where a range is sorted by one block
// however long it is; by then there are enough ranges to give every SM several blocks to sort.
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/host_part.h"
#include "cdplab/launch_pool.h"
#include "cdplab/streams.h"

#include <cub/block/block_load.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>

#include <climits>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace cdplab::streams::fast_sort {

constexpr unsigned kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;

/// Partition grids: blocks of kPartitionThreads threads, kPartitionItems values per thread.
constexpr unsigned kPartitionThreads = 256;
constexpr unsigned kPartitionItems = 16;
constexpr unsigned kPartitionTile = kPartitionThreads * kPartitionItems;  // values per block
constexpr unsigned kPartitionWarps = kPartitionThreads / kWarp;

/// Block sorts: one block of kBlockSortThreads threads sorts a tile of kBlockSortTile values in
/// registers and shared memory, a longer range tile by tile.
constexpr unsigned kBlockSortThreads = 512;
constexpr unsigned kBlockSortItems = 16;
constexpr unsigned kBlockSortTile = kBlockSortThreads * kBlockSortItems;

/// partition_done: one warp per half of the range.
constexpr unsigned kContinuationThreads = 2 * kWarp;
/// A run of values equal to the pivot up to this long is written by partition_done itself; a
/// longer one by a grid of its own.
constexpr unsigned kDirectFillMax = 4096;
constexpr unsigned kFillThreads = 256;

/// Every range a grid partitions holds more than kFastSortBlockMax values, and the ranges in
/// flight do not overlap, so no two of them start in the same interval of kSlotWidth values:
/// begin / kSlotWidth is a counts slot that no other partition in flight uses.
constexpr unsigned kSlotWidth = kFastSortBlockMax;

/// What every grid of one sort gets (by value).
struct SortBuffers {
  int* data;                   ///< the array being sorted: every value ends here
  int* scratch;                ///< as long as data: the other side of each partition
  unsigned long long* counts;  ///< per slot: values below the pivot (low 32 bits), above it (high 32)
  FastSortStats* stats;
};

/// The values [begin, end) of the array, and which buffer holds them now.
struct Range {
  unsigned begin;
  unsigned end;
  bool in_scratch;  ///< in SortBuffers::scratch (else in SortBuffers::data)
};

__device__ unsigned size_of(const Range& range) { return range.end - range.begin; }
__device__ const int* source(const SortBuffers& buffers, const Range& range) {
  return range.in_scratch ? buffers.scratch : buffers.data;
}

/// Given building blocks: warp, block and grid-level pieces that know nothing about CDP.
namespace sorting {

/// Bitonic sort across the 32 lanes of a warp: returns the lane-th smallest of the values the
/// lanes passed in. Every lane of the warp must call it.
__device__ int warp_sort(int value) {
  const unsigned lane = threadIdx.x % kWarp;
  for (unsigned run = 2; run <= kWarp; run *= 2) {
    for (unsigned stride = run / 2; stride > 0; stride /= 2) {
      const int other = __shfl_xor_sync(kFullMask, value, static_cast<int>(stride));
      const bool ascending = (lane & run) == 0;
      const bool lower = (lane & stride) == 0;
      value = lower == ascending ? min(value, other) : max(value, other);
    }
  }
  return value;
}

/// Sorts a range of at most 32 values with the calling warp and writes it to `data`. Every lane
/// of the warp must call it.
__device__ void warp_sort_range(const SortBuffers& buffers, const Range& range) {
  const unsigned lane = threadIdx.x % kWarp;
  const unsigned size = size_of(range);
  const int value = lane < size ? source(buffers, range)[range.begin + lane] : INT_MAX;
  const int sorted = warp_sort(value);  // every lane has read before any lane writes
  if (lane < size) buffers.data[range.begin + lane] = sorted;
}

/// The pivot of a range: the median of 32 values spread evenly over it. Every lane of the warp
/// must call it; all get the same pivot. Unlike the first, middle and last value, 32 samples
/// split sorted, reversed and organ-pipe inputs near their middle.
__device__ int median_of_samples(const SortBuffers& buffers, const Range& range) {
  const unsigned lane = threadIdx.x % kWarp;
  const unsigned long long at = static_cast<unsigned long long>(size_of(range)) * (2 * lane + 1) / (2 * kWarp);
  const int sorted = warp_sort(source(buffers, range)[range.begin + at]);
  return __shfl_sync(kFullMask, sorted, kWarp / 2);
}

/// One block's part of a partition: the tile of kPartitionTile values at blockIdx.x, moved into
/// the other buffer. Values below the pivot go to the front of the range, values above it to the
/// back; values equal to it are not written. Every thread of the block must call it.
__device__ __forceinline__ void partition_tile(const SortBuffers& buffers, const Range& range, int pivot) {
  const int* in = source(buffers, range);
  int* out = range.in_scratch ? buffers.data : buffers.scratch;
  const unsigned lane = threadIdx.x % kWarp;
  const unsigned warp = threadIdx.x / kWarp;
  const unsigned lanes_below = (1u << lane) - 1;
  const unsigned tile = range.begin + blockIdx.x * kPartitionTile;

  // Each value's class as two warp ballots: a lane's rank among the warp's values of its class
  // is the number of lower lanes in that class.
  int values[kPartitionItems];
  unsigned below[kPartitionItems];
  unsigned above[kPartitionItems];
  unsigned warp_below = 0;
  unsigned warp_above = 0;
#pragma unroll
  for (unsigned k = 0; k < kPartitionItems; ++k) {
    const unsigned i = tile + k * kPartitionThreads + threadIdx.x;
    values[k] = i < range.end ? in[i] : pivot;  // past the end: equal to the pivot, not moved
  }
#pragma unroll
  for (unsigned k = 0; k < kPartitionItems; ++k) {
    below[k] = __ballot_sync(kFullMask, values[k] < pivot);
    above[k] = __ballot_sync(kFullMask, values[k] > pivot);
    warp_below += __popc(below[k]);
    warp_above += __popc(above[k]);
  }

  // The warps' places within the block (an exclusive scan over 8 warps), then the block's places
  // within the range: one 64-bit atomic adds both counts, below in the low half, above in the high.
  __shared__ unsigned first_below[kPartitionWarps];
  __shared__ unsigned first_above[kPartitionWarps];
  __shared__ unsigned long long block_first;
  if (lane == 0) {
    first_below[warp] = warp_below;
    first_above[warp] = warp_above;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long sum_below = 0;
    unsigned long long sum_above = 0;
    for (unsigned w = 0; w < kPartitionWarps; ++w) {
      const unsigned b = first_below[w];
      const unsigned a = first_above[w];
      first_below[w] = static_cast<unsigned>(sum_below);
      first_above[w] = static_cast<unsigned>(sum_above);
      sum_below += b;
      sum_above += a;
    }
    block_first = atomicAdd(&buffers.counts[range.begin / kSlotWidth], sum_above << 32 | sum_below);
  }
  __syncthreads();

  unsigned next_below = static_cast<unsigned>(block_first) + first_below[warp];
  unsigned next_above = static_cast<unsigned>(block_first >> 32) + first_above[warp];
#pragma unroll
  for (unsigned k = 0; k < kPartitionItems; ++k) {
    if (below[k] >> lane & 1u) out[range.begin + next_below + __popc(below[k] & lanes_below)] = values[k];
    if (above[k] >> lane & 1u) out[range.end - 1 - (next_above + __popc(above[k] & lanes_below))] = values[k];
    next_below += __popc(below[k]);
    next_above += __popc(above[k]);
  }
}

// ----- one block sorts a range ------------------------------------------------------------

using TileLoad = cub::BlockLoad<int, kBlockSortThreads, kBlockSortItems, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
using TileSort = cub::BlockRadixSort<int, kBlockSortThreads, kBlockSortItems>;
using DigitScan = cub::BlockScan<unsigned, kBlockSortThreads>;

constexpr unsigned kDigitBits = 8;
constexpr unsigned kDigits = 1u << kDigitBits;
static_assert(kDigits <= kBlockSortThreads, "one thread per digit");

struct BlockSortStorage {
  union {
    TileLoad::TempStorage load;
    TileSort::TempStorage sort;
    DigitScan::TempStorage scan;
  } cub;
  unsigned next[kDigits];        ///< where the range's next value of each digit goes
  unsigned tile_first[kDigits];  ///< the first sorted index of each digit within the tile
  unsigned count[kDigits];       ///< values of each digit (in the range, then in the tile)
};

/// Digit `shift / 8` of a value as the radix sort orders ints (the sign bit flipped, as CUB does).
__device__ unsigned digit_of(int value, unsigned shift) {
  return (static_cast<unsigned>(value) ^ 0x80000000u) >> shift & (kDigits - 1);
}

/// Loads the values [first, first + count) of `in`, count <= kBlockSortTile, in a blocked
/// arrangement (thread t holds values t * kBlockSortItems ...), INT_MAX past count.
__device__ __forceinline__ void load_tile(BlockSortStorage& storage, const int* in, unsigned first, unsigned count,
                          int (&keys)[kBlockSortItems]) {
  TileLoad(storage.cub.load).Load(in + first, keys, static_cast<int>(count), INT_MAX);
  __syncthreads();  // the union's load storage is free again
}

/// Exclusive scan of one count per digit (thread d holds digit d's): returns digit d's start.
__device__ __forceinline__ unsigned scan_digits(BlockSortStorage& storage, unsigned count) {
  unsigned first = 0;
  DigitScan(storage.cub.scan).ExclusiveSum(count, first);
  __syncthreads();
  return first;
}

/// One stable pass of a least-significant-digit radix sort: the values of range [begin, end) of
/// `in` move into the same range of `out`, ordered by digit `shift / 8`, tile after tile.
/// Returns false (and moves nothing, after reading the range once) when every value has the same
/// digit.
__device__ __forceinline__ bool radix_pass(BlockSortStorage& storage, const int* in, int* out, unsigned begin, unsigned end,
                           unsigned shift) {
  const unsigned t = threadIdx.x;
  if (t < kDigits) storage.count[t] = 0;
  __syncthreads();
  for (unsigned i = begin + t; i < end; i += kBlockSortThreads) atomicAdd(&storage.count[digit_of(in[i], shift)], 1u);
  __syncthreads();
  const bool one_digit = storage.count[digit_of(in[begin], shift)] == end - begin;
  __syncthreads();  // everyone has read the counts before they change
  if (one_digit) return false;
  const unsigned first = scan_digits(storage, t < kDigits ? storage.count[t] : 0);
  if (t < kDigits) storage.next[t] = begin + first;

  for (unsigned tile = begin; tile < end; tile += kBlockSortTile) {
    const unsigned count = min(kBlockSortTile, end - tile);
    int keys[kBlockSortItems];
    load_tile(storage, in, tile, count, keys);
    if (t < kDigits) storage.count[t] = 0;
    __syncthreads();
#pragma unroll
    for (unsigned k = 0; k < kBlockSortItems; ++k) {
      if (t * kBlockSortItems + k < count) atomicAdd(&storage.count[digit_of(keys[k], shift)], 1u);
    }
    __syncthreads();
    const unsigned tile_first = scan_digits(storage, t < kDigits ? storage.count[t] : 0);
    if (t < kDigits) storage.tile_first[t] = tile_first;
    // Stable: values of one digit keep their order, and the INT_MAX padding (the largest digit,
    // placed last) sorts after every value of the tile.
    TileSort(storage.cub.sort).SortBlockedToStriped(keys, static_cast<int>(shift), static_cast<int>(shift + kDigitBits));
#pragma unroll
    for (unsigned k = 0; k < kBlockSortItems; ++k) {
      const unsigned rank = k * kBlockSortThreads + t;  // striped: the value's index in the sorted tile
      if (rank < count) {
        const unsigned d = digit_of(keys[k], shift);
        out[storage.next[d] + rank - storage.tile_first[d]] = keys[k];
      }
    }
    __syncthreads();
    if (t < kDigits) storage.next[t] += storage.count[t];
    __syncthreads();
  }
  return true;
}

/// Sorts `range` with the calling block and leaves it in buffers.data. Up to kBlockSortTile
/// values: one radix sort in registers and shared memory. Longer: up to four 8-bit passes over the
/// range in global memory, between the two buffers (a pass is skipped when all values share its
/// digit). Every thread must call it. Returns how many values it read and wrote in global memory.
__device__ __forceinline__ unsigned long long block_sort_range(const SortBuffers& buffers, const Range& range) {
  __shared__ BlockSortStorage storage;
  const unsigned size = size_of(range);
  const int* in = source(buffers, range);
  if (size <= kBlockSortTile) {
    int keys[kBlockSortItems];
    load_tile(storage, in, range.begin, size, keys);
    TileSort(storage.cub.sort).SortBlockedToStriped(keys);
#pragma unroll
    for (unsigned k = 0; k < kBlockSortItems; ++k) {
      const unsigned rank = k * kBlockSortThreads + threadIdx.x;
      if (rank < size) buffers.data[range.begin + rank] = keys[k];
    }
    return 2ull * size;
  }
  unsigned long long traffic = 0;
  const int* from = in;
  int* to = range.in_scratch ? buffers.data : buffers.scratch;
  for (unsigned shift = 0; shift < 32; shift += kDigitBits) {
    traffic += size;  // the digit counts
    if (radix_pass(storage, from, to, range.begin, range.end, shift)) {
      traffic += 2ull * size;
      int* const moved = to;
      to = const_cast<int*>(from);
      from = moved;
    }
  }
  if (from != buffers.data) {
    for (unsigned i = range.begin + threadIdx.x; i < range.end; i += kBlockSortThreads) buffers.data[i] = from[i];
    traffic += 2ull * size;
  }
  return traffic;
}

/// Writes `value` to out[0 .. count).
__global__ void fill_kernel(int* out, unsigned count, int value) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = value;
}

/// Writes the pivot over data[begin, end), the values equal to it: the block itself for a short
/// run, a grid of its own (fire-and-forget) for a long one. Every thread of the block must call it.
__device__ void fill_equal(const SortBuffers& buffers, unsigned begin, unsigned end, int pivot) {
  const unsigned count = end - begin;
  if (threadIdx.x == 0) atomicAdd(&buffers.stats->memory_values, static_cast<unsigned long long>(count));
  if (count <= kDirectFillMax) {
    for (unsigned i = begin + threadIdx.x; i < end; i += blockDim.x) buffers.data[i] = pivot;
    return;
  }
  if (threadIdx.x == 0) {
    fill_kernel<<<(count + kFillThreads - 1) / kFillThreads, kFillThreads, 0, cudaStreamFireAndForget>>>(
        buffers.data + begin, count, pivot);
    CDPLAB_CHECK_LAUNCH();
  }
}

}  // namespace sorting

// ----- the recursion --------------------------------------------------------------------------

__global__ void partition_kernel(SortBuffers buffers, Range range, int depth, int pivot);

/// Sorts `range` with one block of kBlockSortThreads threads (given).
__global__ void __launch_bounds__(kBlockSortThreads) block_sort_kernel(SortBuffers buffers, Range range, int depth) {
  const unsigned long long traffic = sorting::block_sort_range(buffers, range);
  if (threadIdx.x == 0) {
    atomicAdd(&buffers.stats->block_sorts, 1u);
    if (size_of(range) > kFastSortBlockMax) atomicAdd(&buffers.stats->fallbacks, 1u);
    atomicMax(&buffers.stats->max_depth, depth);
    atomicAdd(&buffers.stats->memory_values, traffic);
  }
}

/// Decides what happens to `range`, a range of level `depth`, and starts it. Called by a whole
/// warp (lane 0 launches); the warp itself sorts a range of at most 32 values.
__device__ void sort_range(const SortBuffers& buffers, const Range& range, int depth) {
  const unsigned size = size_of(range);
  if (size <= kWarp) {  // given: a launch would cost more than the sort
    if (size > 0) sorting::warp_sort_range(buffers, range);
    return;
  }
  const bool lane0 = threadIdx.x % kWarp == 0;
  // TODO(fast-quicksort): start the sort of `range` (size > 32 values, level `depth`).
  // - size <= kFastSortBlockMax, or depth >= kFastSortMaxDepth: lane 0 launches
  //   block_sort_kernel with 1 block of kBlockSortThreads threads into
  //   cudaStreamFireAndForget (buffers, range, depth), checked with CDPLAB_CHECK_LAUNCH().
  // - Else: the whole warp takes pivot = sorting::median_of_samples(buffers, range); then
  //   lane 0 zeroes the range's counts slot, buffers.counts[range.begin / kSlotWidth], and
  //   launches partition_kernel over a grid sized to the range (one block per
  //   kPartitionTile values, kPartitionThreads threads) into cudaStreamFireAndForget.
  if (lane0) CDPLAB_TODO();
}

/// Runs after the whole partition grid of `range` has finished (launched into its tail): reads
/// the two counts and starts both halves, one warp each, one level deeper; writes the pivot over
/// the values equal to it.
__global__ void __launch_bounds__(kContinuationThreads) partition_done(SortBuffers buffers, Range range, int depth,
                                                                     int pivot) {
  __shared__ unsigned long long counted;
  if (threadIdx.x == 0) counted = buffers.counts[range.begin / kSlotWidth];
  __syncthreads();  // read before a half that starts at range.begin zeroes the same slot
  const auto below = static_cast<unsigned>(counted);
  const auto above = static_cast<unsigned>(counted >> 32);
  // TODO(fast-quicksort): the values below the pivot are [range.begin, range.begin + below)
  // and those above it [range.end - above, range.end), both in the other buffer than the
  // range's (in_scratch flipped). Warp 0 starts the first half with sort_range, warp 1
  // the second, each one level deeper (depth + 1).
  CDPLAB_TODO();
  sorting::fill_equal(buffers, range.begin + below, range.end - above, pivot);  // given
}

/// Partitions `range` around `pivot`, a grid of one block per kPartitionTile values; its tail
/// launch starts the halves.
__global__ void __launch_bounds__(kPartitionThreads) partition_kernel(SortBuffers buffers, Range range, int depth,
                                                                      int pivot) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    atomicAdd(&buffers.stats->partitions, 1u);
    atomicMax(&buffers.stats->max_depth, depth);
    // Each value is read once, and written once unless it equals the pivot (counted as written).
    atomicAdd(&buffers.stats->memory_values, 2ull * size_of(range));
    // TODO(fast-quicksort): launch partition_done (1 block of kContinuationThreads threads,
    // arguments buffers, range, depth, pivot) into the stream that starts it only after
    // every block of this grid has finished; CDPLAB_CHECK_LAUNCH() on the next line.
    CDPLAB_TODO();
  }
  sorting::partition_tile(buffers, range, pivot);  // given
}

/// The first range, launched by the host: one warp.
__global__ void fast_sort_root(SortBuffers buffers, unsigned n) { sort_range(buffers, Range{0, n, false}, 0); }

}  // namespace cdplab::streams::fast_sort

namespace cdplab::streams {

/// Host part (cdplab/host_part.h): sizes the pending launch pool for every launch a sort of `n`
/// values can make, before the first launch.
CDPLAB_HOST_PART void reserve_fast_sort_launches(std::size_t n) {
  // TODO(fast-quicksort): size the pending launch pool for a sort of n values: every
  // launch holds an entry at least until its grid starts, and how many wait at once depends
  // on timing, so the safe pool holds them all. Bound the launches of the sort (which ranges
  // are partitioned? how many can one level hold? what does each one launch?), add a margin,
  // and pass the sum to cdplab::reserve_pending_launches.
  (void)n;
  CDPLAB_TODO();
}

FastSortWorkspace::FastSortWorkspace(std::size_t capacity_values)
    : capacity(capacity_values),
      scratch(capacity_values),
      counts(capacity_values / fast_sort::kSlotWidth + 1),
      stats(1) {
  if (capacity_values > kFastSortMaxValues) {
    throw std::invalid_argument("FastSortWorkspace: at most " + std::to_string(kFastSortMaxValues) + " values, asked for " +
                                std::to_string(capacity_values));
  }
}

void fast_quicksort_device(int* data, std::size_t n, FastSortWorkspace& workspace) {
  if (n > workspace.capacity) {
    throw std::invalid_argument("fast_quicksort_device: " + std::to_string(n) + " values, but the workspace holds " +
                                std::to_string(workspace.capacity));
  }
  reserve_fast_sort_launches(n);  // the host part above: before the first launch
  CDPLAB_CHECK(cudaMemsetAsync(workspace.stats.data(), 0, sizeof(FastSortStats)));
  if (n < 2) {
    CDPLAB_CHECK(cudaDeviceSynchronize());
    return;  // sorted already: no grid runs
  }
  const fast_sort::SortBuffers buffers{data, workspace.scratch.data(), workspace.counts.data(),
                                       workspace.stats.data()};
  reset_device_report();
  fast_sort::fast_sort_root<<<1, fast_sort::kWarp>>>(buffers, static_cast<unsigned>(n));
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());  // the root and every grid below it
  throw_if_device_reported();
}

FastSortRun fast_quicksort(const std::vector<int>& data) {
  FastSortRun run;
  DeviceArray<int> values(data);
  FastSortWorkspace workspace(data.size());
  fast_quicksort_device(values.data(), data.size(), workspace);
  run.sorted = values.download();
  run.stats = workspace.last_stats();
  return run;
}

}  // namespace cdplab::streams
