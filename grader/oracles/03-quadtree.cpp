#include "03-quadtree.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace cdplab::oracle::quadtree {
namespace {

using cdplab::quadtree::quadrant_box;
using cdplab::quadtree::quadrant_of;

constexpr double kPi = 3.14159265358979323846;
const char* const kQuadrantNames[4] = {"bottom-left", "bottom-right", "top-left", "top-right"};

float clamp_to(double v, float lo, float hi) {
  const float f = static_cast<float>(v);
  return f < lo ? lo : f > hi ? hi : f;
}

/// A random point of the closed box.
void point_in(Random& rng, const Box& box, float& x, float& y) {
  x = clamp_to(rng.uniform(box.min_x, box.max_x), box.min_x, box.max_x);
  y = clamp_to(rng.uniform(box.min_y, box.max_y), box.min_y, box.max_y);
}

std::string box_text(const Box& b) {
  std::ostringstream out;
  out.precision(9);
  out << "[" << b.min_x << ", " << b.max_x << "] x [" << b.min_y << ", " << b.max_y << "]";
  return out.str();
}

std::string point_text(float x, float y) {
  std::ostringstream out;
  out.precision(9);
  out << "(" << x << ", " << y << ")";
  return out.str();
}

bool same_box(const Box& a, const Box& b) {
  return a.min_x == b.min_x && a.min_y == b.min_y && a.max_x == b.max_x && a.max_y == b.max_y;
}

bool in_box(float x, float y, const Box& b) { return x >= b.min_x && x <= b.max_x && y >= b.min_y && y <= b.max_y; }

/// "node 7 (level 1, points 120..340)"
std::string node_text(const QuadtreeNode& n) {
  std::ostringstream out;
  out << "node " << n.id << " (level " << n.level << ", points " << n.begin << ".." << n.end << ")";
  return out.str();
}

/// Checks that the output holds the input's points, each as often; a message when not.
std::string permutation_problem(const std::vector<float>& x, const std::vector<float>& y, const Quadtree& found) {
  using Pair = std::pair<float, float>;
  auto sorted = [](const std::vector<float>& px, const std::vector<float>& py) {
    std::vector<Pair> pairs(px.size());
    for (std::size_t i = 0; i < px.size(); ++i) pairs[i] = {px[i], py[i]};
    std::sort(pairs.begin(), pairs.end());
    return pairs;
  };
  const std::vector<Pair> want = sorted(x, y);
  const std::vector<Pair> got = sorted(found.x, found.y);
  std::size_t i = 0;
  std::size_t j = 0;
  std::size_t missing = 0;
  std::size_t extra = 0;
  std::string first;
  while (i < want.size() || j < got.size()) {
    if (j == got.size() || (i < want.size() && want[i] < got[j])) {
      if (missing++ == 0 && extra == 0) first = "point " + point_text(want[i].first, want[i].second) + " of the input is missing";
      ++i;
    } else if (i == want.size() || got[j] < want[i]) {
      if (extra++ == 0 && missing == 0) first = "point " + point_text(got[j].first, got[j].second) + " is not in the input (or appears more often than there)";
      ++j;
    } else {
      ++i;
      ++j;
    }
  }
  if (missing == 0 && extra == 0) return "";
  std::ostringstream out;
  out << "the points returned are not the input's points reordered: " << first << " (" << missing
      << " input points missing, " << extra << " points not in the input). Every point must reach buffer 0 exactly "
      << "once: a leaf whose points are in buffer 1 (its parent wrote them there) copies them back to buffer 0";
  return out.str();
}

/// A 64-bit mix of a point's bits (splitmix64's finaliser): close to independent for different
/// points, so that a sum of them tells multisets apart.
std::uint64_t point_hash(float x, float y) {
  std::uint32_t bx = 0;
  std::uint32_t by = 0;
  std::memcpy(&bx, &x, sizeof bx);
  std::memcpy(&by, &y, sizeof by);
  std::uint64_t h = (static_cast<std::uint64_t>(bx) << 32 | by) + 0x9E3779B97F4A7C15ull;
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}

/// The hashed permutation check: the sums of point_hash over both lists, which ignore order.
std::string hashed_permutation_problem(const std::vector<float>& x, const std::vector<float>& y,
                                       const Quadtree& found) {
  std::uint64_t want = 0;
  std::uint64_t got = 0;
  for (std::size_t i = 0; i < x.size(); ++i) want += point_hash(x[i], y[i]);
  for (std::size_t i = 0; i < found.x.size(); ++i) got += point_hash(found.x[i], found.y[i]);
  if (want == got) return "";
  return "the points returned are not the input's points reordered (their hash sums differ: some point is "
         "missing, duplicated or changed). Every point must reach buffer 0 exactly once: a leaf whose points are "
         "in buffer 1 (its parent wrote them there) copies them back to buffer 0";
}

}  // namespace

// ----- inputs --------------------------------------------------------------------------

Points uniform_points(Random& rng, std::size_t count, const Box& box) {
  Points p;
  p.x.resize(count);
  p.y.resize(count);
  for (std::size_t i = 0; i < count; ++i) point_in(rng, box, p.x[i], p.y[i]);
  return p;
}

Points clustered_points(Random& rng, std::size_t count, const Box& box, int clusters, double spread) {
  const double w = double{box.max_x} - box.min_x;
  const double h = double{box.max_y} - box.min_y;
  std::vector<std::pair<double, double>> centres;
  for (int c = 0; c < std::max(clusters, 1); ++c) {
    centres.emplace_back(box.min_x + rng.uniform(0.1, 0.9) * w, box.min_y + rng.uniform(0.1, 0.9) * h);
  }
  Points p;
  p.x.resize(count);
  p.y.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const auto& c = centres[static_cast<std::size_t>(rng.integer(0, static_cast<std::int64_t>(centres.size()) - 1))];
    // Box-Muller: two independent normal deviates from two uniform ones.
    const double r = std::sqrt(-2.0 * std::log(1.0 - rng.uniform()));
    const double a = 2.0 * kPi * rng.uniform();
    p.x[i] = clamp_to(c.first + spread * w * r * std::cos(a), box.min_x, box.max_x);
    p.y[i] = clamp_to(c.second + spread * w * r * std::sin(a), box.min_y, box.max_y);
  }
  return p;
}

Points boundary_points(Random& rng, std::size_t count, const Box& box, int levels) {
  Points p;
  for (const Box& corner : {Box{box.min_x, box.min_y, 0, 0}, Box{box.max_x, box.min_y, 0, 0},
                            Box{box.min_x, box.max_y, 0, 0}, Box{box.max_x, box.max_y, 0, 0}}) {
    p.x.push_back(corner.min_x);
    p.y.push_back(corner.min_y);
  }
  while (p.x.size() < count) {
    // A node at a random level, reached through random quadrants, exactly as the tree splits.
    Box node = box;
    const auto level = rng.integer(0, std::max(levels, 1) - 1);
    for (std::int64_t l = 0; l < level; ++l) node = quadrant_box(node, static_cast<int>(rng.integer(0, 3)));
    const float cx = 0.5f * (node.min_x + node.max_x);
    const float cy = 0.5f * (node.min_y + node.max_y);
    float x = 0;
    float y = 0;
    point_in(rng, node, x, y);
    switch (rng.integer(0, 2)) {
      case 0: x = cx; break;            // on the vertical centre line
      case 1: y = cy; break;            // on the horizontal one
      default: x = cx; y = cy; break;   // on both: the centre itself
    }
    p.x.push_back(x);
    p.y.push_back(y);
  }
  p.x.resize(count);
  p.y.resize(count);
  return p;
}

Points identical_points(std::size_t count, float x, float y) { return Points{std::vector<float>(count, x), std::vector<float>(count, y)}; }

// ----- reference -----------------------------------------------------------------------

Quadtree build_quadtree_cpu(const std::vector<float>& x, const std::vector<float>& y, const Box& bounds,
                            const QuadtreeParams& params) {
  Quadtree tree;
  tree.x = x;
  tree.y = y;
  std::vector<float> other_x(x.size());
  std::vector<float> other_y(y.size());
  std::deque<QuadtreeNode> queue{QuadtreeNode{0, 0, bounds, 0, static_cast<int>(x.size()), false}};
  while (!queue.empty()) {
    QuadtreeNode node = queue.front();
    queue.pop_front();
    node.leaf = node.level >= params.max_depth || node.end - node.begin <= params.min_points_per_node;
    tree.nodes.push_back(node);
    if (node.leaf) continue;
    // A stable split into quadrant order through the other buffer, then back: the CPU can afford
    // the copy and so keeps every point in buffer 0 between levels.
    int cursor[4] = {0, 0, 0, 0};
    for (int i = node.begin; i < node.end; ++i) ++cursor[quadrant_of(tree.x[i], tree.y[i], node.box)];
    int begin[4];
    for (int q = 0, offset = node.begin; q < 4; ++q) {
      begin[q] = offset;
      offset += cursor[q];
      cursor[q] = begin[q];
    }
    for (int i = node.begin; i < node.end; ++i) {
      const int slot = cursor[quadrant_of(tree.x[i], tree.y[i], node.box)]++;
      other_x[slot] = tree.x[i];
      other_y[slot] = tree.y[i];
    }
    std::copy(other_x.begin() + node.begin, other_x.begin() + node.end, tree.x.begin() + node.begin);
    std::copy(other_y.begin() + node.begin, other_y.begin() + node.end, tree.y.begin() + node.begin);
    for (int q = 0; q < 4; ++q) {
      queue.push_back(QuadtreeNode{4 * node.id + 1 + q, node.level + 1, quadrant_box(node.box, q), begin[q], cursor[q], false});
    }
  }
  return tree;
}

std::size_t internal_nodes(const Quadtree& tree) {
  return static_cast<std::size_t>(std::count_if(tree.nodes.begin(), tree.nodes.end(), [](const QuadtreeNode& n) { return !n.leaf; }));
}

std::size_t split_parents(const Quadtree& tree) {
  std::unordered_set<int> parents;
  for (const QuadtreeNode& node : tree.nodes) {
    if (!node.leaf && node.id > 0) parents.insert((node.id - 1) / 4);
  }
  return parents.size();
}

// ----- judging -------------------------------------------------------------------------

Verdict judge_quadtree(const std::vector<float>& x, const std::vector<float>& y, const Box& bounds,
                       const QuadtreeParams& params, const Quadtree& found, PermutationCheck permutation) {
  const long long n = static_cast<long long>(x.size());
  std::ostringstream out;
  if (found.x.size() != x.size() || found.y.size() != y.size()) {
    out << "expected " << x.size() << " points back, found " << found.x.size() << " x and " << found.y.size() << " y";
    return fail(out.str());
  }
  const std::string problem = permutation == PermutationCheck::sorted ? permutation_problem(x, y, found)
                                                                      : hashed_permutation_problem(x, y, found);
  if (!problem.empty()) return fail(problem);

  // Index the nodes by id; ids must be unique.
  std::unordered_map<long long, std::size_t> by_id;
  for (std::size_t i = 0; i < found.nodes.size(); ++i) {
    const auto [at, fresh] = by_id.emplace(found.nodes[i].id, i);
    if (!fresh) {
      out << "node id " << found.nodes[i].id << " appears twice among the " << found.nodes.size()
          << " nodes returned: every node writes one record, in the slot of its own id";
      return fail(out.str());
    }
  }
  const auto root_at = by_id.find(0);
  if (root_at == by_id.end()) {
    out << "no root: expected a node with id 0 among the " << found.nodes.size()
        << " nodes returned (the root is built too, even with no points)";
    return fail(out.str());
  }
  const QuadtreeNode& root = found.nodes[root_at->second];
  if (root.level != 0 || !same_box(root.box, bounds) || root.begin != 0 || root.end != n) {
    out << "the root should be level 0, box " << box_text(bounds) << ", points 0.." << n << "; found level "
        << root.level << ", box " << box_text(root.box) << ", points " << root.begin << ".." << root.end;
    return fail(out.str());
  }

  // Breadth-first from the root: parents are judged before their children.
  std::vector<bool> reached(found.nodes.size(), false);
  std::vector<std::size_t> queue{root_at->second};
  reached[root_at->second] = true;
  std::size_t leaf_points = 0;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const QuadtreeNode& node = found.nodes[queue[head]];
    const int count = node.end - node.begin;
    const bool should_split = node.level < params.max_depth && count > params.min_points_per_node;
    if (node.leaf && should_split) {
      out << node_text(node) << " is a leaf, but it holds " << count << " points, more than min_points_per_node = "
          << params.min_points_per_node << ", and its level is below max_depth = " << params.max_depth
          << ": it should have been split into four children";
      return fail(out.str());
    }
    if (!node.leaf && !should_split) {
      out << node_text(node) << " is split, but ";
      if (node.level >= params.max_depth) {
        out << "its level is max_depth = " << params.max_depth << ": the recursion stops there";
      } else {
        out << "it holds only " << count << " points, no more than min_points_per_node = " << params.min_points_per_node
            << ": it should be a leaf";
      }
      return fail(out.str());
    }
    if (node.leaf) {
      for (int i = node.begin; i < node.end; ++i) {
        if (!in_box(found.x[i], found.y[i], node.box)) {
          out << "point " << i << " " << point_text(found.x[i], found.y[i]) << " lies in leaf " << node_text(node)
              << " but outside its box " << box_text(node.box);
          return fail(out.str());
        }
      }
      leaf_points += static_cast<std::size_t>(count);
      continue;
    }

    // A split node: its four children, one level deeper, with the quadrant boxes and ranges
    // that follow each other from its begin to its end.
    const QuadtreeNode* child[4] = {};
    for (int q = 0; q < 4; ++q) {
      const long long id = 4LL * node.id + 1 + q;
      const auto at = by_id.find(id);
      if (at == by_id.end()) {
        out << node_text(node) << " is split, but its child " << id << " (quadrant " << q << ", "
            << kQuadrantNames[q] << ") is missing: a split node's children are 4k+1 .. 4k+4, and each of them "
            << "writes its record, also when it holds no points";
        return fail(out.str());
      }
      child[q] = &found.nodes[at->second];
      const Box want = quadrant_box(node.box, q);
      if (child[q]->level != node.level + 1 || !same_box(child[q]->box, want)) {
        out << "child " << id << " of " << node_text(node) << " should be level " << node.level + 1 << " with box "
            << box_text(want) << " (quadrant " << q << ", " << kQuadrantNames[q] << "); found level "
            << child[q]->level << " and box " << box_text(child[q]->box);
        return fail(out.str());
      }
      reached[at->second] = true;
      queue.push_back(at->second);
    }
    bool gapless = child[0]->begin == node.begin && child[3]->end == node.end;
    for (int q = 0; q < 4; ++q) gapless = gapless && child[q]->begin <= child[q]->end && (q == 3 || child[q]->end == child[q + 1]->begin);
    if (!gapless) {
      long long covered = 0;
      for (int q = 0; q < 4; ++q) covered += std::max(0, child[q]->end - child[q]->begin);
      out << node_text(node) << ": its children's ranges are ";
      for (int q = 0; q < 4; ++q) out << (q ? ", " : "") << child[q]->begin << ".." << child[q]->end;
      out << "; expected them to follow each other from " << node.begin << " to " << node.end << " without gap";
      if (covered < count) out << " (they leave " << count - covered << " points out)";
      if (covered > count) out << " (they cover " << covered - count << " points too many)";
      out << ". Child q starts where child q - 1 ends: the exclusive scan of the four counts, from the node's begin";
      return fail(out.str());
    }
    // Every point of child q lies in quadrant q of this node.
    for (int q = 0; q < 4; ++q) {
      for (int i = child[q]->begin; i < child[q]->end; ++i) {
        const int want = quadrant_of(found.x[i], found.y[i], node.box);
        if (want == q) continue;
        const float cx = 0.5f * (node.box.min_x + node.box.max_x);
        const float cy = 0.5f * (node.box.min_y + node.box.max_y);
        out << "point " << i << " " << point_text(found.x[i], found.y[i]) << " is in child " << child[q]->id
            << " (quadrant " << q << ", " << kQuadrantNames[q] << ") of " << node_text(node)
            << ", but quadrant_of puts it in quadrant " << want << " (" << kQuadrantNames[want] << ")";
        if (found.x[i] == cx || found.y[i] == cy) {
          out << ". It lies on a centre line of the node's box (x = " << cx << " or y = " << cy
              << "): such a point goes right or up (x >= centre, y >= centre)";
        }
        return fail(out.str());
      }
    }
  }
  for (std::size_t i = 0; i < found.nodes.size(); ++i) {
    if (reached[i]) continue;
    out << node_text(found.nodes[i]) << " is not a child of any split node: node k's children are 4k+1 .. 4k+4, "
        << "and only a split node has children";
    return fail(out.str());
  }
  // With gapless children below every split node the leaves partition [0, N); this is the sum.
  if (leaf_points != static_cast<std::size_t>(n)) {
    out << "the leaves hold " << leaf_points << " points in all, expected " << n;
    return fail(out.str());
  }
  return pass();
}

}  // namespace cdplab::oracle::quadtree
