// Exercise recursive-reduction: a reduction that launches itself, one level per launch.
//
// Each level is a grid of reduce_level: every block sums its share of the level's input into
// one partial. If the grid had a single block, its partial is the answer. Otherwise the level
// launches the next level over its partials. The next level must not start before every
// block of this level has written its partial, and a CDP2 parent cannot wait for anything:
// the launch goes into cudaStreamTailLaunch, which starts the new grid only after the whole
// launching grid has finished. The depth follows from the input size, and max_depth bounds
// it: the level at max_depth runs as one block that loops over all of its input.
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/fundamentals.h"

#include <cstddef>
#include <stdexcept>
#include <string>

namespace cdplab::fundamentals {

/// Threads per block on every level; a multiple of 32 (block_sum adds whole warps).
inline constexpr unsigned kReduceThreads = 256;
/// Values each thread sums on a level below max_depth.
inline constexpr unsigned kItemsPerThread = 8;
static_assert(kItemsPerThread <= kMaxItemsPerThread, "the header's contract promises at most kMaxItemsPerThread");
static_assert(kReduceThreads % 32 == 0 && kReduceThreads <= 1024, "whole warps, a valid block size");

namespace {

/// Blocks of the level at `depth` over `n` values: enough that no thread sums more than
/// kItemsPerThread values, and at least one; a single block at `max_depth`.
__host__ __device__ unsigned level_blocks(unsigned long long n, unsigned depth, unsigned max_depth) {
  if (depth >= max_depth) return 1;
  const unsigned long long per_block = static_cast<unsigned long long>(kReduceThreads) * kItemsPerThread;
  const unsigned long long blocks = (n + per_block - 1) / per_block;
  return blocks == 0 ? 1u : static_cast<unsigned>(blocks);
}

/// The sum of `value` over the calling warp, valid in lane 0. The whole warp must call it.
__device__ long long warp_sum(long long value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  return value;
}

/// The sum of `value` over the block, valid in thread 0. Every thread of the block must call
/// it, once per kernel (its shared array is not guarded for reuse); blockDim.x % 32 == 0.
__device__ long long block_sum(long long value) {
  __shared__ long long warp_sums[32];
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  value = warp_sum(value);
  if (lane == 0) warp_sums[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < blockDim.x / 32 ? warp_sums[lane] : 0;
    value = warp_sum(value);
  }
  return value;
}

}  // namespace

/// One level of the reduction over in[0 .. n). Block b writes the sum of its share to out[b];
/// the grid then reports the total (a single block) or launches the next level over
/// out[0 .. gridDim.x), which writes its own partials into `in` (free by then).
__global__ void reduce_level(long long* in, unsigned long long n, long long* out, unsigned depth,
                             unsigned max_depth, ReductionResult* result) {
  // Each thread adds a strided share of the input, so any grid size covers all of it.
  long long sum = 0;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    sum += in[i];
  }
  sum = block_sum(sum);  // valid in thread 0
  // BEGIN SOLUTION
  if (threadIdx.x != 0) return;
  if (gridDim.x == 1) {  // this block saw every value: the recursion ends here
    result->sum = sum;
    result->depth = depth;
    return;
  }
  out[blockIdx.x] = sum;
  if (blockIdx.x == 0) {
    // The next level reads the partials of every block of this grid: a tail launch starts it
    // only after the whole grid has finished. One thread launches it, once.
    const unsigned next_blocks = level_blocks(gridDim.x, depth + 1, max_depth);
    reduce_level<<<next_blocks, blockDim.x, 0, cudaStreamTailLaunch>>>(out, gridDim.x, in, depth + 1, max_depth,
                                                                        result);
    CDPLAB_CHECK_LAUNCH();
  }
  // END SOLUTION
  //| // TODO(recursive-reduction): thread 0 of each block holds the block's sum.
  //| // - If the grid has one block, that sum is the total: store it and this level's depth
  //| //   in *result, and stop.
  //| // - Otherwise store it as out[blockIdx.x]; then ONE thread of the grid launches the next
  //| //   level over the gridDim.x partials into cudaStreamTailLaunch, with
  //| //   level_blocks(gridDim.x, depth + 1, max_depth) blocks of blockDim.x threads, reading
  //| //   `out` and writing into `in`. Check the launch with CDPLAB_CHECK_LAUNCH().
  //| if (threadIdx.x == 0) CDPLAB_TODO();
}

ReductionResult recursive_sum(const std::vector<int>& values, unsigned max_depth) {
  if (max_depth < 1 || max_depth > kMaxReductionDepth) {
    throw std::invalid_argument("recursive_sum: max_depth must be in [1, " + std::to_string(kMaxReductionDepth) +
                                "], found " + std::to_string(max_depth));
  }
  if (values.size() >= (std::size_t{1} << 32)) throw std::invalid_argument("recursive_sum: at most 2^32 - 1 values");

  // Every level adds 64-bit values; widening the input here lets one kernel serve all levels.
  const std::vector<long long> wide(values.begin(), values.end());
  const unsigned long long n = wide.size();
  const unsigned first_blocks = level_blocks(n, 1, max_depth);  // at least 1, even for no values

  // Ping-pong buffers: level 1 reads `input` and writes `partials`, level 2 reads `partials`
  // and writes `input`, and so on. No level has more blocks than level 1.
  DeviceArray<long long> input(wide);
  DeviceArray<long long> partials(first_blocks);
  DeviceArray<ReductionResult> result(std::size_t{1});

  reset_device_report();
  reduce_level<<<first_blocks, kReduceThreads>>>(input.data(), n, partials.data(), 1, max_depth, result.data());
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());  // every level: each one is part of the work of the one before
  throw_if_device_reported();
  return result.download().front();
}

}  // namespace cdplab::fundamentals
