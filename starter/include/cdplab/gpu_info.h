/// @file gpu_info.h
/// @brief Whether a usable CUDA GPU is present, and its name, without throwing.
#pragma once

#include <string>

namespace cdplab {

/// What the CUDA runtime says about the GPU this process would use.
struct GpuInfo {
  bool available = false;  ///< a device is present and the driver works
  std::string name;        ///< device name, e.g. "NVIDIA H100 80GB HBM3"
  int major = 0;           ///< compute capability, major part
  int minor = 0;           ///< compute capability, minor part
  std::string problem;     ///< why no GPU is available (empty when available)
};

/// Queries device 0 once; safe on a machine without a GPU or driver.
GpuInfo query_gpu();

}  // namespace cdplab
