// Checks of exercise constant-params: evaluate_polynomial and its kernels polynomial_parent,
// horner_segment and fill_segment, with the coefficients in __constant__ memory.
#include "harness.h"

#include "04-memory-visibility.h"
#include "cdplab/random.h"
#include "cdplab/visibility.h"

#include <cstddef>
#include <vector>

namespace {

namespace oracle = cdplab::oracle::visibility;

/// The values of one segment, one child each (kSegmentSize of the exercise's given code).
constexpr std::size_t kSegmentValues = 4096;

/// Evaluates a polynomial of `count` random coefficients at `n` random points and judges it.
void expect_polynomial(cdplab::Random& rng, std::size_t n, std::size_t count) {
  const auto x = cdplab::uniform_floats(rng, n, -1.5f, 1.5f);
  const auto coefficients = cdplab::uniform_floats(rng, count, -2.0f, 2.0f);
  const auto found = cdplab::visibility::evaluate_polynomial(x, coefficients);
  const auto verdict = oracle::judge_polynomial(x, coefficients, found);
  CHECK_MESSAGE(verdict.ok, verdict.message);
  cdplab::harness::expect_launches_exactly((n + kSegmentValues - 1) / kSegmentValues, "segment of 4096 values");
}

}  // namespace

GPU_CHECK("cubic") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_polynomial(rng, 10000, 4);
}

GPU_CHECK("constant polynomial") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_polynomial(rng, 10000, 1);
}

GPU_CHECK("sixteen coefficients") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_polynomial(rng, 10000, cdplab::visibility::kMaxCoefficients);
}

GPU_CHECK("many segments") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // Over 2000 segments: more children pending at once than the default launch pool holds.
  expect_polynomial(rng, (std::size_t{1} << 23) + 999, 5);
  // A second polynomial in the same process: the host rewrites the constants between launches.
  expect_polynomial(rng, 4097, 3);
  // A power of two: every segment is full, and no parent thread may launch a segment that
  // starts at n (a grid of no blocks is a launch error).
  expect_polynomial(rng, 8192, 2);
}

GPU_CHECK("a failed launch reaches the host") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_polynomial(rng, 10 * kSegmentValues + 5, 4);  // the run is right before one of its launches is made to fail
  const auto x = cdplab::uniform_floats(rng, 10 * kSegmentValues + 5, -1.5f, 1.5f);
  const auto coefficients = cdplab::uniform_floats(rng, 4, -2.0f, 2.0f);
  cdplab::harness::expect_failed_launch_reported(
      [&] { (void)cdplab::visibility::evaluate_polynomial(x, coefficients); });
}
