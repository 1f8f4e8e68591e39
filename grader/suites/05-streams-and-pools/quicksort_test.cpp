// Checks of exercise quicksort: quicksort() and its kernel quicksort_kernel. Every run is judged
// against std::sort of its input, and its depth and grid count against what any correct sort
// of that input can record (oracle::judge_sort_run).
#include "harness.h"
#include "launch_pool_stress.h"

#include "05-streams-and-pools.h"
#include "cdplab/check.h"
#include "cdplab/random.h"
#include "cdplab/streams.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace {

namespace oracle = cdplab::oracle::streams;
using cdplab::streams::kBlockSortSize;
using cdplab::streams::kQuicksortMaxDepth;

/// Values in the large inputs: enough that a single-thread partition at the top costs a few
/// milliseconds, and that the sort needs several levels.
constexpr std::size_t kLarge = 200000;

/// Sorts `input` on the GPU and judges the run; a failed device-side launch is reported with
/// the advice that fits a recursive sort.
void expect_sorted(const std::vector<int>& input, const std::string& what) {
  INFO(what << ", " << input.size() << " values");
  cdplab::streams::SortRun run;
  try {
    run = cdplab::streams::quicksort(input);
  } catch (const cdplab::DeviceLaunchError& error) {
    if (error.code() == cudaErrorLaunchPendingCountExceeded) {
      FAIL(std::string(error.what()) << ". The pool may be smaller than the default when the sort starts (check \"random\" "
                           "sets it to " << cdplab::harness::kShrunkLaunchPool << " launches first, as another part "
                           "of a program may leave it), and every grid of the sort that is waiting or running holds "
                           "an entry: before the first launch, the host raises cudaLimitDevRuntimePendingLaunchCount "
                           "to the most launches a sort of n values can make");
    }
    FAIL(std::string(error.what()) << ". Check the launches of quicksort_kernel: one block each, in a stream the thread created "
                         "with cudaStreamNonBlocking, over a non-empty range, and none at depth kQuicksortMaxDepth");
  }
  const auto verdict = oracle::judge_sort_run(input, run);
  CHECK_MESSAGE(verdict.ok, verdict.message);
  if (verdict.ok) cdplab::harness::expect_pool_holds_every_launch("reserve_sort_launches");
}

/// `count` values rising from a seeded base: the base may be negative.
std::vector<int> ascending(cdplab::Random& rng, std::size_t count) {
  const int base = static_cast<int>(rng.integer(-1000000, 1000000));
  std::vector<int> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = base + static_cast<int>(i);
  return values;
}

}  // namespace

GPU_CHECK("random") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // A sort that leaves the pool as it finds it fails here, on inputs whose launches the default
  // pool would happen to hold.
  cdplab::harness::shrink_pending_launch_pool();
  // Around the block sort's size: one block alone, exactly full, and the first partition.
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{777}, std::size_t{kBlockSortSize},
                              std::size_t{kBlockSortSize + 1}, std::size_t{5000}}) {
    expect_sorted(oracle::random_ints(rng, n), "random ints, every int value possible");
  }
  expect_sorted(oracle::random_ints(rng, kLarge), "random ints, every int value possible");
  expect_sorted(oracle::random_ints(rng, kLarge, -1000, 1000), "random ints in [-1000, 1000]");
  // Thousands of grids: many more launches than the default pool of 2048 holds, most of
  // them pending at the same time.
  // Under compute-sanitizer the single-thread partitions of 4 million values take minutes.
  if (cdplab::harness::under_sanitizer()) return;
  cdplab::harness::advise_on_hang(
      "a sort of 4 million values: a single-thread partition of the first range takes some 100 ms, the levels "
      "below less and less. A much longer run means the recursion does not stop (is every range of at most "
      "kBlockSortSize values sorted by its block, and depth + 1 handed to each child?)");
  expect_sorted(oracle::random_ints(rng, std::size_t{1} << 22), "4 million random ints");
}

GPU_CHECK("sorted") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_sorted(ascending(rng, kLarge), "already sorted");
  expect_sorted(ascending(rng, kBlockSortSize + 1), "already sorted");
  // Near the most launches a sort of n values can make: sorted values split exactly in the middle
  // (the median of three is the middle value), so every range down to level 12 holds more than
  // kBlockSortSize values and launches two children. From a small pool, the pool the sort
  // reserves must hold them all (a pool sized for a random input's launches does not).
  if (cdplab::harness::under_sanitizer()) return;  // single-thread partitions of 4 million values take minutes there
  const std::vector<int> balanced = ascending(rng, std::size_t{kBlockSortSize + 1} << 12);
  REQUIRE(oracle::model_sort_launches(balanced) == 2 * ((std::size_t{1} << 13) - 1));
  cdplab::harness::shrink_pending_launch_pool();
  expect_sorted(balanced, "already sorted, every range split in the middle down to level 12");
}

GPU_CHECK("reversed") {
  cdplab::Random rng = cdplab::harness::check_rng();
  std::vector<int> values = ascending(rng, kLarge);
  std::vector<int> reversed(values.rbegin(), values.rend());
  expect_sorted(reversed, "sorted in reverse");
}

GPU_CHECK("all equal") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // A partition that sends the values equal to the pivot to one side would peel off one value
  // per level here; Hoare's scheme splits equal values in the middle.
  const int value = static_cast<int>(rng.integer(-1000000, 1000000));
  expect_sorted(std::vector<int>(kLarge, value), "all values equal");
}

GPU_CHECK("many duplicates") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_sorted(oracle::random_ints(rng, kLarge, 0, 7), "values in 0 .. 7");
  // One more value than a block sorts, nearly all equal: the first partition leaves a left part
  // of exactly two values, out of order, which needs a grid of its own like any longer part.
  std::vector<int> two_on_the_left(kBlockSortSize + 1, 1000);
  two_on_the_left[0] = 8;
  two_on_the_left[1] = 2;
  two_on_the_left[2] = 9;
  two_on_the_left[kBlockSortSize / 2] = 6;
  two_on_the_left[kBlockSortSize] = 6;
  expect_sorted(two_on_the_left, "values nearly all equal, whose first split leaves two on the left");
}

GPU_CHECK("depth stays bounded") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const auto n = static_cast<std::size_t>(rng.integer(96000, 104000));
  const std::vector<int> pipe = oracle::organ_pipe(n, static_cast<int>(rng.integer(-1000000, 1000000)));
  // The input must drive the given partition past the depth limit, or the check proves nothing.
  const std::size_t fallback = oracle::largest_range_at_depth_limit(pipe);
  REQUIRE_MESSAGE(fallback > kBlockSortSize, "the check's organ pipe of " << n << " values does not reach depth "
                                                                          << kQuicksortMaxDepth);
  cdplab::harness::advise_on_hang(
      "an organ pipe of " + std::to_string(n) + " values drives the median-of-three partition to depth " +
      std::to_string(kQuicksortMaxDepth) + " with " + std::to_string(fallback) +
      " values still in one range; one thread heapsorts them there in well under a second. Without the depth "
      "limit the recursion goes much deeper");
  expect_sorted(pipe, "an organ pipe (rising, then falling)");
}

GPU_CHECK("a failed launch reaches the host") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const auto data = oracle::random_ints(rng, 200000);
  expect_sorted(data, "random ints");  // the run is right before one of its launches is made to fail
  cdplab::harness::expect_failed_launch_reported([&] { (void)cdplab::streams::quicksort(data); });
}
