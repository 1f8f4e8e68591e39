// Exercise cdp-tessellation: Bezier lines tessellated with dynamic parallelism.
//
// The parent does the little work that decides how much work a line is: one thread per line
// computes the vertex count, allocates exactly that many vertices on the device heap, and
// launches a child grid sized to the line, in which every thread computes one vertex. No block
// loops, no thread idles through a long line's passes, and no memory is set aside for a worst
// case. Device-heap memory belongs to device code: only a kernel can free it
// (free_vertices_kernel), and the host cannot even copy from it.
#include "cdplab/bezier.h"
#include "cdplab/check.h"

#include <cstddef>
#include <stdexcept>
#include <string>

namespace cdplab::bezier {

/// Threads per block of the parent grid (one thread per line). The launches of one block into
/// the NULL stream run one after another, so small parent blocks let more children run at once.
inline constexpr unsigned kCdpParentThreads = 32;
/// Threads per block of every child grid (one thread per vertex), as in the course.
inline constexpr unsigned kCdpChildThreads = 32;

/// The child grid of one line: thread k writes vertex k of `count` into `vertices` (a buffer of
/// exactly `count` points); the threads of the last block past `count` do nothing.
__global__ void tessellate_child(Line line, Point* vertices, int count) {
  // BEGIN SOLUTION
  const int k = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (k < count) vertices[k] = vertex(line, k, count);
  // END SOLUTION
  //| // TODO(cdp-tessellation): compute this thread's vertex index k from blockIdx.x, blockDim.x
  //| // and threadIdx.x. Only if k < count, write vertex(line, k, count) to vertices[k].
  //| CDPLAB_TODO();
}

/// The parent grid: thread i allocates line i's vertices on the device heap, records them in
/// out[i] and launches the line's child grid.
__global__ void tessellate_parent(const Line* lines, LineVertices* out, int n, Tessellation t) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  // BEGIN SOLUTION
  const Line line = lines[i];
  const int count = vertex_count(line, t);
  Point* vertices = nullptr;
  // The device heap is small (8 MiB unless the host raised it): an allocation can fail, and
  // then the line stays empty instead of handing its child a null pointer.
  if (cudaMalloc(&vertices, static_cast<std::size_t>(count) * sizeof(Point)) != cudaSuccess || vertices == nullptr) {
    out[i] = LineVertices{0, nullptr};
    return;
  }
  out[i] = LineVertices{count, vertices};
  // The line itself is handed over by value; `vertices` is global memory, which a child may use.
  const unsigned blocks = (static_cast<unsigned>(count) + kCdpChildThreads - 1) / kCdpChildThreads;
  tessellate_child<<<blocks, kCdpChildThreads>>>(line, vertices, count);
  CDPLAB_CHECK_LAUNCH();
  // END SOLUTION
  //| // TODO(cdp-tessellation): read line i and compute its vertex count with vertex_count(line, t).
  //| // Allocate exactly count Points with cudaMalloc in device code. If the allocation fails
  //| // (an error code or a null pointer), set out[i] to count 0 and nullptr and launch nothing.
  //| // Otherwise store the count and the pointer in out[i], then launch tessellate_child with
  //| // enough blocks of kCdpChildThreads threads for count vertices, and check the launch with
  //| // CDPLAB_CHECK_LAUNCH() on the next line.
  //| CDPLAB_TODO();
}

/// Thread i frees line i's device-heap buffer and marks the line empty.
__global__ void free_vertices_kernel(LineVertices* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  // BEGIN SOLUTION
  if (out[i].vertices != nullptr) cudaFree(out[i].vertices);
  out[i] = LineVertices{0, nullptr};  // a second free_vertices must not free the buffer again
  // END SOLUTION
  //| // TODO(cdp-tessellation): free out[i].vertices with cudaFree (device code is the only place
  //| // where device-heap memory can be freed), then set out[i] to count 0 and nullptr.
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

/// Throws std::invalid_argument unless 2 <= t.min_vertices <= t.max_vertices.
void check_tessellation(const char* function, const Tessellation& t) {
  if (t.min_vertices < 2 || t.max_vertices < t.min_vertices) {
    throw std::invalid_argument(std::string(function) + ": the tessellation needs 2 <= min_vertices <= max_vertices");
  }
}

}  // namespace

void tessellate_cdp(const Line* lines, LineVertices* out, int n, const Tessellation& t) {
  check_arrays("tessellate_cdp", lines, out, n);
  check_tessellation("tessellate_cdp", t);
  if (n == 0) return;  // a grid of zero blocks is a launch error
  reset_device_report();
  const unsigned blocks = (static_cast<unsigned>(n) + kCdpParentThreads - 1) / kCdpParentThreads;
  tessellate_parent<<<blocks, kCdpParentThreads>>>(lines, out, n, t);
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());  // the parent grid and every child grid
  throw_if_device_reported();
}

void free_vertices(LineVertices* out, int n) {
  check_arrays("free_vertices", out, out, n);
  if (n == 0) return;
  reset_device_report();
  const unsigned blocks = (static_cast<unsigned>(n) + kCdpParentThreads - 1) / kCdpParentThreads;
  free_vertices_kernel<<<blocks, kCdpParentThreads>>>(out, n);
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());
  throw_if_device_reported();
}

}  // namespace cdplab::bezier
