#include "cdplab/gpu_info.h"

#include <cuda_runtime.h>

namespace cdplab {

GpuInfo query_gpu() {
  GpuInfo info;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    info.problem = err != cudaSuccess ? std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err)
                                      : "cudaGetDeviceCount found no device";
    return info;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    info.problem = "cudaGetDeviceProperties failed";
    return info;
  }
  info.available = true;
  info.name = prop.name;
  info.major = prop.major;
  info.minor = prop.minor;
  return info;
}

}  // namespace cdplab
