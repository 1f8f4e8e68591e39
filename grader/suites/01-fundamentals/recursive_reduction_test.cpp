// Checks of exercise recursive-reduction: recursive_sum and its kernel reduce_level.
#include "harness.h"

#include "01-fundamentals.h"
#include "cdplab/fundamentals.h"
#include "cdplab/random.h"

#include <cstddef>

namespace {

namespace oracle = cdplab::oracle::fundamentals;

/// Sums `n` random integers in [-1000, 1000] with at most `max_depth` levels and judges it.
void expect_sum(cdplab::Random& rng, std::size_t n, unsigned max_depth, int lo = -1000, int hi = 1000) {
  const auto values = oracle::random_ints(rng, n, lo, hi);
  const auto found = cdplab::fundamentals::recursive_sum(values, max_depth);
  const auto verdict = oracle::judge_reduction(values, max_depth, found);
  CHECK_MESSAGE(verdict.ok, verdict.message);
  // Each level after the first is one launch: the depth reported and the launches observed agree,
  // so a level summed without a launch of its own (the last block of a grid adding the partials
  // itself, say) loses the check, and so does a level launched twice.
  if (verdict.ok) cdplab::harness::expect_launches_exactly(found.depth - 1, "level after the first, launched once");
}

}  // namespace

GPU_CHECK("single block") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_sum(rng, 1500, 8);
}

GPU_CHECK("many levels") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const std::size_t n = (std::size_t{1} << 24) + 12345;  // over 16 million values
  const unsigned max_depth = 8;
  // The judge asks for at least this many levels; the check is only worth its name if it is 2 or more.
  REQUIRE(oracle::min_levels(n, max_depth) >= 2);
  expect_sum(rng, n, max_depth);
}

GPU_CHECK("depth bound") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // One level allowed: it must sum all 4 million values in a single looping block.
  expect_sum(rng, (std::size_t{1} << 22) + 777, 1);
  // Two levels allowed over 8 million values: the first level leaves more partials than one
  // block of the second sums in a single pass, and the second level must still be one block.
  expect_sum(rng, (std::size_t{1} << 23) + 777, 2);
}

GPU_CHECK("empty input") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_sum(rng, 0, 4);
}

GPU_CHECK("sums past 32 bits") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // Values near the ends of int: a single thread's share, a block's partial and the total all
  // leave 32 bits (positive, then negative), so a sum, a partial or a buffer of 32-bit integers
  // anywhere on the way gives a wrong total.
  expect_sum(rng, (std::size_t{1} << 21) + 4321, 8, 1 << 30, 2147483647);
  expect_sum(rng, (std::size_t{1} << 21) + 4321, 8, -2147483647 - 1, -(1 << 30));
}

GPU_CHECK("a failed launch reaches the host") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // Levels enough that the failed launch is one the recursion makes from below the first level.
  expect_sum(rng, std::size_t{1} << 22, 8);  // the run is right before one of its launches is made to fail
  const auto values = oracle::random_ints(rng, std::size_t{1} << 22, -1000, 1000);
  cdplab::harness::expect_failed_launch_reported([&] { (void)cdplab::fundamentals::recursive_sum(values, 8); });
}
