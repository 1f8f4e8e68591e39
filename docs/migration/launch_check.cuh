// A failed device-side launch is silent unless the launching thread asks. The examples of the
// migration page report it with printf, which keeps them free of any project header; the
// workbook's exercises use CDPLAB_CHECK_LAUNCH() instead, which the host turns into an exception.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>

namespace migration {

/// Call on the line after a launch in device code: prints the error of a launch that failed
/// (for instance cudaErrorLaunchPendingCountExceeded when the pending launch pool is full; that
/// child never runs).
__device__ inline void check_launch(const char* child) {
  const cudaError_t code = cudaGetLastError();
  if (code != cudaSuccess)
    printf("block %u thread %u: launch of %s failed: %s\n", blockIdx.x, threadIdx.x, child,
           cudaGetErrorString(code));
}

}  // namespace migration
