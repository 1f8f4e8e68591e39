// Checks of exercise tail-continuation: run_pipeline and its kernels pipeline_parent,
// step_x, step_y, step_z and pipeline_finish.
#include "harness.h"

#include "01-fundamentals.h"
#include "cdplab/fundamentals.h"
#include "cdplab/random.h"

#include <cstddef>

namespace {

namespace oracle = cdplab::oracle::fundamentals;

/// Runs the pipeline on `n` random values and judges every step's output.
void expect_pipeline(cdplab::Random& rng, std::size_t n) {
  const auto input = cdplab::uniform_floats(rng, n, -1.0f, 1.0f);
  const auto found = cdplab::fundamentals::run_pipeline(input);
  const auto verdict = oracle::judge_pipeline(input, found);
  CHECK_MESSAGE(verdict.ok, verdict.message);
  // step_x, step_y, step_z and the tail-launched pipeline_finish: one launch each.
  cdplab::harness::expect_launches_exactly(n == 0 ? 0 : 4, "step and one for the finish");
}

}  // namespace

GPU_CHECK("small pipeline") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_pipeline(rng, 1000);
}

GPU_CHECK("large pipeline") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_pipeline(rng, (std::size_t{1} << 22) + 1237);  // over 4 million: thousands of blocks per step
  // 2^24 + 1 values: the first count a float cannot hold, so a block count worked out in float
  // arithmetic comes out one block short. Left out under compute-sanitizer: its cost under the
  // tool was not measured.
  if (cdplab::harness::under_sanitizer()) return;
  expect_pipeline(rng, (std::size_t{1} << 24) + 1);
}

GPU_CHECK("odd sizes") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_pipeline(rng, 1);       // one element: every step is one block with one busy thread
  expect_pipeline(rng, 999983);  // a prime: the last block of every step is partial
}

GPU_CHECK("a failed launch reaches the host") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // Four launches: the third (step_z) fails.
  expect_pipeline(rng, 10000);  // the run is right before one of its launches is made to fail
  const auto input = cdplab::uniform_floats(rng, 10000, -1.0f, 1.0f);
  cdplab::harness::expect_failed_launch_reported([&] { (void)cdplab::fundamentals::run_pipeline(input); });
}
