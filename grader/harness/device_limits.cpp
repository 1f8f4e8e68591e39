#include "device_limits.h"

#include <cuda_runtime.h>

namespace cdplab::harness {
namespace {

constexpr cudaLimit kLimits[] = {cudaLimitMallocHeapSize, cudaLimitDevRuntimePendingLaunchCount, cudaLimitStackSize,
                                 cudaLimitPrintfFifoSize};

// DeviceLimits's member for `limit` (const or not, as `limits` is).
template <class Limits>
auto* field(Limits& limits, cudaLimit limit) {
  switch (limit) {
    case cudaLimitMallocHeapSize: return &limits.heap_bytes;
    case cudaLimitDevRuntimePendingLaunchCount: return &limits.pending_launches;
    case cudaLimitStackSize: return &limits.stack_bytes;
    default: return &limits.printf_bytes;
  }
}

}  // namespace

bool DeviceLimits::operator==(const DeviceLimits& other) const {
  return heap_bytes == other.heap_bytes && pending_launches == other.pending_launches &&
         stack_bytes == other.stack_bytes && printf_bytes == other.printf_bytes;
}

std::optional<DeviceLimits> read_device_limits() {
  DeviceLimits limits;
  for (const cudaLimit limit : kLimits) {
    if (cudaDeviceGetLimit(field(limits, limit), limit) != cudaSuccess) {
      (void)cudaGetLastError();
      return std::nullopt;
    }
  }
  return limits;
}

bool restore_device_state(const DeviceLimits& wanted) {
  if (cudaPeekAtLastError() != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  auto now = read_device_limits();
  if (!now) return false;
  for (const cudaLimit limit : kLimits) {
    const std::size_t value = *field(wanted, limit);
    if (*field(*now, limit) != value && cudaDeviceSetLimit(limit, value) != cudaSuccess) (void)cudaGetLastError();
  }
  now = read_device_limits();
  if (!now || !(*now == wanted)) return false;
  // A kernel that used malloc, free or device-side cudaMalloc fixes the heap's size: resizing it
  // then fails, as it would not in a fresh process.
  const bool resizable = cudaDeviceSetLimit(cudaLimitMallocHeapSize, wanted.heap_bytes + (1u << 20)) == cudaSuccess &&
                         cudaDeviceSetLimit(cudaLimitMallocHeapSize, wanted.heap_bytes) == cudaSuccess;
  (void)cudaGetLastError();
  return resizable;
}

}  // namespace cdplab::harness
