// Grader-side half of chapter 05's pools exercise: the launch board the parent reports to, and
// a child that stays pending until every launch of the parent has been reported.
//
// A child holds its entry of the pending launch pool while it waits to run and while it runs.
// Keeping every child alive until the parent has made (and reported) all its launches puts all
// of them in the pool at once, which is the workload the exercise sizes the pool for.
#include "cdplab/gpu_timer.h"
#include "cdplab/streams.h"

namespace cdplab::streams::grader {
namespace {

/// How long a child waits for the reports before it gives up: far longer than any parent
/// needs to make its launches, short enough that a parent that never reports cannot hang the
/// GPU (and the check) for long.
constexpr unsigned long long kHoldTimeoutNs = 500'000'000ull;

/// Reads a word other grids write while this one runs: volatile, so every read goes to memory.
__device__ unsigned read_shared_word(const unsigned* word) { return *static_cast<const volatile unsigned*>(word); }

}  // namespace

__device__ void report_launch(LaunchBoard* board, cudaError_t result) {
  if (result != cudaSuccess) {
    atomicAdd(&board->failed, 1u);
    atomicCAS(&board->first_error, 0, static_cast<int>(result));  // the first error keeps its place
  }
  // The failure counts are visible before the report that children wait for.
  __threadfence();
  atomicAdd(&board->reported, 1u);
}

__global__ void held_child(LaunchBoard* board, unsigned slot) {
  if (threadIdx.x != 0) return;
  const unsigned long long start = global_time_ns();
  while (read_shared_word(&board->reported) < board->expected) {
    // Once one child has given up, the reports are not coming: the others stop waiting at
    // once. (Children queued one after another in a NULL stream would otherwise each wait the
    // whole time-out in turn.)
    if (read_shared_word(&board->gave_up) != 0 || global_time_ns() - start > kHoldTimeoutNs) {
      atomicAdd(&board->gave_up, 1u);
      break;
    }
    __nanosleep(1000);
  }
  board->ran[slot] = 1;
}

}  // namespace cdplab::streams::grader
