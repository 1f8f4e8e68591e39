// Grader-side child of chapter 04's tail-consumer exercise: a child that takes its time.
#include "cdplab/gpu_timer.h"
#include "cdplab/visibility.h"

namespace cdplab::visibility::grader {

__global__ void delayed_child(const int* in, int* out, int n, unsigned delay_ns) {
  // Wait first: a parent that reads `out` right after launching this grid reads it long before
  // anything is written, on every run.
  const unsigned long long start = global_time_ns();
  while (global_time_ns() - start < delay_ns) __nanosleep(1000);
  const int stride = static_cast<int>(gridDim.x * blockDim.x);
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += stride) out[i] = in[i] * 3 + 1;
}

}  // namespace cdplab::visibility::grader
