// Exercise scaled-tessellation: the dynamic-parallelism tessellation at scale.
//
// Exercise b works for a thousand lines. Ten thousand lines break it in two ways, and a third
// makes it slow:
//  - every line's child holds an entry of the pending launch pool at least until its grid starts
//    to run (docs/measured-limits.md), and the pool holds 2048 by default; CDP2 fails the launches beyond it (cudaErrorLaunchPendingCountExceeded)
//    and those children never run;
//  - every line's vertices come from the device heap, 8 MiB by default; a cudaMalloc beyond it
//    fails and the line stays empty;
//  - the children a block launches into the NULL stream run one after another.
// The host raises both limits, sized from the workload, before the first launch; the parent
// launches each child into a stream of its own or into cudaStreamFireAndForget.
#include "cdplab/bezier.h"
#include "cdplab/check.h"
#include "cdplab/host_part.h"

#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

namespace cdplab::bezier {

/// Threads per block of the parent grid (one thread per line). Children in named streams or
/// in cudaStreamFireAndForget do not wait for one another, so parent blocks may be large.
inline constexpr unsigned kScaledParentThreads = 128;
/// Threads per block of every child grid (one thread per vertex).
inline constexpr unsigned kScaledChildThreads = 32;

/// Pending launches to allow beyond one per line, so that a change that adds a launch or two
/// per block (a tail launch, say) does not tip the pool over.
inline constexpr std::size_t kPendingLaunchMargin = 256;

/// Device-heap sizing. The CUDA documentation promises only that the heap holds at least the
/// bytes asked for and that every allocation is aligned to 16 bytes; the allocator's own
/// bookkeeping is not documented. So each line's buffer is counted as its worst case (all
/// `t.max_vertices` points) rounded up to kHeapAlignment, plus kHeapBookkeeping bytes; the
/// total is multiplied by kHeapFactor (room for an allocator that rounds sizes up to classes
/// of its own), and kHeapReserve is added for the allocator's own structures.
inline constexpr std::size_t kHeapAlignment = 16;
/// Bytes counted for the allocator's bookkeeping of one allocation.
inline constexpr std::size_t kHeapBookkeeping = 64;
/// The factor the per-line total is multiplied by.
inline constexpr std::size_t kHeapFactor = 2;
/// Bytes added to the total for the allocator itself.
inline constexpr std::size_t kHeapReserve = std::size_t{1} << 20;

/// The child grid of one line, as in exercise b: thread k writes vertex k of `count`.
__global__ void scaled_child(Line line, Point* vertices, int count) {
  const int k = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (k < count) vertices[k] = vertex(line, k, count);
}

/// The parent grid: thread i allocates line i's vertices on the device heap, records them in
/// out[i], and launches the line's child into `stream`'s kind of stream.
__global__ void scaled_parent(const Line* lines, LineVertices* out, int n, Tessellation t, ChildStream stream) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  // BEGIN SOLUTION
  const Line line = lines[i];
  const int count = vertex_count(line, t);
  Point* vertices = nullptr;
  if (cudaMalloc(&vertices, static_cast<std::size_t>(count) * sizeof(Point)) != cudaSuccess || vertices == nullptr) {
    out[i] = LineVertices{0, nullptr};  // the heap is full: the line stays empty
    return;
  }
  const unsigned blocks = (static_cast<unsigned>(count) + kScaledChildThreads - 1) / kScaledChildThreads;
  if (stream == ChildStream::named) {
    // Streams made in device code must be non-blocking. A stream belongs to the block that
    // created it; one per thread lets the children of a block run side by side.
    cudaStream_t own = nullptr;
    const cudaError_t created = cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking);
    if (created != cudaSuccess) {
      record_device_launch(created, __FILE__, __LINE__);
      cudaFree(vertices);
      out[i] = LineVertices{0, nullptr};
      return;
    }
    out[i] = LineVertices{count, vertices};
    scaled_child<<<blocks, kScaledChildThreads, 0, own>>>(line, vertices, count);
    CDPLAB_CHECK_LAUNCH();
    // Legal right after the launch: the stream is released once the child has finished.
    cudaStreamDestroy(own);
  } else {
    out[i] = LineVertices{count, vertices};
    // No stream to create or destroy: the child depends on nothing launched before it.
    scaled_child<<<blocks, kScaledChildThreads, 0, cudaStreamFireAndForget>>>(line, vertices, count);
    CDPLAB_CHECK_LAUNCH();
  }
  // END SOLUTION
  //| // TODO(scaled-tessellation): as in exercise b, read line i, compute its count, allocate
  //| // count Points with cudaMalloc (on failure: out[i] = count 0 and nullptr, no launch) and
  //| // store count and pointer in out[i]. Then launch scaled_child with enough blocks of
  //| // kScaledChildThreads threads, and check the launch with CDPLAB_CHECK_LAUNCH():
  //| //  - when stream is ChildStream::named, into a stream this thread creates with
  //| //    cudaStreamCreateWithFlags(..., cudaStreamNonBlocking) and destroys right after the launch;
  //| //  - when stream is ChildStream::fire_and_forget, into cudaStreamFireAndForget.
  //| CDPLAB_TODO();
}

/// Thread i frees line i's device-heap buffer and marks the line empty.
__global__ void scaled_free_kernel(LineVertices* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  // BEGIN SOLUTION
  if (out[i].vertices != nullptr) cudaFree(out[i].vertices);
  out[i] = LineVertices{0, nullptr};
  // END SOLUTION
  //| // TODO(scaled-tessellation): as free_vertices_kernel in exercise b: cudaFree line i's
  //| // buffer, then set out[i] to count 0 and nullptr.
  //| CDPLAB_TODO();
}

namespace {

/// Throws std::invalid_argument unless `n` and the pointers keep the contract of bezier.h.
void check_arrays(const char* function, const void* lines, const void* out, int n) {
  if (n < 0) throw std::invalid_argument(std::string(function) + ": n must not be negative");
  if (n > 0 && (lines == nullptr || out == nullptr)) {
    throw std::invalid_argument(std::string(function) + ": lines and out must point to n elements of global memory");
  }
}

// BEGIN SOLUTION
/// Device-heap bytes for `n` lines of at most `t.max_vertices` vertices (see kHeapAlignment).
std::size_t heap_bytes_needed(int n, const Tessellation& t) {
  const std::size_t payload = static_cast<std::size_t>(t.max_vertices) * sizeof(Point);
  const std::size_t per_line = (payload + kHeapAlignment - 1) / kHeapAlignment * kHeapAlignment + kHeapBookkeeping;
  const std::size_t lines = static_cast<std::size_t>(n);
  if (per_line > (std::numeric_limits<std::size_t>::max() - kHeapReserve) / kHeapFactor / lines) {
    throw std::invalid_argument("tessellate_scaled: the worst case of these lines does not fit in memory");
  }
  return kHeapFactor * per_line * lines + kHeapReserve;
}

/// Raises the pending launch pool to `launches` when it is smaller. CDP2 does not queue
/// launches beyond the pool: they fail, and those children never run.
void reserve_pending_launches(std::size_t launches) {
  std::size_t pool = 0;
  CDPLAB_CHECK(cudaDeviceGetLimit(&pool, cudaLimitDevRuntimePendingLaunchCount));
  if (pool < launches) CDPLAB_CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, launches));
}

/// Raises the device heap to `bytes` when it is smaller. The heap is fixed once a kernel that
/// uses it has run in this process: then raising it fails, and this says so.
void reserve_device_heap(std::size_t bytes) {
  std::size_t heap = 0;
  CDPLAB_CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  if (heap >= bytes) return;  // never lower it, never set it again when it is large enough
  const cudaError_t status = cudaDeviceSetLimit(cudaLimitMallocHeapSize, bytes);
  if (status == cudaErrorInvalidValue) {
    cudaGetLastError();  // clear it, so that the next launch check does not report it again
    throw CudaError(status, "tessellate_scaled: the device heap is " + std::to_string(heap >> 20) +
                                " MiB and these lines need " + std::to_string((bytes + (1 << 20) - 1) >> 20) +
                                " MiB, but cudaLimitMallocHeapSize can no longer change: a kernel that uses "
                                "the device heap has already run in this process. Raise the limit before the "
                                "first such launch.");
  }
  CDPLAB_CHECK(status);
}
// END SOLUTION

}  // namespace

/// Host part (cdplab/host_part.h): makes room for the workload of `n` lines tessellated with `t`
/// (the pending launch pool and the device heap), before anything is launched.
CDPLAB_HOST_PART void reserve_tessellation_resources(int n, const Tessellation& t) {
  // BEGIN SOLUTION
  // Both limits first: the heap size is fixed by the first launch of a kernel that uses it.
  reserve_pending_launches(static_cast<std::size_t>(n) + kPendingLaunchMargin);
  reserve_device_heap(heap_bytes_needed(n, t));
  // END SOLUTION
  //| // TODO(scaled-tessellation): make room for the workload of n lines (n > 0):
  //| //  - cudaLimitDevRuntimePendingLaunchCount: at least one pending launch per line, plus
  //| //    kPendingLaunchMargin;
  //| //  - cudaLimitMallocHeapSize: every line's worst case (t.max_vertices Points), sized as the
  //| //    constants above describe.
  //| // Read each limit with cudaDeviceGetLimit and raise it only when it is smaller (the heap
  //| // cannot change any more once a kernel that uses it has run). Wrap each call in CDPLAB_CHECK.
  //| (void)n;
  //| (void)t;
  //| CDPLAB_TODO();
}

void tessellate_scaled(const Line* lines, LineVertices* out, int n, ChildStream stream, const Tessellation& t) {
  check_arrays("tessellate_scaled", lines, out, n);
  if (t.min_vertices < 2 || t.max_vertices < t.min_vertices) {
    throw std::invalid_argument("tessellate_scaled: the tessellation needs 2 <= min_vertices <= max_vertices");
  }
  if (n == 0) return;  // a grid of zero blocks is a launch error
  reserve_tessellation_resources(n, t);  // the host part above: before anything is launched
  reset_device_report();
  const unsigned blocks = (static_cast<unsigned>(n) + kScaledParentThreads - 1) / kScaledParentThreads;
  scaled_parent<<<blocks, kScaledParentThreads>>>(lines, out, n, t, stream);
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());  // the parent grid, every child, in every stream
  throw_if_device_reported();
}

void free_scaled_vertices(LineVertices* out, int n) {
  check_arrays("free_scaled_vertices", out, out, n);
  if (n == 0) return;
  reset_device_report();
  const unsigned blocks = (static_cast<unsigned>(n) + kScaledParentThreads - 1) / kScaledParentThreads;
  scaled_free_kernel<<<blocks, kScaledParentThreads>>>(out, n);
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());
  throw_if_device_reported();
}

}  // namespace cdplab::bezier
