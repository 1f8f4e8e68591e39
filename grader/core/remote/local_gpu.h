/// @file local_gpu.h
/// @brief Whether this machine has a GPU the checks can use, asked of the CUDA driver before
///        anything is built: where it has none and the course gives a remote, `cdplab check` sends
///        the work there.
#pragma once

#include <string>

namespace cdplab::remote {

/// Why this machine has no usable GPU ("CUDA_VISIBLE_DEVICES hides every GPU", "no NVIDIA
/// driver (libcuda.so.1 is not installed)", "the CUDA driver finds no GPU"); empty when it has one.
/// Asks the driver in a process of its own (`executable` run with kGpuProbeArgument), so that
/// this process never initialises CUDA.
std::string local_gpu_problem(const std::string& executable);

/// The argument that makes cdplab run gpu_probe_main() instead of a command.
inline constexpr const char* kGpuProbeArgument = "--internal-gpu-probe";

/// The probe itself: loads the CUDA driver, initialises it and counts the devices. Prints why
/// there is no usable GPU and returns 1, or returns 0.
int gpu_probe_main();

}  // namespace cdplab::remote
