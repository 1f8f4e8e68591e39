// The CPU oracles of chapter 05 (streams and pools): the quicksort judges accept every correct
// run and reject wrong values, wrong order, and depths or grid counts no correct sort records;
// the check inputs are what they claim; the aggregation judges accept the reference and reject
// wrong slots and too many (or no) child grids, with messages that name the problem.
#include "verdict_checks.h"
#include <doctest/doctest.h>

#include "05-streams-and-pools.h"
#include "cdplab/random.h"
#include "cdplab/streams.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace oracle = cdplab::oracle::streams;
using cdplab::streams::Aggregation;
using cdplab::streams::kBlockSortSize;
using cdplab::streams::kMaxOutputsPerItem;
using cdplab::streams::kQuicksortMaxDepth;
using cdplab::streams::SortRun;

/// A run that a correct sort of `input` could have recorded: sorted values, depth 3, 7 grids.
SortRun good_run(const std::vector<int>& input) {
  SortRun run;
  run.sorted = input;
  std::sort(run.sorted.begin(), run.sorted.end());
  run.max_depth = input.size() > kBlockSortSize ? 3 : 0;
  run.grids = input.size() > kBlockSortSize ? 7 : 1;
  return run;
}

std::vector<int> sample_input(std::size_t n = 20000) {
  cdplab::Random rng(7);
  return oracle::random_ints(rng, n);
}

}  // namespace

// ----- quicksort -------------------------------------------------------------------------

TEST_CASE("oracle streams quicksort inputs are what they claim") {
  cdplab::Random rng(3);
  const auto values = oracle::random_ints(rng, 5000);
  REQUIRE(values.size() == 5000);
  CHECK(std::count(values.begin(), values.end(), INT_MAX) >= 1);
  CHECK(std::count(values.begin(), values.end(), INT_MIN) >= 1);
  CHECK(std::count_if(values.begin(), values.end(), [](int v) { return v < 0; }) > 1000);
  CHECK(oracle::random_ints(rng, 1).size() == 1);

  const auto small = oracle::random_ints(rng, 3000, 0, 7);
  CHECK(*std::min_element(small.begin(), small.end()) == 0);
  CHECK(*std::max_element(small.begin(), small.end()) == 7);

  const auto pipe = oracle::organ_pipe(9, -4);
  CHECK(pipe == std::vector<int>{-4, -3, -2, -1, 0, -1, -2, -3, -4});
  CHECK(oracle::organ_pipe(4, 10) == std::vector<int>{10, 11, 11, 10});
}

TEST_CASE("oracle streams organ pipes drive the given partition to the depth limit") {
  // The check "depth stays bounded" picks n in [96000, 104000]: each such pipe leaves a long
  // range for the depth-limit fallback, whatever its base.
  for (std::size_t n = 96000; n <= 104000; n += 997) {
    INFO("organ pipe of " << n);
    CHECK(oracle::largest_range_at_depth_limit(oracle::organ_pipe(n, -5000)) > 50000);
  }
  // The same partition splits sorted, reversed and equal values evenly: no fallback.
  std::vector<int> sorted(200000);
  for (std::size_t i = 0; i < sorted.size(); ++i) sorted[i] = static_cast<int>(i);
  CHECK(oracle::largest_range_at_depth_limit(sorted) == 0);
  CHECK(oracle::largest_range_at_depth_limit(std::vector<int>(sorted.rbegin(), sorted.rend())) == 0);
  CHECK(oracle::largest_range_at_depth_limit(std::vector<int>(200000, 3)) == 0);
  CHECK(oracle::largest_range_at_depth_limit({}) == 0);
}

TEST_CASE("oracle streams counts the launches of the given partition's recursion") {
  const auto ascending = [](std::size_t n) {
    std::vector<int> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<int>(i) - 1000;
    return values;
  };
  // Sorted values split in the middle: ranges of kBlockSortSize + 1 at level 3 still split, so
  // 15 ranges partition, two launches each; one value fewer at the top, and level 3 no longer does.
  const std::size_t balanced = std::size_t{kBlockSortSize + 1} << 3;
  CHECK(oracle::model_sort_launches(ascending(balanced)) == 30);
  CHECK(oracle::model_sort_launches(ascending(balanced - 8)) == 14);
  CHECK(oracle::model_sort_launches(ascending(kBlockSortSize)) == 0);
  CHECK(oracle::model_sort_launches(ascending(kBlockSortSize + 1)) == 2);
  CHECK(oracle::model_sort_launches({}) == 0);
  // The input of quicksort's check "sorted" that the pool must hold: 16382 launches.
  CHECK(oracle::model_sort_launches(ascending(std::size_t{kBlockSortSize + 1} << 12)) == 2 * ((1u << 13) - 1));
  // Within the bound the pool is sized from, which counts launches no input may reach.
  CHECK(oracle::model_sort_launches(ascending(balanced)) <= oracle::max_sort_grids(balanced) - 1);
}

TEST_CASE("oracle streams bounds the grids of a sort") {
  CHECK(oracle::max_sort_grids(0) == 1);
  CHECK(oracle::max_sort_grids(kBlockSortSize) == 1);
  CHECK(oracle::max_sort_grids(kBlockSortSize + 1) == 1 + 2 * static_cast<std::size_t>(kQuicksortMaxDepth));  // one range per level
  // 200000 values: at most 195 launching grids per level; levels 0..7 hold fewer (255 in all).
  CHECK(oracle::max_sort_grids(200000) == 1 + 2 * (255 + 8 * 195));
  // Levels hold at most 2^d grids: a huge input is bounded by the full tree of 16 levels.
  CHECK(oracle::max_sort_grids(std::size_t{1} << 40) == 1 + 2 * ((std::size_t{1} << kQuicksortMaxDepth) - 1));
  // The chapter's largest check needs more launches than the default pool of 2048.
  CHECK(oracle::max_sort_grids(std::size_t{1} << 22) - 1 > 2048);
}

TEST_CASE("oracle streams accepts a correct sort") {
  const auto input = sample_input();
  expect_pass(oracle::judge_sorted(input, good_run(input).sorted));
  expect_pass(oracle::judge_sort_run(input, good_run(input)));
  // The bounds themselves: the most grids, the deepest level with the fewest grids.
  SortRun edge = good_run(input);
  edge.grids = static_cast<unsigned>(oracle::max_sort_grids(input.size()));
  expect_pass(oracle::judge_sort_run(input, edge));
  edge.max_depth = kQuicksortMaxDepth;
  edge.grids = 1 + 2 * kQuicksortMaxDepth;
  expect_pass(oracle::judge_sort_run(input, edge));
  // A sort that launches no child for a part of one value (as the CUDA samples' simple CDP
  // quicksort does): the path down to the deepest grid may be all it ran.
  edge.grids = 1 + kQuicksortMaxDepth;
  expect_pass(oracle::judge_sort_run(input, edge));
  // A short input is one grid at depth 0; an empty one may run no grid.
  const std::vector<int> short_input(sample_input(300));
  expect_pass(oracle::judge_sort_run(short_input, good_run(short_input)));
  expect_pass(oracle::judge_sort_run({}, SortRun{}));
}

TEST_CASE("oracle streams rejects values out of order") {
  const auto input = sample_input();
  SortRun run = good_run(input);
  std::swap(run.sorted[100], run.sorted[101]);
  const std::string at100 = "sorted[100]: expected " + std::to_string(run.sorted[101]) + ", found " +
                            std::to_string(run.sorted[100]);
  expect_failure(oracle::judge_sorted(input, run.sorted),
                 {at100, "2 of 20000 values differ", "out of order: sorted[100]", "> sorted[101]"});
  expect_failure(oracle::judge_sort_run(input, run), {at100});

  // One range left as it was: many values differ, all of the input's.
  SortRun unsorted = good_run(input);
  std::reverse(unsorted.sorted.begin() + 5000, unsorted.sorted.begin() + 6000);
  expect_failure(oracle::judge_sorted(input, unsorted.sorted), {"sorted[5000]", "The values are the input's"});
}

TEST_CASE("oracle streams rejects values that are not the input's") {
  const auto input = sample_input();
  SortRun run = good_run(input);
  const int lost = run.sorted[500];
  run.sorted[500] = run.sorted[499];  // one value overwritten by its neighbour: sorted, but not the input
  expect_failure(oracle::judge_sorted(input, run.sorted),
                 {"sorted[500]: expected " + std::to_string(lost), "1 input values are missing (the first: " +
                  std::to_string(lost) + ")", "not the input's"});

  // The padding written back: INT_MAX where values were.
  SortRun padded = good_run(input);
  padded.sorted[0] = INT_MAX;
  expect_failure(oracle::judge_sorted(input, padded.sorted), {"sorted[0]", "found 2147483647", "padding"});

  expect_failure(oracle::judge_sorted(input, std::vector<int>(input.begin(), input.end() - 1)),
                 {"returned 19999 values for an input of 20000"});
}

// The judge sorts long inputs its own way (a radix sort from 65536 values): the extremes of int,
// negatives and duplicates, on both sides of that size, as std::sort orders them.
TEST_CASE("oracle streams judges long inputs with every int value as std::sort orders them") {
  for (const std::size_t n : {std::size_t{65535}, std::size_t{65536}, std::size_t{300000}}) {
    INFO(n << " values");
    std::vector<int> input = sample_input(n);
    for (std::size_t i = 0; i < n; i += 97) input[i] = INT_MIN + static_cast<int>(i % 3);
    for (std::size_t i = 50; i < n; i += 89) input[i] = INT_MAX - static_cast<int>(i % 2);
    for (std::size_t i = 20; i < n; i += 53) input[i] = static_cast<int>(i % 5) - 2;  // -2..2
    const SortRun run = good_run(input);
    expect_pass(oracle::judge_sorted(input, run.sorted));
    // Each wrong answer is told apart as before: a value lost, two swapped.
    std::vector<int> lost = run.sorted;
    lost[n / 2] = lost[n / 2 - 1];
    if (lost != run.sorted) expect_failure(oracle::judge_sorted(input, lost), {"not the input's"});
    std::vector<int> swapped = run.sorted;
    std::swap(swapped.front(), swapped.back());  // INT_MIN and INT_MAX
    expect_failure(oracle::judge_sorted(input, swapped),
                   {"sorted[0]: expected " + std::to_string(INT_MIN), "The values are the input's, but out of order"});
  }
}

TEST_CASE("oracle streams rejects depths and grid counts no correct sort records") {
  const auto input = sample_input();
  SortRun deep = good_run(input);
  deep.max_depth = kQuicksortMaxDepth + 1;
  deep.grids = 100;
  expect_failure(oracle::judge_sort_run(input, deep), {"depth 17", "kQuicksortMaxDepth = 16", "launches nothing"});

  SortRun negative = good_run(input);
  negative.max_depth = -1;
  expect_failure(oracle::judge_sort_run(input, negative), {"-1", "depth + 1"});

  SortRun few = good_run(input);
  few.max_depth = 5;
  few.grids = 5;  // depth 5 needs at least 6: the grid and its ancestors
  expect_failure(oracle::judge_sort_run(input, few), {"5 grids counted", "depth 5", "at least 6"});

  SortRun many = good_run(input);
  many.grids = static_cast<unsigned>(oracle::max_sort_grids(input.size()) + 1);
  expect_failure(oracle::judge_sort_run(input, many),
                 {std::to_string(many.grids) + " grids ran for 20000 values", "sorted by its block"});

  SortRun one_child = good_run(input);  // a first grid with a single child at depth 1 would be fine...
  one_child.max_depth = 1;
  one_child.grids = 2;
  expect_pass(oracle::judge_sort_run(input, one_child));
  SortRun flat = good_run(input);  // ...but sorted by the first grid alone: no recursion
  flat.max_depth = 0;
  flat.grids = 1;
  expect_failure(oracle::judge_sort_run(input, flat), {"more than kBlockSortSize", "launch both parts"});

  // A short input sorted with children: more grids than the one a range of <= 1024 values needs.
  const auto short_input = sample_input(1000);
  SortRun split_short = good_run(short_input);
  split_short.max_depth = 1;
  split_short.grids = 3;
  expect_failure(oracle::judge_sort_run(short_input, split_short), {"3 grids ran for 1000 values", "at most 1"});

  // Wrong values are reported before the counts.
  SortRun both = deep;
  both.sorted[0] = both.sorted[1] + 1;
  expect_failure(oracle::judge_sort_run(input, both), {"sorted[0]"});
}

// ----- fast quicksort --------------------------------------------------------------------

namespace {

/// A fast sort run that a correct sort of `input` could have recorded.
cdplab::streams::FastSortRun good_fast_run(const std::vector<int>& input) {
  cdplab::streams::FastSortRun run;
  run.sorted = input;
  std::sort(run.sorted.begin(), run.sorted.end());
  const bool partitioned = input.size() > cdplab::streams::kFastSortBlockMax;
  run.stats.partitions = partitioned ? 3 : 0;
  run.stats.block_sorts = partitioned ? 4 : 1;
  run.stats.max_depth = partitioned ? 2 : 0;
  return run;
}

}  // namespace

TEST_CASE("oracle streams bounds the partitions of a fast sort") {
  using cdplab::streams::kFastSortBlockMax;
  using cdplab::streams::kFastSortMaxDepth;
  CHECK(oracle::max_fast_sort_partitions(0) == 0);
  CHECK(oracle::max_fast_sort_partitions(kFastSortBlockMax) == 0);
  CHECK(oracle::max_fast_sort_partitions(kFastSortBlockMax + 1) == static_cast<std::size_t>(kFastSortMaxDepth));
  // Enough values for every level to be full: 2^0 + ... + 2^(depth - 1).
  const std::size_t full = (std::size_t{kFastSortBlockMax} + 1) << kFastSortMaxDepth;
  CHECK(oracle::max_fast_sort_partitions(full) == (std::size_t{1} << kFastSortMaxDepth) - 1);
}

TEST_CASE("oracle streams judges fast sort runs") {
  using cdplab::streams::kFastSortBlockMax;
  using cdplab::streams::kFastSortMaxDepth;
  const auto input = sample_input(3 * kFastSortBlockMax);
  expect_pass(oracle::judge_fast_sort_run(input, good_fast_run(input)));
  expect_pass(oracle::judge_fast_sort_run({}, cdplab::streams::FastSortRun{}));
  const auto short_input = sample_input(1000);
  expect_pass(oracle::judge_fast_sort_run(short_input, good_fast_run(short_input)));

  auto wrong = good_fast_run(input);
  std::swap(wrong.sorted[10], wrong.sorted[11]);
  expect_failure(oracle::judge_fast_sort_run(input, wrong), {"sorted[10]"});

  auto deep = good_fast_run(input);
  deep.stats.max_depth = kFastSortMaxDepth + 1;
  expect_failure(oracle::judge_fast_sort_run(input, deep), {"level " + std::to_string(kFastSortMaxDepth + 1)});

  auto unpartitioned = good_fast_run(input);
  unpartitioned.stats.partitions = 0;
  expect_failure(oracle::judge_fast_sort_run(input, unpartitioned), {"no partition grid ran"});

  auto split_short = good_fast_run(short_input);
  split_short.stats.partitions = 1;
  expect_failure(oracle::judge_fast_sort_run(short_input, split_short), {"1 partition grids ran for 1000 values"});

  // Eight different values allow at most eight partitions (three ways, each value is a pivot once).
  std::vector<int> few_values(3 * kFastSortBlockMax);
  for (std::size_t i = 0; i < few_values.size(); ++i) few_values[i] = static_cast<int>(i % 8);
  auto two_way = good_fast_run(few_values);
  two_way.stats.partitions = 9;
  expect_failure(oracle::judge_fast_sort_run(few_values, two_way), {"only 8 different values", "three-way"});
  two_way.stats.partitions = 8;
  expect_pass(oracle::judge_fast_sort_run(few_values, two_way));

  auto early_long = good_fast_run(input);
  early_long.stats.fallbacks = 1;
  expect_failure(oracle::judge_fast_sort_run(input, early_long), {"no grid reached level kFastSortMaxDepth"});
  early_long.stats.max_depth = kFastSortMaxDepth;
  expect_pass(oracle::judge_fast_sort_run(input, early_long));
}

// ----- aggregation -----------------------------------------------------------------------

TEST_CASE("oracle streams aggregation inputs are what they claim") {
  cdplab::Random rng(5);
  const auto counts = oracle::random_counts(rng, 10000, kMaxOutputsPerItem);
  CHECK(*std::max_element(counts.begin(), counts.end()) == kMaxOutputsPerItem);
  CHECK(std::count(counts.begin(), counts.end(), 0u) > 0);

  const auto sparse = oracle::sparse_counts(rng, 99991);
  REQUIRE(sparse.size() == 99991);
  CHECK(*std::max_element(sparse.begin(), sparse.end()) <= kMaxOutputsPerItem);
  // Block 1 and warp 3 of block 0 are idle; block 0 has work.
  CHECK(std::all_of(sparse.begin() + 256, sparse.begin() + 512, [](unsigned c) { return c == 0; }));
  CHECK(std::all_of(sparse.begin() + 96, sparse.begin() + 128, [](unsigned c) { return c == 0; }));
  CHECK(std::any_of(sparse.begin(), sparse.begin() + 256, [](unsigned c) { return c != 0; }));
  const std::size_t warps = (sparse.size() + 31) / 32;
  const std::size_t blocks = (sparse.size() + 255) / 256;
  const std::size_t working_warps = oracle::groups_with_work(sparse, oracle::kItemsPerWarp);
  const std::size_t working_blocks = oracle::groups_with_work(sparse, oracle::kItemsPerBlock);
  CHECK(working_warps > warps / 4);
  CHECK(working_warps < warps / 2);  // about a third: a third of the blocks and half the warps idle
  CHECK(working_blocks > blocks / 2);
  CHECK(working_blocks < blocks);
  // Most items of a working warp are idle too, but some have the most outputs.
  CHECK(std::count(sparse.begin(), sparse.end(), 0u) > static_cast<long>(sparse.size() * 3 / 4));
  CHECK(std::count(sparse.begin(), sparse.end(), kMaxOutputsPerItem) > 0);
}

TEST_CASE("oracle streams expansion of items") {
  const std::vector<unsigned> counts{2, 0, 3};
  const std::vector<float> values{1.5f, 9.0f, -2.0f};
  const auto out = oracle::expected_expansion(counts, values);
  REQUIRE(out.size() == 3 * kMaxOutputsPerItem);
  CHECK(out[0] == 1.5f);
  CHECK(out[1] == 3.0f);
  CHECK(out[2] == 0.0f);
  CHECK(std::all_of(out.begin() + kMaxOutputsPerItem, out.begin() + 2 * kMaxOutputsPerItem,
                    [](float v) { return v == 0.0f; }));
  CHECK(out[2 * kMaxOutputsPerItem + 2] == -6.0f);
  CHECK(out[2 * kMaxOutputsPerItem + 3] == 0.0f);
  expect_pass(oracle::judge_expansion(counts, values, out));
}

TEST_CASE("oracle streams rejects wrong outputs") {
  cdplab::Random rng(9);
  const auto counts = oracle::random_counts(rng, 3000, kMaxOutputsPerItem);
  const auto values = cdplab::uniform_floats(rng, counts.size(), -4.0f, 4.0f);
  const auto good = oracle::expected_expansion(counts, values);
  expect_pass(oracle::judge_expansion(counts, values, good));

  // The first item with at least 3 outputs and a clearly non-zero value: output 2 computed
  // with the wrong factor.
  std::size_t item = 0;
  while (counts[item] < 3 || std::fabs(values[item]) < 0.5f) ++item;
  auto wrong = good;
  wrong[item * kMaxOutputsPerItem + 2] = values[item] * 2.0f;
  expect_failure(oracle::judge_expansion(counts, values, wrong),
                 {"out[" + std::to_string(item * kMaxOutputsPerItem + 2) + "], output 2 of item " +
                      std::to_string(item),
                  "values[" + std::to_string(item) + "] * 3", "1 slots of 1 items are wrong"});

  // Output never written.
  auto missing = good;
  missing[item * kMaxOutputsPerItem] = 0.0f;
  expect_failure(oracle::judge_expansion(counts, values, missing), {"output 0 of item", "never written"});

  // A slot past the item's outputs written: it must stay 0.
  std::size_t short_item = 0;
  while (counts[short_item] >= kMaxOutputsPerItem) ++short_item;
  auto beyond = good;
  beyond[short_item * kMaxOutputsPerItem + counts[short_item]] = 1.0f;
  expect_failure(oracle::judge_expansion(counts, values, beyond),
                 {"output " + std::to_string(counts[short_item]) + " of item " + std::to_string(short_item),
                  "expected 0, found 1", "stay 0"});

  // Every output of one item given to the next one: several slots of two items.
  std::size_t pair = 0;
  while (counts[pair] == 0 || counts[pair + 1] == 0) ++pair;
  auto shifted = good;
  std::copy(good.begin() + static_cast<long>(pair * kMaxOutputsPerItem),
            good.begin() + static_cast<long>((pair + 1) * kMaxOutputsPerItem),
            shifted.begin() + static_cast<long>((pair + 1) * kMaxOutputsPerItem));
  expect_failure(oracle::judge_expansion(counts, values, shifted), {"of item " + std::to_string(pair + 1)});

  expect_failure(oracle::judge_expansion(counts, values, std::vector<float>(10)),
                 {"returned 10 outputs for 3000 items", std::to_string(3000 * kMaxOutputsPerItem)});
}

TEST_CASE("oracle streams counts the groups with work") {
  std::vector<unsigned> counts(100, 0);
  CHECK(oracle::groups_with_work(counts, 32) == 0);
  counts[0] = 1;
  counts[31] = 5;  // same warp
  counts[99] = 2;  // the last, partial warp
  CHECK(oracle::groups_with_work(counts, 1) == 3);
  CHECK(oracle::groups_with_work(counts, 32) == 2);
  CHECK(oracle::groups_with_work(counts, 256) == 1);
  CHECK(oracle::items_per_child(Aggregation::per_thread) == 1);
  CHECK(oracle::items_per_child(Aggregation::per_warp) == 32);
  CHECK(oracle::items_per_child(Aggregation::per_block) == 256);
}

TEST_CASE("oracle streams judges the child grids of an aggregation") {
  cdplab::Random rng(13);
  const auto counts = oracle::sparse_counts(rng, 20000);
  const auto warps = static_cast<unsigned>(oracle::groups_with_work(counts, 32));
  const auto blocks = static_cast<unsigned>(oracle::groups_with_work(counts, 256));
  const auto items = static_cast<unsigned>(oracle::groups_with_work(counts, 1));
  REQUIRE(blocks < warps);
  REQUIRE(warps < items);

  expect_pass(oracle::judge_child_grids(counts, Aggregation::per_warp, warps));
  expect_pass(oracle::judge_child_grids(counts, Aggregation::per_warp, warps - 1));  // fewer is no error
  expect_pass(oracle::judge_child_grids(counts, Aggregation::per_block, blocks));
  expect_pass(oracle::judge_child_grids(counts, Aggregation::per_thread, items));

  // One child per item in a warp aggregation.
  expect_failure(oracle::judge_child_grids(counts, Aggregation::per_warp, items),
                 {std::to_string(items) + " child grids ran", "at most one per warp that has work",
                  std::to_string(warps) + " of the", "one child per item or more"});
  // One child per warp, idle warps included.
  const auto all_warps = static_cast<unsigned>((counts.size() + 31) / 32);
  expect_failure(oracle::judge_child_grids(counts, Aggregation::per_warp, all_warps),
                 {"at most one per warp that has work", "whose items have no outputs"});
  // One child per warp in a block aggregation.
  expect_failure(oracle::judge_child_grids(counts, Aggregation::per_block, warps),
                 {"at most one per parent block that has work", std::to_string(blocks) + " of the"});
  // No child at all.
  expect_failure(oracle::judge_child_grids(counts, Aggregation::per_block, 0),
                 {"no child grid ran", "parent blocks of the"});

  // Nothing to do: no child is right, any child is wrong.
  const std::vector<unsigned> idle(500, 0);
  expect_pass(oracle::judge_child_grids(idle, Aggregation::per_warp, 0));
  expect_failure(oracle::judge_child_grids(idle, Aggregation::per_warp, 1), {"1 child grids ran", "(0 with work)"});
}
