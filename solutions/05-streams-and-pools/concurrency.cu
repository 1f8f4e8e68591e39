// Exercise concurrency: three ways to launch a child, one timeline.
//
// Every thread of concurrency_parent launches one child grid of concurrency_child (given below),
// which records in spans[slot] when it started and when it ended. Where the child goes decides
// what may run side by side:
//   null stream      child<<<grid, block>>>: the implicit NULL stream, one per parent block.
//                    The launches of a block run one after the other; blocks run side by side.
//   named streams    each thread creates a stream with cudaStreamNonBlocking (the only flag the
//                    device runtime accepts), launches into it and destroys it right away: the
//                    work already launched into it still runs. Streams are independent.
//   fire-and-forget  cudaStreamFireAndForget: every launch is a stream of its own, with nothing
//                    to create or destroy.
// The host then turns the spans into a timeline (cdplab/timeline.h) that shows the difference.
// The grader judges the order of the grids from its own record of when each of them ran, not
// from the spans (it only checks that every slot was written by its own child), and
// `cdplab check concurrency --timeline` draws that record.
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/gpu_timer.h"
#include "cdplab/launch_pool.h"
#include "cdplab/streams.h"

#include <cstddef>
#include <stdexcept>
#include <string>

namespace cdplab::streams {

const char* to_string(LaunchStrategy strategy) {
  switch (strategy) {
    case LaunchStrategy::null_stream: return "null stream";
    case LaunchStrategy::named_streams: return "named streams";
    case LaunchStrategy::fire_and_forget: return "fire-and-forget";
  }
  return "unknown strategy";
}

/// The child (given): every thread waits until about `work_ns` have passed since it started, and
/// thread 0 records its start and, once all threads are done, the end.
__global__ void concurrency_child(timeline::Span* spans, unsigned slot, unsigned work_ns) {
  const unsigned long long begin = global_time_ns();
  // Work that takes time without keeping the SM busy: any number of these children fit on the
  // GPU at once, so what overlaps depends on the launches alone.
  while (global_time_ns() - begin < work_ns) __nanosleep(256);
  // Every thread is done before the end is taken: a grid that starts after this one has finished
  // (the next child in a NULL stream) reads a later time than end_ns.
  __syncthreads();
  if (threadIdx.x == 0) {
    spans[slot].start_ns = begin;
    spans[slot].end_ns = global_time_ns();
  }
}

/// Thread t of block b launches one concurrency_child with slot b * blockDim.x + t into the stream
/// `strategy` names; the child works about `child_ns` nanoseconds.
__global__ void concurrency_parent(LaunchStrategy strategy, timeline::Span* spans, unsigned child_ns) {
  const unsigned slot = blockIdx.x * blockDim.x + threadIdx.x;
  // BEGIN SOLUTION
  switch (strategy) {
    case LaunchStrategy::null_stream:
      concurrency_child<<<1, kConcurrencyChildThreads>>>(spans, slot, child_ns);
      CDPLAB_CHECK_LAUNCH();
      break;
    case LaunchStrategy::named_streams: {
      cudaStream_t stream;
      const cudaError_t created = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
      if (created != cudaSuccess) {  // no stream, no launch: the host reports it
        record_device_launch(created, __FILE__, __LINE__);
        break;
      }
      concurrency_child<<<1, kConcurrencyChildThreads, 0, stream>>>(spans, slot, child_ns);
      CDPLAB_CHECK_LAUNCH();
      // Destroying a stream does not cancel its work: the child still runs, and the stream's
      // resources are released once it has finished.
      cudaStreamDestroy(stream);
      break;
    }
    case LaunchStrategy::fire_and_forget:
      concurrency_child<<<1, kConcurrencyChildThreads, 0, cudaStreamFireAndForget>>>(spans, slot, child_ns);
      CDPLAB_CHECK_LAUNCH();
      break;
  }
  // END SOLUTION
  //| // TODO(concurrency): launch concurrency_child<<<1, kConcurrencyChildThreads>>> with
  //| // (spans, slot, child_ns), into the stream `strategy` names:
  //| //   LaunchStrategy::null_stream      no stream argument (the NULL stream),
  //| //   LaunchStrategy::named_streams    a stream this thread creates with
  //| //                                    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)
  //| //                                    and destroys with cudaStreamDestroy after the launch,
  //| //   LaunchStrategy::fire_and_forget  cudaStreamFireAndForget.
  //| // Check each launch with CDPLAB_CHECK_LAUNCH() on the next line.
  //| (void)strategy;
  //| (void)spans;
  //| (void)slot;
  //| (void)child_ns;
  //| CDPLAB_TODO();
}

std::vector<timeline::Span> launch_timed_children(LaunchStrategy strategy, unsigned blocks, unsigned threads,
                                                  unsigned child_ns) {
  if (strategy != LaunchStrategy::null_stream && strategy != LaunchStrategy::named_streams &&
      strategy != LaunchStrategy::fire_and_forget) {
    throw std::invalid_argument("launch_timed_children: unknown launch strategy " +
                                std::to_string(static_cast<int>(strategy)));
  }
  if (blocks == 0 || threads == 0 || threads > 1024) {
    throw std::invalid_argument("launch_timed_children: blocks must be at least 1 and threads between 1 and 1024");
  }
  const std::size_t children = std::size_t{blocks} * threads;

  reserve_pending_launches(children);  // every child may be pending at once

  DeviceArray<timeline::Span> spans(children);  // zero-filled: a child that never runs keeps start 0
  reset_device_report();
  concurrency_parent<<<blocks, threads>>>(strategy, spans.data(), child_ns);
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());  // the parent and every child, in whatever stream
  throw_if_device_reported();

  std::vector<timeline::Span> result = spans.download();
  for (std::size_t i = 0; i < result.size(); ++i) {
    result[i].group = static_cast<unsigned>(i / threads);
    result[i].lane = static_cast<unsigned>(i % threads);
  }
  return result;
}

}  // namespace cdplab::streams
