/// @file check.h
/// @brief Error checks for host CUDA calls and for launches made from device code,
///        and the TODO marker that makes an unfinished exercise fail with a clear message.
///
/// Host code wraps every runtime call in CDPLAB_CHECK(...), which throws cdplab::CudaError.
/// Device code cannot throw, so a failed device-side launch is recorded in a device-wide
/// report (CDPLAB_CHECK_LAUNCH() right after the launch); the host reads that report after
/// the parent grid has finished (cdplab::throw_if_device_reported()).
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace cdplab {

/// A CUDA runtime call made by the host failed.
class CudaError : public std::runtime_error {
 public:
  /// An error `code` and the message that explains it.
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  /// The CUDA error code the call returned.
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

/// The exercise still contains a CDPLAB_TODO() marker that was reached.
class NotImplemented : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A kernel launched from device code failed to launch (CDPLAB_CHECK_LAUNCH saw an error).
class DeviceLaunchError : public std::runtime_error {
 public:
  /// The first failed launch's `code`, how many failed, and the message that explains it.
  DeviceLaunchError(cudaError_t code, int failures, const std::string& what)
      : std::runtime_error(what), code_(code), failures_(failures) {}
  /// The error of the first launch that failed.
  cudaError_t code() const { return code_; }
  /// How many device-side launches failed in all.
  int failures() const { return failures_; }

 private:
  cudaError_t code_;
  int failures_;
};

/// Throws CudaError with the call, the place and CUDA's own words when `code` is an error.
void check_host_call(cudaError_t code, const char* call, const char* file, int line);

/// Explains a CUDA error code in words a student can act on (adds CDP2 advice where it helps).
std::string explain_cuda_error(cudaError_t code);

/// Clears the device-side report. Call before launching a parent grid.
void reset_device_report();

/// Reads the device-side report after the launching grid has finished (call it after
/// cudaDeviceSynchronize on the host) and throws NotImplemented or DeviceLaunchError.
void throw_if_device_reported();

/// How many device-side launches CDPLAB_CHECK_LAUNCH() checked since the last
/// reset_device_report(), failed or not. The grader compares it with the launches a lesson asks
/// for: a thread that launches its child twice gets the same output with twice the launches.
unsigned long long device_launches_checked();

namespace detail {

/// For the grader: a device variable of the starter kit that host code reads or writes by symbol
/// (the device report): its host shadow's address and its name in device code.
struct DeviceSymbol {
  const void* host;
  const char* name;
};

/// The starter kit's device variables that host code reaches by symbol.
std::vector<DeviceSymbol> kit_device_symbols();

/// For the grader: a function reset_device_report() calls after the report is reset (the start
/// of an exercise's run); nullptr: none.
void on_device_report_reset(void (*listener)());

}  // namespace detail

/// Device side: counts a checked launch and records it if it failed (`code` != cudaSuccess); the
/// first failure keeps its place.
__device__ void record_device_launch(cudaError_t code, const char* file, int line);

/// Device side: records that a TODO marker was reached.
__device__ void record_device_todo(const char* file, int line);

}  // namespace cdplab

/// Checks a host-side CUDA runtime call; throws cdplab::CudaError on failure.
#define CDPLAB_CHECK(call) ::cdplab::check_host_call((call), #call, __FILE__, __LINE__)

/// Checks the launch just made from device code (use it on the line after `kernel<<<...>>>`).
#define CDPLAB_CHECK_LAUNCH() ::cdplab::record_device_launch(cudaGetLastError(), __FILE__, __LINE__)

/// Marks code a student still has to write. In host code it throws cdplab::NotImplemented;
/// in device code it records the place, and the host throws NotImplemented after the launch.
#ifdef __CUDA_ARCH__
#define CDPLAB_TODO() ::cdplab::record_device_todo(__FILE__, __LINE__)
#else
#define CDPLAB_TODO()                                                                 \
  throw ::cdplab::NotImplemented(std::string("not implemented yet: TODO at ") +      \
                                 __FILE__ + ":" + std::to_string(__LINE__))
#endif
