// Exercise constant-params: parameters in __constant__ memory, read by parent and children.
//
// Constant memory is written by the host only, before the first kernel that reads it, and is
// then the same, read-only, for every grid at every nesting level: a child reads it without
// being handed anything. Here the host stores the coefficients of a polynomial
//   p(x) = coefficients[0] + coefficients[1] * x + ... + coefficients[count-1] * x^(count-1)
// with cudaMemcpyToSymbol. A parent thread per segment of x reads the coefficient count: a
// constant polynomial (count 1) needs no evaluation, so it launches fill_segment with the value;
// otherwise it launches horner_segment, whose threads evaluate p by Horner's rule.
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/host_part.h"
#include "cdplab/launch_pool.h"
#include "cdplab/visibility.h"

#include <cstddef>
#include <stdexcept>
#include <string>

namespace cdplab::visibility {

/// The polynomial's coefficients, lowest power first (written by the host).
__constant__ float coefficients[kMaxCoefficients];
/// How many entries of `coefficients` are used, 1 .. kMaxCoefficients (written by the host).
__constant__ int coefficient_count;

/// Elements per segment: each parent thread launches one child over one segment.
inline constexpr unsigned kSegmentSize = 4096;
/// Threads per block of the children.
inline constexpr unsigned kChildThreads = 256;
/// Threads per block of the parent (one thread per segment).
inline constexpr unsigned kParentThreads = 32;

/// y[i] = p(x[i]) for i < count, by Horner's rule over the constant coefficients.
__global__ void horner_segment(const float* x, float* y, unsigned count) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  // BEGIN SOLUTION
  const float t = x[i];
  float value = coefficients[coefficient_count - 1];
  for (int k = coefficient_count - 2; k >= 0; --k) value = value * t + coefficients[k];
  y[i] = value;
  // END SOLUTION
  //| // TODO(constant-params): evaluate p(x[i]) by Horner's rule: start from the highest
  //| // coefficient, coefficients[coefficient_count - 1], and for k from coefficient_count - 2
  //| // down to 0 multiply by x[i] and add coefficients[k]. Write the value to y[i].
  //| CDPLAB_TODO();
}

/// y[i] = value for i < count: a constant polynomial.
__global__ void fill_segment(float* y, unsigned count, float value) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) y[i] = value;
}

/// The parent: thread s launches the child of segment s of x (n elements in all).
__global__ void polynomial_parent(const float* x, float* y, unsigned n) {
  const unsigned segment = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned begin = segment * kSegmentSize;
  if (begin >= n) return;
  const unsigned count = n - begin < kSegmentSize ? n - begin : kSegmentSize;
  const unsigned blocks = (count + kChildThreads - 1) / kChildThreads;
  // BEGIN SOLUTION
  if (coefficient_count == 1) {
    // The parent reads the constant too: nothing to evaluate, hand the child the value.
    fill_segment<<<blocks, kChildThreads>>>(y + begin, count, coefficients[0]);
  } else {
    horner_segment<<<blocks, kChildThreads>>>(x + begin, y + begin, count);
  }
  CDPLAB_CHECK_LAUNCH();
  // END SOLUTION
  //| // TODO(constant-params): read coefficient_count (constant memory: no argument needed).
  //| // When it is 1, launch fill_segment over this segment (y + begin, count) with the value
  //| // coefficients[0]; otherwise launch horner_segment over it (x + begin, y + begin, count).
  //| // Either child gets `blocks` blocks of kChildThreads threads. Check the launch with
  //| // CDPLAB_CHECK_LAUNCH() on the next line.
  //| (void)x;
  //| (void)y;
  //| (void)blocks;
  //| CDPLAB_TODO();
}

/// Host part (cdplab/host_part.h): writes the polynomial's coefficients (1 to kMaxCoefficients,
/// lowest power first) and their count into constant memory, before the kernels that read them.
CDPLAB_HOST_PART void upload_coefficients(const std::vector<float>& coefficients_in) {
  // BEGIN SOLUTION
  // Constant memory is written from the host, before the kernels that read it are launched.
  const int count = static_cast<int>(coefficients_in.size());
  CDPLAB_CHECK(cudaMemcpyToSymbol(coefficients, coefficients_in.data(), coefficients_in.size() * sizeof(float)));
  CDPLAB_CHECK(cudaMemcpyToSymbol(coefficient_count, &count, sizeof count));
  // END SOLUTION
  //| // TODO(constant-params): copy coefficients_in into the __constant__ array coefficients, and
  //| // its size (as an int) into coefficient_count, with cudaMemcpyToSymbol; wrap each call in
  //| // CDPLAB_CHECK. Constant memory can only be written from the host, before the launch.
  //| (void)coefficients_in;
  //| CDPLAB_TODO();
}

std::vector<float> evaluate_polynomial(const std::vector<float>& x, const std::vector<float>& coefficients_in) {
  if (coefficients_in.empty() || coefficients_in.size() > static_cast<std::size_t>(kMaxCoefficients)) {
    throw std::invalid_argument("evaluate_polynomial: 1 to " + std::to_string(kMaxCoefficients) +
                                " coefficients, found " + std::to_string(coefficients_in.size()));
  }
  if (x.size() >= (std::size_t{1} << 31)) throw std::invalid_argument("evaluate_polynomial: at most 2^31 - 1 values");
  if (x.empty()) return {};  // a grid of zero blocks is a launch error
  const auto n = static_cast<unsigned>(x.size());
  const unsigned segments = (n + kSegmentSize - 1) / kSegmentSize;

  upload_coefficients(coefficients_in);  // the host part above: before the first launch

  reserve_pending_launches(segments);  // one child per segment, all pending at once

  DeviceArray<float> device_x(x);
  DeviceArray<float> device_y(x.size());
  reset_device_report();
  polynomial_parent<<<(segments + kParentThreads - 1) / kParentThreads, kParentThreads>>>(device_x.data(),
                                                                                          device_y.data(), n);
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());  // the parent and every child
  throw_if_device_reported();
  return device_y.download();
}

}  // namespace cdplab::visibility
