#include "cdplab/gpu_info.h"

#include <cuda_runtime.h>

#include <filesystem>
#include <string>

namespace cdplab {

GpuInfo query_gpu() {
  GpuInfo info;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    const std::string code = err != cudaSuccess ? std::string(cudaGetErrorName(err)) : "no device";
    // The runtime says "driver version is insufficient" also where there is no driver at all:
    // tell a machine without an NVIDIA driver from one whose driver is too old.
    const bool driver_loaded = std::filesystem::exists("/proc/driver/nvidia/version");
    if (err == cudaErrorInsufficientDriver && !driver_loaded) {
      info.problem = "no NVIDIA GPU was found: this machine has no NVIDIA driver (" + code + ")";
    } else if (err == cudaErrorInsufficientDriver) {
      info.problem = "the NVIDIA driver is older than this CUDA toolkit needs: update the driver, or build with "
                     "the toolkit the driver supports (" + code + ": " + cudaGetErrorString(err) + ")";
    } else if (err == cudaErrorNoDevice || count == 0) {
      info.problem = "no NVIDIA GPU was found (" + code + ")";
    } else {
      info.problem = code + ": " + cudaGetErrorString(err);
    }
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
