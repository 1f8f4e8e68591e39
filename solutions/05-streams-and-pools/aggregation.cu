// Exercise aggregation: one child grid per warp, or per block, instead of one per thread.
//
// Item i has counts[i] outputs, between 0 and kMaxOutputsPerItem. The parent has one thread per
// item. The baseline, thread_parent, lets every thread with work launch a child for its own
// item: as many launches as items, each paying the launch cost, each holding an entry of the
// pending launch pool, and each child a grid of one block for at most 64 outputs.
//
// Aggregation gathers the items of a warp (or of a parent block) into one child. The threads
// number their outputs one after the other with an exclusive scan of the counts: item j's
// outputs are first_output[j] .. first_output[j] + counts[j] - 1 of the child. The parent
// writes that scan to global memory (a child cannot read its parent's registers or __shared__
// memory), and one thread launches one grid with a thread per output. Each child thread finds
// its item by a binary search over the scan: the last item whose first output is not above its
// own number. The expand_child below serves all three parents: for thread_parent its range is
// one item, whose first output is 0.
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/launch_pool.h"
#include "cdplab/streams.h"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace cdplab::streams {

const char* to_string(Aggregation aggregation) {
  switch (aggregation) {
    case Aggregation::per_thread: return "per thread";
    case Aggregation::per_warp: return "per warp";
    case Aggregation::per_block: return "per block";
  }
  return "unknown aggregation";
}

/// Threads per block of every parent grid: one thread per item, 8 warps per block.
inline constexpr unsigned kAggregationParentThreads = 256;
/// Threads per block of every child grid: one thread per output.
inline constexpr unsigned kExpandChildThreads = 256;
/// Threads per warp.
inline constexpr unsigned kWarpThreads = 32;
static_assert(kAggregationParentThreads % kWarpThreads == 0, "whole warps per parent block");

namespace {

/// The blocks of kExpandChildThreads threads a child with `outputs` outputs needs (outputs > 0).
__device__ unsigned child_blocks(unsigned outputs) {
  return (outputs + kExpandChildThreads - 1) / kExpandChildThreads;
}

// BEGIN SOLUTION
/// The sum of `value` over lanes 0 .. lane of the calling warp (an inclusive scan). The whole
/// warp must call it: each step adds the value of the lane `offset` below, when there is one.
__device__ unsigned warp_inclusive_scan(unsigned value) {
  const unsigned lane = threadIdx.x % kWarpThreads;
  for (unsigned offset = 1; offset < kWarpThreads; offset *= 2) {
    const unsigned below = __shfl_up_sync(0xffffffffu, value, offset);
    if (lane >= offset) value += below;
  }
  return value;
}

// END SOLUTION
}  // namespace

/// The child grid of items [first, first + count), whose `outputs` outputs are numbered one
/// after the other: item j's run from first_output[j] (first_output[first] is 0). Thread g
/// writes output g: out[j * kMaxOutputsPerItem + k] = values[j] * (k + 1), with j the item
/// and k = g - first_output[j]. The grid counts itself once in *child_grids. (Given.)
__global__ void expand_child(const unsigned* first_output, const float* values, float* out, unsigned first,
                             unsigned count, unsigned outputs, unsigned* child_grids) {
  if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(child_grids, 1u);
  const unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= outputs) return;
  // The last item j with first_output[j] <= g. Items without outputs share the first output of
  // the item after them, so the search passes over them to the item that owns output g.
  unsigned lo = first;          // first_output[lo] <= g
  unsigned hi = first + count;  // the items from hi on start after g (or do not exist)
  while (hi - lo > 1) {
    const unsigned mid = lo + (hi - lo) / 2;
    if (first_output[mid] <= g) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  const unsigned k = g - first_output[lo];
  out[static_cast<std::size_t>(lo) * kMaxOutputsPerItem + k] = values[lo] * static_cast<float>(k + 1);
}

/// The baseline (given): every thread with work launches a child for its own item.
__global__ void thread_parent(const unsigned* counts, unsigned items, const float* values, float* out,
                              unsigned* first_output, unsigned* child_grids) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= items || counts[i] == 0) return;  // no work, no child: a grid of zero blocks fails to launch
  first_output[i] = 0;                       // the child's only item: its outputs start at 0
  expand_child<<<child_blocks(counts[i]), kExpandChildThreads, 0, cudaStreamFireAndForget>>>(
      first_output, values, out, i, 1, counts[i], child_grids);
  CDPLAB_CHECK_LAUNCH();
}

/// Lane 0 of every warp launches one child for the warp's items (items 32w .. 32w + 31 of the
/// grid's warp w, those that exist), when they have any outputs.
__global__ void warp_parent(const unsigned* counts, unsigned items, const float* values, float* out,
                            unsigned* first_output, unsigned* child_grids) {
  // BEGIN SOLUTION
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned lane = threadIdx.x % kWarpThreads;
  // No early return: every lane takes part in the shuffles; a lane past the end counts 0.
  const unsigned count = i < items ? counts[i] : 0;
  const unsigned inclusive = warp_inclusive_scan(count);
  if (i < items) first_output[i] = inclusive - count;  // exclusive: the outputs of the lanes below
  const unsigned total = __shfl_sync(0xffffffffu, inclusive, kWarpThreads - 1);
  __syncwarp();  // every lane's first_output is written before lane 0 launches the child that reads it
  if (lane == 0 && total > 0) {
    const unsigned warp_items = items - i < kWarpThreads ? items - i : kWarpThreads;
    expand_child<<<child_blocks(total), kExpandChildThreads, 0, cudaStreamFireAndForget>>>(
        first_output, values, out, i, warp_items, total, child_grids);
    CDPLAB_CHECK_LAUNCH();
  }
  // END SOLUTION
  //| // TODO(aggregation): one child grid for the items of this warp. No early return: every
  //| // lane takes part in the shuffles, and a lane whose item does not exist (i >= items)
  //| // counts 0 outputs.
  //| // - Scan: with __shfl_up_sync(0xffffffff, value, offset) for offset 1, 2, 4, 8, 16, add the
  //| //   value of the lane `offset` below (if lane >= offset): the inclusive sum of the counts
  //| //   of lanes 0 .. lane. Its exclusive sum (inclusive - own count) is the item's first
  //| //   output; lane 31's inclusive sum, fetched with __shfl_sync, is the warp's total.
  //| // - Every lane with an item writes its first output to first_output[i] (global memory:
  //| //   the child reads it); then __syncwarp().
  //| // - Lane 0, when the total is not 0: launch expand_child like thread_parent does, over
  //| //   the warp's items (first = lane 0's item; count = the warp's items that exist) and
  //| //   `total` outputs, with child_blocks(total) blocks; check it with CDPLAB_CHECK_LAUNCH().
  //| CDPLAB_TODO();
}

/// Thread 0 of every parent block launches one child for the block's items (those that exist),
/// when they have any outputs.
__global__ void block_parent(const unsigned* counts, unsigned items, const float* values, float* out,
                             unsigned* first_output, unsigned* child_grids) {
  // BEGIN SOLUTION
  __shared__ unsigned warp_offsets[kAggregationParentThreads / kWarpThreads];  // each warp's first output
  __shared__ unsigned block_total;
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned lane = threadIdx.x % kWarpThreads;
  const unsigned warp = threadIdx.x / kWarpThreads;
  // No early return: every thread takes part in the scan and reaches the barriers.
  const unsigned count = i < items ? counts[i] : 0;
  const unsigned inclusive = warp_inclusive_scan(count);
  if (lane == kWarpThreads - 1) warp_offsets[warp] = inclusive;  // the warp's total
  __syncthreads();
  if (threadIdx.x == 0) {  // eight warp totals: one thread turns them into offsets
    unsigned running = 0;
    for (unsigned w = 0; w < blockDim.x / kWarpThreads; ++w) {
      const unsigned warp_total = warp_offsets[w];
      warp_offsets[w] = running;
      running += warp_total;
    }
    block_total = running;
  }
  __syncthreads();
  if (i < items) first_output[i] = warp_offsets[warp] + inclusive - count;
  __syncthreads();  // every first_output is written before thread 0 launches the child that reads them
  if (threadIdx.x == 0 && block_total > 0) {
    const unsigned block_items = items - i < blockDim.x ? items - i : blockDim.x;
    expand_child<<<child_blocks(block_total), kExpandChildThreads, 0, cudaStreamFireAndForget>>>(
        first_output, values, out, i, block_items, block_total, child_grids);
    CDPLAB_CHECK_LAUNCH();
  }
  // END SOLUTION
  //| // TODO(aggregation): one child grid for the items of this block. No early return: every
  //| // thread takes part in the scan and reaches every __syncthreads(); a thread whose item
  //| // does not exist counts 0 outputs.
  //| // - Scan the counts over the block: each warp scans its own (as in warp_parent); lane 31
  //| //   writes the warp's total to a __shared__ array of blockDim.x / 32 entries;
  //| //   __syncthreads(); one thread turns those totals into each warp's first output (an
  //| //   exclusive scan of eight numbers) and keeps the block's total in __shared__ memory;
  //| //   __syncthreads(). An item's first output is its warp's plus its exclusive sum within
  //| //   the warp.
  //| // - Every thread with an item writes it to first_output[i]; __syncthreads().
  //| // - Thread 0, when the block's total is not 0: launch expand_child over the block's items
  //| //   (first = thread 0's item; count = the block's items that exist) and the block's total
  //| //   outputs, as thread_parent does; check it with CDPLAB_CHECK_LAUNCH().
  //| CDPLAB_TODO();
}

namespace {

/// Throws std::invalid_argument unless the items fit the exercise's limits.
void check_items(const std::vector<unsigned>& counts, const std::vector<float>& values) {
  if (counts.size() != values.size()) {
    throw std::invalid_argument("expand_items: " + std::to_string(counts.size()) + " counts but " +
                                std::to_string(values.size()) + " values; expected one of each per item");
  }
  if (counts.size() > (std::size_t{1} << 26)) throw std::invalid_argument("expand_items: at most 2^26 items");
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > kMaxOutputsPerItem) {
      throw std::invalid_argument("expand_items: item " + std::to_string(i) + " has " + std::to_string(counts[i]) +
                                  " outputs, more than kMaxOutputsPerItem = " + std::to_string(kMaxOutputsPerItem));
    }
  }
}

/// The most child grids a parent of `items` items launches with `how`: one per item, per warp
/// or per block. Each holds a pool entry at least until its grid starts to run, and all may wait
/// at once.
std::size_t most_children(std::size_t items, Aggregation how) {
  switch (how) {
    case Aggregation::per_thread: return items;
    case Aggregation::per_warp: return (items + kWarpThreads - 1) / kWarpThreads;
    case Aggregation::per_block: return (items + kAggregationParentThreads - 1) / kAggregationParentThreads;
  }
  return items;
}

/// Launches the device runtime may need beyond the exercise's own (a small margin).
constexpr std::size_t kPendingLaunchMargin = 64;

}  // namespace

ExpandRun expand_items(const std::vector<unsigned>& counts, const std::vector<float>& values, Aggregation how) {
  check_items(counts, values);
  if (how != Aggregation::per_thread && how != Aggregation::per_warp && how != Aggregation::per_block) {
    throw std::invalid_argument("expand_items: unknown aggregation " + std::to_string(static_cast<int>(how)));
  }
  ExpandRun run;
  run.out.assign(counts.size() * kMaxOutputsPerItem, 0.0f);
  if (counts.empty()) return run;
  const auto items = static_cast<unsigned>(counts.size());
  // Every child may still be pending when the last one is launched: the pool holds them all.
  // CDP2 fails the launches beyond it (2048 by default), and per thread 100000 items need far more.
  reserve_pending_launches(most_children(counts.size(), how) + kPendingLaunchMargin);

  DeviceArray<unsigned> device_counts(counts);
  DeviceArray<float> device_values(values);
  DeviceArray<float> out(run.out.size());            // zero: the slots no output fills stay 0
  DeviceArray<unsigned> first_output(counts.size());  // the parents' scans, read by the children
  DeviceArray<unsigned> child_grids(1);

  reset_device_report();
  const unsigned blocks = (items + kAggregationParentThreads - 1) / kAggregationParentThreads;
  switch (how) {
    case Aggregation::per_thread:
      thread_parent<<<blocks, kAggregationParentThreads>>>(device_counts.data(), items, device_values.data(),
                                                           out.data(), first_output.data(), child_grids.data());
      break;
    case Aggregation::per_warp:
      warp_parent<<<blocks, kAggregationParentThreads>>>(device_counts.data(), items, device_values.data(),
                                                         out.data(), first_output.data(), child_grids.data());
      break;
    case Aggregation::per_block:
      block_parent<<<blocks, kAggregationParentThreads>>>(device_counts.data(), items, device_values.data(),
                                                          out.data(), first_output.data(), child_grids.data());
      break;
  }
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());  // the parent grid and every child grid
  throw_if_device_reported();

  run.out = out.download();
  run.child_grids = child_grids.download().front();
  return run;
}

}  // namespace cdplab::streams
