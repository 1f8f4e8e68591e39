// Demo of chapter 03: builds the quadtree of a seeded set of clustered points with this
// checkout's build_quadtree, prints a table per level, and draws the tree.
//
// Usage: demo-03-quadtree [--out FOLDER] [seed]
//   --out FOLDER  where quadtree.svg goes (default: the current folder)
//   seed         which points (default 1)
//
// The picture shows the points and every node's box: split nodes in thin lines, leaves outlined,
// deeper levels in lighter colours. Hovering over a leaf shows its id, level and point count.
#include "cdplab/check.h"
#include "cdplab/demo.h"
#include "cdplab/quadtree.h"
#include "cdplab/random.h"
#include "cdplab/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace {

namespace qt = cdplab::quadtree;

constexpr std::size_t kPoints = 2000;
constexpr int kClusters = 4;
constexpr double kPicture = 100.0;  // the bounds' side, in picture units
const qt::Box kBounds{0.0f, 0.0f, static_cast<float>(kPicture), static_cast<float>(kPicture)};
const qt::QuadtreeParams kParams{6, 8};

/// Clustered points in kBounds: most of them around a few centres, some spread evenly.
void demo_points(cdplab::Random& rng, std::vector<float>& x, std::vector<float>& y) {
  constexpr double kPi = 3.14159265358979323846;
  std::vector<std::pair<double, double>> centres;
  for (int c = 0; c < kClusters; ++c) centres.emplace_back(rng.uniform(15.0, 85.0), rng.uniform(15.0, 85.0));
  for (std::size_t i = 0; i < kPoints; ++i) {
    double px = rng.uniform(0.0, kPicture);
    double py = rng.uniform(0.0, kPicture);
    if (i % 5 != 0) {  // four points in five belong to a cluster
      const auto& c = centres[i % centres.size()];
      const double r = 6.0 * std::sqrt(-2.0 * std::log(1.0 - rng.uniform()));
      const double a = 2.0 * kPi * rng.uniform();
      px = c.first + r * std::cos(a);
      py = c.second + r * std::sin(a);
    }
    x.push_back(static_cast<float>(std::clamp(px, 0.0, kPicture)));
    y.push_back(static_cast<float>(std::clamp(py, 0.0, kPicture)));
  }
}

/// Nodes, leaves and points in leaves, per level.
void print_levels(const qt::Quadtree& tree) {
  int deepest = 0;
  for (const qt::QuadtreeNode& n : tree.nodes) deepest = std::max(deepest, n.level);
  std::printf("\n  level  nodes  leaves  points in leaves\n");
  for (int level = 0; level <= deepest; ++level) {
    int nodes = 0;
    int leaves = 0;
    long long points = 0;
    for (const qt::QuadtreeNode& n : tree.nodes) {
      if (n.level != level) continue;
      ++nodes;
      if (n.leaf) {
        ++leaves;
        points += n.end - n.begin;
      }
    }
    std::printf("  %5d  %5d  %6d  %16lld\n", level, nodes, leaves, points);
  }
  std::printf("  (%zu nodes in all; the points in leaves add up to %zu)\n", tree.nodes.size(), tree.x.size());
}

/// A grey that gets lighter with depth.
std::string level_colour(int level) {
  const int shade = std::min(40 + 30 * level, 210);
  char text[8];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", shade, shade, std::min(shade + 30, 255));
  return text;
}

/// The picture: SVG's y axis points down, so y is flipped.
void draw(const qt::Quadtree& tree, const std::vector<float>& x, const std::vector<float>& y, bool built,
          const std::string& path) {
  const double margin = 4.0;
  cdplab::Svg svg(cdplab::SvgBox{-margin, -margin, kPicture + 2 * margin, kPicture + 2 * margin}, 800, 800);
  svg.rect({0, 0, kPicture, kPicture}, cdplab::SvgStyle::filled("#fcfcfc"));
  auto flip = [](const qt::Box& b) { return cdplab::SvgBox{b.min_x, kPicture - b.max_y, b.max_x - b.min_x, b.max_y - b.min_y}; };

  std::vector<qt::QuadtreeNode> nodes = tree.nodes;
  // Deeper nodes drawn last, leaves above split nodes of the same level.
  std::sort(nodes.begin(), nodes.end(), [](const qt::QuadtreeNode& a, const qt::QuadtreeNode& b) {
    return a.level != b.level ? a.level < b.level : a.leaf < b.leaf;
  });
  for (const qt::QuadtreeNode& n : nodes) {
    const std::string colour = level_colour(n.level);
    if (!n.leaf) {
      svg.rect(flip(n.box), cdplab::SvgStyle::stroked(colour, 0.08));
      continue;
    }
    svg.begin_group("leaf " + std::to_string(n.id) + ", level " + std::to_string(n.level) + ", " +
                    std::to_string(n.end - n.begin) + " points");
    cdplab::SvgStyle style = cdplab::SvgStyle::stroked(colour, 0.25);
    style.fill = n.end > n.begin ? "#e8f0f8" : "none";
    style.opacity = 0.9;
    svg.rect(flip(n.box), style);
    svg.end_group();
  }
  // The points: the tree's if it was built, else the input.
  const std::vector<float>& px = built ? tree.x : x;
  const std::vector<float>& py = built ? tree.y : y;
  for (std::size_t i = 0; i < px.size(); ++i) {
    svg.circle({px[i], kPicture - py[i]}, 0.25, cdplab::SvgStyle::filled("#1f77b4"));
  }
  if (!built) svg.text({1, 3}, "the tree is not built yet: the points alone", 2.5, "#d62728");
  svg.write(path);
}

}  // namespace

int main(int argc, char** argv) {
  cdplab::DemoOptions options;
  if (const int status = cdplab::start_demo("03", argc, argv, options); status >= 0) return status;
  const std::string picture = (options.out_dir / "quadtree.svg").string();

  cdplab::Random rng(options.seed);
  std::vector<float> x;
  std::vector<float> y;
  demo_points(rng, x, y);
  std::printf("%zu clustered points in [0, %g]^2, max_depth %d, min_points_per_node %d\n", x.size(), kPicture,
              kParams.max_depth, kParams.min_points_per_node);

  qt::Quadtree tree;
  bool built = false;
  cdplab::run_demo("quadtree-build", [&] {
    tree = qt::build_quadtree(x, y, kBounds, kParams);
    built = true;
  });
  if (built) print_levels(tree);

  try {
    draw(tree, x, y, built, picture);
    std::printf("\nwrote %s: open it in a web browser\n", picture.c_str());
  } catch (const std::exception& e) {
    std::printf("\n%s\n", e.what());
    return 1;
  }
  return 0;
}
