/// @file device_runtime_counts.h
/// @brief What the exercise's device code asked of the device runtime, counted by the grader
///        (device_code.h): one layout for the device hooks that count and the host that reads.
#pragma once

namespace cdplab::harness {

/// Counts since the run started (cdplab::reset_device_report(), or the check's start). Every
/// field is a 64-bit count, so that the device side updates each with one atomicAdd.
struct DeviceRuntimeCounts {
  unsigned long long launches;           ///< device-side launches asked for, failed ones included
  unsigned long long launches_failed;    ///< launches that returned an error (injected ones included)
  unsigned long long launches_injected;  ///< launches the grader made fail on purpose
  unsigned long long null_stream;        ///< launches into the NULL stream (the block's implicit one)
  unsigned long long tail_launch;        ///< launches into cudaStreamTailLaunch
  unsigned long long fire_and_forget;    ///< launches into cudaStreamFireAndForget
  unsigned long long named_stream;       ///< launches into a stream the code created
  unsigned long long streams_created;    ///< cudaStreamCreateWithFlags that succeeded
  unsigned long long streams_destroyed;  ///< cudaStreamDestroy that succeeded
  unsigned long long heap_cuda_mallocs;  ///< device-side cudaMalloc that succeeded with memory
  unsigned long long heap_cuda_frees;    ///< device-side cudaFree of a non-null pointer that succeeded
  unsigned long long heap_mallocs;       ///< malloc in device code that returned memory
  unsigned long long heap_frees;         ///< free in device code of a non-null pointer
  unsigned long long events_recorded;    ///< cudaEventRecord in device code
  unsigned long long error_reads;        ///< cudaGetLastError and cudaPeekAtLastError in device code
  unsigned long long into_destroyed;     ///< launches into a stream the code had destroyed already
};

/// How many stream handles the hooks remember as destroyed in one run (a run that destroys more
/// forgets the oldest slots it cannot place: a launch into one of those goes unseen).
inline constexpr int kDestroyedStreamSlots = 4096;

/// The injection the host arms: the launch with this index (0 = the run's first) fails with
/// cudaErrorLaunchPendingCountExceeded instead of launching; -1 arms nothing.
struct DeviceRuntimeControl {
  long long fail_launch;
};

}  // namespace cdplab::harness
