// Checks of exercise pools: launch_many_children and its kernel pool_parent, with the grader's
// held_child keeping every child pending until all launches are reported. The runs are judged
// by support/streams_verdicts.h.
#include "harness.h"
#include "launch_pool_stress.h"

#include "cdplab/check.h"
#include "cdplab/streams.h"
#include "support/streams_verdicts.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

// Held children wait a bounded time for every launch report: these checks have the GPU to themselves.
CDPLAB_SUITE_RUNS_ALONE;

namespace {

namespace verdicts = cdplab::support::streams;
using cdplab::streams::PoolRun;

/// Runs the exercise for `children` children and judges the run. The pending launch pool starts
/// at `start_pool` entries (the default unless a check says otherwise), so that a run shows
/// what the exercise itself sets, whatever ran before it in this process.
PoolRun expect_every_child_ran(unsigned children, std::size_t start_pool = verdicts::kDefaultPendingLaunches) {
  cdplab::harness::advise_on_hang(
      "a held child gives up after half a second when the launch reports do not arrive: a hang means a kernel "
      "waits for something else that never happens");
  CDPLAB_CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, start_pool));
  PoolRun run = cdplab::streams::launch_many_children(children);
  // Judged by its effect: the limit in effect, read back here, not the number the host part returned.
  CDPLAB_CHECK(cudaDeviceGetLimit(&run.pool_limit, cudaLimitDevRuntimePendingLaunchCount));
  const auto verdict = verdicts::judge_pool_run(run);
  const std::string start = start_pool == verdicts::kDefaultPendingLaunches
                                ? std::string()
                                : "this run started from a pool of " + std::to_string(start_pool) +
                                      " entries, as another part of a program may leave it: ";
  CHECK_MESSAGE(verdict.ok, start << verdict.message);
  if (verdict.ok) cdplab::harness::expect_launches_exactly(children, "child (one thread launches each)");
  return run;
}

}  // namespace

GPU_CHECK("4096 children") { expect_every_child_ran(4096); }

GPU_CHECK("20000 children") { expect_every_child_ran(20000); }

GPU_CHECK("60000 children") { expect_every_child_ran(60000); }

GPU_CHECK("pool sized from the workload") {
  // Both runs start from the default pool: a pool sized from the workload grows with it.
  const PoolRun smaller = expect_every_child_ran(5000);
  const PoolRun larger = expect_every_child_ran(30000);
  const auto verdict = verdicts::judge_pool_sizing(smaller, larger);
  CHECK_MESSAGE(verdict.ok, verdict.message);
  // A pool that another part of the program left smaller than the default: 1000 children
  // need 1000 entries, though the default pool would have held them.
  expect_every_child_ran(1000, cdplab::harness::kShrunkLaunchPool);
  // One left larger than this workload needs stays as large: the exercise raises the pool, and
  // never lowers what another part of the program asked for.
  constexpr std::size_t kLargerPool = 80000;
  const PoolRun kept = expect_every_child_ran(1000, kLargerPool);
  CHECK_MESSAGE(kept.pool_limit >= kLargerPool,
                "this run started from a pool of " << kLargerPool << " entries, as another part of a program may "
                << "leave it, and the pool in effect after the exercise held " << kept.pool_limit << " entries: raise the pool when "
                << "the workload needs more, never lower it (read the limit with cudaDeviceGetLimit first)");
}

GPU_CHECK("a failed launch reaches the host") {
  // The lesson's report: every launch's result goes back to the host, which counts the failures.
  (void)expect_every_child_ran(256);  // the run is right before one of its launches is made to fail
  cdplab::harness::expect_failed_launch_reported([] {
    const PoolRun run = cdplab::streams::launch_many_children(256);
    if (run.launch_failures > 0) {
      throw cdplab::DeviceLaunchError(static_cast<cudaError_t>(run.first_error), static_cast<int>(run.launch_failures),
                                      std::to_string(run.launch_failures) + " launch(es) reported failed");
    }
  });
}
