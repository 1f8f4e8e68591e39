// Checks of exercise tail-consumer: consume_after_child and its kernels produce_parent /
// consume_segment, with the grader's delayed_child in between.
#include "harness.h"
#include "launch_pool_stress.h"

#include "04-memory-visibility.h"
#include "cdplab/random.h"
#include "cdplab/visibility.h"

#include <cstddef>
#include <vector>

// The delayed child exposes a consumer that does not wait by taking its time on the GPU: these
// checks have the GPU to themselves.
CDPLAB_SUITE_RUNS_ALONE;

namespace {

namespace oracle = cdplab::oracle::visibility;

/// Runs consume_after_child on `n` random seeds with a child that waits `delay_ns`, and judges it.
void expect_consumption(cdplab::Random& rng, std::size_t n, unsigned delay_ns) {
  cdplab::harness::advise_on_hang(
      "the grader's child waits only a few milliseconds: a hang means a kernel waits for another that cannot "
      "finish before it (a parent never waits for its child in CDP2)");
  std::vector<int> seed(n);
  for (auto& s : seed) s = static_cast<int>(rng.integer(-100000, 100000));
  const auto found = cdplab::visibility::consume_after_child(seed, delay_ns);
  const auto verdict = oracle::judge_consumption(seed, delay_ns, found);
  CHECK_MESSAGE(verdict.ok, verdict.message);
  // A child and a consumer per segment of the parent's block size (the oracle's segment size).
  cdplab::harness::expect_launches_exactly(2 * ((n + oracle::kSegmentSize - 1) / oracle::kSegmentSize),
                                           "segment's child and one per segment's consumer");
}

}  // namespace

GPU_CHECK("no delay") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_consumption(rng, 10007, 0);
}

GPU_CHECK("child takes 200 us") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_consumption(rng, 10007, 200000);
}

GPU_CHECK("child takes 2 ms") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_consumption(rng, 100003, 2000000);
}

GPU_CHECK("more launches than the pool holds") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // Each block has its child and its consumer pending at once, and the given code sizes the pool
  // for both. Here the pool starts at 32 entries, as another part of a program may leave it, and
  // 80 launches would not fit without the reservation.
  cdplab::harness::shrink_pending_launch_pool();
  expect_consumption(rng, 10007, 200000);
}

GPU_CHECK("a failed launch reaches the host") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_consumption(rng, 10 * oracle::kSegmentSize + 3, 0);  // the run is right before one of its launches is made to fail
  std::vector<int> seed(10 * oracle::kSegmentSize + 3);
  for (auto& s : seed) s = static_cast<int>(rng.integer(-100000, 100000));
  cdplab::harness::expect_failed_launch_reported([&] { (void)cdplab::visibility::consume_after_child(seed, 0); });
}
