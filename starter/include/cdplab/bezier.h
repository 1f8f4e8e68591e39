/// @file bezier.h
/// @brief Chapter 02 (Bezier tessellation): the lines, the vertex-count rule, and the entry
///        points of the four exercises.
///
/// A quadratic Bezier line runs from p0 to p2 and is pulled towards p1. It is tessellated into
/// a number of vertices that grows with its curvature, so the work per line varies: the
/// course's example of a variable amount of child work. Everything a kernel needs to know
/// about one line is computed from that line alone (curvature(), vertex_count(), vertex()).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <vector>

namespace cdplab::bezier {

/// A point of the plane.
struct Point {
  float x;  ///< horizontal coordinate
  float y;  ///< vertical coordinate
};

/// A quadratic Bezier line: from p0 to p2, pulled towards p1.
struct Line {
  Point p0;  ///< start
  Point p1;  ///< middle control point
  Point p2;  ///< end
};

/// How lines are tessellated. The defaults are the course's: curvature times 16, at least 4
/// and at most 32 vertices.
struct Tessellation {
  float scale = 16.0f;    ///< vertices per unit of curvature
  int min_vertices = 4;   ///< fewest vertices of a line (at least 2)
  int max_vertices = 32;  ///< most vertices of a line: the worst case a fixed buffer must hold
};

/// How bent a line is: the distance of p1 from the chord p0-p2, divided by the chord's length
/// (the distance of p1 from p0 when the chord is degenerate). Reads this one line only.
__host__ __device__ inline float curvature(const Line& line) {
  const float cx = line.p2.x - line.p0.x;
  const float cy = line.p2.y - line.p0.y;
  const float dx = line.p1.x - line.p0.x;
  const float dy = line.p1.y - line.p0.y;
  const float chord = sqrtf(cx * cx + cy * cy);
  if (chord == 0.0f) return sqrtf(dx * dx + dy * dy);
  return fabsf(cx * dy - cy * dx) / (chord * chord);
}

/// The number of vertices of a line: curvature times scale, clamped to [min, max].
__host__ __device__ inline int vertex_count(const Line& line, const Tessellation& t) {
  const float wanted = curvature(line) * t.scale;
  if (!(wanted < static_cast<float>(t.max_vertices))) return t.max_vertices;  // also NaN
  const int n = static_cast<int>(wanted);
  return n < t.min_vertices ? t.min_vertices : n;
}

/// Vertex k of a line tessellated into n vertices (n >= 2): the curve at u = k / (n - 1).
__host__ __device__ inline Point vertex(const Line& line, int k, int n) {
  const float u = static_cast<float>(k) / static_cast<float>(n - 1);
  const float a = (1.0f - u) * (1.0f - u);
  const float b = 2.0f * u * (1.0f - u);
  const float c = u * u;
  return Point{a * line.p0.x + b * line.p1.x + c * line.p2.x, a * line.p0.y + b * line.p1.y + c * line.p2.y};
}

/// One line's vertices in GPU memory: their number and where they are. In exercises b and c
/// `vertices` points into the device heap (device-side cudaMalloc): only device code may free it.
/// In exercise d it points into the caller's VertexBuffer.
struct LineVertices {
  int count;         ///< vertices written; 0 when the line was not tessellated
  Point* vertices;   ///< `count` vertices, or nullptr
};

/// Exercise a (fixed_tessellation.cu), without dynamic parallelism: one block per line, each
/// line's vertices in a fixed slot of `t.max_vertices` points. Returns every line's vertices.
std::vector<std::vector<Point>> tessellate_fixed(const std::vector<Line>& lines, const Tessellation& t = {});

/// Exercise b (cdp_tessellation.cu), with dynamic parallelism: one parent thread per line
/// computes the vertex count, allocates exactly that many vertices on the device heap and
/// launches a child grid sized to the line, which writes them. `lines` and `out` are `n`
/// elements of global memory; on return (the host has waited) `out[i]` describes line i.
/// Throws cdplab::DeviceLaunchError when a device-side launch failed.
void tessellate_cdp(const Line* lines, LineVertices* out, int n, const Tessellation& t = {});

/// Exercise b: frees the device-heap buffers of `out` (from tessellate_cdp) in device code and
/// sets every count to 0 and pointer to nullptr.
void free_vertices(LineVertices* out, int n);

/// Where exercise c launches each line's child.
enum class ChildStream {
  named,            ///< a cudaStreamNonBlocking stream the parent thread creates
  fire_and_forget,  ///< cudaStreamFireAndForget
};

/// Exercise c (scaled_tessellation.cu), at scale: as tessellate_cdp, for more lines than the
/// default pending launch pool holds. Raises cudaLimitDevRuntimePendingLaunchCount and
/// cudaLimitMallocHeapSize from the host, sized from the workload, then launches each line's
/// child into `stream` so that the children of one block run concurrently.
void tessellate_scaled(const Line* lines, LineVertices* out, int n, ChildStream stream,
                       const Tessellation& t = {});

/// Exercise c: frees the buffers of `out` (from tessellate_scaled) in device code.
void free_scaled_vertices(LineVertices* out, int n);

/// Exercise d (aggregated_tessellation.cu): the lines of one parent block, tessellated by one
/// child grid. The parent grid has blocks of this many threads, one per line: the largest block
/// CUDA allows, since every block costs a launch (on an H100, 100 000 lines took 0.86 ms with a
/// child per warp, 0.16 ms with one per 256 lines and 0.12 ms with one per 1024).
inline constexpr int kLinesPerAggregate = 1024;

/// Exercise d: the caller's GPU memory that tessellate_aggregated hands out to the lines, a
/// block of lines at a time. Ordinary global memory (cudaMalloc on the host): nothing in it is
/// on the device heap, and the host may copy from it.
struct VertexBuffer {
  Point* points = nullptr;                ///< room for `capacity` points
  std::size_t capacity = 0;               ///< at least n * t.max_vertices, the worst case
  unsigned long long* claimed = nullptr;  ///< one counter: how many points have been handed out
};

/// Exercise d, with dynamic parallelism and launch aggregation: one child grid per parent block
/// of kLinesPerAggregate lines, instead of one per line. Every block numbers its lines' vertices
/// one after the other (a scan of the counts), claims room for all of them from `buffer` at
/// once, and launches one child grid with a thread per vertex, into cudaStreamFireAndForget.
/// `lines` and `out` are `n` elements of global memory. Sets `*buffer.claimed` to 0 first; on
/// return (the host has waited) `out[i]` describes line i, its vertices lie in `buffer.points`,
/// and the lines fill `buffer.points[0 .. *buffer.claimed)` with no gaps and no overlaps (a
/// block's lines in order, the blocks in the order their claims happened).
/// Each child grid adds 1 to `*child_grids` when that is not null. Nothing needs freeing.
/// Throws std::invalid_argument when the buffer is smaller than the worst case, and
/// cdplab::DeviceLaunchError when a device-side launch failed.
void tessellate_aggregated(const Line* lines, LineVertices* out, int n, const VertexBuffer& buffer,
                           const Tessellation& t = {}, unsigned* child_grids = nullptr);

/// What exercise d's host-side call returns.
struct AggregatedRun {
  std::vector<std::vector<Point>> lines;  ///< every line's vertices
  unsigned child_grids = 0;               ///< the child grids that ran
};

/// Exercise d with host vectors in and out: uploads the lines, allocates a VertexBuffer for
/// their worst case, calls the device-resident tessellate_aggregated and reads the vertices back.
AggregatedRun tessellate_aggregated(const std::vector<Line>& lines, const Tessellation& t = {});

}  // namespace cdplab::bezier
