// CDP2 version of the host set-up before a recursive build. CDP1 code reserved a
// synchronization depth (cudaLimitDevRuntimeSyncDepth) so that parents could wait for their
// children several levels deep. CDP2 has no device-side wait, and on sm_90 that limit is not
// supported. What a recursive build needs instead is room for its pending launches.
#include <cuda_runtime.h>

#include <cstddef>

namespace migration::limits {

// [cdp2]
/// Makes room for `launches` device-side launches pending at one time, before the first
/// kernel that launches is started. A launch holds its entry at least until its grid starts,
/// and how many wait at once depends on timing; one beyond the pool fails with
/// cudaErrorLaunchPendingCountExceeded and its child never runs. The limit is only ever
/// raised: a pool that is already larger is left as it is.
cudaError_t reserve_pending_launches(std::size_t launches) {
  std::size_t current = 0;
  cudaError_t code = cudaDeviceGetLimit(&current, cudaLimitDevRuntimePendingLaunchCount);
  if (code == cudaSuccess && current < launches)
    code = cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, launches);
  return code;
}
// [cdp2]

}  // namespace migration::limits
