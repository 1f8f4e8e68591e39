/// @file fundamentals.h
/// @brief Chapter 01 (fundamentals): the host entry points of its four exercises.
///
/// Each function uploads its input to global memory, launches the exercise's parent kernel,
/// waits for the whole tree of grids on the host, and returns what the kernels wrote.
/// Every function reports failures by exception:
///  - cdplab::NotImplemented when device or host code reached a CDPLAB_TODO(),
///  - cdplab::DeviceLaunchError when a launch made from device code failed,
///  - cdplab::CudaError when a host-side CUDA call failed (a kernel fault shows up here),
///  - std::invalid_argument when the input breaks the contract stated below.
#pragma once

#include <vector>

namespace cdplab::fundamentals {

// ---------------------------------------------------------------------------------------
// a. child_grids.cu: one child grid per parent thread
// ---------------------------------------------------------------------------------------

/// Processes every element of a list of variable-length ranges, one child grid per range.
///
/// Item `i` owns the elements `values[offsets[i]] .. values[offsets[i+1] - 1]`; there are
/// `offsets.size() - 1` items and many of them may own no element at all.
/// Kernel `expand_parent` runs one thread per item; the thread of item `i` launches
/// `expand_child` over its range (and launches nothing when the range is empty), and the
/// child processes one element per thread:
///
///     out[j] = values[j] * 2 + i     for every j in item i's range
///
/// The `+ i` proves that element `j` was processed by the child of its own item.
///
/// @param offsets `items + 1` non-decreasing offsets, `offsets[0] == 0` and
///                `offsets[items] == values.size()`
/// @param values  the elements, fewer than 2^31 of them
/// @return `out`, of the size of `values`
std::vector<float> expand_ranges(const std::vector<unsigned>& offsets, const std::vector<float>& values);

// ---------------------------------------------------------------------------------------
// b. tail_continuation.cu: three dependent children and a continuation
// ---------------------------------------------------------------------------------------

/// The outputs of the three steps of the pipeline and of its continuation.
struct PipelineStages {
  std::vector<float> x;       ///< step_x's output
  std::vector<float> y;       ///< step_y's output
  std::vector<float> z;       ///< step_z's output
  std::vector<float> result;  ///< pipeline_finish's output
};

/// Runs a three-step pipeline launched by a single parent thread, and its continuation.
///
/// Kernel `pipeline_parent` (one thread) launches the multi-block grids `step_x`, `step_y`
/// and `step_z` one after the other into the NULL stream, then launches `pipeline_finish`
/// into `cudaStreamTailLaunch`. With `n = input.size()` and `i` in `[0, n)`:
///
///     x[i]      = 2 * input[i] + 1
///     y[i]      = x[n - 1 - i] - x[i]          (reads step_x's output, mirrored)
///     z[i]      = 0.5 * y[(i + 1) % n]         (reads step_y's output, shifted by one)
///     result[i] = x[i] + y[i] + z[i]           (the continuation reads all three)
///
/// Each step reads elements that other blocks of the step before it wrote, so a step is
/// only right if the grid before it had finished when it started.
///
/// @param input fewer than 2^31 values; an empty input gives empty outputs (nothing runs)
PipelineStages run_pipeline(const std::vector<float>& input);

// ---------------------------------------------------------------------------------------
// c. recursive_reduction.cu: a reduction that launches itself
// ---------------------------------------------------------------------------------------

/// The most levels recursive_sum accepts as `max_depth`.
constexpr unsigned kMaxReductionDepth = 16;

/// Contract: a level below `max_depth` launches enough blocks that no thread sums more than
/// this many of the level's input values.
constexpr unsigned kMaxItemsPerThread = 16;

/// What the device reports at the end of a recursive reduction.
struct ReductionResult {
  long long sum = 0;   ///< the sum of all input values
  unsigned depth = 0;  ///< how many levels (reduce_level grids, one after another) ran
};

/// Sums integers with a reduction whose depth depends on the input size.
///
/// Level 1 is a grid of `reduce_level` over the input; each block writes the sum of its
/// share as one partial. The level then launches the next level over its partials into
/// `cudaStreamTailLaunch`, so that it runs after every block of this level has finished.
/// The level whose grid has a single block writes the final sum and its depth. The level at
/// depth `max_depth` always runs as a single block that loops over all of its input.
///
/// Contract (what the checks rely on, and all they rely on):
///  - `sum` is exact (64-bit);
///  - `1 <= depth <= max_depth`; an empty input still runs one level and reports sum 0;
///  - a level below `max_depth` gives each thread at most kMaxItemsPerThread values, with at
///    most 1024 threads per block; so an input of more than 1024 * kMaxItemsPerThread values
///    needs at least two levels when `max_depth >= 2`.
///
/// @param values    the integers to sum, fewer than 2^32 of them
/// @param max_depth the most levels that may run, in `[1, kMaxReductionDepth]`
ReductionResult recursive_sum(const std::vector<int>& values, unsigned max_depth);

// ---------------------------------------------------------------------------------------
// d. shared_histogram.cu: block-shared counters and shared-memory atomics
// ---------------------------------------------------------------------------------------

/// The most buckets histogram accepts (their counters must fit in a block's shared memory).
constexpr unsigned kMaxHistogramBuckets = 4096;

/// Counts keys per bucket, where key `k` falls into bucket `k % buckets`.
///
/// Kernel `histogram_kernel` gives every block a set of counters in dynamic shared memory:
/// the block zeroes them, counts its keys into them with shared-memory atomics, and after a
/// `__syncthreads()` adds each non-zero counter to the global histogram with one global
/// atomic. An empty input still launches the kernel and gives a histogram of zeros.
///
/// @param keys    the keys, fewer than 2^32 of them
/// @param buckets the number of buckets, in `[1, kMaxHistogramBuckets]`
/// @return `buckets` counts that add up to `keys.size()`
std::vector<unsigned> histogram(const std::vector<unsigned>& keys, unsigned buckets);

}  // namespace cdplab::fundamentals
