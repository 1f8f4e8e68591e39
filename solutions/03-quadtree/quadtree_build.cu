// Exercise quadtree-build: a quadtree built by a kernel that launches itself, one block per node.
//
// A block handles one node. Its threads count the node's points per quadrant in shared memory,
// one thread turns the four counts into four offsets, and the threads move every point into the
// other buffer at its quadrant's next free slot, so that each quadrant's points are contiguous.
// Then one thread launches the node's four children as one grid of four blocks (block q builds
// quadrant q), telling them to read from the buffer this node wrote. A node at max_depth, or with
// few enough points, is a leaf: its points stay where they are, and if they are in buffer 1 the
// leaf copies them back to buffer 0, where the caller finds them.
//
// The node records. Node k's children are 4k+1 .. 4k+4, so the ids of a tree no deeper than D
// lie in [0, (4^(D+1) - 1) / 3), and node k's record lives in slot k of one array of that size.
// A parent fills in its children's records (box and range) before it launches them, marked
// "not built" (level -1); each child reads its own record and writes it back complete, with its
// level and whether it is a leaf. The host keeps the records whose level is set: the nodes that
// were actually built. A parent cannot wait for its children in CDP2, and does not need to:
// nothing a node does depends on what its children do.
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/launch_pool.h"
#include "cdplab/quadtree.h"

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace cdplab::quadtree {

/// Threads per block: one block per node. Each thread handles every blockDim.x-th point.
inline constexpr int kThreadsPerNode = 128;
/// The deepest tree this exercise builds: the node array holds (4^11 - 1) / 3 = 1398101 records.
inline constexpr int kMaxSupportedDepth = 10;
/// The level of a record that no block has written yet.
inline constexpr int kNotBuilt = -1;

/// Builds the nodes first_id .. first_id + gridDim.x - 1, all at `level`; block b builds node
/// first_id + b, whose box and point range its parent (or the host, for the root) wrote into
/// nodes[first_id + b]. The node's points are in buffer `selector` (0: x0/y0, 1: x1/y1).
__global__ void build_quadtree_kernel(QuadtreeNode* nodes, float* x0, float* y0, float* x1, float* y1,
                                      int first_id, int level, int selector, QuadtreeParams params) {
  const int id = first_id + static_cast<int>(blockIdx.x);
  QuadtreeNode node = nodes[id];
  node.id = id;
  node.level = level;
  const int count = node.end - node.begin;
  node.leaf = level >= params.max_depth || count <= params.min_points_per_node;
  // BEGIN SOLUTION
  __shared__ int counts[4];   // points per quadrant
  __shared__ int cursors[4];  // the next free slot of each quadrant in the other buffer

  const float* in_x = selector == 0 ? x0 : x1;
  const float* in_y = selector == 0 ? y0 : y1;
  float* out_x = selector == 0 ? x1 : x0;
  float* out_y = selector == 0 ? y1 : y0;

  if (node.leaf) {
    // The stop test: the points stay where this node received them. Those in buffer 1 must go
    // back to buffer 0, where the host reads the result (leaves at every depth may hold them).
    if (selector == 1) {
      for (int i = node.begin + static_cast<int>(threadIdx.x); i < node.end; i += static_cast<int>(blockDim.x)) {
        x0[i] = x1[i];
        y0[i] = y1[i];
      }
    }
    if (threadIdx.x == 0) nodes[id] = node;
    return;  // the whole block returns: no thread is left waiting at a barrier below
  }

  // Count the points per quadrant. The counters must be zero before any thread adds to them.
  if (threadIdx.x < 4) counts[threadIdx.x] = 0;
  __syncthreads();
  for (int i = node.begin + static_cast<int>(threadIdx.x); i < node.end; i += static_cast<int>(blockDim.x)) {
    atomicAdd(&counts[quadrant_of(in_x[i], in_y[i], node.box)], 1);
  }
  __syncthreads();  // every count is complete before the scan reads them

  // Exclusive scan of four numbers: one thread is plenty.
  if (threadIdx.x == 0) {
    int offset = node.begin;
    for (int q = 0; q < 4; ++q) {
      cursors[q] = offset;
      offset += counts[q];
    }
  }
  __syncthreads();  // the cursors are set before any thread takes a slot

  // Move each point to its quadrant's next slot; the order within a quadrant does not matter.
  for (int i = node.begin + static_cast<int>(threadIdx.x); i < node.end; i += static_cast<int>(blockDim.x)) {
    const float x = in_x[i];
    const float y = in_y[i];
    const int slot = atomicAdd(&cursors[quadrant_of(x, y, node.box)], 1);
    out_x[slot] = x;
    out_y[slot] = y;
  }
  // Every point has moved (the child grid sees the whole block's writes once the launching thread
  // has passed this barrier), and each cursor now holds its quadrant's end.
  __syncthreads();

  if (threadIdx.x == 0) {
    nodes[id] = node;
    const int first_child = 4 * id + 1;
    int begin = node.begin;
    for (int q = 0; q < 4; ++q) {
      nodes[first_child + q] = QuadtreeNode{first_child + q, kNotBuilt, quadrant_box(node.box, q), begin,
                                            cursors[q], false};
      begin = cursors[q];
    }
    // One grid of four blocks, block q for quadrant q; the children read the buffer just written.
    build_quadtree_kernel<<<4, blockDim.x>>>(nodes, x0, y0, x1, y1, first_child, level + 1, 1 - selector, params);
    CDPLAB_CHECK_LAUNCH();
  }
  // END SOLUTION
  //| // TODO(quadtree-build): if node.leaf, this node stops here: when its points are in buffer 1
  //| // (selector == 1), the block's threads copy x1/y1[node.begin .. node.end) back to x0/y0;
  //| // thread 0 writes the record (nodes[id] = node); the block returns.
  //| // Otherwise count the node's points per quadrant (quadrant_of(x, y, node.box)) with atomicAdd
  //| // on __shared__ counters, zeroed first; __syncthreads(); let one thread turn the counts into
  //| // each quadrant's first slot (node.begin plus the counts of the quadrants before it);
  //| // __syncthreads(); move every point from the input buffer to the other one, at a slot taken
  //| // with atomicAdd on its quadrant's __shared__ cursor; __syncthreads(). Then thread 0 writes
  //| // the record, fills in the four children's records (ids 4 * id + 1 + q, level kNotBuilt, the
  //| // box quadrant_box(node.box, q), the range of quadrant q) and launches build_quadtree_kernel
  //| // with 4 blocks of blockDim.x threads for them, one level deeper, with the other selector;
  //| // check the launch with CDPLAB_CHECK_LAUNCH() on the next line.
  //| (void)x1;
  //| (void)y1;
  //| (void)node;
  //| CDPLAB_TODO();
}

namespace {

/// Record slots for a tree no deeper than `max_depth`: every id a node can have, (4^(D+1) - 1) / 3.
std::size_t node_slots(int max_depth) {
  std::size_t slots = 0;
  std::size_t per_level = 1;
  for (int level = 0; level <= max_depth; ++level, per_level *= 4) slots += per_level;
  return slots;
}

/// An upper bound on the internal nodes of the tree, which is also the most device-side launches
/// that can be pending at once: every internal node makes one launch, and how many of them wait
/// at once depends on timing, so the pool is sized for all of them. Level l has at most 4^l nodes, and at most
/// n / (min_points_per_node + 1) of them can be internal, since each holds more than
/// min_points_per_node points and the nodes of a level share none. Levels 0 .. max_depth - 1 can
/// have internal nodes; with max_depth <= 10 the bound is at most 349525.
std::size_t pending_launch_bound(std::size_t n, const QuadtreeParams& params) {
  const std::size_t per_level_limit = n / (static_cast<std::size_t>(params.min_points_per_node) + 1);
  std::size_t bound = 0;
  std::size_t per_level = 1;
  for (int level = 0; level < params.max_depth; ++level, per_level *= 4) {
    bound += per_level < per_level_limit ? per_level : per_level_limit;
  }
  return bound;
}

/// Launches the device runtime may need beyond the tree's own (its bookkeeping; a small margin).
constexpr std::size_t kPendingLaunchMargin = 64;

void check_arguments(const std::vector<float>& x, const std::vector<float>& y, const Box& bounds,
                     const QuadtreeParams& params) {
  if (x.size() != y.size()) {
    throw std::invalid_argument("build_quadtree: x has " + std::to_string(x.size()) + " values but y has " +
                                std::to_string(y.size()));
  }
  if (x.size() > static_cast<std::size_t>(1) << 30) throw std::invalid_argument("build_quadtree: too many points");
  if (params.max_depth < 0 || params.max_depth > kMaxSupportedDepth) {
    throw std::invalid_argument("build_quadtree: max_depth must lie in [0, " + std::to_string(kMaxSupportedDepth) +
                                "], found " + std::to_string(params.max_depth));
  }
  if (params.min_points_per_node < 0) throw std::invalid_argument("build_quadtree: min_points_per_node must not be negative");
  if (!(bounds.min_x <= bounds.max_x && bounds.min_y <= bounds.max_y)) {
    throw std::invalid_argument("build_quadtree: the bounds must have min_x <= max_x and min_y <= max_y");
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] >= bounds.min_x && x[i] <= bounds.max_x && y[i] >= bounds.min_y && y[i] <= bounds.max_y)) {
      throw std::invalid_argument("build_quadtree: point " + std::to_string(i) + " lies outside the bounds");
    }
  }
}

}  // namespace

Quadtree build_quadtree(const std::vector<float>& x, const std::vector<float>& y, const Box& bounds,
                        const QuadtreeParams& params) {
  check_arguments(x, y, bounds, params);
  const std::size_t n = x.size();

  // Buffer 0 holds the input and, at the end, the result; buffer 1 is the other half of each move.
  DeviceArray<float> x0(x);
  DeviceArray<float> y0(y);
  DeviceArray<float> x1(n);
  DeviceArray<float> y1(n);

  // Every slot starts "not built"; the root's record gives its box and all the points.
  std::vector<QuadtreeNode> records(node_slots(params.max_depth), QuadtreeNode{0, kNotBuilt, bounds, 0, 0, false});
  records[0] = QuadtreeNode{0, kNotBuilt, bounds, 0, static_cast<int>(n), false};
  DeviceArray<QuadtreeNode> nodes(records);

  // CDP2 fails the launches beyond the pending pool (2048 by default): raise it when the tree may
  // need more (launch_pool.h).
  reserve_pending_launches(pending_launch_bound(n, params) + kPendingLaunchMargin);

  reset_device_report();
  build_quadtree_kernel<<<1, kThreadsPerNode>>>(nodes.data(), x0.data(), y0.data(), x1.data(), y1.data(), 0, 0, 0,
                                                params);
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());  // the root grid and every grid below it
  throw_if_device_reported();

  Quadtree tree;
  tree.x = x0.download();
  tree.y = y0.download();
  for (const QuadtreeNode& node : nodes.download()) {
    if (node.level != kNotBuilt) tree.nodes.push_back(node);
  }
  return tree;
}

}  // namespace cdplab::quadtree
