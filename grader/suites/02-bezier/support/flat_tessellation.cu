// Bezier lines tessellated without dynamic parallelism (flat_tessellation.h).
#include "flat_tessellation.h"

#include "cdplab/check.h"

#include <cub/device/device_scan.cuh>

#include <cstddef>

namespace cdplab::support::bezier {
namespace {

namespace bz = cdplab::bezier;
using bz::Line;
using bz::Point;
using bz::Tessellation;

constexpr int kThreads = 256;

int blocks_for(int threads, int per_block) { return (threads + per_block - 1) / per_block; }

/// counts[i] = line i's vertex count for i < n, and counts[n] = 0, so that an exclusive scan of
/// n + 1 counts ends with the total.
__global__ void flat_count_vertices(const Line* lines, int n, Tessellation t, int* counts) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) counts[i] = bz::vertex_count(lines[i], t);
  if (i == n) counts[n] = 0;
}

/// The line that vertex `v` belongs to: the last line whose first vertex is at or before v.
/// `offsets` holds n + 1 ascending starts (the exclusive scan of the counts); an empty line
/// shares its start with the next one and is skipped, since the last of equal starts wins.
__host__ __device__ inline int line_of_vertex(const int* offsets, int n, int v) {
  int lo = 0;
  int hi = n - 1;
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (offsets[mid] <= v) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

/// One thread per vertex of all lines: finds its line and its place in it, writes the point.
__global__ void flat_write_vertices(const Line* lines, const int* offsets, int n, int total, Point* vertices) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= total) return;
  const int line = line_of_vertex(offsets, n, v);
  const int first = offsets[line];
  vertices[v] = bz::vertex(lines[line], v - first, offsets[line + 1] - first);
}

}  // namespace

FlatTessellator::FlatTessellator(int n)
    : n_(n), counts_(static_cast<std::size_t>(n) + 1), offsets_(static_cast<std::size_t>(n) + 1) {
  std::size_t bytes = 0;
  CDPLAB_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, counts_.data(), offsets_.data(), n_ + 1));
  scan_space_ = DeviceArray<unsigned char>(bytes);
}

int FlatTessellator::run(const Line* lines, const Tessellation& t) {
  flat_count_vertices<<<blocks_for(n_ + 1, kThreads), kThreads>>>(lines, n_, t, counts_.data());
  CDPLAB_CHECK(cudaGetLastError());
  std::size_t bytes = scan_space_.size();
  CDPLAB_CHECK(cub::DeviceScan::ExclusiveSum(scan_space_.data(), bytes, counts_.data(), offsets_.data(), n_ + 1));
  int total = 0;  // the grid size of the next kernel: the host needs it (this copy waits)
  CDPLAB_CHECK(cudaMemcpy(&total, offsets_.data() + n_, sizeof total, cudaMemcpyDeviceToHost));
  if (static_cast<std::size_t>(total) > vertices_.size()) vertices_ = DeviceArray<Point>(static_cast<std::size_t>(total));
  if (total > 0) {
    flat_write_vertices<<<blocks_for(total, kThreads), kThreads>>>(lines, offsets_.data(), n_, total, vertices_.data());
    CDPLAB_CHECK(cudaGetLastError());
  }
  CDPLAB_CHECK(cudaDeviceSynchronize());
  return total;
}

std::vector<Point> FlatTessellator::vertices(int total) const {
  std::vector<Point> host(static_cast<std::size_t>(total));
  if (total > 0)
    CDPLAB_CHECK(cudaMemcpy(host.data(), vertices_.data(), host.size() * sizeof(Point), cudaMemcpyDeviceToHost));
  return host;
}

}  // namespace cdplab::support::bezier
