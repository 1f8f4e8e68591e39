// The CPU oracles of chapter 03 (quadtree): the reference builder's trees pass the validator, a
// tree reordered in another valid way passes too, and every kind of broken tree is rejected with
// a message that names the problem.
#include "verdict_checks.h"
#include <doctest/doctest.h>

#include "03-quadtree.h"
#include "cdplab/quadtree.h"
#include "cdplab/random.h"

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace oracle = cdplab::oracle::quadtree;
using cdplab::oracle::Verdict;
using cdplab::quadtree::Box;
using cdplab::quadtree::Quadtree;
using cdplab::quadtree::QuadtreeNode;
using cdplab::quadtree::QuadtreeParams;

const Box kBounds{0.0f, 0.0f, 1.0f, 1.0f};
const QuadtreeParams kParams{5, 8};


/// A seeded input and its reference tree.
struct Case {
  oracle::Points points;
  Quadtree tree;

  Verdict judge(const Quadtree& found, const QuadtreeParams& params = kParams) const {
    return oracle::judge_quadtree(points.x, points.y, kBounds, params, found);
  }
};

Case uniform_case(std::size_t n = 3000) {
  cdplab::Random rng(11);
  Case c;
  c.points = oracle::uniform_points(rng, n, kBounds);
  c.tree = oracle::build_quadtree_cpu(c.points.x, c.points.y, kBounds, kParams);
  return c;
}

std::size_t index_of(const Quadtree& tree, int id) {
  for (std::size_t i = 0; i < tree.nodes.size(); ++i)
    if (tree.nodes[i].id == id) return i;
  FAIL("the reference tree has no node " << id);
  return 0;
}

/// A split node whose four children are all leaves.
int split_node_above_leaves(const Quadtree& tree) {
  for (const QuadtreeNode& n : tree.nodes) {
    if (n.leaf) continue;
    bool all_leaves = true;
    for (int q = 1; q <= 4; ++q) all_leaves = all_leaves && tree.nodes[index_of(tree, 4 * n.id + q)].leaf;
    if (all_leaves) return n.id;
  }
  FAIL("the reference tree has no split node above four leaves");
  return 0;
}

}  // namespace

TEST_CASE("oracle quadtree reference trees pass") {
  const Case c = uniform_case();
  expect_pass(c.judge(c.tree));
  CHECK(oracle::internal_nodes(c.tree) > 1);
  CHECK(c.tree.nodes.size() == 4 * oracle::internal_nodes(c.tree) + 1);

  cdplab::Random rng(5);
  for (const auto& points : {oracle::clustered_points(rng, 5000, kBounds, 3, 0.01),
                             oracle::boundary_points(rng, 4000, kBounds, 5), oracle::identical_points(500, 0.25f, 0.75f),
                             oracle::Points{}, oracle::uniform_points(rng, 1, kBounds)}) {
    for (const QuadtreeParams& params : {kParams, QuadtreeParams{0, 4}, QuadtreeParams{7, 0}}) {
      INFO(points.x.size() << " points, max_depth " << params.max_depth);
      const Quadtree tree = oracle::build_quadtree_cpu(points.x, points.y, kBounds, params);
      expect_pass(oracle::judge_quadtree(points.x, points.y, kBounds, params, tree));
    }
  }
}

TEST_CASE("oracle quadtree inputs are what they claim") {
  cdplab::Random rng(3);
  const auto boundary = oracle::boundary_points(rng, 2000, kBounds, 4);
  REQUIRE(boundary.x.size() == 2000);
  std::size_t on_root_lines = 0;
  for (std::size_t i = 0; i < boundary.x.size(); ++i) {
    CHECK(boundary.x[i] >= kBounds.min_x);
    CHECK(boundary.y[i] <= kBounds.max_y);
    if (boundary.x[i] == 0.5f || boundary.y[i] == 0.5f) ++on_root_lines;
  }
  CHECK(on_root_lines > 100);  // a quarter of them lie on the root's lines, and more by chance

  const auto clustered = oracle::clustered_points(rng, 4000, kBounds, 2, 0.001);
  const Quadtree deep = oracle::build_quadtree_cpu(clustered.x, clustered.y, kBounds, QuadtreeParams{10, 16});
  int deepest = 0;
  for (const QuadtreeNode& n : deep.nodes) deepest = std::max(deepest, n.level);
  CHECK(deepest == 10);  // tight clusters reach the depth bound

  // The chapter's "pool raised" parameters need more than the default 2048 pending launches.
  const auto many = oracle::uniform_points(rng, 1 << 20, kBounds);
  CHECK(oracle::internal_nodes(oracle::build_quadtree_cpu(many.x, many.y, kBounds, QuadtreeParams{8, 16})) > 2048);
}

TEST_CASE("oracle quadtree counts the split nodes that must launch a grid") {
  const Box unit{0.0f, 0.0f, 1.0f, 1.0f};
  // One point, split down to depth 3: the root and level 1 have a split child, level 2 does not.
  const oracle::Points one{{0.1f}, {0.1f}};
  const Quadtree path = oracle::build_quadtree_cpu(one.x, one.y, unit, QuadtreeParams{3, 0});
  CHECK(oracle::internal_nodes(path) == 3);
  CHECK(oracle::split_parents(path) == 2);
  // A root whose children are all leaves launches nothing it must; a single leaf, nothing at all.
  const Quadtree flat = oracle::build_quadtree_cpu(one.x, one.y, unit, QuadtreeParams{1, 0});
  CHECK(oracle::internal_nodes(flat) == 1);
  CHECK(oracle::split_parents(flat) == 0);
  CHECK(oracle::split_parents(oracle::build_quadtree_cpu({}, {}, unit, QuadtreeParams{})) == 0);
  // In a full tree of depth 2, the root is the only parent of split nodes.
  cdplab::Random rng(8);
  const auto many = oracle::uniform_points(rng, 20000, unit);
  const Quadtree full = oracle::build_quadtree_cpu(many.x, many.y, unit, QuadtreeParams{2, 0});
  CHECK(oracle::internal_nodes(full) == 5);
  CHECK(oracle::split_parents(full) == 1);
}

TEST_CASE("oracle quadtree accepts another valid tree") {
  Case c = uniform_case();
  Quadtree other = c.tree;
  // Reverse the points of every leaf and the order of the node records: still a correct tree.
  for (const QuadtreeNode& n : other.nodes) {
    if (!n.leaf) continue;
    std::reverse(other.x.begin() + n.begin, other.x.begin() + n.end);
    std::reverse(other.y.begin() + n.begin, other.y.begin() + n.end);
  }
  std::reverse(other.nodes.begin(), other.nodes.end());
  expect_pass(c.judge(other));
}

TEST_CASE("oracle quadtree rejects points that are not the input's") {
  Case c = uniform_case();
  Quadtree lost = c.tree;
  lost.x[17] = lost.x[18];  // one point duplicated, one lost: as when a leaf in buffer 1 is not copied back
  lost.y[17] = lost.y[18];
  expect_failure(c.judge(lost), {"not the input's points", "1 input points missing", "buffer 1"});

  Quadtree short_tree = c.tree;
  short_tree.x.pop_back();
  expect_failure(c.judge(short_tree), {"expected 3000 points back"});
}

TEST_CASE("oracle quadtree's hashed permutation check passes reorderings and rejects lost points") {
  Case c = uniform_case();
  const auto judge_hashed = [&](const Quadtree& found) {
    return oracle::judge_quadtree(c.points.x, c.points.y, kBounds, kParams, found, oracle::PermutationCheck::hashed);
  };
  expect_pass(judge_hashed(c.tree));
  Quadtree lost = c.tree;
  lost.x[17] = lost.x[18];  // one point duplicated, one lost
  lost.y[17] = lost.y[18];
  expect_failure(judge_hashed(lost), {"not the input's points", "buffer 1"});
  Quadtree swapped = c.tree;  // two points' y swapped: the same x and y values, other pairs
  std::swap(swapped.y[3], swapped.y[2000]);
  CHECK_FALSE(judge_hashed(swapped).ok);
}

TEST_CASE("oracle quadtree rejects a missing or wrong root") {
  Case c = uniform_case();
  Quadtree no_root = c.tree;
  no_root.nodes.erase(no_root.nodes.begin() + static_cast<long>(index_of(no_root, 0)));
  expect_failure(c.judge(no_root), {"no root", "id 0"});

  Quadtree wrong = c.tree;
  wrong.nodes[index_of(wrong, 0)].end = 2999;
  expect_failure(c.judge(wrong), {"the root should be", "points 0..3000", "points 0..2999"});

  const oracle::Points none;
  expect_failure(oracle::judge_quadtree(none.x, none.y, kBounds, kParams, Quadtree{}), {"no root"});
}

TEST_CASE("oracle quadtree rejects missing children, wrong boxes and wrong levels") {
  Case c = uniform_case();
  Quadtree missing = c.tree;
  missing.nodes.erase(missing.nodes.begin() + static_cast<long>(index_of(missing, 3)));
  expect_failure(c.judge(missing), {"node 0 (level 0, points 0..3000)", "child 3 (quadrant 2, top-left) is missing"});

  Quadtree box = c.tree;
  box.nodes[index_of(box, 2)].box.max_x = 0.75f;
  expect_failure(c.judge(box), {"child 2 of node 0", "box [0.5, 1] x [0, 0.5]", "found level 1 and box [0.5, 0.75]"});

  Quadtree level = c.tree;
  level.nodes[index_of(level, 4)].level = 2;
  expect_failure(c.judge(level), {"child 4 of node 0", "should be level 1", "found level 2"});
}

TEST_CASE("oracle quadtree rejects children whose ranges leave points out") {
  Case c = uniform_case();
  Quadtree gap = c.tree;
  QuadtreeNode& child = gap.nodes[index_of(gap, 2)];
  child.end -= 5;  // child 2 ends early: child 3 starts 5 points later
  expect_failure(c.judge(gap), {"node 0 (level 0, points 0..3000): its children's ranges are", "leave 5 points out"});
}

TEST_CASE("oracle quadtree rejects points in the wrong quadrant") {
  Case c = uniform_case();
  Quadtree swapped = c.tree;
  const QuadtreeNode& a = swapped.nodes[index_of(swapped, 1)];
  const QuadtreeNode& b = swapped.nodes[index_of(swapped, 4)];
  std::swap(swapped.x[static_cast<std::size_t>(a.begin)], swapped.x[static_cast<std::size_t>(b.begin)]);
  std::swap(swapped.y[static_cast<std::size_t>(a.begin)], swapped.y[static_cast<std::size_t>(b.begin)]);
  expect_failure(c.judge(swapped), {"is in child 1 (quadrant 0, bottom-left) of node 0", "quadrant_of puts it in quadrant 3"});

  // A point on the root's vertical centre line put left: the convention sends it right.
  oracle::Points points;
  points.x = {0.5f, 0.25f};
  points.y = {0.25f, 0.25f};
  const QuadtreeParams params{1, 0};
  Quadtree left = oracle::build_quadtree_cpu(points.x, points.y, kBounds, params);
  expect_pass(oracle::judge_quadtree(points.x, points.y, kBounds, params, left));
  for (QuadtreeNode& n : left.nodes) {
    if (n.id == 1) n = QuadtreeNode{1, 1, n.box, 0, 2, true};  // both points in the bottom-left child
    if (n.id == 2) n = QuadtreeNode{2, 1, n.box, 2, 2, true};
  }
  left.x = {0.25f, 0.5f};
  left.y = {0.25f, 0.25f};
  expect_failure(oracle::judge_quadtree(points.x, points.y, kBounds, params, left),
                 {"point 1 (0.5, 0.25) is in child 1", "quadrant 1 (bottom-right)", "centre line", "right or up"});
}

TEST_CASE("oracle quadtree rejects a point outside its leaf's box") {
  Case c = uniform_case();
  // Move one point of a leaf outside its box, in the input too, so the points still match.
  Quadtree moved = c.tree;
  oracle::Points input = c.points;
  const QuadtreeNode* leaf = nullptr;
  for (const QuadtreeNode& n : moved.nodes)
    if (n.leaf && n.level > 1 && n.end > n.begin) leaf = &n;
  REQUIRE(leaf != nullptr);
  const std::size_t i = static_cast<std::size_t>(leaf->begin);
  const float old_x = moved.x[i];
  const float old_y = moved.y[i];
  const float new_x = leaf->box.max_x + 0.5f * (leaf->box.max_x - leaf->box.min_x);
  for (std::size_t k = 0; k < input.x.size(); ++k) {
    if (input.x[k] == old_x && input.y[k] == old_y) input.x[k] = new_x;
  }
  moved.x[i] = new_x;
  const Verdict verdict = oracle::judge_quadtree(input.x, input.y, kBounds, kParams, moved);
  // Its parent already sees it in the wrong quadrant, or its leaf outside its box.
  expect_failure(verdict, {"point " + std::to_string(i)});
  CHECK((contains(verdict.message, "outside its box") || contains(verdict.message, "quadrant_of puts it")));
}

TEST_CASE("oracle quadtree rejects a node that should have been split, or should not") {
  Case c = uniform_case();
  Quadtree unsplit = c.tree;
  const int id = split_node_above_leaves(unsplit);
  unsplit.nodes.erase(std::remove_if(unsplit.nodes.begin(), unsplit.nodes.end(),
                                     [&](const QuadtreeNode& n) { return n.id >= 4 * id + 1 && n.id <= 4 * id + 4; }),
                      unsplit.nodes.end());
  unsplit.nodes[index_of(unsplit, id)].leaf = true;
  expect_failure(c.judge(unsplit), {"node " + std::to_string(id) + " (level", "is a leaf", "should have been split"});

  // The same tree judged with a larger min_points_per_node: its split nodes now hold too few.
  Quadtree split = c.tree;
  expect_failure(c.judge(split, QuadtreeParams{kParams.max_depth, 5000}),
                 {"node 0 (level 0, points 0..3000) is split", "no more than min_points_per_node = 5000"});
  // And with a smaller max_depth: the deepest split nodes are below it.
  expect_failure(c.judge(split, QuadtreeParams{1, kParams.min_points_per_node}), {"is split", "max_depth = 1"});
}

TEST_CASE("oracle quadtree rejects duplicate ids and stray nodes") {
  Case c = uniform_case();
  Quadtree twice = c.tree;
  twice.nodes.push_back(twice.nodes[index_of(twice, 5)]);
  expect_failure(c.judge(twice), {"node id 5 appears twice"});

  Quadtree stray = c.tree;
  const QuadtreeNode* leaf = nullptr;
  for (const QuadtreeNode& n : stray.nodes)
    if (n.leaf) leaf = &n;
  REQUIRE(leaf != nullptr);
  const QuadtreeNode extra{4 * leaf->id + 1, leaf->level + 1, cdplab::quadtree::quadrant_box(leaf->box, 0), leaf->begin,
                           leaf->begin, true};
  stray.nodes.push_back(extra);
  expect_failure(c.judge(stray), {"node " + std::to_string(extra.id), "is not a child of any split node"});
}

TEST_CASE("oracle quadtree judges a million points quickly enough to be used in a check") {
  cdplab::Random rng(21);
  const auto points = oracle::uniform_points(rng, 1 << 20, kBounds);
  const QuadtreeParams params{8, 16};
  const Quadtree tree = oracle::build_quadtree_cpu(points.x, points.y, kBounds, params);
  expect_pass(oracle::judge_quadtree(points.x, points.y, kBounds, params, tree));
}
