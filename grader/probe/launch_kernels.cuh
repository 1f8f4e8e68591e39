/// @file launch_kernels.cuh
/// @brief What the CDP probe and the chapter 05 benchmark share to measure device-side launches:
///        the stream kinds a thread launches into, tiny parents and children, children held
///        pending until every launch of their parent grid has been tried, a histogram of launch
///        results, and CUDA-event timing of one parent grid.
///
/// The file defines kernels: include it in one translation unit per program.
#pragma once

#include "cdplab/bench.h"
#include "cdplab/check.h"
#include "cdplab/gpu_timer.h"

#include <cuda_runtime.h>

#include <string>

namespace cdplab::probe {

/// Error codes a histogram counts one by one; larger codes share the last slot.
constexpr int kCodeSlots = 1024;

/// Where a device-side launch goes.
enum class StreamKind : int { kNull, kFireAndForget, kNamed, kTail };

/// The stream kind in words, as a table row names it.
inline const char* stream_label(StreamKind kind) {
  switch (kind) {
    case StreamKind::kNull: return "the NULL stream";
    case StreamKind::kFireAndForget: return "fire-and-forget (cudaStreamFireAndForget)";
    case StreamKind::kNamed: return "a named non-blocking stream per thread (created and destroyed by it)";
    case StreamKind::kTail: return "the tail-launch stream (cudaStreamTailLaunch)";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// Device code

/// Counts one occurrence of `code` in a histogram of kCodeSlots counters.
__device__ inline void count_code(int* histogram, cudaError_t code) {
  const int slot = static_cast<int>(code) < kCodeSlots ? static_cast<int>(code) : kCodeSlots - 1;
  atomicAdd(&histogram[slot], 1);
}

/// The stream a launch of `kind` goes into; a named stream is created here (the result of its
/// creation is returned, for the caller to count).
__device__ inline cudaError_t open_stream(StreamKind kind, cudaStream_t* stream) {
  switch (kind) {
    case StreamKind::kNull: *stream = 0; return cudaSuccess;
    case StreamKind::kFireAndForget: *stream = cudaStreamFireAndForget; return cudaSuccess;
    case StreamKind::kTail: *stream = cudaStreamTailLaunch; return cudaSuccess;
    case StreamKind::kNamed: return cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking);
  }
  return cudaErrorInvalidValue;
}

/// Releases a named stream; the work already in it still runs to the end.
__device__ inline void close_stream(StreamKind kind, cudaStream_t stream) {
  if (kind == StreamKind::kNamed) (void)cudaStreamDestroy(stream);
}

/// A child that does nothing: what a launch costs without any work.
__global__ void empty_child() {}

/// A parent that launches nothing: the time of a grid of its shape alone.
__global__ void idle_parent() {}

/// One thread launches `children` empty children of `child_threads` threads into the NULL
/// stream, one after another, and counts every launch's result in `codes`.
__global__ void serial_parent(int children, unsigned child_threads, int* codes) {
  for (int c = 0; c < children; ++c) {
    empty_child<<<1, child_threads>>>();
    count_code(codes, cudaGetLastError());
  }
}

/// Every thread launches one empty child of `child_threads` threads into a stream of `kind`
/// and counts the result (a named stream's failed creation counts as the launch's result).
__global__ void fan_parent(StreamKind kind, unsigned child_threads, int* codes) {
  cudaStream_t stream;
  cudaError_t result = open_stream(kind, &stream);
  if (result == cudaSuccess) {
    empty_child<<<1, child_threads, 0, stream>>>();
    result = cudaGetLastError();
    close_stream(kind, stream);
  }
  count_code(codes, result);
}

/// Counters of one grid whose children are held pending (overflow_parent), in global memory.
struct OverflowCounters {
  int launch_codes[kCodeSlots];  ///< what cudaGetLastError returned after each launch
  int create_codes[kCodeSlots];  ///< what cudaStreamCreateWithFlags returned (named streams)
  int attempted;                 ///< parent threads done with their launch
  int ran;                       ///< children that ran
  int gave_up;                   ///< children that stopped waiting when their hold cap passed
};

/// A child that stays pending until every parent thread has tried its launch, or until
/// `hold_cap_ns` have passed since it started (then it gives up): it can never hang. Counts
/// itself once in `ran` (and in `gave_up` when it stopped waiting).
__global__ void held_child(OverflowCounters* counters, int target, unsigned long long hold_cap_ns) {
  const unsigned long long start = global_time_ns();
  const volatile int* attempted = &counters->attempted;
  bool waited_out = false;
  while (*attempted < target) {
    if (global_time_ns() - start >= hold_cap_ns) {
      waited_out = true;
      break;
    }
    __nanosleep(1000);
  }
  if (threadIdx.x == 0) {
    atomicAdd(&counters->ran, 1);
    if (waited_out) atomicAdd(&counters->gave_up, 1);
  }
}

/// Each of the first `launches` threads launches one held_child of `child_threads` threads into
/// a stream of `kind`, counts the result, then counts itself in `attempted`: all launches
/// compete for the pending launch pool at the same time.
__global__ void overflow_parent(StreamKind kind, int launches, unsigned child_threads,
                                unsigned long long hold_cap_ns, OverflowCounters* counters) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= launches) return;
  (void)cudaGetLastError();  // start from a clean per-thread error state
  cudaStream_t stream;
  const cudaError_t created = open_stream(kind, &stream);
  if (kind == StreamKind::kNamed) count_code(counters->create_codes, created);
  if (created == cudaSuccess) {
    held_child<<<1, child_threads, 0, stream>>>(counters, launches, hold_cap_ns);
    count_code(counters->launch_codes, cudaGetLastError());
    close_stream(kind, stream);
  }
  __threadfence();
  atomicAdd(&counters->attempted, 1);
}

// ---------------------------------------------------------------------------------------------
// Host code

/// "cudaErrorLaunchPendingCountExceeded (69)".
inline std::string code_text(int code) {
  return std::string(cudaGetErrorName(static_cast<cudaError_t>(code))) + " (" + std::to_string(code) + ")";
}

/// "2048 x cudaSuccess (0), 952 x cudaErrorLaunchPendingCountExceeded (69)" from a histogram of
/// kCodeSlots counters; with `errors_only`, cudaSuccess is left out. "none" when nothing is left.
inline std::string histogram_text(const int* histogram, bool errors_only = false) {
  std::string text;
  for (int code = errors_only ? 1 : 0; code < kCodeSlots; ++code) {
    if (histogram[code] == 0) continue;
    if (!text.empty()) text += ", ";
    text += std::to_string(histogram[code]) + " x " +
            (code == kCodeSlots - 1 ? "error code >= " + std::to_string(code) : code_text(code));
  }
  return text.empty() ? "none" : text;
}

/// Times `launch()` (the host launch of one parent grid) with CUDA events recorded around it in
/// the default stream: the interval covers the parent grid and all the work it launched. Returns
/// the median of `runs` timed runs after `warmups` untimed ones.
template <typename Launch>
double median_parent_ms(Launch&& launch, int warmups, int runs) {
  cudaEvent_t start;
  cudaEvent_t stop;
  CDPLAB_CHECK(cudaEventCreate(&start));
  CDPLAB_CHECK(cudaEventCreate(&stop));
  cdplab::bench::Samples samples;
  for (int run = 0; run < warmups + runs; ++run) {
    CDPLAB_CHECK(cudaEventRecord(start));
    launch();
    CDPLAB_CHECK(cudaGetLastError());
    CDPLAB_CHECK(cudaEventRecord(stop));
    CDPLAB_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CDPLAB_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (run >= warmups) samples.add(ms);
  }
  CDPLAB_CHECK(cudaEventDestroy(start));
  CDPLAB_CHECK(cudaEventDestroy(stop));
  return samples.median();
}

}  // namespace cdplab::probe
