#include "launch_pool_stress.h"

#include "device_code.h"

#include "cdplab/heap_vertices.h"

#include <cuda_runtime.h>
#include <doctest/doctest.h>

namespace cdplab::harness {

bool shrink_pending_launch_pool(std::size_t launches) {
  if (cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, launches) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return true;
}

void expect_pool_holds_every_launch(const std::string& sized_by) {
  const std::size_t pool = cdplab::heap_vertices::pending_launch_limit();  // throws (fails the check) on a CUDA error
  const unsigned long long launches = device_runtime_counts().launches;
  CHECK_MESSAGE(launches <= pool,
                "the run made " << launches << " device-side launches (counted by the grader as the device code made "
                                << "them), but the pending launch pool holds " << pool << " after " << sized_by
                                << " sized it. Every launch holds an entry at least until its grid starts, and how "
                                   "many wait at once depends on timing: this run got through, another may not. Size "
                                   "the pool for every launch the work can make");
}

}  // namespace cdplab::harness
