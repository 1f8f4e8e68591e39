/// @file 01-fundamentals.h
/// @brief CPU oracles of chapter 01: reference results, seeded inputs, and judges whose
///        messages say what was expected and what was found, in the exercise's own terms.
#pragma once

#include "compare.h"

#include "cdplab/fundamentals.h"
#include "cdplab/random.h"

#include <cstddef>
#include <vector>

namespace cdplab::oracle::fundamentals {

// ----- child-grids ---------------------------------------------------------------------

/// Offsets of consecutive ranges of the given sizes: `sizes.size() + 1` entries, from 0.
std::vector<unsigned> offsets_from_sizes(const std::vector<unsigned>& sizes);

/// The item that owns element `j` (offsets[item] <= j < offsets[item + 1]).
std::size_t item_of(const std::vector<unsigned>& offsets, std::size_t j);

/// out[j] = values[j] * 2 + i for every element j of item i's range.
std::vector<float> expected_expansion(const std::vector<unsigned>& offsets, const std::vector<float>& values);

/// Judges expand_ranges' output; a mismatch names the element, its item and the item's range.
Verdict judge_expansion(const std::vector<unsigned>& offsets, const std::vector<float>& values,
                        const std::vector<float>& found);

// ----- tail-continuation ---------------------------------------------------------------

/// The four outputs of the pipeline, computed step by step as fundamentals.h defines them.
cdplab::fundamentals::PipelineStages expected_pipeline(const std::vector<float>& input);

/// Judges the outputs step by step and reports the first step whose output is wrong.
Verdict judge_pipeline(const std::vector<float>& input, const cdplab::fundamentals::PipelineStages& found);

// ----- recursive-reduction -------------------------------------------------------------

/// `count` integers uniform in [lo, hi].
std::vector<int> random_ints(Random& rng, std::size_t count, int lo, int hi);

/// The exact sum.
long long expected_sum(const std::vector<int>& values);

/// The fewest levels that every solution keeping the contract of recursive_sum runs over
/// `n` values: a level below `max_depth` leaves at least one partial per 1024 threads *
/// kMaxItemsPerThread values, and only a level that leaves one partial can stop.
unsigned min_levels(unsigned long long n, unsigned max_depth);

/// Judges a recursive sum: the exact total, and a depth within [min_levels, max_depth].
Verdict judge_reduction(const std::vector<int>& values, unsigned max_depth,
                        const cdplab::fundamentals::ReductionResult& found);

// ----- shared-histogram ----------------------------------------------------------------

/// `count` keys uniform over all 32-bit values.
std::vector<unsigned> random_keys(Random& rng, std::size_t count);

/// counts[b] = how many keys k have k % buckets == b.
std::vector<unsigned> expected_histogram(const std::vector<unsigned>& keys, unsigned buckets);

/// Judges a histogram: names the first wrong bucket and whether keys were lost or added.
Verdict judge_histogram(const std::vector<unsigned>& keys, unsigned buckets, const std::vector<unsigned>& found);

}  // namespace cdplab::oracle::fundamentals
