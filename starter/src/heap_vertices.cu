// Chapter 02 helpers: copying device-heap vertices into global memory with a kernel; limits.
#include "cdplab/heap_vertices.h"

#include "cdplab/check.h"
#include "cdplab/device_array.h"

#include <algorithm>
#include <stdexcept>

namespace cdplab::heap_vertices {
namespace {

constexpr unsigned kGatherThreads = 128;
constexpr unsigned kMaxGatherBlocks = 4096;

/// Block b copies lines b, b + gridDim.x, ...: each readable line's vertices into its slot of
/// `max_vertices` points in `flat`, and the number it copied into `copied`.
__global__ void gather_line_vertices(const LineVertices* out, int n, int max_vertices, Point* flat, int* copied) {
  for (int line = static_cast<int>(blockIdx.x); line < n; line += static_cast<int>(gridDim.x)) {
    const LineVertices record = out[line];
    const bool readable = record.vertices != nullptr && record.count > 0 && record.count <= max_vertices;
    const int count = readable ? record.count : 0;
    Point* slot = flat + static_cast<std::size_t>(line) * static_cast<std::size_t>(max_vertices);
    for (int k = static_cast<int>(threadIdx.x); k < count; k += static_cast<int>(blockDim.x)) {
      slot[k] = record.vertices[k];
    }
    if (threadIdx.x == 0) copied[line] = count;
  }
}

}  // namespace

std::vector<std::vector<Point>> gather_vertices(const LineVertices* out, int n, int max_vertices) {
  if (n < 0 || max_vertices < 1) throw std::invalid_argument("gather_vertices: n >= 0 and max_vertices >= 1");
  if (n == 0) return {};
  const std::size_t lines = static_cast<std::size_t>(n);
  const std::size_t slot = static_cast<std::size_t>(max_vertices);
  DeviceArray<Point> flat(lines * slot);
  DeviceArray<int> copied(lines);
  const unsigned blocks = std::min(static_cast<unsigned>(n), kMaxGatherBlocks);
  gather_line_vertices<<<blocks, kGatherThreads>>>(out, n, max_vertices, flat.data(), copied.data());
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());

  const std::vector<Point> host_flat = flat.download();
  const std::vector<int> host_copied = copied.download();
  std::vector<std::vector<Point>> result(lines);
  for (std::size_t i = 0; i < lines; ++i) {
    const auto first = host_flat.begin() + static_cast<std::ptrdiff_t>(i * slot);
    result[i].assign(first, first + host_copied[i]);
  }
  return result;
}

std::size_t set_heap_limit(std::size_t bytes) {
  CDPLAB_CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, bytes));
  return heap_limit();
}

std::size_t heap_limit() {
  std::size_t bytes = 0;
  CDPLAB_CHECK(cudaDeviceGetLimit(&bytes, cudaLimitMallocHeapSize));
  return bytes;
}

std::size_t pending_launch_limit() {
  std::size_t launches = 0;
  CDPLAB_CHECK(cudaDeviceGetLimit(&launches, cudaLimitDevRuntimePendingLaunchCount));
  return launches;
}

std::size_t heap_bytes_for(std::size_t lines, int max_vertices) {
  const std::size_t payload = static_cast<std::size_t>(max_vertices) * sizeof(Point);
  const std::size_t per_line = (payload + 15) / 16 * 16 + 64;
  return 2 * per_line * lines + (std::size_t{1} << 20);
}

}  // namespace cdplab::heap_vertices
