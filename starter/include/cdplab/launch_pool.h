/// @file launch_pool.h
/// @brief Sizing the pending launch pool from the host, before the first device-side launch.
///
/// Every device-side launch holds an entry of the pending launch pool
/// (cudaLimitDevRuntimePendingLaunchCount, 2048 by default) at least until its grid starts to
/// run; a grid that has returned does not keep its entry for its children (docs/measured-limits.md).
/// How many launches wait at once depends on timing and on what else the GPU runs, so size the
/// pool for every launch the work can make. CDP2 does not queue launches beyond the pool: they
/// fail with cudaErrorLaunchPendingCountExceeded and those children never run. Chapter 02's
/// scaled tessellation and chapter 05's pools exercise have you write this yourself; elsewhere
/// the given code calls this helper.
#pragma once

#include "cdplab/check.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace cdplab {

/// Makes room for `launches` device-side launches pending at once. The pool only grows: a
/// larger pool left by an earlier call is kept. Returns the pool size now in effect.
inline std::size_t reserve_pending_launches(std::size_t launches) {
  std::size_t pool = 0;
  CDPLAB_CHECK(cudaDeviceGetLimit(&pool, cudaLimitDevRuntimePendingLaunchCount));
  if (pool >= launches) return pool;
  CDPLAB_CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, launches));
  return launches;
}

}  // namespace cdplab
