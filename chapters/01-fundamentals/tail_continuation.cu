// Exercise tail-continuation: a parent that launches three dependent grids and a continuation.
//
// In the CDP1 listings of the course, a kernel launches X, Y and Z, waits for them with a
// device-side cudaDeviceSynchronize() and then carries on with their results. CDP2 has no
// device-side wait: nvcc refuses cudaDeviceSynchronize() in device code for sm_90. Grids
// launched by one thread into the NULL stream still run one after another, so X, Y, Z keep
// their order; the work after the wait moves into its own kernel, launched into
// cudaStreamTailLaunch, which starts only when the parent grid and all its children are done.
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/fundamentals.h"

#include <cstddef>
#include <stdexcept>

namespace cdplab::fundamentals {

/// Threads per block of every step (each step is a grid of ceil(n / kStepThreads) blocks).
inline constexpr unsigned kStepThreads = 256;

/// x[i] = 2 * input[i] + 1
__global__ void step_x(const float* input, float* x, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 2.0f * input[i] + 1.0f;
}

/// y[i] = x[n-1-i] - x[i]: element n-1-i was written by another block of step_x.
__global__ void step_y(const float* x, float* y, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[n - 1 - i] - x[i];
}

/// z[i] = 0.5 * y[(i+1) % n]: the last thread of each block reads what the next block of
/// step_y wrote, and the very last thread reads y[0].
__global__ void step_z(const float* y, float* z, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = 0.5f * y[i + 1 < n ? i + 1 : 0];
}

/// The continuation: result[i] = x[i] + y[i] + z[i]. Correct only if it starts after
/// step_x, step_y and step_z have all finished.
__global__ void pipeline_finish(const float* x, const float* y, const float* z, float* result, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) result[i] = x[i] + y[i] + z[i];
}

/// The parent, run by a single thread (n >= 1): launches the three steps and the continuation.
__global__ void pipeline_parent(const float* input, float* x, float* y, float* z, float* result, unsigned n) {
  // TODO(tail-continuation): launch step_x, step_y and step_z, in this order, into the NULL
  // stream (no stream argument), each with enough blocks of kStepThreads threads to cover
  // n elements. Then launch pipeline_finish into cudaStreamTailLaunch (the fourth launch
  // parameter), so that it runs after all three steps. Check every launch with
  // CDPLAB_CHECK_LAUNCH() on the line after it.
  CDPLAB_TODO();
}

PipelineStages run_pipeline(const std::vector<float>& input) {
  if (input.size() >= (std::size_t{1} << 31)) throw std::invalid_argument("run_pipeline: at most 2^31 - 1 values");
  PipelineStages stages;
  if (input.empty()) return stages;  // nothing to launch: a grid of zero blocks is an error
  const auto n = static_cast<unsigned>(input.size());

  DeviceArray<float> device_input(input);
  DeviceArray<float> x(n), y(n), z(n), result(n);

  reset_device_report();
  pipeline_parent<<<1, 1>>>(device_input.data(), x.data(), y.data(), z.data(), result.data(), n);
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());  // the parent, its three children and the tail launch
  throw_if_device_reported();

  stages.x = x.download();
  stages.y = y.download();
  stages.z = z.download();
  stages.result = result.download();
  return stages;
}

}  // namespace cdplab::fundamentals
