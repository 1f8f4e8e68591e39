/// @file 03-quadtree.h
/// @brief CPU oracles of chapter 03: seeded point sets, a reference quadtree builder, and a
///        validator that accepts any correct tree and names the node, the expected and the found
///        when a tree is wrong.
#pragma once

#include "compare.h"

#include "cdplab/quadtree.h"
#include "cdplab/random.h"

#include <cstddef>
#include <vector>

namespace cdplab::oracle::quadtree {

using cdplab::quadtree::Box;
using cdplab::quadtree::Quadtree;
using cdplab::quadtree::QuadtreeNode;
using cdplab::quadtree::QuadtreeParams;

// ----- inputs --------------------------------------------------------------------------

/// A set of points, x[i] and y[i] together.
struct Points {
  std::vector<float> x;  ///< the points' x
  std::vector<float> y;  ///< the points' y
};

/// `count` points uniform in `box` (closed).
Points uniform_points(Random& rng, std::size_t count, const Box& box);

/// `count` points in `clusters` tight round clusters (roughly Gaussian, standard deviation
/// `spread` times the box's width), centred at random inside `box`; points are kept inside it.
Points clustered_points(Random& rng, std::size_t count, const Box& box, int clusters, double spread);

/// `count` points that lie exactly on the centre lines of nodes of levels 0 .. `levels` - 1 (as
/// quadrant_box computes them): on the vertical line, the horizontal one, or their crossing,
/// plus the box's four corners.
Points boundary_points(Random& rng, std::size_t count, const Box& box, int levels);

/// `count` copies of the point (x, y).
Points identical_points(std::size_t count, float x, float y);

// ----- reference -----------------------------------------------------------------------

/// Builds the tree on the CPU with the exercise's algorithm and conventions: node k's children
/// are 4k+1 .. 4k+4, a node is a leaf at max_depth or with at most min_points_per_node points.
/// Nodes come in breadth-first order; the points are reordered as the GPU reorders them (up to
/// the order within each leaf).
Quadtree build_quadtree_cpu(const std::vector<float>& x, const std::vector<float>& y, const Box& bounds,
                            const QuadtreeParams& params);

/// How many nodes of `tree` are not leaves (each one is a device-side launch on the GPU).
std::size_t internal_nodes(const Quadtree& tree);

/// How many split nodes of `tree` have a split child: the nodes whose children's grid must be
/// launched for the tree to grow below them, whatever a build does for children that are leaves.
std::size_t split_parents(const Quadtree& tree);

// ----- judging -------------------------------------------------------------------------

/// How judge_quadtree checks that the points returned are the input's, reordered.
enum class PermutationCheck {
  sorted,  ///< both lists of (x, y) pairs sorted and compared: exact, and names a missing point
  hashed,  ///< a sum of 64-bit hashes of the pairs, which ignores order, compared: linear time, for
           ///< the large inputs of timed runs (a wrong list passes with odds of about 2^-64)
};

/// Judges a built tree against its input, accepting any correct tree:
/// - the points are a permutation of the input (the same (x, y) pairs, as often; see
///   PermutationCheck);
/// - the root exists: id 0, level 0, box `bounds`, points [0, N);
/// - a node is a leaf exactly when its level is max_depth or it holds at most
///   min_points_per_node points;
/// - every split node has its four children 4k+1 .. 4k+4, one level deeper, with the boxes
///   quadrant_box() gives, whose ranges follow each other without gap from its begin to its end;
/// - every point of child q lies in quadrant q of its parent, as quadrant_of() decides (a point
///   on a centre line goes right or up), and in its leaf's closed box;
/// - ids are unique, and every node is the root or a child of a split node.
/// The message names the first problem (parents before children) and what was expected.
Verdict judge_quadtree(const std::vector<float>& x, const std::vector<float>& y, const Box& bounds,
                       const QuadtreeParams& params, const Quadtree& found,
                       PermutationCheck permutation = PermutationCheck::sorted);

}  // namespace cdplab::oracle::quadtree
