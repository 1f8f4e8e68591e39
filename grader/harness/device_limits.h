/// @file device_limits.h
/// @brief The process-wide CUDA limits a check can change, for suites whose checks share a process.
///
/// The grader may run a suite's checks one after another in one process (CDPLAB_SHARED_PROCESS=1)
/// instead of one process per check: CUDA's start-up in every process is most of a short check's
/// time. A check must still find the device as it would alone, and these limits outlive the check
/// that set them: a device heap raised by one check would let the next pass without raising it,
/// and once a kernel has used the device heap its size is fixed for the process, so the next check
/// could not raise it. The harness puts the limits back after each check and ends the process
/// where it cannot, or where the heap is fixed or a CUDA error is pending; the grader runs what is
/// left one process per check.
#pragma once

#include <cstddef>
#include <optional>

namespace cdplab::harness {

struct DeviceLimits {
  std::size_t heap_bytes = 0;        ///< cudaLimitMallocHeapSize
  std::size_t pending_launches = 0;  ///< cudaLimitDevRuntimePendingLaunchCount
  std::size_t stack_bytes = 0;       ///< cudaLimitStackSize
  std::size_t printf_bytes = 0;      ///< cudaLimitPrintfFifoSize
  bool operator==(const DeviceLimits& other) const;
};

/// The current limits; nothing when the GPU does not answer.
std::optional<DeviceLimits> read_device_limits();

/// Sets every limit that differs from `wanted` back to it. True when they all match afterwards,
/// the device heap can still be resized, and no CUDA error was pending. Leaves no CUDA error
/// behind.
bool restore_device_state(const DeviceLimits& wanted);

}  // namespace cdplab::harness
