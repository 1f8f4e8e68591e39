/// @file quadtree.h
/// @brief Chapter 03 (quadtree): points, boxes, nodes, and the entry point of the recursive
///        build with dynamic parallelism.
///
/// The tree splits a box into four quadrants until a node holds few enough points or is deep
/// enough. One block per node counts its points per quadrant, reorders them so that each
/// quadrant's points are contiguous, and launches the four children from device code.
#pragma once

#include <cuda_runtime.h>

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

}  // namespace cdplab::quadtree
