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
  // TODO(scaled-tessellation): as in exercise b, read line i, compute its count, allocate
  // count Points with cudaMalloc (on failure: out[i] = count 0 and nullptr, no launch) and
  // store count and pointer in out[i]. Then launch scaled_child with enough blocks of
  // kScaledChildThreads threads, and check the launch with CDPLAB_CHECK_LAUNCH():
  //  - when stream is ChildStream::named, into a stream this thread creates with
  //    cudaStreamCreateWithFlags(..., cudaStreamNonBlocking) and destroys right after the launch;
  //  - when stream is ChildStream::fire_and_forget, into cudaStreamFireAndForget.
  CDPLAB_TODO();
}

/// Thread i frees line i's device-heap buffer and marks the line empty.
__global__ void scaled_free_kernel(LineVertices* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  // TODO(scaled-tessellation): as free_vertices_kernel in exercise b: cudaFree line i's
  // buffer, then set out[i] to count 0 and nullptr.
  CDPLAB_TODO();
}

namespace {

/// Throws std::invalid_argument unless `n` and the pointers keep the contract of bezier.h.
void check_arrays(const char* function, const void* lines, const void* out, int n) {
  if (n < 0) throw std::invalid_argument(std::string(function) + ": n must not be negative");
  if (n > 0 && (lines == nullptr || out == nullptr)) {
    throw std::invalid_argument(std::string(function) + ": lines and out must point to n elements of global memory");
  }
}


}  // namespace

/// Host part (cdplab/host_part.h): makes room for the workload of `n` lines tessellated with `t`
/// (the pending launch pool and the device heap), before anything is launched.
CDPLAB_HOST_PART void reserve_tessellation_resources(int n, const Tessellation& t) {
  // TODO(scaled-tessellation): make room for the workload of n lines (n > 0):
  //  - cudaLimitDevRuntimePendingLaunchCount: at least one pending launch per line, plus
  //    kPendingLaunchMargin;
  //  - cudaLimitMallocHeapSize: every line's worst case (t.max_vertices Points), sized as the
  //    constants above describe.
  // Read each limit with cudaDeviceGetLimit and raise it only when it is smaller (the heap
  // cannot change any more once a kernel that uses it has run). Wrap each call in CDPLAB_CHECK.
  (void)n;
  (void)t;
  CDPLAB_TODO();
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
