// Exercise pools: sizing the pending launch pool.
//
// A device-side launch takes an entry of the pending launch pool and holds it at least until its
// grid starts to run (measured: docs/measured-limits.md, "what holds a pool entry"). The pool
// holds cudaLimitDevRuntimePendingLaunchCount entries, 2048 by default. CDP1 spilled extra
// launches into a slower virtualised pool; in CDP2 a launch that finds the pool full fails with
// cudaErrorLaunchPendingCountExceeded (69) and its child never runs.
//
// Here every thread of pool_parent launches one grader::held_child, and each child stays until
// every launch of the parent has been reported on the launch board (grader::report_launch), so
// all children are pending at once. The host sizes the pool from that workload before the
// parent is launched. Launches are counted, not thrown: the grader wants to see how many fail.
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/host_part.h"
#include "cdplab/streams.h"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace cdplab::streams {

/// Threads per block of pool_parent (one thread per child).
inline constexpr unsigned kPoolThreads = 256;
// BEGIN SOLUTION
/// Pool entries on top of the children: room for launches the workload does not count.
inline constexpr std::size_t kPoolMargin = 1024;
// END SOLUTION

/// Thread i < n launches grader::held_child<<<1, 32>>>(board, i) and reports the launch's result.
__global__ void pool_parent(grader::LaunchBoard* board, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  // BEGIN SOLUTION
  grader::held_child<<<1, 32>>>(board, i);
  // Counted, not thrown: a failed launch is reported like a successful one, so that the
  // children waiting for all the reports are not left waiting.
  grader::report_launch(board, cudaGetLastError());
  // END SOLUTION
  //| // TODO(pools): launch grader::held_child<<<1, 32>>>(board, i), then report the launch's
  //| // result on the next line with grader::report_launch(board, cudaGetLastError()): that
  //| // call is this launch's check (in place of CDPLAB_CHECK_LAUNCH(), which would hand the
  //| // error to the host and report nothing). Report failed launches too: the children wait
  //| // until every launch has been reported.
  //| (void)board;
  //| CDPLAB_TODO();
}

// BEGIN SOLUTION
namespace {

/// Raises the pending launch pool to at least `entries` (never lowers it) and returns the
/// limit the runtime reports afterwards.
std::size_t reserve_pending_launches(std::size_t entries) {
  std::size_t pool = 0;
  CDPLAB_CHECK(cudaDeviceGetLimit(&pool, cudaLimitDevRuntimePendingLaunchCount));
  if (pool < entries) CDPLAB_CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, entries));
  CDPLAB_CHECK(cudaDeviceGetLimit(&pool, cudaLimitDevRuntimePendingLaunchCount));
  return pool;
}

}  // namespace

// END SOLUTION
/// Host part (cdplab/host_part.h): makes room in the pending launch pool for `children`
/// launches pending at once, plus a margin, and returns the pool size now in effect.
CDPLAB_HOST_PART std::size_t size_launch_pool(unsigned children) {
  // BEGIN SOLUTION
  // All the children are pending at the same time: the pool holds every one of them.
  return reserve_pending_launches(std::size_t{children} + kPoolMargin);
  // END SOLUTION
  //| // TODO(pools): every child is pending at once, and the pool holds 2048 launches unless
  //| // told otherwise (fewer where the program set it lower). Read
  //| // cudaLimitDevRuntimePendingLaunchCount with cudaDeviceGetLimit; when it holds fewer than
  //| // `children` entries plus a margin, raise it with cudaDeviceSetLimit (never lower it). Wrap
  //| // each call in CDPLAB_CHECK. Read the limit back and return it: the pool size now in effect.
  //| (void)children;
  //| CDPLAB_TODO();
  //| return 0;  // not reached: CDPLAB_TODO() throws
}

PoolRun launch_many_children(unsigned children) {
  PoolRun run;
  run.children = children;
  if (children == 0) return run;  // a grid of zero blocks is a launch error

  // The launch board in global memory: the parent reports to it, the children read it and
  // mark their own flag in `ran`.
  DeviceArray<unsigned> ran(children);
  grader::LaunchBoard start{};
  start.expected = children;
  start.ran = ran.data();
  DeviceArray<grader::LaunchBoard> board(std::vector<grader::LaunchBoard>{start});
  const unsigned blocks = (children + kPoolThreads - 1) / kPoolThreads;

  run.pool_limit = size_launch_pool(children);  // the host part above

  reset_device_report();
  pool_parent<<<blocks, kPoolThreads>>>(board.data(), children);
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());  // the parent and every child that was launched
  throw_if_device_reported();

  const grader::LaunchBoard end = board.download().front();
  const std::vector<unsigned> flags = ran.download();
  run.children_ran = static_cast<unsigned>(std::count_if(flags.begin(), flags.end(), [](unsigned f) { return f != 0; }));
  run.launch_failures = end.failed;
  run.first_error = end.first_error;
  run.children_gave_up = end.gave_up != 0;
  return run;
}

}  // namespace cdplab::streams
