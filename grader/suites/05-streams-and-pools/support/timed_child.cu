// Grader-side child of chapter 05's concurrency exercise: a child that records when it ran.
#include "cdplab/gpu_timer.h"
#include "cdplab/streams.h"

namespace cdplab::streams::grader {

__global__ void timed_child(timeline::Span* spans, unsigned slot, unsigned work_ns) {
  __shared__ unsigned long long start;
  if (threadIdx.x == 0) start = global_time_ns();
  __syncthreads();
  const unsigned long long begin = start;
  // "Work" that takes about work_ns without keeping the SM busy: any number of these children
  // can share the GPU, so the overlap seen depends on the launches alone.
  while (global_time_ns() - begin < work_ns) __nanosleep(256);
  // Every thread is done before the end is taken: a grid that starts after this one has
  // finished (the next child of a NULL stream) reads a later time than end_ns.
  __syncthreads();
  if (threadIdx.x == 0) {
    spans[slot].start_ns = begin;
    spans[slot].end_ns = global_time_ns();
  }
}

}  // namespace cdplab::streams::grader
