// The quadtree's sort build (sort_build.h): keys, a radix sort, node records by binary search.
#include "sort_build.h"

#include "cdplab/check.h"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>

namespace cdplab::support::quadtree {
namespace {

namespace qt = cdplab::quadtree;
using qt::Box;
using qt::Quadtree;
using qt::QuadtreeNode;
using qt::QuadtreeParams;

constexpr int kSortThreads = 256;  // threads per block of the sort build's kernels

/// Each point's key: its path from the root down to level max_depth, two bits per level (the
/// quadrant quadrant_of gives it in each box on the way, the root's quadrant highest). These are
/// the points' Morton codes on the tree's own grid (its boxes' float centres, exactly as the other
/// builds split them), so sorting by key puts every node's points together, its children's in
/// quadrant order. Also sets index[i] = i, the payload of the sort.
__global__ void sort_build_keys(const float* x, const float* y, int n, Box bounds, int depth, unsigned* keys,
                                unsigned* index) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const float px = x[i];
  const float py = y[i];
  Box box = bounds;
  unsigned key = 0;
  for (int level = 0; level < depth; ++level) {
    const int q = qt::quadrant_of(px, py, box);
    key = key << 2 | static_cast<unsigned>(q);
    box = qt::quadrant_box(box, q);
  }
  keys[i] = key;
  index[i] = static_cast<unsigned>(i);
}

/// Moves the points into key order: point i of the output is point index[i] of the input.
__global__ void sort_build_gather(const unsigned* index, const float* in_x, const float* in_y, float* out_x,
                                  float* out_y, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const unsigned from = index[i];
  out_x[i] = in_x[from];
  out_y[i] = in_y[from];
}

/// The first position of the sorted keys[0 .. n) whose key is at least `key` (n when none is).
__device__ int first_at_least(const unsigned* keys, int n, unsigned long long key) {
  int lo = 0;
  int hi = n;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (keys[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/// One thread per node id of a tree of depth params.max_depth (ids are the slots 0 .. slots - 1).
/// The id gives the node's level and path (id = (4^level - 1) / 3 + path); its points are the keys
/// that start with the path, found by two binary searches. A node exists when it is the root or
/// its parent is internal (more than min_points_per_node points above max_depth): then the slot
/// gets its record, else it is marked empty (level -1).
__global__ void sort_build_nodes(const unsigned* keys, int n, Box bounds, QuadtreeParams params, QuadtreeNode* nodes,
                                 int slots) {
  const int id = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (id >= slots) return;
  int level = 0;
  long long first = 0;  // the first id of `level`
  for (long long width = 1; id >= first + width; width *= 4) {
    first += width;
    ++level;
  }
  const unsigned long long path = static_cast<unsigned long long>(id - first);
  const int below = 2 * (params.max_depth - level);  // key bits under the path
  const int begin = first_at_least(keys, n, path << below);
  const int end = first_at_least(keys, n, (path + 1) << below);
  bool exists = level == 0;
  if (!exists) {
    const unsigned long long parent = path >> 2;
    const int parent_count = first_at_least(keys, n, (parent + 1) << (below + 2)) -
                             first_at_least(keys, n, parent << (below + 2));
    exists = parent_count > params.min_points_per_node;  // the parent's level is below max_depth
  }
  QuadtreeNode node{-1, -1, bounds, 0, 0, false};
  if (exists) {
    for (int l = level - 1; l >= 0; --l) node.box = qt::quadrant_box(node.box, static_cast<int>((path >> (2 * l)) & 3));
    node = QuadtreeNode{id, level, node.box, begin, end,
                        level >= params.max_depth || end - begin <= params.min_points_per_node};
  }
  nodes[id] = node;
}

}  // namespace

SortBuilder::SortBuilder(int n, const QuadtreeParams& params)
    : n_(n),
      params_(params),
      in_x_(static_cast<std::size_t>(n)),
      in_y_(static_cast<std::size_t>(n)),
      out_x_(static_cast<std::size_t>(n)),
      out_y_(static_cast<std::size_t>(n)),
      keys_(static_cast<std::size_t>(n)),
      sorted_keys_(static_cast<std::size_t>(n)),
      index_(static_cast<std::size_t>(n)),
      sorted_index_(static_cast<std::size_t>(n)),
      nodes_(qt::AdaptiveWorkspace::slots(params.max_depth)) {
  CDPLAB_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes_, keys_.data(), sorted_keys_.data(), index_.data(),
                                               sorted_index_.data(), n_, 0, key_bits()));
  temp_ = DeviceArray<unsigned char>(std::max<std::size_t>(temp_bytes_, 1));
}

void SortBuilder::build(const Box& bounds) {
  const int blocks = (n_ + kSortThreads - 1) / kSortThreads;
  if (n_ > 0) {
    sort_build_keys<<<blocks, kSortThreads>>>(in_x_.data(), in_y_.data(), n_, bounds, params_.max_depth, keys_.data(),
                                              index_.data());
    CDPLAB_CHECK(cudaGetLastError());
    std::size_t bytes = temp_bytes_;
    CDPLAB_CHECK(cub::DeviceRadixSort::SortPairs(temp_.data(), bytes, keys_.data(), sorted_keys_.data(), index_.data(),
                                                 sorted_index_.data(), n_, 0, key_bits()));
    sort_build_gather<<<blocks, kSortThreads>>>(sorted_index_.data(), in_x_.data(), in_y_.data(), out_x_.data(),
                                                out_y_.data(), n_);
    CDPLAB_CHECK(cudaGetLastError());
  }
  const int slots = static_cast<int>(nodes_.size());
  sort_build_nodes<<<(slots + kSortThreads - 1) / kSortThreads, kSortThreads>>>(sorted_keys_.data(), n_, bounds,
                                                                                params_, nodes_.data(), slots);
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());
}

Quadtree SortBuilder::tree() const {
  Quadtree tree;
  for (const QuadtreeNode& node : nodes_.download())
    if (node.level >= 0) tree.nodes.push_back(node);
  tree.x = out_x_.download();
  tree.y = out_y_.download();
  return tree;
}

}  // namespace cdplab::support::quadtree
