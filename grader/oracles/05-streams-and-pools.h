/// @file 05-streams-and-pools.h
/// @brief CPU oracles of chapter 05: seeded inputs, reference results, and judges whose
///        messages say what was expected and what was found, for the quicksort (exercise c), fast
///        quicksort and launch aggregation (exercise d) exercises.
#pragma once

#include "compare.h"

#include "cdplab/random.h"
#include "cdplab/streams.h"

#include <cstddef>
#include <vector>

namespace cdplab::oracle::streams {

using cdplab::streams::Aggregation;
using cdplab::streams::FastSortRun;
using cdplab::streams::SortRun;

// ----- quicksort: inputs ----------------------------------------------------------------

/// `count` integers uniform over every int value, with INT_MIN and INT_MAX among them (when
/// `count` >= 2): the largest value is also what the block sort pads with.
std::vector<int> random_ints(Random& rng, std::size_t count);

/// `count` integers uniform in [lo, hi].
std::vector<int> random_ints(Random& rng, std::size_t count, int lo, int hi);

/// An organ pipe: base, base + 1, ..., rising to the middle and falling back to base at the
/// end. Median-of-three pivots (first, middle, last) pick one of the smallest values of such a
/// range, level after level: each split peels off a few elements, and the depth grows with the
/// length instead of its logarithm.
std::vector<int> organ_pipe(std::size_t count, int base);

// ----- quicksort: reference -------------------------------------------------------------

/// The most grids a sort of `n` values can run (the first one included), for any solution that
/// keeps the contract of quicksort(): only a grid whose range holds more than kBlockSortSize
/// values and lies above kQuicksortMaxDepth launches, two children each. At depth d there are
/// at most 2^d such grids, and at most n / (kBlockSortSize + 1), because their ranges do not
/// overlap. Every grid but the first is a device-side launch, so this bound minus one also
/// bounds the pending launch pool the sort needs.
std::size_t max_sort_grids(std::size_t n);

/// A model of the exercise's given partition (median of three moved into place, Hoare's
/// scheme): runs the recursion on a copy of `values` down to kQuicksortMaxDepth and returns the
/// length of the longest range still above kBlockSortSize at that depth, the range the
/// depth-limit fallback has to sort (0 when the recursion never gets that deep).
std::size_t largest_range_at_depth_limit(const std::vector<int>& values);

/// The device-side launches the exercise's recursion makes on `values` with the given partition
/// (the model above): two for each range it partitions.
std::size_t model_sort_launches(const std::vector<int>& values);

// ----- quicksort: judging ---------------------------------------------------------------

/// Judges a sorted array against std::sort of the input. The message names the first index
/// where they differ with both values, how many differ, and whether the array found is out of
/// order (and where) or holds values that are not the input's.
Verdict judge_sorted(const std::vector<int>& input, const std::vector<int>& found);

/// Judges a whole run: the values (judge_sorted); the depth within [0, kQuicksortMaxDepth];
/// the grids counted, which a correct sort of n values keeps within
/// [1 + 2 * max_depth, max_sort_grids(n)] (a grid at depth d has d ancestors, each of which
/// launched two children); and, when n > kBlockSortSize, at least one partition (3 grids,
/// depth 1 or more).
Verdict judge_sort_run(const std::vector<int>& input, const SortRun& run);

// ----- fast quicksort -------------------------------------------------------------------

/// The most ranges a fast sort of `n` values can partition, for any solution that keeps the
/// contract of fast_quicksort_device: only a range of more than kFastSortBlockMax values above
/// level kFastSortMaxDepth is partitioned. At level d there are at most 2^d such ranges, and at
/// most n / (kFastSortBlockMax + 1), because the ranges of one level do not overlap.
std::size_t max_fast_sort_partitions(std::size_t n);

/// Judges a fast sort: the values (judge_sorted); the deepest level within [0,
/// kFastSortMaxDepth]; the partitions at least 1 when n > kFastSortBlockMax, at most
/// max_fast_sort_partitions(n), and at most the number of different values of the input (a
/// three-way partition around a value of the range takes every copy of that value out of the
/// recursion, so a value is the pivot of at most one partition); block sorts of ranges longer
/// than kFastSortBlockMax only at the depth limit.
Verdict judge_fast_sort_run(const std::vector<int>& input, const FastSortRun& run);

// ----- aggregation ----------------------------------------------------------------------

/// Items per parent block of exercise d (its threads per block) and per warp.
constexpr std::size_t kItemsPerBlock = 256;
/// Items per warp of exercise d's parents.
constexpr std::size_t kItemsPerWarp = 32;

/// How many consecutive items one child grid of `how` covers: 1, a warp, a parent block.
std::size_t items_per_child(Aggregation how);

/// What one child grid serves under `how`, for messages: "item", "warp" or "parent block".
const char* group_word(Aggregation how);

/// `count` output counts uniform in [0, max_count].
std::vector<unsigned> random_counts(Random& rng, std::size_t count, unsigned max_count);

/// `count` output counts in [0, kMaxOutputsPerItem], most of them 0: whole parent blocks of
/// zeros (the second block, and a third of the others), whole warps of zeros inside blocks that
/// have work (the fourth warp of the first block, and half of the others), and 60 % zeros in
/// the remaining warps.
std::vector<unsigned> sparse_counts(Random& rng, std::size_t count);

/// The expected output of expand_items: out[i * kMaxOutputsPerItem + k] = values[i] * (k + 1)
/// for k < counts[i]; every other slot 0.
std::vector<float> expected_expansion(const std::vector<unsigned>& counts, const std::vector<float>& values);

/// Judges the outputs. A mismatch names the slot as item and output, the expected value and
/// formula, the value found, and how many slots and items are wrong.
Verdict judge_expansion(const std::vector<unsigned>& counts, const std::vector<float>& values,
                        const std::vector<float>& found);

/// How many groups of `group_size` consecutive items (items 0 .. group_size - 1 the first) have
/// at least one output.
std::size_t groups_with_work(const std::vector<unsigned>& counts, std::size_t group_size);

/// Judges the child grids counted by a run of `how`: at most one per group of
/// items_per_child(how) items that has work (none for a group without work), and at least one
/// when any item has work.
Verdict judge_child_grids(const std::vector<unsigned>& counts, Aggregation how, unsigned found);

}  // namespace cdplab::oracle::streams
