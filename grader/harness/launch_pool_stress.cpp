#include "launch_pool_stress.h"

#include <cuda_runtime.h>

namespace cdplab::harness {

bool shrink_pending_launch_pool(std::size_t launches) {
  if (cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, launches) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return true;
}

}  // namespace cdplab::harness
