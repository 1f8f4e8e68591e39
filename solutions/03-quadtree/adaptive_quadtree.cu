// Exercise adaptive-quadtree: the quadtree of quadtree-build, each node built by a grid sized
// to its points.
//
// quadtree-build gives every node one block. At the top of a large tree that block is the whole
// cost: one block moves all N points at level 0, four blocks at level 1, while the GPU has over a
// hundred SMs. Here a node gets one block per tile of kTilePoints points: many blocks at the top,
// one block for a node of at most one tile, and no launch at all for a leaf.
//
// One pass over a node's points. A block loads its tile, ranks each point among the tile's points
// of the same quadrant (a block-wide scan), takes a run of each quadrant's output range with one
// atomicAdd per quadrant on the node's counters, and writes its points into the other buffer,
// one contiguous run per quadrant. Where each quadrant's range begins depends on the node's four
// counts, which must be known before any block writes a point: the node's parent counted them
// while it moved the points (each point's quadrant inside the child it went to), and the host
// counts the root's.
//
// The continuation. A node's children may start only once every block of the node has moved its
// points. The blocks count themselves out on the node's counter, and the last one writes the
// children's records and launches ONE grid for all four children, each child with as many blocks
// as its points fill tiles and a leaf with none. The launch goes into the fire-and-forget stream:
// nothing waits for it. A kernel launched into cudaStreamTailLaunch would also be correct, but it
// costs a launch more per node and waits for the whole grid, which holds the siblings' blocks too.
//
// Buffers. A node of level L reads buffer L % 2 and writes the other, as in quadtree-build, and
// every point must end in buffer 0. A node of one block writes its leaf children straight to
// buffer 0: it has read all of its points before it writes any, and no other block touches its
// range. A node of many blocks cannot (its other blocks may still be reading buffer 0), so a leaf
// child it leaves in buffer 1 gets blocks in the children's grid that copy it back.
//
// Records. Slot k of workspace.nodes holds node k (children of k are 4k+1 .. 4k+4). The host sets
// every slot "empty" and writes the root's; each node's last block writes its children's
// records, complete, before it launches them.
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/host_part.h"
#include "cdplab/launch_pool.h"
#include "cdplab/quadtree.h"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace cdplab::quadtree {
namespace adaptive {

/// Threads per block, and points per thread: a block moves one tile of kTilePoints points.
inline constexpr int kThreads = 256;
inline constexpr int kItemsPerThread = 16;
inline constexpr int kTilePoints = kThreads * kItemsPerThread;

/// What every node's grid is handed (by value): the records, the counters, both buffers and the
/// stop rules.
struct Tree {
  QuadtreeNode* nodes;
  NodeCounters* counters;
  float* x0;
  float* y0;
  float* x1;
  float* y1;
  QuadtreeParams params;
};

/// One launch: the nodes first_id .. first_id + 3 of one level (four siblings; the root alone when
/// the host launches it). Node first_id + q owns the blocks block_start[q] .. block_start[q+1] - 1.
struct NodeGrid {
  int first_id;
  int level;
  int block_start[5];
};

/// The blocks a node of `points` points gets: one per tile.
__host__ __device__ inline int tiles_for(int points) { return (points + kTilePoints - 1) / kTilePoints; }

/// grid.block_start[q], without indexing the launch's parameters at run time (which would copy
/// them to local memory).
__device__ inline int block_start(const NodeGrid& grid, int q) {
  return q == 0 ? grid.block_start[0]
       : q == 1 ? grid.block_start[1]
       : q == 2 ? grid.block_start[2]
       : q == 3 ? grid.block_start[3]
                : grid.block_start[4];
}

/// A node's four children, as the node sees them before it moves its points.
struct Split {
  Box box[4];    ///< quadrant_box of the node's box
  int begin[4];  ///< where each child's range starts
  int count[4];  ///< each child's points
  bool leaf[4];  ///< whether the child stops there
};

/// Count q (0..3) of four 16-bit counts packed into 64 bits.
__device__ inline int packed_count(unsigned long long packed, int q) {
  return static_cast<int>((packed >> (16 * q)) & 0xFFFFu);
}

/// The children of `node` (level `level`) from its four quadrant counts.
__device__ Split split_of(const QuadtreeNode& node, const NodeCounters& counters, int level,
                          const QuadtreeParams& params) {
  Split split{};
  int begin = node.begin;
  for (int q = 0; q < 4; ++q) {
    split.box[q] = quadrant_box(node.box, q);
    split.begin[q] = begin;
    split.count[q] = counters.quadrant_points[q];
    begin += split.count[q];
    // BEGIN SOLUTION
    split.leaf[q] = level + 1 >= params.max_depth || split.count[q] <= params.min_points_per_node;
    // END SOLUTION
    //| // TODO(adaptive-quadtree): the leaf cutoff. Child q (one level deeper than the node) is
    //| // a leaf when it is at params.max_depth or holds at most params.min_points_per_node points.
    //| (void)level;
    //| (void)params;
    //| CDPLAB_TODO();
  }
  return split;
}

/// Shared memory of one block of build_node_kernel.
struct TileStorage {
  cub::BlockScan<unsigned long long, kThreads>::TempStorage scan;
  float2 staged[kTilePoints];  ///< the tile's points, grouped by quadrant
  int run_start[5];            ///< where quadrant q's points start in `staged` (run_start[4]: the tile's size)
  int slot[4];                 ///< where quadrant q's run goes in the output buffer
  int child_points[16];        ///< the tile's points per quadrant of each child: [4 * child + quadrant]
  Split split;                 ///< the node's children
  bool last_block;             ///< whether this block is the node's last to finish
};

/// Moves the points [begin, end) of node `id`, one tile, from buffer `in` to the other buffer
/// (leaf children of a one-block node: to buffer 0), each point into its quadrant's range, and
/// adds the tile's points per quadrant of every internal child to that child's counters.
/// No launch here: this is the block's share of the node's work.
__device__ void partition_tile(const Tree& tree, int id, const QuadtreeNode& node, int begin, int end, int in,
                               bool one_block, TileStorage& s) {
  const float* in_x = in == 0 ? tree.x0 : tree.x1;
  const float* in_y = in == 0 ? tree.y0 : tree.y1;
  float* out_x = in == 0 ? tree.x1 : tree.x0;
  float* out_y = in == 0 ? tree.y1 : tree.y0;
  const int t = static_cast<int>(threadIdx.x);

  // Load the tile, kItemsPerThread points per thread (striped, so every load is coalesced), and
  // count the thread's points per quadrant: four 16-bit counts in one 64-bit word.
  float px[kItemsPerThread];
  float py[kItemsPerThread];
  unsigned long long mine = 0;
#pragma unroll
  for (int k = 0; k < kItemsPerThread; ++k) {
    const int i = begin + k * kThreads + t;
    if (i < end) {
      px[k] = in_x[i];
      py[k] = in_y[i];
      mine += 1ull << (16 * quadrant_of(px[k], py[k], node.box));
    }
  }
  if (t < 16) s.child_points[t] = 0;

  // The points of lower threads, per quadrant (no count exceeds kTilePoints < 2^16).
  unsigned long long before = 0;
  unsigned long long total = 0;
  cub::BlockScan<unsigned long long, kThreads>(s.scan).ExclusiveSum(mine, before, total);

  // Each quadrant's run in `staged`, and the run of the node's range this tile takes.
  if (t < 4) {
    int start = 0;
    for (int q = 0; q < t; ++q) start += packed_count(total, q);
    s.run_start[t] = start;
    if (t == 3) s.run_start[4] = start + packed_count(total, 3);
    const int mine_in_q = packed_count(total, t);
    const int taken = one_block || mine_in_q == 0 ? 0 : atomicAdd(&tree.counters[id].quadrant_taken[t], mine_in_q);
    s.slot[t] = s.split.begin[t] + taken;
  }
  __syncthreads();

  // Stage the points grouped by quadrant, so that the writes below are contiguous runs (the
  // quadrants are computed again: cheaper than holding them in registers).
#pragma unroll
  for (int k = 0; k < kItemsPerThread; ++k) {
    if (begin + k * kThreads + t >= end) break;
    const int q = quadrant_of(px[k], py[k], node.box);
    s.staged[s.run_start[q] + packed_count(before, q)] = make_float2(px[k], py[k]);
    before += 1ull << (16 * q);
  }
  __syncthreads();

  // Write the runs out, and count each point's quadrant inside its child: 16 counts of 16 bits
  // in eight words (a thread writes at most kItemsPerThread points, a warp at most 512).
  unsigned in_child[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const int points = end - begin;
  for (int r = t; r < points; r += kThreads) {
    const int q = (r >= s.run_start[1]) + (r >= s.run_start[2]) + (r >= s.run_start[3]);
    const float2 p = s.staged[r];
    const int slot = s.slot[q] + (r - s.run_start[q]);
    const bool to_buffer0 = one_block && s.split.leaf[q];
    (to_buffer0 ? tree.x0 : out_x)[slot] = p.x;
    (to_buffer0 ? tree.y0 : out_y)[slot] = p.y;
    if (!s.split.leaf[q]) {
      const int sub = quadrant_of(p.x, p.y, s.split.box[q]);
      const int word = 2 * q + (sub >> 1);
#pragma unroll
      for (int w = 0; w < 8; ++w) in_child[w] += w == word ? 1u << (16 * (sub & 1)) : 0u;
    }
  }
#pragma unroll
  for (int w = 0; w < 8; ++w) {
    const unsigned warp_sum = __reduce_add_sync(0xFFFFFFFFu, in_child[w]);
    if (t % 32 == 0 && warp_sum != 0) {
      atomicAdd(&s.child_points[2 * w], static_cast<int>(warp_sum & 0xFFFFu));
      atomicAdd(&s.child_points[2 * w + 1], static_cast<int>(warp_sum >> 16));
    }
  }
  __syncthreads();
  if (t < 16 && s.child_points[t] != 0) {
    atomicAdd(&tree.counters[4 * id + 1 + t / 4].quadrant_points[t % 4], s.child_points[t]);
  }
}

/// Whether this block is the last of the node's `blocks` blocks to finish (the same answer in
/// every thread). Each thread's fence orders its writes and counts before the block checks out;
/// the last block's fence orders what it does next after every other block's writes, so the
/// grid it launches sees all of them.
__device__ bool finished_last(unsigned* blocks_done, int blocks, bool& last_block) {
  if (blocks == 1) {
    __syncthreads();  // the block's writes before the launch by one of its threads
    return true;
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last_block = atomicAdd(blocks_done, 1u) == static_cast<unsigned>(blocks - 1);
    if (last_block) __threadfence();
  }
  __syncthreads();
  return last_block;
}

/// Moves a leaf's points [begin, end) from buffer 1 back to buffer 0.
__device__ void copy_back(const Tree& tree, int begin, int end) {
  for (int i = begin + static_cast<int>(threadIdx.x); i < end; i += kThreads) {
    tree.x0[i] = tree.x1[i];
    tree.y0[i] = tree.y1[i];
  }
}

__global__ void build_node_kernel(Tree tree, NodeGrid grid);

/// The continuation of node `id` (level `level`), run by one thread of its last block once every
/// point has moved: writes the four children's records and launches one grid for them.
__device__ void launch_children(const Tree& tree, int id, int level, const Split& split, bool one_block) {
  NodeGrid children{4 * id + 1, level + 1, {0, 0, 0, 0, 0}};
  for (int q = 0; q < 4; ++q) {
    const int child = children.first_id + q;
    tree.nodes[child] = QuadtreeNode{child, level + 1, split.box[q], split.begin[q], split.begin[q] + split.count[q],
                                     split.leaf[q]};
    // BEGIN SOLUTION
    // A leaf needs blocks only when its points wait in buffer 1: a many-block node of an even
    // level wrote them there.
    const bool copy = split.leaf[q] && !one_block && level % 2 == 0 && split.count[q] > 0;
    const int blocks = !split.leaf[q] || copy ? tiles_for(split.count[q]) : 0;
    children.block_start[q + 1] = children.block_start[q] + blocks;
    // END SOLUTION
    //| // TODO(adaptive-quadtree): child q's blocks in the children's grid: one per tile of its
    //| // points (tiles_for) when it is not a leaf; a leaf gets none, unless its points wait in
    //| // buffer 1 (a node of many blocks on an even level wrote them there) and must be copied
    //| // back. Set children.block_start[q + 1] = children.block_start[q] + those blocks.
    //| (void)one_block;
    //| CDPLAB_TODO();
  }
  // BEGIN SOLUTION
  const int blocks = children.block_start[4];
  if (blocks == 0) return;  // every child is a leaf whose points are where they belong
  build_node_kernel<<<blocks, kThreads, 0, cudaStreamFireAndForget>>>(tree, children);
  CDPLAB_CHECK_LAUNCH();
  // END SOLUTION
  //| // TODO(adaptive-quadtree): launch build_node_kernel for the children, with
  //| // children.block_start[4] blocks of kThreads threads, into cudaStreamFireAndForget (no
  //| // launch when that is zero: all four are leaves in place), then CDPLAB_CHECK_LAUNCH().
}

/// Builds the nodes of `grid`: block b works on node grid.first_id + q, where
/// grid.block_start[q] <= b < grid.block_start[q + 1], and moves the tile number
/// b - grid.block_start[q] of that node's points. The launch bounds ask for three blocks per SM
/// (74 registers per thread, 35 KB of shared memory per block on sm_90).
__global__ void __launch_bounds__(kThreads, 3) build_node_kernel(Tree tree, NodeGrid grid) {
  __shared__ TileStorage storage;
  const int b = static_cast<int>(blockIdx.x);
  const int q = (b >= grid.block_start[1]) + (b >= grid.block_start[2]) + (b >= grid.block_start[3]);
  const int first_block = block_start(grid, q);
  const int id = grid.first_id + q;
  const int blocks = block_start(grid, q + 1) - first_block;

  const QuadtreeNode node = tree.nodes[id];
  const int begin = node.begin + (b - first_block) * kTilePoints;
  const int end = min(begin + kTilePoints, node.end);
  if (node.leaf) {  // launched only to bring its points back to buffer 0
    copy_back(tree, begin, end);
    return;
  }
  if (threadIdx.x == 0) storage.split = split_of(node, tree.counters[id], grid.level, tree.params);
  __syncthreads();
  partition_tile(tree, id, node, begin, end, grid.level % 2, blocks == 1, storage);

  // BEGIN SOLUTION
  if (!finished_last(&tree.counters[id].blocks_done, blocks, storage.last_block)) return;
  if (threadIdx.x == 0) launch_children(tree, id, grid.level, storage.split, blocks == 1);
  // END SOLUTION
  //| // TODO(adaptive-quadtree): the continuation. Only the node's last block to finish goes on
  //| // (finished_last, on tree.counters[id].blocks_done); one of its threads runs
  //| // launch_children for the node.
  //| CDPLAB_TODO();
}

/// Counts the root's points per quadrant (one tile per block) and writes the root's record.
/// Launched from the host before the root's grid, which needs the counts to place its quadrants.
__global__ void __launch_bounds__(kThreads) count_root_kernel(Tree tree, QuadtreeNode root) {
  __shared__ cub::BlockReduce<unsigned long long, kThreads>::TempStorage reduce;
  const int begin = static_cast<int>(blockIdx.x) * kTilePoints;
  const int end = min(begin + kTilePoints, root.end);
  unsigned long long mine = 0;
#pragma unroll
  for (int k = 0; k < kItemsPerThread; ++k) {
    const int i = begin + k * kThreads + static_cast<int>(threadIdx.x);
    if (i < end) mine += 1ull << (16 * quadrant_of(tree.x0[i], tree.y0[i], root.box));
  }
  const unsigned long long total = cub::BlockReduce<unsigned long long, kThreads>(reduce).Sum(mine);
  if (threadIdx.x != 0) return;
  for (int q = 0; q < 4; ++q) {
    if (packed_count(total, q) != 0) atomicAdd(&tree.counters[0].quadrant_points[q], packed_count(total, q));
  }
  if (blockIdx.x == 0) tree.nodes[0] = root;
}

}  // namespace adaptive

namespace {

using adaptive::kThreads;
using adaptive::tiles_for;

// BEGIN SOLUTION
/// An upper bound on the device-side launches pending at once: each internal node, the root
/// included, launches at most one grid (its children's, from its last block), and each launch
/// holds its pool entry at least until its grid starts to run (docs/measured-limits.md); the
/// bound counts them all, whatever the timing. Level l holds at most 4^l nodes, and at most n / (min_points_per_node + 1)
/// internal ones, since each holds more than min_points_per_node of the n points.
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
// END SOLUTION

void check_params(const QuadtreeParams& params, const char* who) {
  if (params.max_depth < 0 || params.max_depth > kAdaptiveMaxDepth) {
    throw std::invalid_argument(std::string(who) + ": max_depth must lie in [0, " + std::to_string(kAdaptiveMaxDepth) +
                                "], found " + std::to_string(params.max_depth));
  }
  if (params.min_points_per_node < 0) {
    throw std::invalid_argument(std::string(who) + ": min_points_per_node must not be negative");
  }
}

}  // namespace

/// Host part (cdplab/host_part.h): sizes the pending launch pool for a tree of `n` points built
/// with `params`, before the first launch.
CDPLAB_HOST_PART void reserve_quadtree_launches(std::size_t n, const QuadtreeParams& params) {
  // BEGIN SOLUTION
  // CDP2 fails the launches beyond the pending pool (2048 by default): size it for this tree.
  reserve_pending_launches(pending_launch_bound(n, params) + kPendingLaunchMargin);
  // END SOLUTION
  //| // TODO(adaptive-quadtree): size the pending launch pool for n points before the first
  //| // launch: every internal node, the root included, launches one grid (its last block
  //| // launches its children's), and each launch holds its pool entry at least until its grid
  //| // starts to run (docs/measured-limits.md), so count them all. At most 4^l nodes of level l
  //| // are internal, and at most n / (min_points_per_node + 1); sum over the levels below
  //| // max_depth and call reserve_pending_launches (launch_pool.h).
  //| (void)n;
  //| (void)params;
  //| CDPLAB_TODO();
}

void build_adaptive_quadtree_device(float* x, float* y, std::size_t n, const Box& bounds,
                                    const QuadtreeParams& params, AdaptiveWorkspace& workspace) {
  check_params(params, "build_adaptive_quadtree_device");
  if (n > workspace.max_points || params.max_depth > workspace.max_depth) {
    throw std::invalid_argument("build_adaptive_quadtree_device: the workspace holds " +
                                std::to_string(workspace.max_points) + " points and depth " +
                                std::to_string(workspace.max_depth) + ", the build needs " + std::to_string(n) +
                                " and " + std::to_string(params.max_depth));
  }
  if (n > static_cast<std::size_t>(1) << 30) throw std::invalid_argument("build_adaptive_quadtree_device: too many points");

  reserve_quadtree_launches(n, params);  // the host part above: before the first launch

  // Every slot empty (all bytes 0xFF: level -1), every counter zero; both run on the GPU.
  CDPLAB_CHECK(cudaMemsetAsync(workspace.nodes.data(), 0xFF, workspace.nodes.size() * sizeof(QuadtreeNode)));
  CDPLAB_CHECK(cudaMemsetAsync(workspace.counters.data(), 0, workspace.counters.size() * sizeof(NodeCounters)));

  const adaptive::Tree tree{workspace.nodes.data(), workspace.counters.data(), x, y, workspace.x1.data(),
                            workspace.y1.data(), params};
  const int count = static_cast<int>(n);
  const bool root_leaf = params.max_depth == 0 || count <= params.min_points_per_node;
  const QuadtreeNode root{0, 0, bounds, 0, count, root_leaf};

  reset_device_report();
  adaptive::count_root_kernel<<<count > 0 ? tiles_for(count) : 1, kThreads>>>(tree, root);
  CDPLAB_CHECK(cudaGetLastError());
  if (!root_leaf) {
    // The root's grid, sized to its points; every grid below it is launched from the GPU.
    const int blocks = tiles_for(count);
    adaptive::build_node_kernel<<<blocks, kThreads>>>(tree, adaptive::NodeGrid{0, 0, {0, blocks, blocks, blocks, blocks}});
    CDPLAB_CHECK(cudaGetLastError());
  }
  CDPLAB_CHECK(cudaDeviceSynchronize());  // the root's grid and every grid below it
  throw_if_device_reported();
}

Quadtree build_adaptive_quadtree(const std::vector<float>& x, const std::vector<float>& y, const Box& bounds,
                                 const QuadtreeParams& params) {
  if (x.size() != y.size()) {
    throw std::invalid_argument("build_adaptive_quadtree: x has " + std::to_string(x.size()) + " values but y has " +
                                std::to_string(y.size()));
  }
  check_params(params, "build_adaptive_quadtree");
  if (!(bounds.min_x <= bounds.max_x && bounds.min_y <= bounds.max_y)) {
    throw std::invalid_argument("build_adaptive_quadtree: the bounds must have min_x <= max_x and min_y <= max_y");
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] >= bounds.min_x && x[i] <= bounds.max_x && y[i] >= bounds.min_y && y[i] <= bounds.max_y)) {
      throw std::invalid_argument("build_adaptive_quadtree: point " + std::to_string(i) + " lies outside the bounds");
    }
  }

  DeviceArray<float> device_x(x);
  DeviceArray<float> device_y(y);
  AdaptiveWorkspace workspace(x.size(), params.max_depth);
  build_adaptive_quadtree_device(device_x.data(), device_y.data(), x.size(), bounds, params, workspace);

  Quadtree tree;
  tree.x = device_x.download();
  tree.y = device_y.download();
  tree.nodes = workspace.built_nodes();
  return tree;
}

}  // namespace cdplab::quadtree
