// Checks of exercise quadtree-build: build_quadtree and its kernel build_quadtree_kernel. Every
// tree is judged by invariants (oracle::judge_quadtree), so any correct tree passes, whatever
// order the points of a leaf come in.
#include "harness.h"

#include "03-quadtree.h"
#include "cdplab/check.h"
#include "cdplab/quadtree.h"
#include "cdplab/random.h"

#include <cstddef>
#include <string>

namespace {

namespace oracle = cdplab::oracle::quadtree;
using cdplab::quadtree::Box;
using cdplab::quadtree::QuadtreeParams;

/// The default pending launch pool of CDP2: launches beyond it fail with error 69.
constexpr std::size_t kDefaultPendingLaunches = 2048;

/// Builds the tree of `points` on the GPU and judges it; a failed device-side launch is
/// reported with the advice that fits a recursive build.
void expect_tree(const oracle::Points& points, const Box& bounds, const QuadtreeParams& params) {
  INFO(points.x.size() << " points, max_depth " << params.max_depth << ", min_points_per_node "
                       << params.min_points_per_node);
  cdplab::quadtree::Quadtree tree;
  try {
    tree = cdplab::quadtree::build_quadtree(points.x, points.y, bounds, params);
  } catch (const cdplab::DeviceLaunchError& error) {
    FAIL(std::string(error.what()) << ". Every split node is one launch, holding a pool entry at least until its grid starts "
                         "to run; the host raises cudaLimitDevRuntimePendingLaunchCount before the root is launched");
  }
  const auto verdict = oracle::judge_quadtree(points.x, points.y, bounds, params, tree);
  CHECK_MESSAGE(verdict.ok, verdict.message);
  // One launch of a 4-block grid per split node (one block per child), never four 1-block grids.
  if (verdict.ok) cdplab::harness::expect_launches_exactly(oracle::internal_nodes(tree), "split node (a grid of 4 blocks)");
}

}  // namespace

GPU_CHECK("uniform points") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const Box bounds{-8.0f, -4.0f, 24.0f, 28.0f};
  expect_tree(oracle::uniform_points(rng, 200000, bounds), bounds, QuadtreeParams{7, 32});
}

GPU_CHECK("no points") {
  // The root is still built: a leaf with the empty range [0, 0).
  const Box bounds{0.0f, 0.0f, 1.0f, 1.0f};
  expect_tree(oracle::Points{}, bounds, QuadtreeParams{});
  expect_tree(oracle::Points{}, bounds, QuadtreeParams{4, 0});
}

GPU_CHECK("one point") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const Box bounds{-1.0f, -1.0f, 1.0f, 1.0f};
  const auto point = oracle::uniform_points(rng, 1, bounds);
  expect_tree(point, bounds, QuadtreeParams{6, 16});  // the root alone: a leaf
  // min_points_per_node 0: every node with the point splits, down to max_depth; its siblings
  // are empty leaves, at every level, and the point ends in buffer 0 whatever the depth's parity.
  expect_tree(point, bounds, QuadtreeParams{6, 0});
  expect_tree(point, bounds, QuadtreeParams{5, 0});
}

GPU_CHECK("identical points") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const Box bounds{0.0f, 0.0f, 100.0f, 100.0f};
  const auto one = oracle::uniform_points(rng, 1, bounds);
  // More points than min_points_per_node in one place: no split separates them, and only the
  // depth bound stops the recursion.
  expect_tree(oracle::identical_points(5000, one.x[0], one.y[0]), bounds, QuadtreeParams{9, 8});
  expect_tree(oracle::identical_points(5000, one.x[0], one.y[0]), bounds, QuadtreeParams{8, 8});
}

GPU_CHECK("points on quadrant boundaries") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const Box bounds{-2.0f, -2.0f, 6.0f, 6.0f};
  // Points exactly on the centre lines of nodes of levels 0 to 5, and on the box's edges: each
  // must go right or up, as quadrant_of says, at every level.
  expect_tree(oracle::boundary_points(rng, 30000, bounds, 6), bounds, QuadtreeParams{6, 4});
}

GPU_CHECK("clustered points") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const Box bounds{0.0f, 0.0f, 1000.0f, 500.0f};
  // A few tight clusters: deep, narrow subtrees beside large empty leaves; the deepest tree the
  // exercise supports.
  expect_tree(oracle::clustered_points(rng, 300000, bounds, 5, 0.002), bounds, QuadtreeParams{10, 16});
}

GPU_CHECK("pool raised") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const Box bounds{0.0f, 0.0f, 1.0f, 1.0f};
  const QuadtreeParams params{8, 16};
  const auto points = oracle::uniform_points(rng, 1 << 20, bounds);
  const std::size_t launches = oracle::internal_nodes(oracle::build_quadtree_cpu(points.x, points.y, bounds, params));
  REQUIRE_MESSAGE(launches > kDefaultPendingLaunches,
                  "the check's tree has only " << launches << " split nodes: it would not need a larger pool");
  cdplab::harness::advise_on_hang(
      "this tree has " + std::to_string(launches) + " split nodes, each a device-side launch that holds a pool "
      "entry at least until its grid starts to run: more than the default pool of 2048. Raise "
      "cudaLimitDevRuntimePendingLaunchCount from the host before launching the root");
  expect_tree(points, bounds, params);
}

GPU_CHECK("a failed launch reaches the host") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const Box bounds{0.0f, 0.0f, 1.0f, 1.0f};
  const auto points = oracle::uniform_points(rng, 20000, bounds);
  expect_tree(points, bounds, QuadtreeParams{6, 32});  // the run is right before one of its launches is made to fail
  cdplab::harness::expect_failed_launch_reported(
      [&] { (void)cdplab::quadtree::build_quadtree(points.x, points.y, bounds, QuadtreeParams{6, 32}); });
}
