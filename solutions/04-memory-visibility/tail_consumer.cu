// Exercise tail-consumer: consume a child's output in a tail launch.
//
// The parent writes the input of a child grid to global memory, launches the child and needs
// the child's output. A CDP2 parent cannot wait for its child, and reading `out` right after
// the launch reads whatever was there before: the child has most likely not even started. The
// grader's child (grader::delayed_child, see visibility.h) waits on purpose before it writes,
// so a parent that reads too early gets stale values on every run. The work that needs the
// child's output goes into a kernel launched into cudaStreamTailLaunch, which starts only when
// the parent grid and all the work it launched have finished.
//
// The result: result[i] = out[i] + in[i], where in[i] = seed[i] (written by the parent) and
// out[i] = in[i] * 3 + 1 (written by the child), so result[i] = 4 * seed[i] + 1.
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/visibility.h"

#include <cstddef>
#include <stdexcept>

namespace cdplab::visibility {

/// Elements per block of the parent, of each child, and of each consumer grid.
inline constexpr unsigned kConsumerThreads = 256;

/// The consumer of one segment of `count` elements: result[i] = out[i] + in[i]. Right only if
/// the child that writes `out` has finished when it starts.
__global__ void consume_segment(const int* in, const int* out, int* result, int count) {
  const int i = static_cast<int>(threadIdx.x);
  // BEGIN SOLUTION
  if (i < count) result[i] = out[i] + in[i];
  // END SOLUTION
  //| // TODO(tail-consumer): only if i < count, write result[i] = out[i] + in[i].
  //| (void)i;
  //| CDPLAB_TODO();
}

/// The parent: block b copies its segment of `seed` into `in` (global memory the child reads),
/// then its thread 0 launches the grader's delayed_child over the segment and the consumer.
__global__ void produce_parent(const int* seed, int* in, int* out, int* result, int n, unsigned delay_ns) {
  const int begin = static_cast<int>(blockIdx.x * kConsumerThreads);
  const int i = begin + static_cast<int>(threadIdx.x);
  if (i < n) in[i] = seed[i];
  // Every thread's write happens before thread 0's launch; the launch makes them visible to
  // the child ("launch implies membar").
  __syncthreads();
  if (threadIdx.x != 0) return;
  const int count = n - begin < static_cast<int>(kConsumerThreads) ? n - begin : static_cast<int>(kConsumerThreads);
  // BEGIN SOLUTION
  grader::delayed_child<<<1, kConsumerThreads>>>(in + begin, out + begin, count, delay_ns);
  CDPLAB_CHECK_LAUNCH();
  // The parent cannot wait for the child; the tail launch starts after this whole grid and
  // every child it launched have finished, so the consumer sees the child's output.
  consume_segment<<<1, kConsumerThreads, 0, cudaStreamTailLaunch>>>(in + begin, out + begin, result + begin, count);
  CDPLAB_CHECK_LAUNCH();
  // END SOLUTION
  //| // TODO(tail-consumer): launch grader::delayed_child with one block of kConsumerThreads
  //| // threads over this block's segment (in + begin, out + begin, count elements, delay_ns),
  //| // then consume_segment over the same segment (in, out and result from begin) into
  //| // cudaStreamTailLaunch. Check each launch with CDPLAB_CHECK_LAUNCH() on the next line.
  //| (void)count;
  //| (void)delay_ns;
  //| CDPLAB_TODO();
}

std::vector<int> consume_after_child(const std::vector<int>& seed, unsigned child_delay_ns) {
  if (seed.size() >= (std::size_t{1} << 31)) throw std::invalid_argument("consume_after_child: at most 2^31 - 1 values");
  if (seed.empty()) return {};  // a grid of zero blocks is a launch error
  const auto n = static_cast<int>(seed.size());
  const unsigned blocks = (static_cast<unsigned>(n) + kConsumerThreads - 1) / kConsumerThreads;

  // Each block has two launches pending at once (the child and the tail launch).
  std::size_t pool = 0;
  CDPLAB_CHECK(cudaDeviceGetLimit(&pool, cudaLimitDevRuntimePendingLaunchCount));
  if (pool < 2 * std::size_t{blocks}) {
    CDPLAB_CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, 2 * std::size_t{blocks}));
  }

  DeviceArray<int> device_seed(seed);
  DeviceArray<int> in(seed.size()), out(seed.size()), result(seed.size());  // zero-filled

  reset_device_report();
  produce_parent<<<blocks, kConsumerThreads>>>(device_seed.data(), in.data(), out.data(), result.data(), n,
                                               child_delay_ns);
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());  // the parent, every child, every tail launch
  throw_if_device_reported();
  return result.download();
}

}  // namespace cdplab::visibility
