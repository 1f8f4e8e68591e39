// Checks of exercise private-pointers: scale_by_segment_sums and its kernels segment_parent /
// apply_segment. The starter hands the child private addresses; these checks fail until fixed.
#include "harness.h"

#include "04-memory-visibility.h"
#include "cdplab/random.h"
#include "cdplab/visibility.h"

#include <cstddef>

namespace {

namespace oracle = cdplab::oracle::visibility;

/// Runs scale_by_segment_sums on `n` values in [0, 1) and judges the result.
void expect_scaling(cdplab::Random& rng, std::size_t n) {
  cdplab::harness::advise_on_hang(
      "segment_parent and apply_segment have no loops that could spin: a hang means the child waits on memory "
      "it was never handed");
  const auto in = cdplab::uniform_floats(rng, n, 0.0f, 1.0f);
  const auto found = cdplab::visibility::scale_by_segment_sums(in);
  const auto verdict = oracle::judge_segment_scaling(in, found);
  CHECK_MESSAGE(verdict.ok, verdict.message);
  cdplab::harness::expect_launches_exactly((n + oracle::kSegmentSize - 1) / oracle::kSegmentSize, "segment");
}

}  // namespace

GPU_CHECK("small input") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_scaling(rng, 1000);  // four segments, the last one partial
}

GPU_CHECK("many blocks") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_scaling(rng, std::size_t{1} << 20);  // 4096 segments: more children than the default launch pool
}

GPU_CHECK("odd size") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_scaling(rng, 1);       // one segment of one element
  expect_scaling(rng, 65537);   // the last segment holds one element
}

GPU_CHECK("a failed launch reaches the host") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_scaling(rng, 10 * oracle::kSegmentSize + 3);  // the run is right before one of its launches is made to fail
  const auto in = cdplab::uniform_floats(rng, 10 * oracle::kSegmentSize + 3, 0.0f, 1.0f);
  cdplab::harness::expect_failed_launch_reported([&] { (void)cdplab::visibility::scale_by_segment_sums(in); });
}
