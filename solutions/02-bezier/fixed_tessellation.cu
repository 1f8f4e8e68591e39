// Exercise fixed-tessellation: Bezier lines tessellated without dynamic parallelism.
//
// The number of vertices of a line grows with its curvature, so the work per line varies and
// is known only once the line has been read. Without dynamic parallelism the grid must be
// sized before that: one block per line, each block looping over its line's vertices, and a
// buffer slot of the worst case (t.max_vertices points) for every line. This is the version
// exercise b improves on; write it first, it is also the reference the benchmark compares with.
#include "cdplab/bezier.h"
#include "cdplab/check.h"
#include "cdplab/device_array.h"

#include <cstddef>
#include <stdexcept>
#include <vector>

namespace cdplab::bezier {

/// Threads per block: one block per line. The course tessellates into at most 32 vertices,
/// one warp's worth; a line with more vertices than threads needs several passes of the loop.
inline constexpr unsigned kFixedThreads = 32;

/// Block `b` tessellates line `b` of `n`: it writes the line's vertex count to `counts[b]` and
/// its vertices to `vertices[b * t.max_vertices ...]`, the line's fixed slot.
__global__ void tessellate_fixed_kernel(const Line* lines, int n, Tessellation t, Point* vertices, int* counts) {
  const int b = static_cast<int>(blockIdx.x);
  if (b >= n) return;
  // BEGIN SOLUTION
  const Line line = lines[b];
  const int count = vertex_count(line, t);  // the same for every thread of the block
  Point* slot = vertices + static_cast<std::size_t>(b) * static_cast<std::size_t>(t.max_vertices);
  // A short line leaves most of the block idle; a long one takes several passes.
  for (int k = static_cast<int>(threadIdx.x); k < count; k += static_cast<int>(blockDim.x)) {
    slot[k] = vertex(line, k, count);
  }
  if (threadIdx.x == 0) counts[b] = count;
  // END SOLUTION
  //| // TODO(fixed-tessellation): read line b and compute its vertex count with
  //| // vertex_count(line, t). Let the threads of the block share the vertices k = 0 .. count-1:
  //| // thread threadIdx.x takes k = threadIdx.x, threadIdx.x + blockDim.x, and so on, and writes
  //| // vertex(line, k, count) into the line's slot, which starts at vertices + b * t.max_vertices.
  //| // One thread writes the count to counts[b].
  //| CDPLAB_TODO();
}

std::vector<std::vector<Point>> tessellate_fixed(const std::vector<Line>& lines, const Tessellation& t) {
  if (t.min_vertices < 2 || t.max_vertices < t.min_vertices) {
    throw std::invalid_argument("tessellate_fixed: the tessellation needs 2 <= min_vertices <= max_vertices");
  }
  if (lines.size() >= (std::size_t{1} << 31)) throw std::invalid_argument("tessellate_fixed: at most 2^31 - 1 lines");
  if (lines.empty()) return {};  // a grid of zero blocks is a launch error
  const int n = static_cast<int>(lines.size());
  const std::size_t slot = static_cast<std::size_t>(t.max_vertices);

  DeviceArray<Line> device_lines(lines);
  DeviceArray<Point> device_vertices(lines.size() * slot);  // the worst case, for every line
  DeviceArray<int> device_counts(lines.size());

  reset_device_report();
  tessellate_fixed_kernel<<<static_cast<unsigned>(n), kFixedThreads>>>(device_lines.data(), n, t,
                                                                        device_vertices.data(), device_counts.data());
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());
  throw_if_device_reported();

  const std::vector<Point> flat = device_vertices.download();
  const std::vector<int> counts = device_counts.download();
  std::vector<std::vector<Point>> result(lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    // A count outside the slot cannot be read back whole: keep what the slot holds.
    const int count = counts[i] < 0 ? 0 : (counts[i] > t.max_vertices ? t.max_vertices : counts[i]);
    const auto first = flat.begin() + static_cast<std::ptrdiff_t>(i * slot);
    result[i].assign(first, first + count);
  }
  return result;
}

}  // namespace cdplab::bezier
