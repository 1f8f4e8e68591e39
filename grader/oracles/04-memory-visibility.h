/// @file 04-memory-visibility.h
/// @brief CPU oracles of chapter 04: reference results and judges whose messages say what was
///        expected and what was found, in the exercises' own terms.
#pragma once

#include "compare.h"

#include "cdplab/random.h"
#include "cdplab/visibility.h"

#include <cstddef>
#include <vector>

namespace cdplab::oracle::visibility {

// ----- private-pointers ----------------------------------------------------------------

/// Elements per segment of exercise private-pointers (one parent block and one child each).
constexpr std::size_t kSegmentSize = 256;

/// The scale of segment s: 0.5 * (s % 4).
float segment_scale(std::size_t segment);

/// out[i] = in[i] * (sum of i's segment) + segment_scale(i's segment), in double precision.
std::vector<double> expected_segment_scaling(const std::vector<float>& in);

/// Judges scale_by_segment_sums within a tolerance that covers the order of a float sum of
/// kSegmentSize values; a mismatch names the element, its segment and the segment's sum.
Verdict judge_segment_scaling(const std::vector<float>& in, const std::vector<float>& found);

// ----- tail-consumer -------------------------------------------------------------------

/// What the grader's delayed child writes: out[i] = in[i] * 3 + 1.
int child_value(int in);

/// result[i] = child_value(seed[i]) + seed[i].
std::vector<int> expected_consumption(const std::vector<int>& seed);

/// Judges consume_after_child; recognises results computed from a stale (still zero) child output.
Verdict judge_consumption(const std::vector<int>& seed, unsigned delay_ns, const std::vector<int>& found);

// ----- constant-params -----------------------------------------------------------------

/// p(x) = sum over k of coefficients[k] * x^k, in double precision.
double polynomial(const std::vector<float>& coefficients, double x);

/// Judges evaluate_polynomial: |found - p(x)| may be up to a relative 1e-5 of
/// sum |coefficients[k]| * |x|^k (the rounding a float Horner evaluation can make), plus 1e-6.
Verdict judge_polynomial(const std::vector<float>& x, const std::vector<float>& coefficients,
                         const std::vector<float>& found);

// ----- device-heap ---------------------------------------------------------------------

/// The sum of 1 .. size: size * (size + 1) / 2.
unsigned long long expected_scratch_sum(unsigned size);

/// Judges the sums of a heap_scratch_sums run (not its host_free_error).
Verdict judge_scratch_sums(const std::vector<unsigned>& sizes, const cdplab::visibility::HeapRun& found);

}  // namespace cdplab::oracle::visibility
