/// @file sort_build.h
/// @brief The quadtree built without dynamic parallelism and without a host round trip between
///        its steps: Morton keys, one CUB radix sort, node ranges by binary search. The baseline
///        of adaptive-quadtree's speed check (grader/harness/speed.h) and one of the chapter's
///        benchmark builds.
#pragma once

#include "cdplab/device_array.h"
#include "cdplab/quadtree.h"

#include <cstddef>

namespace cdplab::support::quadtree {

/// The sort build's GPU memory for `n` points: the input, the sorted points, keys and indices
/// (before and after the sort), the sort's scratch and one record slot per node id. Allocated
/// once; build() may run many times on it.
class SortBuilder {
 public:
  SortBuilder(int n, const cdplab::quadtree::QuadtreeParams& params);

  /// The input: the points before build() (build() leaves them as they are).
  float* x() const { return in_x_.data(); }
  float* y() const { return in_y_.data(); }

  /// Builds the tree of the input points inside `bounds` and waits: keys, one radix sort of
  /// (key, index) pairs on the key's 2 * max_depth bits, a gather of the points into key order,
  /// and every node's record.
  void build(const cdplab::quadtree::Box& bounds);

  /// The tree of the last build(): the nodes that exist and the points in key order.
  cdplab::quadtree::Quadtree tree() const;

 private:
  /// The key bits the sort looks at (at least one: a sort of no bits is no sort).
  int key_bits() const { return params_.max_depth > 0 ? 2 * params_.max_depth : 1; }

  int n_;
  cdplab::quadtree::QuadtreeParams params_;
  DeviceArray<float> in_x_;
  DeviceArray<float> in_y_;
  DeviceArray<float> out_x_;
  DeviceArray<float> out_y_;
  DeviceArray<unsigned> keys_;
  DeviceArray<unsigned> sorted_keys_;
  DeviceArray<unsigned> index_;
  DeviceArray<unsigned> sorted_index_;
  DeviceArray<cdplab::quadtree::QuadtreeNode> nodes_;
  std::size_t temp_bytes_ = 0;
  DeviceArray<unsigned char> temp_;
};

}  // namespace cdplab::support::quadtree
