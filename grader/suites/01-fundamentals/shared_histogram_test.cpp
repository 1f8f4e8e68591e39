// Checks of exercise shared-histogram: histogram and its kernel histogram_kernel.
#include "harness.h"

#include "01-fundamentals.h"
#include "cdplab/fundamentals.h"
#include "cdplab/random.h"

#include <cstddef>
#include <vector>

// Counters never zeroed must meet the poisoned shared memory (poison.h), which another process's
// kernels on the GPU would scrub between the poisoning and the check: these checks run alone.
CDPLAB_SUITE_RUNS_ALONE;

namespace {

namespace oracle = cdplab::oracle::fundamentals;

/// Counts `keys` into `buckets` buckets and judges the counts.
void expect_histogram(const std::vector<unsigned>& keys, unsigned buckets) {
  const auto found = cdplab::fundamentals::histogram(keys, buckets);
  const auto verdict = oracle::judge_histogram(keys, buckets, found);
  CHECK_MESSAGE(verdict.ok, verdict.message);
}

}  // namespace

GPU_CHECK("uniform keys") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_histogram(oracle::random_keys(rng, std::size_t{1} << 22), 1000);
}

GPU_CHECK("one hot bucket") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // Every key is the same: all threads of a block hit one shared counter.
  const auto key = static_cast<unsigned>(rng.next() >> 32);
  expect_histogram(std::vector<unsigned>(std::size_t{1} << 22, key), 64);
}

GPU_CHECK("many buckets") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // 4096 counters: more counters than threads in a block.
  expect_histogram(oracle::random_keys(rng, (std::size_t{1} << 22) + 99), cdplab::fundamentals::kMaxHistogramBuckets);
}

GPU_CHECK("empty input") {
  expect_histogram({}, 128);
}
