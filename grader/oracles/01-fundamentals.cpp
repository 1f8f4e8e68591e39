#include "01-fundamentals.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

namespace cdplab::oracle::fundamentals {

using cdplab::fundamentals::PipelineStages;
using cdplab::fundamentals::ReductionResult;

// ----- child-grids ---------------------------------------------------------------------

std::vector<unsigned> offsets_from_sizes(const std::vector<unsigned>& sizes) {
  std::vector<unsigned> offsets(sizes.size() + 1, 0);
  unsigned long long total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    total += sizes[i];
    if (total > std::numeric_limits<unsigned>::max()) throw std::length_error("offsets_from_sizes: too many elements");
    offsets[i + 1] = static_cast<unsigned>(total);
  }
  return offsets;
}

std::size_t item_of(const std::vector<unsigned>& offsets, std::size_t j) {
  // The last offset not above j, skipping the empty items that share it.
  const auto after = std::upper_bound(offsets.begin(), offsets.end(), j);
  return static_cast<std::size_t>(after - offsets.begin()) - 1;
}

std::vector<float> expected_expansion(const std::vector<unsigned>& offsets, const std::vector<float>& values) {
  std::vector<float> out(values.size());
  for (std::size_t item = 0; item + 1 < offsets.size(); ++item) {
    for (std::size_t j = offsets[item]; j < offsets[item + 1]; ++j) {
      out[j] = values[j] * 2.0f + static_cast<float>(item);
    }
  }
  return out;
}

Verdict judge_expansion(const std::vector<unsigned>& offsets, const std::vector<float>& values,
                        const std::vector<float>& found) {
  if (found.size() != values.size()) {
    std::ostringstream out;
    out << "expand_ranges returned " << found.size() << " values for " << values.size()
        << " input values; expected one output per input value";
    return fail(out.str());
  }
  // Every output is values[j] * 2 + item, computed once in float: a wrong item index is off
  // by at least 1, far beyond this tolerance.
  constexpr double kAbsTol = 1e-3;
  constexpr double kRelTol = 1e-6;
  const auto expected = expected_expansion(offsets, values);
  const std::size_t items = offsets.size() - 1;
  std::size_t first = found.size();
  std::size_t wrong_elements = 0;
  std::size_t wrong_items = 0;
  for (std::size_t item = 0; item < items; ++item) {
    bool item_wrong = false;
    for (std::size_t j = offsets[item]; j < offsets[item + 1]; ++j) {
      if (close(found[j], expected[j], kAbsTol, kRelTol)) continue;
      if (wrong_elements++ == 0) first = j;
      item_wrong = true;
    }
    if (item_wrong) ++wrong_items;
  }
  if (wrong_elements == 0) return pass();

  const std::size_t item = item_of(offsets, first);
  const std::size_t begin = offsets[item];
  const std::size_t end = offsets[item + 1];
  std::ostringstream out;
  out.precision(9);  // enough digits that values outside the tolerance never print alike
  out << "out[" << first << "], element " << first - begin << " of item " << item << " (range [" << begin << ", "
      << end << "), " << end - begin << " elements): expected values[" << first << "] * 2 + " << item << " = "
      << expected[first] << ", found " << found[first];
  const double offset = static_cast<double>(found[first]) - 2.0 * static_cast<double>(values[first]);
  const double other_item = std::round(offset);
  if (found[first] == 0.0f) {
    out << ". It was never written: item " << item
        << "'s child grid must cover its whole range (enough blocks, starting at the range's first element)";
  } else if (std::fabs(offset - other_item) < 1e-3 && other_item >= 0 && other_item < static_cast<double>(items) &&
             static_cast<std::size_t>(other_item) != item) {
    out << ". That is the value for item " << static_cast<std::size_t>(other_item)
        << ": each child must be given the index of the item that launched it";
  }
  out << " (" << wrong_elements << " of " << found.size() << " elements differ, in " << wrong_items << " of "
      << items << " items)";
  return fail(out.str());
}

// ----- tail-continuation ---------------------------------------------------------------

PipelineStages expected_pipeline(const std::vector<float>& input) {
  const std::size_t n = input.size();
  PipelineStages s;
  s.x.resize(n);
  s.y.resize(n);
  s.z.resize(n);
  s.result.resize(n);
  for (std::size_t i = 0; i < n; ++i) s.x[i] = 2.0f * input[i] + 1.0f;
  for (std::size_t i = 0; i < n; ++i) s.y[i] = s.x[n - 1 - i] - s.x[i];
  for (std::size_t i = 0; i < n; ++i) s.z[i] = 0.5f * s.y[i + 1 < n ? i + 1 : 0];
  for (std::size_t i = 0; i < n; ++i) s.result[i] = s.x[i] + s.y[i] + s.z[i];
  return s;
}

Verdict judge_pipeline(const std::vector<float>& input, const PipelineStages& found) {
  constexpr double kAbsTol = 1e-5;
  constexpr double kRelTol = 1e-5;
  const PipelineStages expected = expected_pipeline(input);
  struct Stage {
    const std::vector<float>& found;
    const std::vector<float>& expected;
    const char* name;
    const char* advice;
  };
  const Stage stages[] = {
      {found.x, expected.x, "x (step_x's output)",
       "step_x computes x[i] = 2 * input[i] + 1; the parent launches it first"},
      {found.y, expected.y, "y (step_y's output)",
       "step_y computes y[i] = x[n-1-i] - x[i], reading what other blocks of step_x wrote: it is "
       "right only if step_x had finished when step_y started (launch both from one thread into "
       "the NULL stream, step_x first)"},
      {found.z, expected.z, "z (step_z's output)",
       "step_z computes z[i] = 0.5 * y[(i+1) % n], reading what other blocks of step_y wrote: it "
       "is right only if step_y had finished when step_z started"},
      {found.result, expected.result, "result (pipeline_finish's output)",
       "pipeline_finish computes result[i] = x[i] + y[i] + z[i] and must start after all three "
       "steps have finished; the parent cannot wait for them, so launch pipeline_finish into "
       "cudaStreamTailLaunch"},
  };
  for (const Stage& stage : stages) {
    Verdict verdict = compare_arrays(stage.found, stage.expected, stage.name, kAbsTol, kRelTol);
    if (!verdict) {
      verdict.message += " (n = " + std::to_string(input.size()) + "). " + stage.advice;
      return verdict;
    }
  }
  return pass();
}

// ----- recursive-reduction -------------------------------------------------------------

std::vector<int> random_ints(Random& rng, std::size_t count, int lo, int hi) {
  std::vector<int> values(count);
  for (auto& v : values) v = static_cast<int>(rng.integer(lo, hi));
  return values;
}

long long expected_sum(const std::vector<int>& values) {
  long long sum = 0;
  for (int v : values) sum += v;
  return sum;
}

unsigned min_levels(unsigned long long n, unsigned max_depth) {
  const unsigned long long per_block = 1024ull * cdplab::fundamentals::kMaxItemsPerThread;
  unsigned depth = 1;
  while (depth < max_depth && n > per_block) {
    n = (n + per_block - 1) / per_block;  // at least this many partials are left
    ++depth;
  }
  return depth;
}

Verdict judge_reduction(const std::vector<int>& values, unsigned max_depth, const ReductionResult& found) {
  const long long expected = expected_sum(values);
  const unsigned fewest = min_levels(values.size(), max_depth);
  std::ostringstream out;
  if (found.depth == 0) {
    out << "depth 0 and sum " << found.sum << " (expected " << expected << "): no level reported the total. "
        << "The level whose grid has a single block stores the total and its own depth in *result";
    return fail(out.str());
  }
  if (found.sum != expected) {
    out << "sum of " << values.size() << " values: expected " << expected << ", found " << found.sum << " (off by "
        << found.sum - expected << ", reported at depth " << found.depth << "). The sum is exact, so every "
        << "value must count once: a block partial lost or counted twice, or a level that read the partials "
        << "before every block of the level before it had written them (launch the next level into "
        << "cudaStreamTailLaunch), changes it";
    return fail(out.str());
  }
  if (found.depth > max_depth) {
    out << "depth " << found.depth << " exceeds max_depth = " << max_depth
        << ": the level at max_depth must finish the sum in a single block and launch nothing";
    return fail(out.str());
  }
  if (found.depth < fewest) {
    out << "depth " << found.depth << " for " << values.size() << " values with max_depth = " << max_depth
        << ": a level below max_depth sums at most 1024 threads * " << cdplab::fundamentals::kMaxItemsPerThread
        << " values per block, so at least " << fewest << " levels must run";
    return fail(out.str());
  }
  return pass();
}

// ----- shared-histogram ----------------------------------------------------------------

std::vector<unsigned> random_keys(Random& rng, std::size_t count) {
  std::vector<unsigned> keys(count);
  for (auto& k : keys) k = static_cast<unsigned>(rng.next() >> 32);
  return keys;
}

std::vector<unsigned> expected_histogram(const std::vector<unsigned>& keys, unsigned buckets) {
  std::vector<unsigned> counts(buckets, 0);
  for (unsigned k : keys) ++counts[k % buckets];
  return counts;
}

Verdict judge_histogram(const std::vector<unsigned>& keys, unsigned buckets, const std::vector<unsigned>& found) {
  std::ostringstream out;
  if (found.size() != buckets) {
    out << "histogram returned " << found.size() << " counts for " << buckets << " buckets";
    return fail(out.str());
  }
  const auto expected = expected_histogram(keys, buckets);
  std::size_t first = buckets;
  std::size_t wrong = 0;
  unsigned long long total = 0;
  for (std::size_t b = 0; b < buckets; ++b) {
    total += found[b];
    if (found[b] != expected[b] && wrong++ == 0) first = b;
  }
  if (wrong == 0) return pass();

  out << "bucket " << first << ": expected " << expected[first] << " keys, found " << found[first] << " (" << wrong
      << " of " << buckets << " buckets differ; the counts add up to " << total << " for " << keys.size()
      << " keys). ";
  if (total < keys.size()) {
    out << "Keys were lost: a block must zero its shared counters and __syncthreads() before counting, count with "
           "atomicAdd, and __syncthreads() again before it reads the counters";
  } else if (total > keys.size()) {
    out << "Keys were counted more than once: each block adds each of its counters to the global histogram "
           "once, after all of its keys are counted, and starts from counters set to zero";
  } else {
    out << "Every key was counted once, but some in the wrong bucket: key k belongs to bucket k % buckets";
  }
  return fail(out.str());
}

}  // namespace cdplab::oracle::fundamentals
