// Benchmark of chapter 03 (quadtree): the two builds of this build's exercises with dynamic
// parallelism (quadtree-build: one block per node; adaptive-quadtree: a grid per node sized to its
// points), a level-by-level build without dynamic parallelism (one host launch per level), a
// sort-based build without it (Morton keys, one radix sort, node ranges by binary search), and a
// single-threaded CPU build, on uniform random points.
//
// Usage: bench-03-quadtree [--quick] [--sizes N,N,...] [--seed S]
//
// Prints the device, the tree parameters and the measured memory bandwidth, then a Markdown table
// (rows: number of points) of times, a second one of rates and launch costs, a third of every
// build against the bandwidth bound, and notes on what was timed and whether every build's output
// checked out. Exit status: 0 when every output was right, 1 on an error or a wrong output, 2 on
// a wrong command line, 77 when there is no GPU.
#include "cdplab/bench.h"
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/gpu_timer.h"
#include "cdplab/quadtree.h"
#include "cdplab/random.h"
#include "../suites/03-quadtree/support/sort_build.h"


#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace qt = cdplab::quadtree;
namespace bench = cdplab::bench;
using bench::UsageError;
using qt::Box;
using qt::Quadtree;
using qt::QuadtreeNode;
using qt::QuadtreeParams;
using cdplab::support::quadtree::SortBuilder;

const char* const kUsage =
    "usage: bench-03-quadtree [--quick] [--sizes N,N,...] [--seed S]\n"
    "  --quick          N = 10 000 and 1 000 000 only, one timed run per cell\n"
    "  --sizes N,N,...  these numbers of points instead (default 10000,100000,1000000,4000000,16000000)\n"
    "  --seed S         seed of the generated points (default 2026)\n"
    "Points are uniform in the unit square; max_depth 8, min_points_per_node 16.\n";

constexpr double kCellBudgetMs = 1500.0;   // timed runs of one cell stop after about this
constexpr int kLevelThreads = 256;       // threads per node of the level build
constexpr int kLaunchTreeThreads = 128;  // threads per block of the launch tree: the reference build's
constexpr int kPermutationCheckMax = 1000000;  // sorted-pairs check up to this many points
constexpr std::size_t kPendingHeadroom = 2048;
constexpr std::size_t kBandwidthBytes = std::size_t{512} << 20;  // each buffer of the copy
constexpr double kBytesPerPointLevel = 4.0 * sizeof(float);       // read x,y once, write x,y once
constexpr double kBytesPerPointCopy = 4.0 * sizeof(float);        // read x,y, write x,y
constexpr int kMaxPoints = 64000000;                               // for --sizes

struct Options {
  bool help = false;
  bool quick = false;
  std::vector<int> sizes;  // empty: the default sizes
  std::uint64_t seed = 2026;
};

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      options.help = true;
    } else if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--sizes") {
      if (i + 1 >= argc) throw UsageError("--sizes needs a value");
      options.sizes = bench::parse_sizes(arg, argv[++i], kMaxPoints, "points");
    } else if (arg == "--seed") {
      if (i + 1 >= argc) throw UsageError("--seed needs a value");
      options.seed = bench::parse_seed(arg, argv[++i]);
    } else {
      throw UsageError("unknown argument '" + arg + "'");
    }
  }
  return options;
}

// ---------------------------------------------------------------------------------------------
// Input

/// `n` seeded points, uniform in the unit square [0, 1) x [0, 1).
struct Points {
  std::vector<float> x;
  std::vector<float> y;
};

Points make_points(int n, std::uint64_t seed) {
  cdplab::Random rng = cdplab::Random(seed).derive(static_cast<std::uint64_t>(n));
  Points p;
  p.x = cdplab::uniform_floats(rng, static_cast<std::size_t>(n), 0.0f, 1.0f);
  p.y = cdplab::uniform_floats(rng, static_cast<std::size_t>(n), 0.0f, 1.0f);
  return p;
}

const Box kUnitSquare{0.0f, 0.0f, 1.0f, 1.0f};

// ---------------------------------------------------------------------------------------------
// The CPU build: single thread, recursive

/// Splits the node `node` (its points are x[begin..end)) and recurses into its four children.
/// `scratch_*` are as long as the points; each split scatters into them and copies back.
void cpu_build_node(const QuadtreeParams& params, QuadtreeNode node, Quadtree& tree, std::vector<float>& scratch_x,
                    std::vector<float>& scratch_y) {
  node.leaf = node.level >= params.max_depth || node.end - node.begin <= params.min_points_per_node;
  tree.nodes.push_back(node);
  if (node.leaf) return;
  int counts[4] = {0, 0, 0, 0};
  for (int i = node.begin; i < node.end; ++i) ++counts[qt::quadrant_of(tree.x[i], tree.y[i], node.box)];
  int starts[4];
  int next[4];
  for (int q = 0, at = node.begin; q < 4; at += counts[q], ++q) starts[q] = next[q] = at;
  for (int i = node.begin; i < node.end; ++i) {
    const int slot = next[qt::quadrant_of(tree.x[i], tree.y[i], node.box)]++;
    scratch_x[slot] = tree.x[i];
    scratch_y[slot] = tree.y[i];
  }
  std::copy(scratch_x.begin() + node.begin, scratch_x.begin() + node.end, tree.x.begin() + node.begin);
  std::copy(scratch_y.begin() + node.begin, scratch_y.begin() + node.end, tree.y.begin() + node.begin);
  for (int q = 0; q < 4; ++q) {
    const QuadtreeNode child{4 * node.id + 1 + q, node.level + 1, qt::quadrant_box(node.box, q), starts[q],
                             starts[q] + counts[q], false};
    cpu_build_node(params, child, tree, scratch_x, scratch_y);
  }
}

/// The same tree as build_quadtree, built by one CPU thread.
Quadtree cpu_build(const std::vector<float>& x, const std::vector<float>& y, const Box& bounds,
                   const QuadtreeParams& params) {
  Quadtree tree;
  tree.x = x;
  tree.y = y;
  std::vector<float> scratch_x(x.size());
  std::vector<float> scratch_y(y.size());
  const QuadtreeNode root{0, 0, bounds, 0, static_cast<int>(x.size()), false};
  cpu_build_node(params, root, tree, scratch_x, scratch_y);
  return tree;
}

// ---------------------------------------------------------------------------------------------
// The level build: no dynamic parallelism, one host launch per level

/// Builds the nodes of one level, one block per node: `nodes[first + blockIdx.x]`. A leaf on an
/// odd level copies its points from `src` (buffer 1) to `dst` (buffer 0). An internal node
/// counts its points per quadrant (shared atomics), scans the four counts, scatters its points
/// into `dst` in quadrant order (one shared atomic per warp and quadrant), and appends its four
/// children to the next level, which starts at `nodes[next_first]` and counts in `*next_count`.
/// A child that would not fit in the `capacity` nodes raises `*overflow` instead.
__global__ void level_build_nodes(QuadtreeNode* nodes, int first, int next_first, int capacity, int* next_count,
                                  int* overflow, const float* src_x, const float* src_y, float* dst_x, float* dst_y,
                                  bool copy_leaves, QuadtreeParams params) {
  __shared__ int counts[4];
  __shared__ int next_slot[4];  // where the next point of each quadrant goes, from node.begin
  QuadtreeNode& mine = nodes[first + blockIdx.x];
  const QuadtreeNode node = mine;
  const bool leaf = node.level >= params.max_depth || node.end - node.begin <= params.min_points_per_node;
  if (leaf) {
    if (threadIdx.x == 0) mine.leaf = true;
    if (copy_leaves) {
      for (int i = node.begin + threadIdx.x; i < node.end; i += blockDim.x) {
        dst_x[i] = src_x[i];
        dst_y[i] = src_y[i];
      }
    }
    return;
  }

  if (threadIdx.x < 4) counts[threadIdx.x] = 0;
  __syncthreads();
  int mine_per_quadrant[4] = {0, 0, 0, 0};
  for (int i = node.begin + threadIdx.x; i < node.end; i += blockDim.x) {
    const int q = qt::quadrant_of(src_x[i], src_y[i], node.box);
#pragma unroll
    for (int k = 0; k < 4; ++k) mine_per_quadrant[k] += q == k ? 1 : 0;  // stays in registers
  }
#pragma unroll
  for (int k = 0; k < 4; ++k)
    if (mine_per_quadrant[k] != 0) atomicAdd(&counts[k], mine_per_quadrant[k]);
  __syncthreads();

  if (threadIdx.x == 0) {
    mine.leaf = false;
    const int slot = next_first + atomicAdd(next_count, 4);
    if (slot + 4 > capacity) atomicExch(overflow, 1);
    for (int q = 0, at = 0; q < 4; at += counts[q], ++q) {
      next_slot[q] = at;
      if (slot + 4 <= capacity)
        nodes[slot + q] = QuadtreeNode{4 * node.id + 1 + q, node.level + 1, qt::quadrant_box(node.box, q),
                                       node.begin + at, node.begin + at + counts[q], false};
    }
  }
  __syncthreads();

  // Every thread of a warp runs the same number of rounds (the bound is the block's), so the
  // warp-wide ballots see all 32 lanes.
  const unsigned lane = threadIdx.x % 32;
  const unsigned lanes_below = (1u << lane) - 1u;
  for (int start = node.begin; start < node.end; start += blockDim.x) {
    const int i = start + static_cast<int>(threadIdx.x);
    const bool active = i < node.end;
    const float px = active ? src_x[i] : 0.0f;
    const float py = active ? src_y[i] : 0.0f;
    const int q = active ? qt::quadrant_of(px, py, node.box) : -1;
    int target = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const unsigned same = __ballot_sync(0xffffffffu, q == k);
      if (same == 0) continue;
      const int leader = __ffs(static_cast<int>(same)) - 1;
      int base = 0;
      if (static_cast<int>(lane) == leader) base = atomicAdd(&next_slot[k], __popc(same));
      base = __shfl_sync(0xffffffffu, base, leader);
      if (q == k) target = base + __popc(same & lanes_below);
    }
    if (active) {
      dst_x[node.begin + target] = px;
      dst_y[node.begin + target] = py;
    }
  }
}

/// The level build's GPU memory for `n` points: two point buffers, every node, the per-level
/// counters. Allocated once; build() may run many times on it.
class LevelBuilder {
 public:
  LevelBuilder(int n, const QuadtreeParams& params)
      : n_(n),
        params_(params),
        x0_(static_cast<std::size_t>(n)),
        y0_(static_cast<std::size_t>(n)),
        x1_(static_cast<std::size_t>(n)),
        y1_(static_cast<std::size_t>(n)),
        nodes_(static_cast<std::size_t>(node_capacity(n, params))),
        counters_(static_cast<std::size_t>(params.max_depth) + 3) {}

  /// Buffer 0: the points before build(), the reordered points after it.
  float* x() const { return x0_.data(); }
  float* y() const { return y0_.data(); }

  /// Builds the tree of the points in buffer 0 inside `bounds`, waits, and returns how many
  /// nodes it has. The host reads each level's node count back to size the next launch.
  int build(const Box& bounds) {
    CDPLAB_CHECK(cudaMemsetAsync(counters_.data(), 0, counters_.size() * sizeof(int)));
    const QuadtreeNode root{0, 0, bounds, 0, n_, false};
    CDPLAB_CHECK(cudaMemcpy(nodes_.data(), &root, sizeof root, cudaMemcpyHostToDevice));
    int* overflow = counters_.data();
    int first = 0;
    int count = 1;
    for (int level = 0; count > 0; ++level) {
      const bool odd = level % 2 == 1;  // the points of an odd level's nodes are in buffer 1
      const int next_first = first + count;
      int* next_count = counters_.data() + 1 + (level + 1);
      level_build_nodes<<<count, kLevelThreads>>>(nodes_.data(), first, next_first, static_cast<int>(nodes_.size()),
                                                  next_count, overflow, odd ? x1_.data() : x0_.data(),
                                                  odd ? y1_.data() : y0_.data(), odd ? x0_.data() : x1_.data(),
                                                  odd ? y0_.data() : y1_.data(), odd, params_);
      CDPLAB_CHECK(cudaGetLastError());
      int next = 0;  // this copy waits for the level
      CDPLAB_CHECK(cudaMemcpy(&next, next_count, sizeof next, cudaMemcpyDeviceToHost));
      first = next_first;
      count = next;
    }
    int overflowed = 0;
    CDPLAB_CHECK(cudaMemcpy(&overflowed, overflow, sizeof overflowed, cudaMemcpyDeviceToHost));
    if (overflowed != 0) throw std::logic_error("level build: more nodes than its node array holds");
    return first;
  }

  /// The first `count` nodes (the tree of the last build()).
  std::vector<QuadtreeNode> nodes(int count) const {
    std::vector<QuadtreeNode> host(static_cast<std::size_t>(count));
    CDPLAB_CHECK(
        cudaMemcpy(host.data(), nodes_.data(), host.size() * sizeof(QuadtreeNode), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  /// Level L holds at most 4^L nodes, and at most 4 per internal node of level L - 1, each of
  /// which holds more than min_points_per_node of the n points.
  static long long node_capacity(int n, const QuadtreeParams& params) {
    const long long children_bound = 4LL * (n / (std::max(params.min_points_per_node, 0) + 1)) + 4;
    long long total = 0;
    long long full = 1;  // 4^level
    for (int level = 0; level <= params.max_depth; ++level) {
      total += std::min(full, children_bound);
      full = std::min(full * 4, children_bound);
    }
    return total;
  }

  int n_;
  QuadtreeParams params_;
  cdplab::DeviceArray<float> x0_;
  cdplab::DeviceArray<float> y0_;
  cdplab::DeviceArray<float> x1_;
  cdplab::DeviceArray<float> y1_;
  cdplab::DeviceArray<QuadtreeNode> nodes_;
  cdplab::DeviceArray<int> counters_;  // [0]: overflow; [1 + L]: the node count of level L
};

/// The level build behind build_quadtree's signature: host vectors in and out, every GPU buffer
/// allocated and freed in the call.
Quadtree level_build(const std::vector<float>& x, const std::vector<float>& y, const Box& bounds,
                     const QuadtreeParams& params) {
  LevelBuilder builder(static_cast<int>(x.size()), params);
  if (!x.empty()) {
    CDPLAB_CHECK(cudaMemcpy(builder.x(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
    CDPLAB_CHECK(cudaMemcpy(builder.y(), y.data(), y.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  const int count = builder.build(bounds);
  Quadtree tree;
  tree.nodes = builder.nodes(count);
  tree.x.resize(x.size());
  tree.y.resize(y.size());
  if (!x.empty()) {
    CDPLAB_CHECK(cudaMemcpy(tree.x.data(), builder.x(), x.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CDPLAB_CHECK(cudaMemcpy(tree.y.data(), builder.y(), y.size() * sizeof(float), cudaMemcpyDeviceToHost));
  }
  return tree;
}

// ---------------------------------------------------------------------------------------------
// The sort build (grader/suites/03-quadtree/support/sort_build.h): no dynamic parallelism

/// The sort build behind build_quadtree's signature: host vectors in and out, every GPU buffer
/// allocated and freed in the call.
Quadtree sort_build(const std::vector<float>& x, const std::vector<float>& y, const Box& bounds,
                    const QuadtreeParams& params) {
  SortBuilder builder(static_cast<int>(x.size()), params);
  if (!x.empty()) {
    CDPLAB_CHECK(cudaMemcpy(builder.x(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
    CDPLAB_CHECK(cudaMemcpy(builder.y(), y.data(), y.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  builder.build(bounds);
  return builder.tree();
}

// ---------------------------------------------------------------------------------------------
// The launch tree: the CDP build's launches alone

/// One empty block per node of a tree shaped like a built one: block b of a grid stands for node
/// `first_id + b`; when that node is internal (`internal[id]`), its thread 0 launches one grid of
/// four blocks for its children, as the CDP build does. Counts the blocks that ran.
__global__ void launch_tree_node(const unsigned char* internal, int ids, int first_id, unsigned* blocks_run) {
  if (threadIdx.x != 0) return;
  const int id = first_id + static_cast<int>(blockIdx.x);
  atomicAdd(blocks_run, 1u);
  if (id < ids && internal[id] != 0) {
    launch_tree_node<<<4, blockDim.x>>>(internal, ids, 4 * id + 1, blocks_run);
    CDPLAB_CHECK_LAUNCH();
  }
}

/// The shape of a built tree on the GPU, ready to replay its launches.
class LaunchTree {
 public:
  explicit LaunchTree(const std::vector<QuadtreeNode>& nodes) {
    int ids = 1;
    for (const QuadtreeNode& node : nodes) ids = std::max(ids, node.id + 1);
    std::vector<unsigned char> internal(static_cast<std::size_t>(ids), 0);
    for (const QuadtreeNode& node : nodes) {
      if (node.leaf) continue;
      internal[static_cast<std::size_t>(node.id)] = 1;
    }
    nodes_ = static_cast<long long>(nodes.size());
    ids_ = ids;
    internal_ = cdplab::DeviceArray<unsigned char>(internal);
  }

  /// Launches the root from the host and waits for the whole tree of grids.
  void run() {
    cdplab::reset_device_report();
    CDPLAB_CHECK(cudaMemsetAsync(blocks_run_.data(), 0, sizeof(unsigned)));
    launch_tree_node<<<1, kLaunchTreeThreads>>>(internal_.data(), ids_, 0, blocks_run_.data());
    CDPLAB_CHECK(cudaGetLastError());
    CDPLAB_CHECK(cudaDeviceSynchronize());
  }

  /// "" when the last run launched every grid (one block ran per node); else what went wrong.
  std::string check() const {
    try {
      cdplab::throw_if_device_reported();
    } catch (const std::exception& e) {
      return e.what();
    }
    const long long ran = blocks_run_.download()[0];
    if (ran == nodes_) return "";
    return std::to_string(ran) + " blocks ran, expected one per node: " + std::to_string(nodes_);
  }

 private:
  long long nodes_ = 0;
  int ids_ = 0;
  cdplab::DeviceArray<unsigned char> internal_;
  cdplab::DeviceArray<unsigned> blocks_run_{1};
};

// ---------------------------------------------------------------------------------------------
// Checking a built tree

/// A point's bits, x then y, as one ordered key (both are non-negative floats here).
std::uint64_t point_key(float x, float y) {
  std::uint32_t bx = 0;
  std::uint32_t by = 0;
  std::memcpy(&bx, &x, sizeof bx);
  std::memcpy(&by, &y, sizeof by);
  return (static_cast<std::uint64_t>(bx) << 32) | by;
}

std::vector<std::uint64_t> sorted_keys(const std::vector<float>& x, const std::vector<float>& y) {
  std::vector<std::uint64_t> keys(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) keys[i] = point_key(x[i], y[i]);
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::string node_text(const QuadtreeNode& n) {
  char text[200];
  std::snprintf(text, sizeof text, "node %d (level %d, points %d..%d, %s, box %g,%g..%g,%g)", n.id, n.level, n.begin,
                n.end, n.leaf ? "leaf" : "internal", static_cast<double>(n.box.min_x),
                static_cast<double>(n.box.min_y), static_cast<double>(n.box.max_x), static_cast<double>(n.box.max_y));
  return text;
}

bool same_node(const QuadtreeNode& a, const QuadtreeNode& b) {
  return a.id == b.id && a.level == b.level && a.begin == b.begin && a.end == b.end && a.leaf == b.leaf &&
         a.box.min_x == b.box.min_x && a.box.min_y == b.box.min_y && a.box.max_x == b.box.max_x &&
         a.box.max_y == b.box.max_y;
}

/// "" when `tree` has exactly the nodes of `reference` (any order; the convention fixes every
/// node's id, box and point range) and every leaf's points lie in its box; with `input_keys`,
/// also when its points are a permutation of the input. Else the first problem found.
std::string check_tree(const Quadtree& tree, const Quadtree& reference, const std::vector<std::uint64_t>* input_keys) {
  std::vector<QuadtreeNode> found = tree.nodes;
  std::vector<QuadtreeNode> expected = reference.nodes;
  const auto by_id = [](const QuadtreeNode& a, const QuadtreeNode& b) { return a.id < b.id; };
  std::sort(found.begin(), found.end(), by_id);
  std::sort(expected.begin(), expected.end(), by_id);
  if (found.size() != expected.size())
    return std::to_string(found.size()) + " nodes, expected " + std::to_string(expected.size());
  for (std::size_t k = 0; k < found.size(); ++k)
    if (!same_node(found[k], expected[k]))
      return node_text(found[k]) + ", expected " + node_text(expected[k]);

  if (tree.x.size() != reference.x.size() || tree.y.size() != reference.x.size())
    return std::to_string(tree.x.size()) + " x and " + std::to_string(tree.y.size()) + " y came back, expected " +
           std::to_string(reference.x.size());
  for (const QuadtreeNode& leaf : found) {
    if (!leaf.leaf) continue;
    for (int i = leaf.begin; i < leaf.end; ++i) {
      const float x = tree.x[static_cast<std::size_t>(i)];
      const float y = tree.y[static_cast<std::size_t>(i)];
      if (x < leaf.box.min_x || x > leaf.box.max_x || y < leaf.box.min_y || y > leaf.box.max_y) {
        char text[120];
        std::snprintf(text, sizeof text, "point %d (%g, %g) lies outside the box of its leaf, ", i,
                      static_cast<double>(x), static_cast<double>(y));
        return text + node_text(leaf);
      }
    }
  }
  if (input_keys != nullptr && sorted_keys(tree.x, tree.y) != *input_keys)
    return "the points are not a permutation of the input";
  return "";
}

// ---------------------------------------------------------------------------------------------
// Timing

/// The median time of a cell, and how many timed runs it took.
struct Cell {
  double ms = 0.0;
  int runs = 0;
};

/// An untimed `prepare()`, then a warm-up `run()`, then up to `max_runs` timed runs (fewer when
/// one is slow, see kCellBudgetMs), each after an untimed `prepare()`.
template <typename Prepare, typename Run>
Cell measure(int max_runs, Prepare&& prepare, Run&& run) {
  prepare();
  const double warm_up_ms = bench::time_ms(run);
  Cell cell;
  cell.runs = bench::runs_within(warm_up_ms, kCellBudgetMs, max_runs);
  bench::Samples times;
  for (int r = 0; r < cell.runs; ++r) {
    prepare();
    times.add(bench::time_ms(run));
  }
  cell.ms = times.median();
  return cell;
}

/// No warm-up (a CPU build has nothing to warm up): the first run is timed, and more follow
/// while they fit in kCellBudgetMs, up to `max_runs` in all.
template <typename Run>
Cell measure_cpu(int max_runs, Run&& run) {
  bench::Samples times;
  times.add(bench::time_ms(run));
  Cell cell;
  cell.runs = bench::runs_within(times.median(), kCellBudgetMs, max_runs);
  for (int r = 1; r < cell.runs; ++r) times.add(bench::time_ms(run));
  cell.ms = times.median();
  return cell;
}

/// Device-to-device copy bandwidth in GB/s (10^9 bytes), bytes read plus bytes written, timed
/// with CUDA events around one large cudaMemcpy (median of 5 after a warm-up).
double measure_bandwidth_gbs() {
  cdplab::DeviceArray<unsigned char> from(kBandwidthBytes);
  cdplab::DeviceArray<unsigned char> to(kBandwidthBytes);
  cdplab::GpuTimer timer;
  bench::Samples times;
  for (int r = 0; r <= 5; ++r) {
    timer.start();
    CDPLAB_CHECK(cudaMemcpy(to.data(), from.data(), kBandwidthBytes, cudaMemcpyDeviceToDevice));
    timer.stop();
    const double ms = timer.elapsed_ms();
    if (r > 0) times.add(ms);  // run 0 is the warm-up
  }
  return 2.0 * static_cast<double>(kBandwidthBytes) / (times.median() * 1e-3) / 1e9;
}

// ---------------------------------------------------------------------------------------------
// What a tree costs at least

/// Counts of a built tree, and the bytes a build of it must move at least (see the notes).
struct TreeFacts {
  long long nodes = 0;
  long long leaves = 0;
  long long internal = 0;
  double bytes = 0.0;
};

TreeFacts facts_of(const Quadtree& tree) {
  TreeFacts f;
  for (const QuadtreeNode& node : tree.nodes) {
    const double points = static_cast<double>(node.end - node.begin);
    ++f.nodes;
    if (node.leaf) {
      ++f.leaves;
      if (node.level % 2 == 1) f.bytes += kBytesPerPointCopy * points;  // back to buffer 0
    } else {
      ++f.internal;
      f.bytes += kBytesPerPointLevel * points;  // counted and reordered on this level
    }
  }
  return f;
}

// ---------------------------------------------------------------------------------------------
// Device runtime limits

std::size_t get_limit(cudaLimit limit) {
  std::size_t value = 0;
  CDPLAB_CHECK(cudaDeviceGetLimit(&value, limit));
  return value;
}

/// The pending launches the launch tree may need: one per internal node of the deepest tree,
/// (4^max_depth - 1) / 3, plus headroom.
std::size_t pending_launches_for(const QuadtreeParams& params) {
  std::size_t internal = 0;
  std::size_t full = 1;
  for (int level = 0; level < params.max_depth; ++level, full *= 4) internal += full;
  return internal + kPendingHeadroom;
}

/// Raises the pending launch pool to `wanted` when it is lower (the exercise may set it to its
/// own needs); returns whether it had to.
bool raise_pending_launches(std::size_t wanted) {
  if (get_limit(cudaLimitDevRuntimePendingLaunchCount) >= wanted) return false;
  CDPLAB_CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, wanted));
  return true;
}

// ---------------------------------------------------------------------------------------------
// The table

std::string rate_text(int n, double ms) {
  if (!(ms > 0.0)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f M", static_cast<double>(n) / (ms * 1e-3) / 1e6);
  return text;
}

std::string ratio_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1fx", value);
  return text;
}

std::string percent_text(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %%", 100.0 * share);
  return text;
}

std::string us_text(double us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", us);
  return text;
}

/// A cell's time, with "[k]" when it had only k of `max_runs` timed runs.
std::string cell_text(const Cell& cell, int max_runs, int& fewer_runs) {
  std::string text = bench::format_ms(cell.ms);
  if (cell.runs < max_runs) {
    text += " [" + std::to_string(cell.runs) + "]";
    ++fewer_runs;
  }
  return text;
}

const std::vector<std::string> kTimeColumns = {"N points",
                                               "nodes",
                                               "leaves",
                                               "CDP ms (1)",
                                               "non-CDP ms (2)",
                                               "non-CDP device ms (3)",
                                               "CPU ms (4)",
                                               "CDP points/s (5)",
                                               "launch share (6)",
                                               "bandwidth bound ms (7)",
                                               "CDP / bound (8)",
                                               "adaptive CDP ms (9)",
                                               "adaptive CDP device ms (10)",
                                               "sort ms (11)",
                                               "sort device ms (12)"};

const std::vector<std::string> kRateColumns = {"N points",
                                               "CDP points/s",
                                               "non-CDP points/s",
                                               "non-CDP device points/s",
                                               "CPU points/s",
                                               "device launches",
                                               "launch tree ms",
                                               "us per launch",
                                               "non-CDP device / bound",
                                               "adaptive CDP device points/s",
                                               "sort device points/s"};

const std::vector<std::string> kBoundColumns = {"N points",
                                                "bandwidth bound ms (7)",
                                                "CDP / bound",
                                                "non-CDP device / bound",
                                                "adaptive CDP / bound",
                                                "adaptive CDP device / bound",
                                                "sort / bound",
                                                "sort device / bound"};

int run(const Options& options) {
  const auto started = std::chrono::steady_clock::now();
  if (!bench::print_device_or_skip("bench-03-quadtree")) return bench::kNoGpuExitCode;

  const QuadtreeParams params;  // max_depth 8, min_points_per_node 16
  const std::vector<int> sizes = !options.sizes.empty() ? options.sizes
                                 : options.quick       ? std::vector<int>{10000, 1000000}
                                                       : std::vector<int>{10000, 100000, 1000000, 4000000, 16000000};

  // Before the first launch from device code: the launch tree replays up to one launch per
  // internal node of the deepest tree (the exercise raises the pool for its own build itself).
  const std::size_t pending_before = get_limit(cudaLimitDevRuntimePendingLaunchCount);
  const std::size_t pending_wanted = pending_launches_for(params);
  raise_pending_launches(pending_wanted);
  const std::size_t pending = get_limit(cudaLimitDevRuntimePendingLaunchCount);

  std::printf("Points: uniform in the unit square [0, 1) x [0, 1) (seed %llu), bounds (0, 0)..(1, 1).\n",
              static_cast<unsigned long long>(options.seed));
  std::printf("Tree: max_depth %d, min_points_per_node %d (a node is a leaf at level %d or with %d points or\n"
              "fewer; an internal node has four children, empty ones included).\n",
              params.max_depth, params.min_points_per_node, params.max_depth, params.min_points_per_node);
  std::printf("Pending launch pool (cudaLimitDevRuntimePendingLaunchCount), raised before the first device launch\n"
              "for the launch tree (6): %s -> %s.\n",
              bench::format_count(static_cast<long long>(pending_before)).c_str(),
              bench::format_count(static_cast<long long>(pending)).c_str());
  const double bandwidth_gbs = measure_bandwidth_gbs();
  std::printf("Memory bandwidth: %.0f GB/s (device-to-device cudaMemcpy of %s MiB, read + write counted, CUDA\n"
              "events, median of 5 after a warm-up).\n\n",
              bandwidth_gbs, bench::format_count(static_cast<long long>(kBandwidthBytes >> 20)).c_str());

  const bench::MarkdownTable table(kTimeColumns);
  table.print_header();
  std::vector<std::vector<std::string>> rate_rows;
  std::vector<std::vector<std::string>> bound_rows;
  std::vector<std::string> problems;
  int fewer_runs = 0;
  int pool_raised = 0;
  for (const int n : sizes) {
    const int max_runs = options.quick ? 1 : (n >= 4000000 ? 3 : 5);
    const Points points = make_points(n, options.seed);
    const auto no_prepare = [] {};

    // 1. The exercise: the CDP build, host vectors in and out.
    Quadtree cdp_tree;
    const Cell cdp = measure(max_runs, no_prepare, [&] {
      cdp_tree = qt::build_quadtree(points.x, points.y, kUnitSquare, params);
    });
    const TreeFacts facts = facts_of(cdp_tree);

    // The launch tree of the CDP build's shape.
    if (raise_pending_launches(pending_wanted)) ++pool_raised;
    LaunchTree launch_tree(cdp_tree.nodes);
    const Cell launches = measure(max_runs, no_prepare, [&] { launch_tree.run(); });
    const std::string launch_problem = launch_tree.check();
    if (!launch_problem.empty())
      problems.push_back("launch tree, N = " + bench::format_count(n) + ": " + launch_problem);

    // 2. The level build, host vectors in and out.
    Quadtree level_tree;
    const Cell level = measure(max_runs, no_prepare, [&] {
      level_tree = level_build(points.x, points.y, kUnitSquare, params);
    });

    // 3. The level build on points already in GPU memory, restored before each run (untimed).
    const cdplab::DeviceArray<float> input_x(points.x);
    const cdplab::DeviceArray<float> input_y(points.y);
    LevelBuilder builder(n, params);
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
    const Cell level_device = measure(
        max_runs,
        [&] {
          CDPLAB_CHECK(cudaMemcpy(builder.x(), input_x.data(), bytes, cudaMemcpyDeviceToDevice));
          CDPLAB_CHECK(cudaMemcpy(builder.y(), input_y.data(), bytes, cudaMemcpyDeviceToDevice));
          CDPLAB_CHECK(cudaDeviceSynchronize());
        },
        [&] { builder.build(kUnitSquare); });

    // 9. The adaptive CDP build, host vectors in and out.
    Quadtree adaptive_tree;
    const Cell adaptive = measure(max_runs, no_prepare, [&] {
      adaptive_tree = qt::build_adaptive_quadtree(points.x, points.y, kUnitSquare, params);
    });

    // 10. The adaptive CDP build on points already in GPU memory, restored before each run (untimed).
    qt::AdaptiveWorkspace workspace(static_cast<std::size_t>(n), params.max_depth);
    const cdplab::DeviceArray<float> adaptive_x(static_cast<std::size_t>(n));
    const cdplab::DeviceArray<float> adaptive_y(static_cast<std::size_t>(n));
    const Cell adaptive_device = measure(
        max_runs,
        [&] {
          CDPLAB_CHECK(cudaMemcpy(adaptive_x.data(), input_x.data(), bytes, cudaMemcpyDeviceToDevice));
          CDPLAB_CHECK(cudaMemcpy(adaptive_y.data(), input_y.data(), bytes, cudaMemcpyDeviceToDevice));
          CDPLAB_CHECK(cudaDeviceSynchronize());
        },
        [&] {
          qt::build_adaptive_quadtree_device(adaptive_x.data(), adaptive_y.data(), static_cast<std::size_t>(n),
                                             kUnitSquare, params, workspace);
        });
    Quadtree adaptive_device_tree;
    adaptive_device_tree.nodes = workspace.built_nodes();
    adaptive_device_tree.x = adaptive_x.download();
    adaptive_device_tree.y = adaptive_y.download();

    // 11. The sort build, host vectors in and out.
    Quadtree sort_tree;
    const Cell sorted = measure(max_runs, no_prepare, [&] {
      sort_tree = sort_build(points.x, points.y, kUnitSquare, params);
    });

    // 12. The sort build on points already in GPU memory (it leaves its input as it is).
    SortBuilder sorter(n, params);
    CDPLAB_CHECK(cudaMemcpy(sorter.x(), input_x.data(), bytes, cudaMemcpyDeviceToDevice));
    CDPLAB_CHECK(cudaMemcpy(sorter.y(), input_y.data(), bytes, cudaMemcpyDeviceToDevice));
    const Cell sorted_device = measure(max_runs, no_prepare, [&] { sorter.build(kUnitSquare); });
    const Quadtree sort_device_tree = sorter.tree();

    // 4. The CPU build.
    Quadtree cpu_tree;
    const Cell cpu = measure_cpu(max_runs, [&] { cpu_tree = cpu_build(points.x, points.y, kUnitSquare, params); });

    // Checks of each build's last output (untimed).
    std::vector<std::uint64_t> input_keys;
    if (n <= kPermutationCheckMax) input_keys = sorted_keys(points.x, points.y);
    const std::vector<std::uint64_t>* keys = n <= kPermutationCheckMax ? &input_keys : nullptr;
    const auto check = [&](const char* name, const Quadtree& tree) {
      const std::string problem = check_tree(tree, cpu_tree, keys);
      if (!problem.empty()) problems.push_back(std::string(name) + ", N = " + bench::format_count(n) + ": " + problem);
    };
    check("CPU build (against itself: boxes and permutation)", cpu_tree);
    check("CDP build (against the CPU build)", cdp_tree);
    check("non-CDP build (against the CPU build)", level_tree);
    check("adaptive CDP build (against the CPU build)", adaptive_tree);
    check("adaptive CDP build on device data (against the CPU build)", adaptive_device_tree);
    check("sort build (against the CPU build)", sort_tree);
    check("sort build on device data (against the CPU build)", sort_device_tree);

    const double bound_ms = facts.bytes / (bandwidth_gbs * 1e9) * 1e3;
    const double launch_share = cdp.ms > 0.0 ? launches.ms / cdp.ms : 0.0;
    table.print_row({bench::format_count(n), bench::format_count(facts.nodes), bench::format_count(facts.leaves),
                     cell_text(cdp, max_runs, fewer_runs), cell_text(level, max_runs, fewer_runs),
                     cell_text(level_device, max_runs, fewer_runs), cell_text(cpu, max_runs, fewer_runs),
                     rate_text(n, cdp.ms), percent_text(launch_share), bench::format_ms(bound_ms),
                     bound_ms > 0.0 ? ratio_text(cdp.ms / bound_ms) : "-", cell_text(adaptive, max_runs, fewer_runs),
                     cell_text(adaptive_device, max_runs, fewer_runs), cell_text(sorted, max_runs, fewer_runs),
                     cell_text(sorted_device, max_runs, fewer_runs)});
    const double us_per_launch = facts.internal > 0 ? launches.ms * 1e3 / static_cast<double>(facts.internal) : 0.0;
    rate_rows.push_back({bench::format_count(n), rate_text(n, cdp.ms), rate_text(n, level.ms),
                         rate_text(n, level_device.ms), rate_text(n, cpu.ms), bench::format_count(facts.internal),
                         cell_text(launches, max_runs, fewer_runs), us_text(us_per_launch),
                         bound_ms > 0.0 ? ratio_text(level_device.ms / bound_ms) : "-",
                         rate_text(n, adaptive_device.ms), rate_text(n, sorted_device.ms)});
    const auto over_bound = [&](const Cell& cell) { return bound_ms > 0.0 ? ratio_text(cell.ms / bound_ms) : "-"; };
    bound_rows.push_back({bench::format_count(n), bench::format_ms(bound_ms), over_bound(cdp), over_bound(level_device),
                          over_bound(adaptive), over_bound(adaptive_device), over_bound(sorted),
                          over_bound(sorted_device)});
  }

  std::printf("\n");
  const bench::MarkdownTable rates(kRateColumns);
  rates.print_header();
  for (const auto& row : rate_rows) rates.print_row(row);

  std::printf("\n");
  const bench::MarkdownTable against_bound(kBoundColumns);
  against_bound.print_header();
  for (const auto& row : bound_rows) against_bound.print_row(row);

  const char* runs_text = options.quick ? "1 timed run" : "median of 5 timed runs (3 for N >= 4 000 000)";
  std::printf("\nTimes in ms on the host's steady clock around whole calls: %s after one warm-up call%s;\n"
              "the CPU build has no warm-up (its first run is timed).\n",
              runs_text, fewer_runs > 0 ? "; [k]: only k runs, one run took long" : "");
  std::printf(
      "(1) CDP: build_quadtree, the exercise of this build (one block per node; each internal node launches its\n"
      "    four children from device code). Whole calls, host I/O included: upload of the points, GPU buffers\n"
      "    allocated and freed, the wait for the whole tree of grids, download of nodes and points. The device\n"
      "    part alone cannot be timed from outside the call (the root launch is inside it).\n"
      "(2) non-CDP: a level-by-level build written in this benchmark, with build_quadtree's signature and output\n"
      "    (host I/O included as in (1)). One host launch per level, one block per node of the level: count the\n"
      "    points per quadrant with shared atomics, scan the four counts, scatter the points into the other\n"
      "    buffer (one shared atomic per warp and quadrant), append four children to the next level; the host\n"
      "    reads the next level's node count back to size its launch. Leaves of odd levels copy their points\n"
      "    back to buffer 0 in their level's launch.\n"
      "(3) non-CDP device: (2) on points already in GPU memory, tree and points left there; the buffers are\n"
      "    allocated once and the input restored before each run (not timed). Includes the per-level\n"
      "    read-backs of node counts.\n"
      "(4) CPU: one thread, recursive: count per quadrant, scatter into a scratch array, copy back, recurse.\n"
      "(5) N divided by the time of (1); the second table has every build's rate (M = 10^6 points/s).\n"
      "(6) The time of a launch tree of the CDP build's shape, divided by the time of (1). The launch tree\n"
      "    replays the build's launches with empty blocks: one block per node, and each block of an internal\n"
      "    node (taken from the tree (1) returned) launches one grid of four %d-thread blocks (the reference\n"
      "    build's shape: one launch of four blocks per internal node); its root comes from the host. Timed\n"
      "    as (1): host clock, launch to the end of the whole tree, no data. Device launches = internal nodes;\n"
      "    us per launch = launch tree time / device launches.\n"
      "    An estimate: in the build, launches overlap other blocks' work, and a build with other block sizes\n"
      "    or streams launches at a somewhat different cost; (6) is the time launching alone needs.\n"
      "(7) The least time any build needs on this GPU: the bytes it must move at the measured bandwidth. Each\n"
      "    internal node's points are read once and written once, x and y: %.0f B per point per level, summed\n"
      "    over the internal nodes of every level (a build that counts a node's points before it moves them\n"
      "    reads them twice; the adaptive build counts them while the parent moves them); and the leaves of\n"
      "    odd levels copy their points back to buffer 0 (read + write, %.0f B per point). Host I/O not included.\n"
      "(8) (1) divided by (7); (1) includes the host I/O, which (7) leaves out. The second table divides (3),\n"
      "    device-resident, by (7).\n"
      "(9) adaptive CDP: build_adaptive_quadtree, the exercise adaptive-quadtree of this build, host I/O\n"
      "    included as in (1). A node gets one block per tile of points (the reference: 4096): many blocks at\n"
      "    the top of the tree, one for a small node, none for a leaf. Each block moves its tile in one pass\n"
      "    (block scan, one atomic per quadrant for its run of the output, coalesced writes) and counts its\n"
      "    points' quadrants inside the children; the node's last block launches one grid for its children,\n"
      "    sized to their points, from device code (fire-and-forget).\n"
      "(10) adaptive CDP device: build_adaptive_quadtree_device on points already in GPU memory, workspace\n"
      "    allocated once, the input restored before each run (not timed); the call clears the workspace,\n"
      "    counts the root's quadrants, launches the root's grid and waits for the whole tree of grids.\n"
      "(11) sort: a build without dynamic parallelism written in this benchmark, host I/O included as in (1):\n"
      "    each point's Morton key on the tree's own grid (its path of quadrants down to max_depth, 2 bits\n"
      "    per level), cub::DeviceRadixSort::SortPairs of (key, index) on those %d bits, a gather of the\n"
      "    points into key order, and one thread per possible node id that finds its range by binary search\n"
      "    in the sorted keys and writes its record when its parent is split. No host round trip.\n"
      "(12) sort device: (11) on points already in GPU memory (it reads them and writes the sorted points\n"
      "    to its own buffers), buffers allocated once.\n"
      "The third table divides each build's time by the bandwidth bound (7): the whole calls include host I/O,\n"
      "the device columns do not.\n",
      kLaunchTreeThreads, kBytesPerPointLevel, kBytesPerPointCopy, 2 * params.max_depth);
  if (pool_raised > 0)
    std::printf("- the pending launch pool was found lowered (by the exercise) %d time(s) and raised again before\n"
                "  the launch tree.\n",
                pool_raised);
  std::printf("- checks of every build's last output: the node lists of (1), (2), (9) to (12) equal the CPU build's (every\n"
              "  node's id, level, box, point range and leaf flag; so the node and leaf counts too), every leaf's\n"
              "  points lie in its box, and for N <= %s the points are a permutation of the input (sorted (x, y)\n"
              "  pairs equal); the launch tree ran one block per node and no device launch failed: ",
              bench::format_count(kPermutationCheckMax).c_str());
  if (problems.empty()) {
    std::printf("ok\n");
  } else {
    std::printf("%zu MISMATCH(ES)\n", problems.size());
    for (const auto& problem : problems) std::printf("  - %s\n", problem.c_str());
  }

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("\nTotal run time %.1f s.%s\n", seconds,
              problems.empty() ? "" : " Some outputs were WRONG (see the checks above).");
  return problems.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return bench::run_main("bench-03-quadtree", kUsage, argc, argv, parse_options, run);
}
