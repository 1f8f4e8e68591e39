// Checks of exercise fast-quicksort: fast_quicksort() and fast_quicksort_device(). Every run is
// judged against std::sort of its input, and its records (partitions, levels) against what any
// sort that keeps the contract can record (oracle::judge_fast_sort_run). One check times the
// sort against the reference solution's on the same inputs.
#include "harness.h"
#include "launch_pool_stress.h"
#include "speed.h"

#include "05-streams-and-pools.h"
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/gpu_timer.h"
#include "cdplab/random.h"
#include "cdplab/streams.h"
#include "support/radix_sort.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace oracle = cdplab::oracle::streams;
using cdplab::streams::kFastSortBlockMax;
using cdplab::streams::kFastSortMaxDepth;

/// Values in the large inputs: about 8 partition levels.
constexpr std::size_t kLarge = 1000000;
/// Values of the largest check and of the timed workload.
constexpr std::size_t kHuge = 10000000;

/// The advice for a failed device-side launch of this sort.
std::string launch_advice(const cdplab::DeviceLaunchError& error) {
  if (error.code() == cudaErrorLaunchPendingCountExceeded) {
    return std::string(error.what()) +
           ". The pool may be smaller than the default when the sort starts (check \"10M random\" sets it to " +
           std::to_string(cdplab::harness::kShrunkLaunchPool) +
           " launches first, as another part of a program may leave it), and every grid of the sort that is waiting "
           "or running holds an entry: before the first launch, the host raises "
           "cudaLimitDevRuntimePendingLaunchCount to the most launches a sort of n values can make";
  }
  return std::string(error.what()) +
         ". Check the launches: a partition grid of one block per kPartitionTile values (never zero blocks), "
         "partition_done into cudaStreamTailLaunch from one thread of the partition grid, block_sort_kernel as one "
         "block of kBlockSortThreads threads, and no partition at level kFastSortMaxDepth";
}

/// Sorts `input` on the GPU and judges the run; returns what the grids recorded.
cdplab::streams::FastSortStats expect_sorted(const std::vector<int>& input, const std::string& what) {
  INFO(what << ", " << input.size() << " values");
  cdplab::streams::FastSortRun run;
  try {
    run = cdplab::streams::fast_quicksort(input);
  } catch (const cdplab::DeviceLaunchError& error) {
    FAIL(launch_advice(error));
  }
  const auto verdict = oracle::judge_fast_sort_run(input, run);
  CHECK_MESSAGE(verdict.ok, verdict.message);
  if (verdict.ok) cdplab::harness::expect_pool_holds_every_launch("reserve_fast_sort_launches");
  return run.stats;
}

/// `count` values rising by one from a seeded base: the base may be negative.
std::vector<int> ascending(cdplab::Random& rng, std::size_t count) {
  const int base = static_cast<int>(rng.integer(-1000000, 1000000));
  std::vector<int> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = base + static_cast<int>(i);
  return values;
}

/// A hash of a multiset of ints: the same for every order of the same values.
std::uint64_t multiset_hash(const std::vector<int>& values) {
  std::uint64_t sum = 0;
  for (const int v : values) {
    std::uint64_t x = static_cast<std::uint32_t>(v) + 0x9e3779b97f4a7c15ull;  // splitmix64's finaliser
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    sum += x ^ (x >> 31);
  }
  return sum;
}

/// The timed workload: 10 million random ints (made on the first run, kept for the others) in
/// device memory, the workspace allocated before the clock starts; CUDA events around
/// fast_quicksort_device alone. A judged run's output must be in order and hold the input's
/// values (a multiset hash; the checks above compare with std::sort).
double time_sort_10m(cdplab::Random& rng, bool judge) {
  static const std::vector<int> input = oracle::random_ints(rng, kHuge);
  cdplab::DeviceArray<int> data(input);
  cdplab::streams::FastSortWorkspace workspace(input.size());
  CDPLAB_CHECK(cudaDeviceSynchronize());
  cdplab::GpuTimer timer;
  timer.start();
  cdplab::streams::fast_quicksort_device(data.data(), input.size(), workspace);
  timer.stop();
  const double ms = timer.elapsed_ms();
  if (!judge) return ms;
  const std::vector<int> found = data.download();
  const auto descent = std::is_sorted_until(found.begin(), found.end());
  if (descent != found.end()) {
    const auto at = static_cast<std::size_t>(descent - found.begin());
    throw std::runtime_error("the sort of 10 million values is out of order: sorted[" + std::to_string(at - 1) +
                             "] = " + std::to_string(found[at - 1]) + " > sorted[" + std::to_string(at) +
                             "] = " + std::to_string(found[at]));
  }
  if (multiset_hash(found) != multiset_hash(input)) {
    throw std::runtime_error("the sort of 10 million values returned values that are not the input's");
  }
  return ms;
}

}  // namespace

/// The speed check's bar: at most this many times CUB's radix sort of the same values.
constexpr double kSortSpeedBar = 10.0;

/// The baseline (grader/harness/speed.h): CUB's radix sort of the same 10 million ints, from one
/// GPU buffer into another, its temporary storage allocated before the clock starts.
double time_cub_sort_10m(cdplab::Random& rng, bool /*judge*/) {
  static const std::vector<int> input = oracle::random_ints(rng, kHuge);
  const cdplab::DeviceArray<int> in(input);
  cdplab::DeviceArray<int> out(input.size());
  cdplab::support::streams::CubRadixSort sort(in.data(), out.data(), input.size());
  CDPLAB_CHECK(cudaDeviceSynchronize());
  cdplab::GpuTimer timer;
  timer.start();
  sort.sort();
  timer.stop();
  return timer.elapsed_ms();
}

CDPLAB_SPEED_WORKLOAD("sort 10M", time_sort_10m);
CDPLAB_SPEED_BASELINE("sort 10M", time_cub_sort_10m, "CUB's radix sort of the same values");

GPU_CHECK("edge sizes") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // Nothing, one value, a warp's sort (32), the given block sort's one tile (8192) and more than
  // one, one block's sort up to kFastSortBlockMax, the first partitions, and partition grids with
  // whole and partial last tiles (powers of two and one past).
  const std::size_t block = kFastSortBlockMax;
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{32}, std::size_t{33},
                              std::size_t{8192}, std::size_t{8193}, block - 1, block, block + 1, 3 * block + 5,
                              std::size_t{1} << 20, (std::size_t{1} << 20) + 1}) {
    expect_sorted(oracle::random_ints(rng, n), "random ints, every int value possible");
  }
}

GPU_CHECK("sorted") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_sorted(ascending(rng, kLarge), "already sorted");
  expect_sorted(ascending(rng, kFastSortBlockMax + 1), "already sorted");
}

GPU_CHECK("reversed") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const std::vector<int> values = ascending(rng, kLarge);
  expect_sorted(std::vector<int>(values.rbegin(), values.rend()), "sorted in reverse");
}

GPU_CHECK("all equal") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // A two-way partition would send the equal values to one side and peel a few off per level;
  // three ways, the first partition leaves nothing to sort.
  const int value = static_cast<int>(rng.integer(-1000000, 1000000));
  const auto stats = expect_sorted(std::vector<int>(kLarge, value), "all values equal");
  CHECK_MESSAGE(stats.partitions == 1, stats.partitions << " partition grids ran for " << kLarge
                                                        << " equal values: the first partition puts every value in "
                                                           "the middle (equal to the pivot), and both halves are empty");
}

/// A million values in tiers, shuffled: 90 % equal to the smallest, 90 % of the rest equal to the
/// next, and so on down to 1 000 distinct large ones. The median of the samples is always the
/// tier's value, so each partition leaves nothing below the pivot: the recursion climbs the upper
/// halves alone (1 000 000, then 100 000 partitioned; 10 000 sorted by one block).
std::vector<int> tiered_values(cdplab::Random& rng) {
  std::vector<int> values;
  values.reserve(kLarge);
  values.insert(values.end(), 900000, -5000000);
  values.insert(values.end(), 90000, -4000000);
  values.insert(values.end(), 9000, -3000000);
  for (int i = 0; i < 1000; ++i) values.push_back(static_cast<int>(rng.integer(0, 1000000000)));
  for (std::size_t i = values.size() - 1; i > 0; --i)
    std::swap(values[i], values[static_cast<std::size_t>(rng.integer(0, static_cast<std::int64_t>(i)))]);
  return values;
}

GPU_CHECK("many duplicates") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_sorted(oracle::random_ints(rng, kLarge, 0, 7), "values in 0 .. 7");
  expect_sorted(oracle::random_ints(rng, kLarge, -1000, 1000), "values in -1000 .. 1000");
  // Only upper halves recurse here: their levels must count as the lower halves' do.
  const auto stats = expect_sorted(tiered_values(rng), "values in tiers, 90 % of each range equal to its smallest");
  CHECK_MESSAGE(stats.max_depth == 2, "the deepest level recorded is " << stats.max_depth << " for values whose "
                                          "ranges of 1 000 000 and 100 000 values are partitioned and whose range of "
                                          "10 000 is sorted by one block at level 2: each half, the upper one too, "
                                          "starts one level deeper than its range (depth + 1)");
}

GPU_CHECK("organ pipe") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // Rising then falling: the first, middle and last values are among the smallest of every range,
  // which drives a median-of-three pivot to the depth limit; samples spread over the range are not
  // fooled.
  const auto n = static_cast<std::size_t>(rng.integer(960000, 1040000));
  const auto stats =
      expect_sorted(oracle::organ_pipe(n, static_cast<int>(rng.integer(-1000000, 1000000))), "an organ pipe");
  CHECK_MESSAGE(stats.fallbacks == 0, stats.fallbacks << " range(s) reached level kFastSortMaxDepth = "
                                                      << kFastSortMaxDepth << " longer than one block sorts; the "
                                                         "median of samples spread over the range splits an organ "
                                                         "pipe near its middle");
}

GPU_CHECK("10M random") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // A sort that leaves the pool as it finds it fails here, though the default pool would happen
  // to hold the launches of this input.
  cdplab::harness::shrink_pending_launch_pool();
  cdplab::harness::advise_on_hang(
      "a sort of 10 million values, which takes some milliseconds on the GPU and under a second to check on the "
      "CPU. A much longer run means the recursion does not stop: is every range of at most kFastSortBlockMax "
      "values sorted by one block, and depth + 1 handed to each half?");
  expect_sorted(oracle::random_ints(rng, kHuge), "10 million random ints");
}

GPU_CHECK("speed at 10M values") {
  cdplab::harness::advise_on_hang(
      "CUB's radix sort and this build each sort 10 million values several times; each sort should take "
      "milliseconds");
  // The bar: the reference solution takes about 5 times CUB's radix sort on an H100 (the
  // instructor guide's speed table); twice that passes.
  cdplab::harness::expect_speed("sort 10M", kSortSpeedBar);
}

GPU_CHECK("a failed launch reaches the host") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const auto data = oracle::random_ints(rng, std::size_t{1} << 21);
  (void)expect_sorted(data, "random ints");  // the run is right before one of its launches is made to fail
  cdplab::harness::expect_failed_launch_reported([&] { (void)cdplab::streams::fast_quicksort(data); });
}
