// The CPU oracles of chapter 01 (fundamentals): each judge accepts the exact result, computed
// here by hand or by a loop of this file, and rejects a wrong one with a message that names the
// place, what was expected and what was found.
#include "verdict_checks.h"
#include <doctest/doctest.h>

#include "01-fundamentals.h"
#include "cdplab/fundamentals.h"
#include "cdplab/random.h"

#include <climits>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

namespace {

namespace oracle = cdplab::oracle::fundamentals;
using cdplab::fundamentals::PipelineStages;
using cdplab::fundamentals::ReductionResult;
using cdplab::oracle::Verdict;


// ----- child-grids ---------------------------------------------------------------------

// Items own 2, 0, 3 and 1 elements: item 1 is empty and shares offset 2 with item 2.
const std::vector<unsigned> kSizes = {2, 0, 3, 1};
const std::vector<unsigned> kOffsets = {0, 2, 2, 5, 6};
const std::vector<float> kValues = {1, 2, 3, 4, 5, 6};
// values[j] * 2 + item, worked out by hand.
const std::vector<float> kExpansion = {2, 4, 8, 10, 12, 15};

/// out[j] = values[j] * 2 + i for the item i whose range holds j, item by item.
std::vector<float> expand_here(const std::vector<unsigned>& sizes, const std::vector<float>& values) {
  std::vector<float> out;
  std::size_t j = 0;
  for (std::size_t item = 0; item < sizes.size(); ++item) {
    for (unsigned k = 0; k < sizes[item]; ++k, ++j) out.push_back(values[j] * 2.0f + static_cast<float>(item));
  }
  return out;
}

// ----- tail-continuation ---------------------------------------------------------------

/// The pipeline over input {0, 1, 2, 3}, worked out by hand.
PipelineStages hand_pipeline() {
  PipelineStages s;
  s.x = {1, 3, 5, 7};          // 2 * input + 1
  s.y = {6, 2, -2, -6};        // x[3 - i] - x[i]
  s.z = {1, -1, -3, 3};        // 0.5 * y[(i + 1) % 4]
  s.result = {8, 4, 0, 4};     // x + y + z
  return s;
}
const std::vector<float> kPipelineInput = {0, 1, 2, 3};

// ----- recursive-reduction -------------------------------------------------------------

// One block of a level below max_depth sums at most 1024 threads * kMaxItemsPerThread values.
constexpr unsigned long long kPerBlock = 1024ull * 16;

long long sum_here(const std::vector<int>& values) {
  long long sum = 0;
  for (int v : values) sum += static_cast<long long>(v);
  return sum;
}

}  // namespace

// ----- child-grids ---------------------------------------------------------------------

TEST_CASE("oracle expansion offsets and owners of items") {
  CHECK(oracle::offsets_from_sizes(kSizes) == kOffsets);
  CHECK(oracle::offsets_from_sizes({}) == std::vector<unsigned>{0});
  // The empty item 1 owns nothing: element 2 belongs to item 2.
  const std::size_t owners[] = {0, 0, 2, 2, 2, 3};
  for (std::size_t j = 0; j < 6; ++j) {
    INFO("element " << j);
    CHECK(oracle::item_of(kOffsets, j) == owners[j]);
  }
}

TEST_CASE("oracle expansion accepts the exact result") {
  CHECK(oracle::expected_expansion(kOffsets, kValues) == kExpansion);
  expect_pass(oracle::judge_expansion(kOffsets, kValues, kExpansion));

  // A seeded, skewed case, expanded here item by item.
  cdplab::Random rng(0x0101);
  const auto sizes = cdplab::skewed_sizes(rng, 300, 200);
  const auto offsets = oracle::offsets_from_sizes(sizes);
  const auto values = cdplab::uniform_floats(rng, offsets.back(), -1.0f, 1.0f);
  const auto expected = expand_here(sizes, values);
  REQUIRE(expected.size() == values.size());
  expect_pass(oracle::judge_expansion(offsets, values, expected));
}

TEST_CASE("oracle expansion names a wrong item index") {
  // Element 3 (element 1 of item 2) computed as if by the child of item 1: 4 * 2 + 1.
  auto found = kExpansion;
  found[3] = 9;
  expect_failure(oracle::judge_expansion(kOffsets, kValues, found),
                 {"out[3]", "element 1 of item 2", "range [2, 5)", "expected values[3] * 2 + 2 = 10", "found 9",
                  "value for item 1", "1 of 6 elements differ, in 1 of 4 items"});

  // The whole of item 3 given item 0's index.
  found = kExpansion;
  found[5] = 12;
  expect_failure(oracle::judge_expansion(kOffsets, kValues, found),
                 {"out[5]", "element 0 of item 3", "= 15", "found 12", "value for item 0"});
}

TEST_CASE("oracle expansion names a wrong element") {
  auto found = kExpansion;
  found[4] = 12.5f;  // off by half: no item's value
  const Verdict verdict = oracle::judge_expansion(kOffsets, kValues, found);
  expect_failure(verdict, {"out[4]", "element 2 of item 2", "expected values[4] * 2 + 2 = 12", "found 12.5"});
  CHECK_FALSE(contains(verdict.message, "value for item"));

  // Never written: the child grid did not cover the end of its range.
  found = kExpansion;
  found[4] = 0;
  expect_failure(oracle::judge_expansion(kOffsets, kValues, found), {"out[4]", "found 0", "never written"});

  // Several wrong elements: the first is named, and the rest counted.
  found = kExpansion;
  found[1] = -1;
  found[5] = -1;
  expect_failure(oracle::judge_expansion(kOffsets, kValues, found),
                 {"out[1]", "element 1 of item 0", "2 of 6 elements differ, in 2 of 4 items"});

  found = kExpansion;
  found.pop_back();
  expect_failure(oracle::judge_expansion(kOffsets, kValues, found), {"returned 5 values for 6 input values"});
}

// ----- tail-continuation ---------------------------------------------------------------

TEST_CASE("oracle pipeline accepts the exact result") {
  const PipelineStages hand = hand_pipeline();
  const PipelineStages expected = oracle::expected_pipeline(kPipelineInput);
  CHECK(expected.x == hand.x);
  CHECK(expected.y == hand.y);
  CHECK(expected.z == hand.z);
  CHECK(expected.result == hand.result);
  expect_pass(oracle::judge_pipeline(kPipelineInput, hand));

  // One element: y = x[0] - x[0] = 0, z = 0.5 * y[0] = 0, result = x.
  PipelineStages one;
  one.x = {7};
  one.y = {0};
  one.z = {0};
  one.result = {7};
  expect_pass(oracle::judge_pipeline({3}, one));
  // Nothing in, nothing out.
  expect_pass(oracle::judge_pipeline({}, PipelineStages{}));
}

TEST_CASE("oracle pipeline names the step whose output is wrong") {
  PipelineStages found = hand_pipeline();
  found.x[2] = 4;
  expect_failure(oracle::judge_pipeline(kPipelineInput, found),
                 {"x (step_x's output)[2]: expected 5, found 4", "(n = 4)", "step_x computes"});

  // step_y ran before step_x had finished: it read zeros, so y[i] = 0 - 0.
  found = hand_pipeline();
  found.y = {0, 0, 0, 0};
  const Verdict stale = oracle::judge_pipeline(kPipelineInput, found);
  expect_failure(stale, {"y (step_y's output)[0]: expected 6, found 0", "4 of 4 elements differ", "step_y"});
  CHECK_FALSE(contains(stale.message, "x (step_x"));

  found = hand_pipeline();
  found.z[3] = -3;  // read y[3] instead of y[0]
  expect_failure(oracle::judge_pipeline(kPipelineInput, found), {"z (step_z's output)[3]: expected 3, found -3"});

  found = hand_pipeline();
  found.result[1] = 5;
  expect_failure(oracle::judge_pipeline(kPipelineInput, found),
                 {"result (pipeline_finish's output)[1]: expected 4, found 5", "cudaStreamTailLaunch"});

  // When two steps are wrong, the earlier one is named.
  found = hand_pipeline();
  found.z[0] = 0;
  found.result[0] = 0;
  const Verdict both = oracle::judge_pipeline(kPipelineInput, found);
  expect_failure(both, {"z (step_z's output)[0]"});
  CHECK_FALSE(contains(both.message, "result (pipeline_finish"));

  found = hand_pipeline();
  found.result.pop_back();
  expect_failure(oracle::judge_pipeline(kPipelineInput, found), {"result", "expected 4 elements, found 3"});
}

// ----- recursive-reduction -------------------------------------------------------------

TEST_CASE("oracle reduction fewest levels") {
  CHECK(oracle::min_levels(0, 16) == 1);
  CHECK(oracle::min_levels(kPerBlock, 16) == 1);
  CHECK(oracle::min_levels(kPerBlock + 1, 16) == 2);
  CHECK(oracle::min_levels(kPerBlock + 1, 1) == 1);  // max_depth 1: one block loops over all
  CHECK(oracle::min_levels(kPerBlock * kPerBlock, 16) == 2);
  // kPerBlock^2 + 1 values leave kPerBlock + 1 partials, then 2, then 1.
  CHECK(oracle::min_levels(kPerBlock * kPerBlock + 1, 16) == 3);
  CHECK(oracle::min_levels(kPerBlock * kPerBlock + 1, 2) == 2);
}

TEST_CASE("oracle reduction accepts the exact sum at any allowed depth") {
  CHECK(oracle::expected_sum({5, -3, 7}) == 9);
  expect_pass(oracle::judge_reduction({5, -3, 7}, 4, ReductionResult{9, 1}));
  expect_pass(oracle::judge_reduction({}, 1, ReductionResult{0, 1}));

  // Two values of INT_MAX: the sum needs 64 bits.
  const std::vector<int> big = {INT_MAX, INT_MAX};
  expect_pass(oracle::judge_reduction(big, 2, ReductionResult{2LL * INT_MAX, 1}));

  // More values than one block of a level below max_depth sums: 2 to max_depth levels.
  cdplab::Random rng(0x0103);
  const auto values = oracle::random_ints(rng, kPerBlock + 1, -1000, 1000);
  for (int v : values) REQUIRE((v >= -1000 && v <= 1000));
  const long long sum = sum_here(values);
  CHECK(oracle::expected_sum(values) == sum);
  for (unsigned depth = 2; depth <= 4; ++depth) {
    INFO("depth " << depth);
    expect_pass(oracle::judge_reduction(values, 4, ReductionResult{sum, depth}));
  }
}

TEST_CASE("oracle reduction rejects a wrong sum") {
  expect_failure(oracle::judge_reduction({5, -3, 7}, 4, ReductionResult{10, 1}),
                 {"sum of 3 values: expected 9, found 10", "off by 1", "depth 1"});
  // A 32-bit accumulator wraps 2 * INT_MAX to -2.
  expect_failure(oracle::judge_reduction({INT_MAX, INT_MAX}, 2, ReductionResult{-2, 1}),
                 {"expected 4294967294, found -2"});
  // Nothing reported: no level stored the total.
  expect_failure(oracle::judge_reduction({5, -3, 7}, 4, ReductionResult{0, 0}), {"depth 0", "expected 9"});

  // One block partial (the last, of a single value) lost.
  cdplab::Random rng(0x0104);
  const auto values = oracle::random_ints(rng, kPerBlock + 1, 1, 1000);
  const long long lost = sum_here(values) - values.back();
  const std::string expected = "expected " + std::to_string(sum_here(values)) + ", found " + std::to_string(lost);
  const std::string off_by = "off by -" + std::to_string(values.back());
  expect_failure(oracle::judge_reduction(values, 4, ReductionResult{lost, 2}), {expected, off_by, "depth 2"});
}

TEST_CASE("oracle reduction rejects a depth outside the allowed levels") {
  const std::vector<int> few = {1, 2, 3};
  expect_failure(oracle::judge_reduction(few, 3, ReductionResult{6, 4}), {"depth 4 exceeds max_depth = 3"});
  expect_pass(oracle::judge_reduction(few, 3, ReductionResult{6, 3}));

  cdplab::Random rng(0x0105);
  const auto values = oracle::random_ints(rng, kPerBlock + 1, -5, 5);
  const long long sum = sum_here(values);
  // A single level cannot sum kPerBlock + 1 values when max_depth allows more.
  expect_failure(oracle::judge_reduction(values, 4, ReductionResult{sum, 1}),
                 {"depth 1 for 16385 values with max_depth = 4", "at least 2 levels"});
  expect_failure(oracle::judge_reduction(values, 4, ReductionResult{sum, 5}), {"depth 5 exceeds max_depth = 4"});
  // With max_depth 1 the single level loops over all: depth 1 is right.
  expect_pass(oracle::judge_reduction(values, 1, ReductionResult{sum, 1}));
}

// ----- shared-histogram ----------------------------------------------------------------

namespace {
// Keys 0..7 and 10 into 4 buckets: {0, 4}, {1, 5}, {2, 6, 10}, {3, 7}.
const std::vector<unsigned> kKeys = {0, 1, 2, 3, 4, 5, 6, 7, 10};
const std::vector<unsigned> kCounts = {2, 2, 3, 2};
}  // namespace

TEST_CASE("oracle histogram accepts the exact counts") {
  CHECK(oracle::expected_histogram(kKeys, 4) == kCounts);
  expect_pass(oracle::judge_histogram(kKeys, 4, kCounts));
  expect_pass(oracle::judge_histogram({}, 3, {0, 0, 0}));
  // The largest key: 4294967295 = 3 * 1431655765, so it falls into bucket 0 of 3.
  expect_pass(oracle::judge_histogram({UINT_MAX, 1}, 3, {1, 1, 0}));

  // Seeded keys over all 32 bits, counted here.
  cdplab::Random rng(0x0106);
  const auto keys = oracle::random_keys(rng, 100000);
  const unsigned buckets = cdplab::fundamentals::kMaxHistogramBuckets;
  std::vector<unsigned> counts(buckets, 0);
  for (unsigned k : keys) ++counts[k % buckets];
  expect_pass(oracle::judge_histogram(keys, buckets, counts));
}

TEST_CASE("oracle histogram names lost keys") {
  auto found = kCounts;
  found[2] = 2;
  expect_failure(oracle::judge_histogram(kKeys, 4, found),
                 {"bucket 2: expected 3 keys, found 2", "1 of 4 buckets differ", "add up to 8 for 9 keys",
                  "Keys were lost"});

  // Seeded: every bucket that a block counted into lost a key.
  cdplab::Random rng(0x0107);
  const auto keys = oracle::random_keys(rng, 50000);
  std::vector<unsigned> counts(1000, 0);
  for (unsigned k : keys) ++counts[k % 1000];
  REQUIRE(counts[17] > 0);
  counts[17] -= 1;
  expect_failure(oracle::judge_histogram(keys, 1000, counts),
                 {"bucket 17", "add up to 49999 for 50000 keys", "Keys were lost"});
}

TEST_CASE("oracle histogram names added and misplaced keys") {
  auto found = kCounts;
  found[1] = 4;
  expect_failure(oracle::judge_histogram(kKeys, 4, found),
                 {"bucket 1: expected 2 keys, found 4", "add up to 11 for 9 keys", "more than once"});

  found = {3, 2, 2, 2};  // a key of bucket 2 counted in bucket 0
  expect_failure(oracle::judge_histogram(kKeys, 4, found),
                 {"bucket 0: expected 2 keys, found 3", "2 of 4 buckets differ", "wrong bucket"});

  found = kCounts;
  found.push_back(0);
  expect_failure(oracle::judge_histogram(kKeys, 4, found), {"returned 5 counts for 4 buckets"});
}
