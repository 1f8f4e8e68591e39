// Host and device halves of the error checks declared in cdplab/check.h.
#include "cdplab/check.h"

#include <cstring>
#include <sstream>

namespace cdplab {
namespace detail {

constexpr int kPlaceChars = 96;

/// What device code recorded since the last reset_device_report().
struct DeviceReport {
  int todo_hits;
  int todo_line;
  char todo_file[kPlaceChars];
  int launch_failures;
  int first_error;
  int first_line;
  char first_file[kPlaceChars];
  unsigned long long launches_checked;  // every CDPLAB_CHECK_LAUNCH(), failed or not
};

}  // namespace detail
}  // namespace cdplab

// Named in C, so that the grader finds them by name in the device code it loads (device_code.h).
extern "C" {
__device__ cdplab::detail::DeviceReport cdplab_device_report;
}

namespace cdplab {
namespace {

using detail::kPlaceChars;

void (*g_reset_listener)() = nullptr;  // detail::on_device_report_reset

/// Copies the last kPlaceChars-1 characters of a path (the file name is at the end).
__device__ void copy_place(char* dst, const char* src) {
  int n = 0;
  while (src[n] != '\0') ++n;
  const char* from = n >= kPlaceChars ? src + (n - (kPlaceChars - 1)) : src;
  int i = 0;
  for (; from[i] != '\0' && i < kPlaceChars - 1; ++i) dst[i] = from[i];
  dst[i] = '\0';
}

std::string base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

}  // namespace

__device__ void record_device_launch(cudaError_t code, const char* file, int line) {
  atomicAdd(&cdplab_device_report.launches_checked, 1ull);
  if (code == cudaSuccess) return;
  if (atomicAdd(&cdplab_device_report.launch_failures, 1) == 0) {
    cdplab_device_report.first_error = static_cast<int>(code);
    cdplab_device_report.first_line = line;
    copy_place(cdplab_device_report.first_file, file);
  }
}

__device__ void record_device_todo(const char* file, int line) {
  if (atomicAdd(&cdplab_device_report.todo_hits, 1) == 0) {
    cdplab_device_report.todo_line = line;
    copy_place(cdplab_device_report.todo_file, file);
  }
}

std::string explain_cuda_error(cudaError_t code) {
  std::ostringstream out;
  out << cudaGetErrorName(code) << " (" << static_cast<int>(code) << "): " << cudaGetErrorString(code);
  switch (code) {
    case cudaErrorLaunchPendingCountExceeded:
      out << ". More device-side launches were pending than the pending launch pool holds; "
             "CDP2 does not queue the extra ones, the launch fails and the child never runs. "
             "Raise cudaLimitDevRuntimePendingLaunchCount from the host before the parent launch.";
      break;
    case cudaErrorInvalidConfiguration:
      out << ". A grid or block size is invalid, for example a child launched with zero blocks "
             "for an empty range: skip the launch when there is no work.";
      break;
    case cudaErrorIllegalAddress:
      out << ". A kernel read or wrote memory it does not own: check indices against sizes, and "
             "never hand a child a pointer to the parent's local or __shared__ memory.";
      break;
    case cudaErrorInvalidAddressSpace:
      out << ". A kernel used a pointer to another grid's __shared__ or local memory: a child was "
             "most likely handed an address of its parent's __shared__ memory or local variables. "
             "Those are private to the parent's block and thread; stage the values in global memory "
             "and hand the child that address.";
      break;
    case cudaErrorMemoryAllocation:
      out << ". Device-side cudaMalloc draws on the device heap (cudaLimitMallocHeapSize): "
             "size it from the host before the first launch, and free in device code.";
      break;
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
      out << ". No usable CUDA GPU: GPU checks cannot run on this machine.";
      break;
    default:
      break;
  }
  return out.str();
}

void check_host_call(cudaError_t code, const char* call, const char* file, int line) {
  if (code == cudaSuccess) return;
  std::ostringstream out;
  out << call << " failed at " << base_name(file) << ":" << line << ": " << explain_cuda_error(code);
  throw CudaError(code, out.str());
}

void reset_device_report() {
  detail::DeviceReport clean{};
  CDPLAB_CHECK(cudaMemcpyToSymbol(cdplab_device_report, &clean, sizeof clean));
  if (g_reset_listener != nullptr) g_reset_listener();
}

namespace detail {

std::vector<DeviceSymbol> kit_device_symbols() {
  return {{&cdplab_device_report, "cdplab_device_report"}};
}

void on_device_report_reset(void (*listener)()) { g_reset_listener = listener; }

}  // namespace detail

unsigned long long device_launches_checked() {
  detail::DeviceReport report{};
  CDPLAB_CHECK(cudaMemcpyFromSymbol(&report, cdplab_device_report, sizeof report));
  return report.launches_checked;
}

void throw_if_device_reported() {
  detail::DeviceReport report{};
  CDPLAB_CHECK(cudaMemcpyFromSymbol(&report, cdplab_device_report, sizeof report));
  if (report.todo_hits > 0) {
    throw NotImplemented("not implemented yet: device code reached the CDPLAB_TODO() at " +
                         base_name(report.todo_file) + ":" + std::to_string(report.todo_line) +
                         "; replace the TODO with your code");
  }
  if (report.launch_failures > 0) {
    const auto code = static_cast<cudaError_t>(report.first_error);
    throw DeviceLaunchError(code, report.launch_failures,
                            std::to_string(report.launch_failures) +
                                " launch(es) from device code failed; the first at " +
                                base_name(report.first_file) + ":" +
                                std::to_string(report.first_line) + ": " + explain_cuda_error(code));
  }
}

}  // namespace cdplab
