// Checks of exercise device-heap: heap_scratch_sums and its kernels heap_sums_kernel,
// allocate_orphan and free_orphan.
#include "harness.h"

#include "04-memory-visibility.h"
#include "cdplab/check.h"
#include "cdplab/random.h"
#include "cdplab/visibility.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace oracle = cdplab::oracle::visibility;
using cdplab::visibility::HeapRun;

/// The largest device heap the lesson accepts for `sizes`: eight times the bytes of all buffers,
/// 256 bytes per buffer and 16 MiB (the reference asks for about a quarter of it).
std::size_t most_heap_bytes(const std::vector<unsigned>& sizes) {
  std::size_t payload = 0;
  for (unsigned size : sizes) payload += std::size_t{size} * sizeof(unsigned);
  return 8 * payload + 256 * sizes.size() + (std::size_t{16} << 20);
}

/// Runs heap_scratch_sums over `sizes` and judges the sums, and the heap in effect afterwards
/// (read back here, not believed): no larger than the largest workload of this process needs.
HeapRun expect_sums(const std::vector<unsigned>& sizes) {
  static std::size_t most_so_far = 0;  // the heap cannot shrink once used: the largest workload counts
  most_so_far = std::max(most_so_far, most_heap_bytes(sizes));
  const HeapRun run = cdplab::visibility::heap_scratch_sums(sizes);
  const auto verdict = oracle::judge_scratch_sums(sizes, run);
  CHECK_MESSAGE(verdict.ok, verdict.message);
  std::size_t heap = 0;
  CDPLAB_CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  CHECK_MESSAGE(heap <= most_so_far,
                "the device heap in effect after reserve_heap_for is " << heap << " bytes, more than " << most_so_far
                << " (eight times the bytes of all buffers, plus 256 bytes per buffer, plus 16 MiB): the heap is "
                << "device memory no other allocation can use; size it from the workload");
  return run;
}

/// `count` sizes uniform in [lo, hi].
std::vector<unsigned> random_sizes(cdplab::Random& rng, std::size_t count, unsigned lo, unsigned hi) {
  std::vector<unsigned> sizes(count);
  for (auto& s : sizes) s = static_cast<unsigned>(rng.integer(lo, hi));
  return sizes;
}

}  // namespace

GPU_CHECK("small buffers") {
  cdplab::Random rng = cdplab::harness::check_rng();
  auto sizes = random_sizes(rng, 2000, 1, 200);
  sizes[7] = 0;  // an empty buffer: nothing to allocate, the sum is 0
  expect_sums(sizes);
}

GPU_CHECK("large buffers") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // About 48 MiB of buffers in all: far more than the default 8 MiB device heap.
  expect_sums(random_sizes(rng, 4096, 2048, 4096));
}

GPU_CHECK("repeated runs do not leak") {
  // 16384 buffers of 256 bytes: the heap is sized for one run's worth. A run that does not
  // free its buffers leaves the next run too little room.
  const std::vector<unsigned> sizes(16384, 64);
  for (int run = 1; run <= 4; ++run) {
    INFO("run " << run << " of 4 with the same workload");
    expect_sums(sizes);
  }
}

GPU_CHECK("host cannot free device heap") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const HeapRun run = expect_sums(random_sizes(rng, 100, 1, 100));
  CHECK_MESSAGE(run.host_free_error != cudaSuccess,
                "the host's cudaFree of a device-heap pointer returned cudaSuccess; expected an error: memory "
                "allocated by cudaMalloc in device code can only be freed in device code");
}

GPU_CHECK("sums past 32 bits") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // The sum of 1 .. s leaves 32 bits from s = 92682 on: every buffer here is longer, so a sum
  // kept in a 32-bit integer anywhere on the way is wrong (about 25 MiB of buffers in all).
  expect_sums(random_sizes(rng, 48, 92682, 131072));
}

GPU_CHECK("a full device heap is reported") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const auto sizes = random_sizes(rng, 512, 1, 200);
  cdplab::harness::expect_failed_allocation_handled(
      [&] { expect_sums(sizes); },  // judged first: the point goes only to right sums
      [&](const std::string& made) {
        try {
          (void)cdplab::visibility::heap_scratch_sums(sizes);
          FAIL_CHECK(made << "; heap_scratch_sums returned as if every buffer had been allocated. When cudaMalloc "
                             "fails (an error code or a null pointer), atomicAdd 1 to *failures and return: the "
                             "host reports it");
        } catch (const cdplab::CudaError& error) {
          FAIL_CHECK(made << "; the run ended with a CUDA error instead of the heap's report: " << error.what()
                          << ". Test cudaMalloc's result before using the buffer");
        } catch (const std::runtime_error& error) {
          const std::string said = error.what();
          CHECK_MESSAGE(said.find("cudaMalloc failed for 1 of") != std::string::npos,
                        made << "; the host reported: " << said << " (one allocation failed, one was to be counted)");
        }
      });
}

GPU_CHECK("buffers stay in bounds (memcheck)") {
  // Graded under compute-sanitizer memcheck too (chapter.toml: memcheck = true), which knows
  // each device-heap buffer's size: a write one past a buffer's end changes no sum, so the
  // results alone cannot show it. Few buffers: the tool checks every heap access.
  std::vector<unsigned> sizes(64);
  for (unsigned i = 0; i < sizes.size(); ++i) sizes[i] = i + 1;
  expect_sums(sizes);
}
