/// @file gpu_timer.h
/// @brief Times GPU work with CUDA events (what the GPU did, not what the host waited for).
#pragma once

#include "cdplab/check.h"

namespace cdplab {

/// Measures the time between start() and stop() on a stream, in milliseconds.
class GpuTimer {
 public:
  GpuTimer() {
    CDPLAB_CHECK(cudaEventCreate(&start_));
    CDPLAB_CHECK(cudaEventCreate(&stop_));
  }
  ~GpuTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;

  /// Records the start event on `stream`.
  void start(cudaStream_t stream = nullptr) { CDPLAB_CHECK(cudaEventRecord(start_, stream)); }
  /// Records the stop event on `stream`.
  void stop(cudaStream_t stream = nullptr) { CDPLAB_CHECK(cudaEventRecord(stop_, stream)); }
  /// Waits for the stop event and returns the elapsed milliseconds.
  float elapsed_ms() const {
    CDPLAB_CHECK(cudaEventSynchronize(stop_));
    float ms = 0.0f;
    CDPLAB_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaEvent_t start_{};
  cudaEvent_t stop_{};
};

#ifdef __CUDACC__
/// Device side: nanoseconds from the GPU's global timer (`%globaltimer`), the same clock on
/// every SM, so times read by different grids can be compared.
__device__ inline unsigned long long global_time_ns() {
  unsigned long long ns = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}
#endif

}  // namespace cdplab
