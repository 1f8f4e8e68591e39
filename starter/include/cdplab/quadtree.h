/// @file quadtree.h
/// @brief Chapter 03 (quadtree): points, boxes, nodes, and the entry points of the recursive
///        builds with dynamic parallelism.
///
/// The tree splits a box into four quadrants until a node holds few enough points or is deep
/// enough. One block per node counts its points per quadrant, reorders them so that each
/// quadrant's points are contiguous, and launches the four children from device code
/// (quadtree_build.cu). The adaptive build (adaptive_quadtree.cu) gives a node a grid sized to
/// its points instead of one block.
#pragma once

#include "cdplab/device_array.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

namespace cdplab::quadtree {

/// An axis-aligned box. A point belongs to it when min <= p <= max in both coordinates.
struct Box {
  float min_x;  ///< left edge
  float min_y;  ///< bottom edge
  float max_x;  ///< right edge
  float max_y;  ///< top edge
};

/// The quadrant of a point in a box, split at the box's centre: 0 bottom-left, 1 bottom-right,
/// 2 top-left, 3 top-right. A point on a centre line goes right (x >= centre) or up (y >= centre).
__host__ __device__ inline int quadrant_of(float x, float y, const Box& box) {
  const float cx = 0.5f * (box.min_x + box.max_x);
  const float cy = 0.5f * (box.min_y + box.max_y);
  return (x >= cx ? 1 : 0) + (y >= cy ? 2 : 0);
}

/// The box of quadrant `q` (as numbered by quadrant_of) of `box`.
__host__ __device__ inline Box quadrant_box(const Box& box, int q) {
  const float cx = 0.5f * (box.min_x + box.max_x);
  const float cy = 0.5f * (box.min_y + box.max_y);
  return Box{(q & 1) ? cx : box.min_x, (q & 2) ? cy : box.min_y, (q & 1) ? box.max_x : cx, (q & 2) ? box.max_y : cy};
}

/// When the recursion stops: a node is a leaf when it is at level max_depth or holds at most
/// min_points_per_node points.
struct QuadtreeParams {
  int max_depth = 8;            ///< the root is level 0; no node deeper than this
  int min_points_per_node = 16; ///< a node with this many points or fewer is not split
};

/// One node of a built tree.
struct QuadtreeNode {
  int id;      ///< the root is 0; the children of node k are 4k+1 .. 4k+4, in quadrant order
  int level;   ///< the root is 0; a child is one deeper than its parent
  Box box;     ///< the root's box, or quadrant_box() of the parent's box
  int begin;   ///< its points are x[begin..end), y[begin..end) of the built tree
  int end;     ///< one past its last point
  bool leaf;   ///< true when it has no children
};

/// A built tree: its nodes (in any order) and the points, reordered so that every node's points
/// are contiguous (all of them back in the caller's buffer, "buffer 0").
struct Quadtree {
  std::vector<QuadtreeNode> nodes;  ///< every node built, the root included
  std::vector<float> x;             ///< the points' x, reordered
  std::vector<float> y;             ///< the points' y, reordered
};

/// Exercise (quadtree_build.cu): builds the tree of the points (x[i], y[i]) inside `bounds`
/// on the GPU, one block per node, each node launching its four children from device code.
/// Raises the pending launch pool from the host when the tree may need more pending launches
/// than the default holds. Throws cdplab::DeviceLaunchError when a device-side launch failed,
/// and std::invalid_argument when x and y differ in length, a point lies outside `bounds`, or
/// params.max_depth is beyond what the exercise supports (see the exercise file).
Quadtree build_quadtree(const std::vector<float>& x, const std::vector<float>& y, const Box& bounds,
                        const QuadtreeParams& params);

// ----- the adaptive build (adaptive_quadtree.cu) ------------------------------------------

/// The deepest tree the adaptive build supports: a record slot for every id of a tree of depth
/// 10 is (4^11 - 1) / 3 = 1 398 101 slots.
inline constexpr int kAdaptiveMaxDepth = 10;

/// What the adaptive build counts for one node (one per record slot, zeroed before a build).
struct NodeCounters {
  int quadrant_points[4];  ///< the node's points per quadrant, counted by its parent's grid
  int quadrant_taken[4];   ///< slots of each quadrant's range handed out so far to the node's blocks
  unsigned blocks_done;    ///< how many of the node's blocks have finished
};

/// The GPU memory of the adaptive build besides the points: the second point buffer, one record
/// slot per node id a tree of `max_depth` can have (slot k holds node k; level kEmptyLevel where
/// no node k was built), and each slot's counters. Allocate once; build as often as needed.
struct AdaptiveWorkspace {
  /// The level of a record slot that holds no node (every byte of the record is 0xFF).
  static constexpr int kEmptyLevel = -1;

  /// Room for up to `max_points` points and trees no deeper than `max_depth`.
  AdaptiveWorkspace(std::size_t max_points, int max_depth)
      : x1(max_points), y1(max_points), nodes(slots(max_depth)), counters(slots(max_depth)),
        max_points(max_points), max_depth(max_depth) {}

  /// Node ids of a tree no deeper than `depth`: (4^(depth+1) - 1) / 3.
  static std::size_t slots(int depth) {
    std::size_t count = 0;
    for (std::size_t level = 0, per_level = 1; static_cast<int>(level) <= depth; ++level, per_level *= 4) count += per_level;
    return count;
  }

  /// The records of the nodes the last build made (slots whose level is set), in id order.
  std::vector<QuadtreeNode> built_nodes() const {
    std::vector<QuadtreeNode> built;
    for (const QuadtreeNode& node : nodes.download())
      if (node.level != kEmptyLevel) built.push_back(node);
    return built;
  }

  DeviceArray<float> x1;                ///< the second buffer: x
  DeviceArray<float> y1;                ///< the second buffer: y
  DeviceArray<QuadtreeNode> nodes;      ///< slot k: the record of node k
  DeviceArray<NodeCounters> counters;   ///< slot k: the counters of node k
  std::size_t max_points;               ///< the most points a build may have
  int max_depth;                        ///< the deepest tree a build may make
};

/// Exercise (adaptive_quadtree.cu), on points already in GPU memory: builds the tree of the
/// `n` points (x[i], y[i]) inside `bounds` in place. A node with many points gets a grid of many
/// blocks, a node with few one block, a leaf no launch; each node's last block to finish launches
/// its children from device code. Returns once the GPU has finished: the points are reordered in
/// x and y (every node's points contiguous) and the records are in workspace.nodes (read them
/// with workspace.built_nodes()). Raises the pending launch pool for `n` points from the host.
/// Every point must lie inside `bounds` (not checked here; build_adaptive_quadtree checks it).
/// Throws std::invalid_argument when n or params.max_depth exceed the workspace, or
/// params.max_depth exceeds kAdaptiveMaxDepth; cdplab::DeviceLaunchError when a device-side
/// launch failed.
void build_adaptive_quadtree_device(float* x, float* y, std::size_t n, const Box& bounds,
                                    const QuadtreeParams& params, AdaptiveWorkspace& workspace);

/// Exercise (adaptive_quadtree.cu), host vectors in and out: uploads the points, runs
/// build_adaptive_quadtree_device, and returns the tree, as build_quadtree does. Throws
/// std::invalid_argument when x and y differ in length, a point lies outside `bounds`, or
/// params is out of range.
Quadtree build_adaptive_quadtree(const std::vector<float>& x, const std::vector<float>& y, const Box& bounds,
                                 const QuadtreeParams& params);

}  // namespace cdplab::quadtree
