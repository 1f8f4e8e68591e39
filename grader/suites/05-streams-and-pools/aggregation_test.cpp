// Checks of exercise aggregation: expand_items with one child grid per warp (warp_parent) and
// per block (block_parent). The outputs are compared slot by slot with the oracle's, and the
// child grids counted against the warps or blocks that have work.
#include "harness.h"

#include "05-streams-and-pools.h"
#include "cdplab/check.h"
#include "cdplab/random.h"
#include "cdplab/streams.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace {

namespace oracle = cdplab::oracle::streams;
using cdplab::streams::Aggregation;
using cdplab::streams::ExpandRun;
using cdplab::streams::kMaxOutputsPerItem;

/// Items of the main checks: 3125 warps, 390 full parent blocks and a partial one.
constexpr std::size_t kItems = 100000;

/// Runs expand_items; a failed device-side launch is reported with advice for aggregation.
ExpandRun run_expansion(const std::vector<unsigned>& counts, const std::vector<float>& values, Aggregation how) {
  try {
    return cdplab::streams::expand_items(counts, values, how);
  } catch (const cdplab::DeviceLaunchError& error) {
    const std::string group = how == Aggregation::per_block ? "block" : "warp";
    if (error.code() == cudaErrorLaunchPendingCountExceeded) {
      FAIL(std::string(error.what()) << ". The host sized the pool for one child per " << group
                        << ": one thread of each " << group << " launches, once, for all of its items");
    }
    FAIL(std::string(error.what()) << ". Launch a child only when the " << group << "'s total of outputs is above 0, with "
                      << "child_blocks(total) blocks of kExpandChildThreads threads");
  }
  return {};
}

/// Runs one aggregation and judges its outputs; returns the run for more checks.
ExpandRun expect_expansion(const std::vector<unsigned>& counts, const std::vector<float>& values, Aggregation how) {
  INFO(std::string(cdplab::streams::to_string(how)) << ", " << counts.size() << " items");
  const ExpandRun run = run_expansion(counts, values, how);
  const auto verdict = oracle::judge_expansion(counts, values, run.out);
  CHECK_MESSAGE(verdict.ok, verdict.message);
  // The launches the grader saw, beside the grids the children counted themselves: one per group
  // of items with work, none for a group without.
  if (verdict.ok) {
    cdplab::harness::expect_launches_exactly(oracle::groups_with_work(counts, oracle::items_per_child(how)),
                                             std::string(oracle::group_word(how)) + " whose items have outputs");
  }
  return run;
}

/// Runs one aggregation and judges how many child grids it ran.
void expect_child_grids(const std::vector<unsigned>& counts, const std::vector<float>& values, Aggregation how) {
  INFO(std::string(cdplab::streams::to_string(how)) << ", " << counts.size() << " items");
  const ExpandRun run = run_expansion(counts, values, how);
  const auto verdict = oracle::judge_child_grids(counts, how, run.child_grids);
  CHECK_MESSAGE(verdict.ok, verdict.message);
}

std::vector<float> random_values(cdplab::Random& rng, std::size_t count) {
  return cdplab::uniform_floats(rng, count, -4.0f, 4.0f);
}

}  // namespace

GPU_CHECK("per warp") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const auto counts = oracle::random_counts(rng, kItems, kMaxOutputsPerItem);
  expect_expansion(counts, random_values(rng, kItems), Aggregation::per_warp);
  // A last warp with 7 items; every item with the most outputs.
  const auto odd = oracle::random_counts(rng, 1000 * 32 + 7, kMaxOutputsPerItem);
  expect_expansion(odd, random_values(rng, odd.size()), Aggregation::per_warp);
  const std::vector<unsigned> full(4096, kMaxOutputsPerItem);
  expect_expansion(full, random_values(rng, full.size()), Aggregation::per_warp);
}

GPU_CHECK("per block") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const auto counts = oracle::random_counts(rng, kItems, kMaxOutputsPerItem);
  expect_expansion(counts, random_values(rng, kItems), Aggregation::per_block);
  // A block of one item; one block with the most outputs a block can have (16384).
  const auto odd = oracle::random_counts(rng, 256 * 40 + 1, kMaxOutputsPerItem);
  expect_expansion(odd, random_values(rng, odd.size()), Aggregation::per_block);
  const std::vector<unsigned> full(256, kMaxOutputsPerItem);
  expect_expansion(full, random_values(rng, full.size()), Aggregation::per_block);
}

GPU_CHECK("one child grid per warp") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const auto counts = oracle::random_counts(rng, kItems, kMaxOutputsPerItem);
  expect_child_grids(counts, random_values(rng, kItems), Aggregation::per_warp);
}

GPU_CHECK("one child grid per block") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const auto counts = oracle::random_counts(rng, kItems, kMaxOutputsPerItem);
  expect_child_grids(counts, random_values(rng, kItems), Aggregation::per_block);
}

GPU_CHECK("items without work") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // Idle blocks, idle warps in working blocks, scattered idle items, and a partial last warp
  // and block: exact outputs, and no child for a warp or block without work.
  const auto sparse = oracle::sparse_counts(rng, kItems - 9);
  const auto values = random_values(rng, sparse.size());
  REQUIRE(oracle::groups_with_work(sparse, oracle::kItemsPerWarp) <
          (sparse.size() + oracle::kItemsPerWarp - 1) / oracle::kItemsPerWarp);
  for (const Aggregation how : {Aggregation::per_warp, Aggregation::per_block}) {
    const ExpandRun run = expect_expansion(sparse, values, how);
    const auto verdict = oracle::judge_child_grids(sparse, how, run.child_grids);
    CHECK_MESSAGE(verdict.ok, verdict.message);
  }
  // The smallest total that needs a child: every warp with exactly one output (at a different
  // lane in each), and one output in all (one warp and one block with a total of 1).
  std::vector<unsigned> one_per_warp(oracle::kItemsPerWarp * 300 + 5, 0);
  for (std::size_t first = 0; first < one_per_warp.size(); first += oracle::kItemsPerWarp) {
    const std::size_t lanes = std::min<std::size_t>(oracle::kItemsPerWarp, one_per_warp.size() - first);
    one_per_warp[first + (first / oracle::kItemsPerWarp) % lanes] = 1;
  }
  std::vector<unsigned> one_output(5000, 0);
  one_output[4321] = 1;
  for (const auto* counts : {&one_per_warp, &one_output}) {
    const auto one_values = random_values(rng, counts->size());
    for (const Aggregation how : {Aggregation::per_warp, Aggregation::per_block}) {
      const ExpandRun run = expect_expansion(*counts, one_values, how);
      const auto verdict = oracle::judge_child_grids(*counts, how, run.child_grids);
      CHECK_MESSAGE(verdict.ok, verdict.message);
    }
  }
  // No item has work at all: no child may run, and every slot stays 0.
  const std::vector<unsigned> idle(3000, 0);
  const auto idle_values = random_values(rng, idle.size());
  for (const Aggregation how : {Aggregation::per_warp, Aggregation::per_block}) {
    const ExpandRun run = expect_expansion(idle, idle_values, how);
    CHECK_MESSAGE(run.child_grids == 0, std::string(cdplab::streams::to_string(how))
                                            << ": no item has work, yet " << run.child_grids
                                            << " child grid(s) ran: launch only when the total of outputs is above 0");
  }
}

GPU_CHECK("a failed launch reaches the host") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const auto counts = oracle::random_counts(rng, 64 * 32 + 7, kMaxOutputsPerItem);
  const auto values = random_values(rng, counts.size());
  for (const Aggregation how : {Aggregation::per_warp, Aggregation::per_block}) {
    CAPTURE(cdplab::streams::to_string(how));
    (void)expect_expansion(counts, values, how);  // the run is right before one of its launches is made to fail
    cdplab::harness::expect_failed_launch_reported([&] { (void)cdplab::streams::expand_items(counts, values, how); });
  }
}
