#include "05-streams-and-pools.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>

namespace cdplab::oracle::streams {

using cdplab::streams::kBlockSortSize;
using cdplab::streams::kFastSortBlockMax;
using cdplab::streams::kFastSortMaxDepth;
using cdplab::streams::kMaxOutputsPerItem;
using cdplab::streams::kQuicksortMaxDepth;

namespace {

/// The most ranges longer than `leaf` values that a recursion halving `n` values can meet in its
/// first `levels` levels: at most 2^d at depth d, and at most n / (leaf + 1) at any one depth
/// (they do not overlap).
std::size_t most_ranges_above(std::size_t n, std::size_t leaf, int levels) {
  const std::size_t per_level_limit = n / (leaf + 1);
  std::size_t ranges = 0;
  std::size_t per_level = 1;
  for (int depth = 0; depth < levels; ++depth, per_level *= 2) ranges += std::min(per_level, per_level_limit);
  return ranges;
}

// ----- quicksort helpers ----------------------------------------------------------------

/// The exercise's given partition of data[left .. right] (both included, more than two
/// elements): the median of the first, middle and last value is moved to the middle and is the
/// pivot; Hoare's scheme then returns split with left <= split < right, every value of
/// [left, split] <= pivot <= every value of [split + 1, right].
int model_partition(std::vector<int>& data, int left, int right) {
  const int mid = left + (right - left) / 2;
  if (data[mid] < data[left]) std::swap(data[mid], data[left]);
  if (data[right] < data[mid]) std::swap(data[right], data[mid]);
  if (data[mid] < data[left]) std::swap(data[mid], data[left]);
  const int pivot = data[mid];
  int i = left - 1;
  int j = right + 1;
  for (;;) {
    do ++i; while (data[i] < pivot);
    do --j; while (data[j] > pivot);
    if (i >= j) return j;
    std::swap(data[i], data[j]);
  }
}

/// What the model recursion saw: the longest range that reached kQuicksortMaxDepth above
/// kBlockSortSize, and how many ranges it partitioned.
struct ModelRun {
  std::size_t longest = 0;
  std::size_t partitions = 0;
};

/// The recursion of the exercise on the model partition, without sorting the small ranges.
void model_recursion(std::vector<int>& data, int left, int right, int depth, ModelRun& run) {
  const auto count = static_cast<std::size_t>(right - left + 1);
  if (count <= kBlockSortSize) return;
  if (depth >= kQuicksortMaxDepth) {
    run.longest = std::max(run.longest, count);
    return;
  }
  ++run.partitions;
  const int split = model_partition(data, left, right);
  model_recursion(data, left, split, depth + 1, run);
  model_recursion(data, split + 1, right, depth + 1, run);
}

ModelRun run_model(const std::vector<int>& values) {
  ModelRun run;
  if (values.empty()) return run;
  std::vector<int> data = values;
  model_recursion(data, 0, static_cast<int>(data.size()) - 1, 0, run);
  return run;
}

/// The first index where `values` decreases (values[i] > values[i + 1]); size() when sorted.
std::size_t first_descent(const std::vector<int>& values) {
  for (std::size_t i = 0; i + 1 < values.size(); ++i) {
    if (values[i] > values[i + 1]) return i;
  }
  return values.size();
}

/// How many values of `want` are missing from `got` and how many of `got` are not in `want`
/// (both sorted), counting repeated values as often as they appear; the first of each.
struct MultisetDifference {
  std::size_t missing = 0;
  std::size_t extra = 0;
  int first_missing = 0;
  int first_extra = 0;
};

MultisetDifference multiset_difference(const std::vector<int>& want, const std::vector<int>& got) {
  MultisetDifference d;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < want.size() || j < got.size()) {
    if (j == got.size() || (i < want.size() && want[i] < got[j])) {
      if (d.missing++ == 0) d.first_missing = want[i];
      ++i;
    } else if (i == want.size() || got[j] < want[i]) {
      if (d.extra++ == 0) d.first_extra = got[j];
      ++j;
    } else {
      ++i;
      ++j;
    }
  }
  return d;
}

/// `values` in ascending order. From 65536 values on, a radix sort (two passes of 16 bits, the sign
/// bit flipped): 10 million ints in about a fifth of std::sort's time, which every run of the
/// largest sort checks pays twice, in the student's process and in its judge.
std::vector<int> sorted_ints(const std::vector<int>& values) {
  constexpr std::size_t kRadixFrom = 65536;
  if (values.size() < kRadixFrom) {
    std::vector<int> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    return sorted;
  }
  constexpr std::uint32_t kSign = 0x80000000u;  // flipped, the unsigned order is the signed one
  std::vector<std::uint32_t> keys(values.size());
  std::vector<std::uint32_t> next(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) keys[i] = static_cast<std::uint32_t>(values[i]) ^ kSign;
  for (const int shift : {0, 16}) {
    std::vector<std::size_t> start(65536 + 1, 0);
    for (const std::uint32_t k : keys) ++start[((k >> shift) & 0xffffu) + 1];
    for (std::size_t digit = 1; digit < start.size(); ++digit) start[digit] += start[digit - 1];
    for (const std::uint32_t k : keys) next[start[(k >> shift) & 0xffffu]++] = k;
    keys.swap(next);
  }
  std::vector<std::uint32_t>().swap(next);  // 40 MB for 10M values, not held beside the result
  std::vector<int> sorted(values.size());
  for (std::size_t i = 0; i < keys.size(); ++i) sorted[i] = static_cast<int>(keys[i] ^ kSign);
  return sorted;
}

// ----- aggregation helpers --------------------------------------------------------------

/// values[i] * (k + 1), as the exercise computes it (one float multiplication).
float expected_output(const std::vector<float>& values, std::size_t item, std::size_t k) {
  return values[item] * static_cast<float>(k + 1);
}

}  // namespace

// ----- quicksort: inputs ----------------------------------------------------------------

std::vector<int> random_ints(Random& rng, std::size_t count) {
  std::vector<int> values = random_ints(rng, count, INT_MIN, INT_MAX);
  if (count >= 2) {
    // The extremes at two different random places: INT_MAX equals the block sort's padding.
    const auto last = static_cast<std::int64_t>(count) - 1;
    const auto high = static_cast<std::size_t>(rng.integer(0, last));
    auto low = static_cast<std::size_t>(rng.integer(0, last - 1));
    if (low >= high) ++low;
    values[high] = INT_MAX;
    values[low] = INT_MIN;
  }
  return values;
}

std::vector<int> random_ints(Random& rng, std::size_t count, int lo, int hi) {
  std::vector<int> values(count);
  for (int& v : values) v = static_cast<int>(rng.integer(lo, hi));
  return values;
}

std::vector<int> organ_pipe(std::size_t count, int base) {
  std::vector<int> values(count);
  const std::size_t half = (count + 1) / 2;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t rise = i < half ? i : count - 1 - i;
    values[i] = base + static_cast<int>(rise);
  }
  return values;
}

// ----- quicksort: reference -------------------------------------------------------------

std::size_t max_sort_grids(std::size_t n) {
  // The root, and two children for each range that is split.
  return 1 + 2 * most_ranges_above(n, kBlockSortSize, kQuicksortMaxDepth);
}

std::size_t largest_range_at_depth_limit(const std::vector<int>& values) { return run_model(values).longest; }

std::size_t model_sort_launches(const std::vector<int>& values) { return 2 * run_model(values).partitions; }

// ----- quicksort: judging ---------------------------------------------------------------

Verdict judge_sorted(const std::vector<int>& input, const std::vector<int>& found) {
  std::ostringstream out;
  if (found.size() != input.size()) {
    out << "the sort returned " << found.size() << " values for an input of " << input.size()
        << ": expected the same values back, in ascending order";
    return fail(out.str());
  }
  const std::vector<int> expected = sorted_ints(input);
  std::size_t first = found.size();
  std::size_t differ = 0;
  for (std::size_t i = 0; i < found.size(); ++i) {
    if (found[i] != expected[i] && differ++ == 0) first = i;
  }
  if (differ == 0) return pass();

  out << "sorted[" << first << "]: expected " << expected[first] << ", found " << found[first] << " (" << differ
      << " of " << found.size() << " values differ from std::sort of the input). ";
  const MultisetDifference d = multiset_difference(expected, sorted_ints(found));
  if (d.missing != 0 || d.extra != 0) {
    out << "The values returned are not the input's: " << d.missing << " input values are missing (the first: "
        << d.first_missing << ") and " << d.extra << " values are not in the input or appear too often (the first: "
        << d.first_extra << "). A value is lost when two grids write the same elements: the children's ranges must "
        << "not overlap, and a block sort must write back only the `count` values of its range, never the padding";
    return fail(out.str());
  }
  const std::size_t descent = first_descent(found);
  out << "The values are the input's, but out of order: sorted[" << descent << "] = " << found[descent]
      << " > sorted[" << descent + 1 << "] = " << found[descent + 1]
      << ". Some range was left unsorted or was partitioned wrongly; every range must be sorted by one block, "
      << "sorted by the depth-limit fallback, or partitioned and both parts launched";
  return fail(out.str());
}

Verdict judge_sort_run(const std::vector<int>& input, const SortRun& run) {
  if (Verdict values = judge_sorted(input, run.sorted); !values.ok) return values;
  const std::size_t n = input.size();
  std::ostringstream out;
  if (run.max_depth > kQuicksortMaxDepth) {
    out << "a grid ran at depth " << run.max_depth << ", deeper than kQuicksortMaxDepth = " << kQuicksortMaxDepth
        << ": a grid at that depth sorts its range in place (the fallback), however long, and launches nothing";
    return fail(out.str());
  }
  if (run.max_depth < 0) {
    out << "the deepest level recorded is " << run.max_depth << "; the first grid is level 0 and each child is "
        << "one level deeper than its parent (depth + 1)";
    return fail(out.str());
  }
  if (n == 0) return pass();  // nothing to sort: no grid has to run
  const std::size_t most = max_sort_grids(n);
  // Only the grids on the path down to the deepest one are certain: a sort may launch no child
  // for a part too short to need one (a single value, say), so an ancestor may have one child.
  const auto least = 1 + static_cast<std::size_t>(run.max_depth);
  if (run.grids < least) {
    out << run.grids << " grids counted, but a grid ran at depth " << run.max_depth << ": it and its " << run.max_depth
        << " ancestors make at least " << least << " grids. Each grid counts itself once, and each child is "
        << "launched with depth + 1";
    return fail(out.str());
  }
  if (run.grids > most) {
    out << run.grids << " grids ran for " << n << " values; a sort that launches only for ranges of more than "
        << kBlockSortSize << " values, two children each, above depth " << kQuicksortMaxDepth << ", runs at most "
        << most << ". A range of at most " << kBlockSortSize << " values is sorted by its block, without children";
    return fail(out.str());
  }
  if (n > kBlockSortSize && (run.grids < 2 || run.max_depth < 1)) {
    out << n << " values, more than kBlockSortSize = " << kBlockSortSize << ", yet " << run.grids
        << " grid(s) ran and the deepest level is " << run.max_depth
        << ": the first grid must partition the range and launch both parts as children, one level deeper";
    return fail(out.str());
  }
  return pass();
}

// ----- fast quicksort -------------------------------------------------------------------

std::size_t max_fast_sort_partitions(std::size_t n) {
  return most_ranges_above(n, kFastSortBlockMax, kFastSortMaxDepth);
}

Verdict judge_fast_sort_run(const std::vector<int>& input, const FastSortRun& run) {
  if (Verdict values = judge_sorted(input, run.sorted); !values.ok) return values;
  const std::size_t n = input.size();
  const auto& stats = run.stats;
  std::ostringstream out;
  if (stats.max_depth < 0 || stats.max_depth > kFastSortMaxDepth) {
    out << "a grid ran at level " << stats.max_depth << "; the levels go from 0 (the whole array) to "
        << "kFastSortMaxDepth = " << kFastSortMaxDepth << ", where a range is sorted by one block however long, "
        << "and each half is one level deeper than its range (depth + 1)";
    return fail(out.str());
  }
  if (n > kFastSortBlockMax && stats.partitions == 0) {
    out << n << " values, more than kFastSortBlockMax = " << kFastSortBlockMax << ", yet no partition grid ran: "
        << "a range that long is partitioned by a grid sized to it (above the depth limit)";
    return fail(out.str());
  }
  const std::size_t most = max_fast_sort_partitions(n);
  if (stats.partitions > most) {
    out << stats.partitions << " partition grids ran for " << n << " values; a sort that partitions only ranges of "
        << "more than kFastSortBlockMax = " << kFastSortBlockMax << " values, above level " << kFastSortMaxDepth
        << ", runs at most " << most << ". A range of at most kFastSortBlockMax values is sorted by one block";
    return fail(out.str());
  }
  // The values are right, so run.sorted is the input sorted: count its different values.
  std::size_t distinct = n == 0 ? 0 : 1;
  for (std::size_t i = 1; i < n; ++i) distinct += run.sorted[i] != run.sorted[i - 1] ? 1 : 0;
  if (stats.partitions > distinct) {
    out << stats.partitions << " partition grids ran, but the input holds only " << distinct
        << " different values. A three-way partition puts every value equal to the pivot in the middle, where it "
        << "is final: the halves hold only values below and above it, so no value is the pivot twice. Start "
        << "only the values below the pivot and those above it, not the values equal to it";
    return fail(out.str());
  }
  if (stats.fallbacks > stats.block_sorts) {
    out << stats.fallbacks << " long block sorts counted among " << stats.block_sorts
        << " block sorts: the grids' records are inconsistent";
    return fail(out.str());
  }
  if (stats.fallbacks > 0 && stats.max_depth < kFastSortMaxDepth) {
    out << stats.fallbacks << " range(s) longer than kFastSortBlockMax = " << kFastSortBlockMax
        << " were sorted by one block, but no grid reached level kFastSortMaxDepth = " << kFastSortMaxDepth
        << ": above the depth limit a range that long is partitioned";
    return fail(out.str());
  }
  return pass();
}

// ----- aggregation ----------------------------------------------------------------------

const char* group_word(Aggregation how) {
  switch (how) {
    case Aggregation::per_thread: return "item";
    case Aggregation::per_warp: return "warp";
    case Aggregation::per_block: return "parent block";
  }
  return "group";
}

std::size_t items_per_child(Aggregation how) {
  switch (how) {
    case Aggregation::per_thread: return 1;
    case Aggregation::per_warp: return kItemsPerWarp;
    case Aggregation::per_block: return kItemsPerBlock;
  }
  return 1;
}

std::vector<unsigned> random_counts(Random& rng, std::size_t count, unsigned max_count) {
  std::vector<unsigned> counts(count);
  for (unsigned& c : counts) c = static_cast<unsigned>(rng.integer(0, max_count));
  return counts;
}

std::vector<unsigned> sparse_counts(Random& rng, std::size_t count) {
  std::vector<unsigned> counts(count, 0);
  for (std::size_t block = 0; block * kItemsPerBlock < count; ++block) {
    // Block 1 is idle for sure; a third of the others at random.
    if (block == 1 || (block != 0 && rng.integer(0, 2) == 0)) continue;
    for (std::size_t warp = 0; warp < kItemsPerBlock / kItemsPerWarp; ++warp) {
      // Warp 3 of block 0 is idle for sure; half of the others at random.
      if ((block == 0 && warp == 3) || rng.integer(0, 1) == 0) continue;
      const std::size_t begin = block * kItemsPerBlock + warp * kItemsPerWarp;
      const std::size_t end = std::min(begin + kItemsPerWarp, count);
      for (std::size_t i = begin; i < end; ++i) {
        // Most items of a working warp have no work either.
        counts[i] = rng.integer(0, 9) < 6 ? 0u : static_cast<unsigned>(rng.integer(1, kMaxOutputsPerItem));
      }
    }
  }
  return counts;
}

std::vector<float> expected_expansion(const std::vector<unsigned>& counts, const std::vector<float>& values) {
  std::vector<float> out(counts.size() * kMaxOutputsPerItem, 0.0f);
  for (std::size_t i = 0; i < counts.size(); ++i) {
    for (std::size_t k = 0; k < counts[i]; ++k) out[i * kMaxOutputsPerItem + k] = expected_output(values, i, k);
  }
  return out;
}

Verdict judge_expansion(const std::vector<unsigned>& counts, const std::vector<float>& values,
                        const std::vector<float>& found) {
  std::ostringstream out;
  out.precision(9);  // enough digits that floats outside the tolerance never print alike
  const std::size_t slots = counts.size() * kMaxOutputsPerItem;
  if (found.size() != slots) {
    out << "expand_items returned " << found.size() << " outputs for " << counts.size() << " items; expected "
        << kMaxOutputsPerItem << " slots per item, " << slots << " in all";
    return fail(out.str());
  }
  // One float multiplication: a wrong item or a wrong k is off by far more than this.
  constexpr double kAbsTol = 1e-6;
  constexpr double kRelTol = 1e-6;
  std::size_t first = slots;
  std::size_t wrong_slots = 0;
  std::size_t wrong_items = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    bool item_wrong = false;
    for (std::size_t k = 0; k < kMaxOutputsPerItem; ++k) {
      const std::size_t slot = i * kMaxOutputsPerItem + k;
      const double want = k < counts[i] ? expected_output(values, i, k) : 0.0;
      if (close(found[slot], want, kAbsTol, kRelTol)) continue;
      if (wrong_slots++ == 0) first = slot;
      item_wrong = true;
    }
    if (item_wrong) ++wrong_items;
  }
  if (wrong_slots == 0) return pass();

  const std::size_t item = first / kMaxOutputsPerItem;
  const std::size_t k = first % kMaxOutputsPerItem;
  out << "out[" << first << "], output " << k << " of item " << item << " (which has " << counts[item]
      << " outputs): ";
  if (k < counts[item]) {
    out << "expected values[" << item << "] * " << k + 1 << " = " << expected_output(values, item, k) << ", found "
        << found[first];
    if (found[first] == 0.0f) out << ": the slot was never written; is every output of the child's items covered?";
  } else if (counts[item] == 0) {
    out << "expected 0, found " << found[first] << ": this item has no outputs, all its slots stay 0";
  } else {
    out << "expected 0, found " << found[first] << ": only outputs 0 .. " << counts[item] - 1
        << " exist, the other slots of an item stay 0";
  }
  out << " (" << wrong_slots << " slots of " << wrong_items << " items are wrong)";
  return fail(out.str());
}

std::size_t groups_with_work(const std::vector<unsigned>& counts, std::size_t group_size) {
  std::size_t groups = 0;
  for (std::size_t begin = 0; begin < counts.size(); begin += group_size) {
    const std::size_t end = std::min(begin + group_size, counts.size());
    if (std::any_of(counts.begin() + static_cast<std::ptrdiff_t>(begin), counts.begin() + static_cast<std::ptrdiff_t>(end),
                    [](unsigned c) { return c != 0; })) {
      ++groups;
    }
  }
  return groups;
}

Verdict judge_child_grids(const std::vector<unsigned>& counts, Aggregation how, unsigned found) {
  const std::size_t group = items_per_child(how);
  const std::size_t groups = (counts.size() + group - 1) / group;
  const std::size_t working = groups_with_work(counts, group);
  const std::size_t items_working = groups_with_work(counts, 1);
  const char* word = group_word(how);
  std::ostringstream out;
  if (found > working) {
    out << found << " child grids ran for " << counts.size() << " items (" << items_working
        << " with work); expected at most one per " << word << " that has work: " << working << " of the " << groups
        << " " << word << "s have some. ";
    if (found >= items_working && how != Aggregation::per_thread) {
      out << "That is one child per item or more: one thread of each " << word
          << " launches a single child for all its items";
    } else {
      out << "No child for a " << word << " whose items have no outputs (a grid of zero blocks fails to launch), "
          << "and one child, not several, for the others";
    }
    return fail(out.str());
  }
  if (found == 0 && working > 0) {
    out << "no child grid ran, but " << working << " " << word << "s of the " << groups
        << " have work: each of them launches expand_child for its items";
    return fail(out.str());
  }
  return pass();
}

}  // namespace cdplab::oracle::streams
