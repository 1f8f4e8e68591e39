/// @file visibility.h
/// @brief Chapter 04 (memory visibility): the entry points of the four exercises, and the
///        grader-side child the parent-and-child exercise launches.
///
/// What a child may see: global memory the parent wrote before the launch, constant memory the
/// host wrote before the first launch, and device-heap memory. Never the parent's local
/// variables or `__shared__` memory. What the parent may see of the child: nothing until the
/// child has finished, which in CDP2 only a kernel launched into cudaStreamTailLaunch can wait for.
#pragma once

#include <cuda_runtime.h>

#include <vector>

namespace cdplab::visibility {

/// Exercise a (private_pointers.cu), fix the bug: each block of the parent gathers its segment's
/// sum in `__shared__` memory and the launching thread keeps its segment's scale in a local
/// variable, then a child grid applies them. Handing the child those addresses is the bug; the fix
/// stages the values in global memory. Returns out[i] = in[i] * (segment sum of i's block) + i's
/// scale, as the exercise file documents.
std::vector<float> scale_by_segment_sums(const std::vector<float>& in);

/// Exercise b (tail_consumer.cu): the parent writes `seed` values to global memory, launches
/// the grader's delayed child (delayed_child, below) that transforms them, and consumes the
/// child's output in a kernel launched into cudaStreamTailLaunch. Returns what the consumer wrote.
std::vector<int> consume_after_child(const std::vector<int>& seed, unsigned child_delay_ns);

/// Exercise c (constant_params.cu): the host writes the coefficients of a polynomial into
/// `__constant__` memory (cudaMemcpyToSymbol) before the first launch; a parent launches one child
/// per segment of `x`, and parent and children read the coefficients. Returns p(x[i]) for every i.
/// At most kMaxCoefficients coefficients.
std::vector<float> evaluate_polynomial(const std::vector<float>& x, const std::vector<float>& coefficients);

/// The most coefficients exercise c's constant memory holds.
constexpr int kMaxCoefficients = 16;

/// Exercise d (device_heap.cu): what one run of the device-heap exercise produced.
struct HeapRun {
  std::vector<unsigned long long> sums;  ///< per item: the sum of its scratch buffer (see the exercise)
  cudaError_t host_free_error;           ///< what host cudaFree said of a device-heap pointer
};

/// Exercise d: sizes the device heap with cudaLimitMallocHeapSize from the workload, then each
/// thread of a kernel allocates a scratch buffer of sizes[i] unsigned integers with device-side
/// malloc/cudaFree, fills it with 1 .. sizes[i], sums it into sums[i] and frees it in device code.
/// Also hands one device-heap pointer to host cudaFree to show that the host cannot free it.
HeapRun heap_scratch_sums(const std::vector<unsigned>& sizes);

}  // namespace cdplab::visibility

#ifdef __CUDACC__  // a kernel declaration means something to device code only
namespace cdplab::visibility::grader {

/// The grader's child of exercise b (it lives in the grader, not in the exercise): waits about
/// `delay_ns` nanoseconds, then writes out[i] = in[i] * 3 + 1 for i < n. The delay makes a parent
/// that reads `out` before the child has finished see stale values every time.
__global__ void delayed_child(const int* in, int* out, int n, unsigned delay_ns);

}  // namespace cdplab::visibility::grader
#endif
