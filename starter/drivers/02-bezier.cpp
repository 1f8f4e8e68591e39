// Demo of chapter 02: tessellates a dozen seeded Bezier lines with the four exercises of this
// checkout, prints every line's vertex count beside the expected one, and draws the result.
//
// Usage: demo-02-bezier [--out FOLDER] [seed]
//   --out FOLDER  where bezier.svg goes (default: the current folder)
//   seed         which lines (default 1)
//
// The picture has one panel per exercise. Each line sits in a cell of its own: the curve itself
// drawn finely in a light colour, the exercise's vertices as dots joined by a polyline over it.
// A line with a wrong count, wrong vertices, or none at all is drawn in red.
#include <cmath>  // before cdplab/bezier.h: its inline functions call sqrtf and fabsf

#include "cdplab/bezier.h"
#include "cdplab/check.h"
#include "cdplab/demo.h"
#include "cdplab/device_array.h"
#include "cdplab/random.h"
#include "cdplab/svg.h"

#include "cdplab/heap_vertices.h"  // vertices in the device heap can be read by a kernel only

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace {

namespace bz = cdplab::bezier;

constexpr int kColumns = 6;
constexpr int kRows = 2;
constexpr int kLines = kColumns * kRows;
constexpr double kCell = 120.0;   // a cell's side, in picture units
constexpr double kTitle = 22.0;   // the height of a panel's title
constexpr double kChord = 48.0;   // the distance between a line's ends

/// What one exercise gave back for the demo's lines.
struct Outcome {
  std::string title;
  bool ran = false;                             // false: `problem` says why
  std::string problem;
  std::vector<int> counts;                      // the count each line reported
  std::vector<std::vector<bz::Point>> vertices; // the vertices that could be read back
};

/// How a line came back.
enum class Mark { right, wrong_count, wrong_vertices, empty };

/// Line i in cell i (row-major), more bent from cell to cell, in picture coordinates (y down).
std::vector<bz::Line> demo_lines(cdplab::Random& rng) {
  std::vector<bz::Line> lines;
  for (int i = 0; i < kLines; ++i) {
    const double angle = rng.uniform(-0.35, 0.35);
    const double bend = i == 0 ? 0.0 : 0.2 * i + rng.uniform(0.0, 0.1);  // the first is straight
    const double side = rng.uniform() < 0.5 ? -1.0 : 1.0;
    const double dx = std::cos(angle);
    const double dy = std::sin(angle);
    const double off = side * bend * kChord;  // p1's distance from the chord: curvature = bend
    // The curve bulges half as far as p1 lies from the chord: move the chord back by a quarter
    // of that, so that the curve is centred in its cell (a little below the cell's label).
    const double cx = (i % kColumns + 0.5) * kCell + 0.25 * off * dy;
    const double cy = (i / kColumns + 0.5) * kCell + 6.0 - 0.25 * off * dx;
    bz::Line line;
    line.p0 = bz::Point{static_cast<float>(cx - 0.5 * kChord * dx), static_cast<float>(cy - 0.5 * kChord * dy)};
    line.p2 = bz::Point{static_cast<float>(cx + 0.5 * kChord * dx), static_cast<float>(cy + 0.5 * kChord * dy)};
    line.p1 = bz::Point{static_cast<float>(cx - off * dy), static_cast<float>(cy + off * dx)};
    lines.push_back(line);
  }
  return lines;
}

/// Whether `found` is a count a GPU may report: the expected one, or its neighbour when
/// curvature * scale lies within rounding of an integer.
bool count_ok(const bz::Line& line, const bz::Tessellation& t, int found) {
  const int expected = bz::vertex_count(line, t);
  if (found == expected) return true;
  const float wanted = bz::curvature(line) * t.scale;
  return std::abs(found - expected) == 1 && std::fabs(wanted - std::round(wanted)) < 1e-3f;
}

Mark judge(const bz::Line& line, const bz::Tessellation& t, int count, const std::vector<bz::Point>& vertices) {
  if (count == 0 || vertices.empty()) return Mark::empty;
  if (!count_ok(line, t, count)) return Mark::wrong_count;
  if (static_cast<int>(vertices.size()) != count) return Mark::wrong_vertices;
  for (int k = 0; k < count; ++k) {
    const bz::Point expected = bz::vertex(line, k, count);
    const bz::Point& found = vertices[static_cast<std::size_t>(k)];
    if (std::fabs(found.x - expected.x) > 1e-2f || std::fabs(found.y - expected.y) > 1e-2f) return Mark::wrong_vertices;
  }
  return Mark::right;
}

/// Runs one exercise; a failure is kept in the outcome (and printed) instead of ending the demo.
Outcome run_exercise(const std::string& title, const std::function<void(Outcome&)>& exercise) {
  Outcome outcome;
  outcome.title = title;
  std::printf("\n== %s ==\n", title.c_str());
  try {
    exercise(outcome);
    outcome.ran = true;
  } catch (const cdplab::NotImplemented& e) {
    outcome.problem = "not implemented yet";
    std::printf("  %s\n", e.what());
  } catch (const cdplab::DeviceLaunchError& e) {
    outcome.problem = "a device-side launch failed";
    std::printf("  a launch from device code failed: %s\n", e.what());
  } catch (const cdplab::CudaError& e) {
    outcome.problem = "CUDA error";
    std::printf("  CUDA error: %s\n", e.what());
    if (e.code() == cudaErrorInvalidValue) {
      std::printf("  (cudaLimitMallocHeapSize cannot change once a kernel that uses the device heap has run in\n"
                  "   this process: raise the limit only when it is smaller than what the lines need)\n");
    } else {
      std::printf("  (after a kernel fault the GPU context is unusable: the exercises below fail too)\n");
    }
  } catch (const std::exception& e) {
    outcome.problem = "error";
    std::printf("  error: %s\n", e.what());
  }
  if (outcome.ran) std::printf("  done\n");
  return outcome;
}

/// Reads device-heap records back: each line's count and vertices.
void read_back(Outcome& outcome, const cdplab::DeviceArray<bz::LineVertices>& out, int n, const bz::Tessellation& t) {
  for (const bz::LineVertices& record : out.download()) outcome.counts.push_back(record.count);
  outcome.vertices = cdplab::heap_vertices::gather_vertices(out.data(), n, t.max_vertices);
}

/// Frees the records' buffers with `free_function`; an unfinished free is reported, not fatal.
void free_buffers(const char* name, const std::function<void()>& free_function) {
  try {
    free_function();
    std::printf("  %s: the buffers are freed\n", name);
  } catch (const std::exception& e) {
    std::printf("  %s: %s\n", name, e.what());
  }
}

void print_table(const std::vector<bz::Line>& lines, const bz::Tessellation& t, const std::vector<Outcome>& outcomes) {
  std::printf("\n  line  curvature  expected |");
  for (const Outcome& o : outcomes) std::printf(" %12.12s", o.title.c_str());
  std::printf("\n");
  for (int i = 0; i < kLines; ++i) {
    const bz::Line& line = lines[static_cast<std::size_t>(i)];
    std::printf("  %4d  %9.3f  %8d |", i, bz::curvature(line), bz::vertex_count(line, t));
    for (const Outcome& o : outcomes) {
      if (!o.ran) {
        std::printf(" %12s", "-");
        continue;
      }
      const std::size_t k = static_cast<std::size_t>(i);
      const Mark mark = judge(line, t, o.counts[k], o.vertices[k]);
      const char* note = mark == Mark::right ? "" : mark == Mark::empty ? " empty" : mark == Mark::wrong_count ? " count!" : " wrong!";
      std::printf(" %5d%7s", o.counts[k], note);
    }
    std::printf("\n");
  }
}

/// A finely sampled polyline of the curve itself, shifted down by `dy`.
std::vector<cdplab::SvgPoint> reference_curve(const bz::Line& line, double dy) {
  constexpr int kSamples = 101;
  std::vector<cdplab::SvgPoint> points;
  for (int k = 0; k < kSamples; ++k) {
    const bz::Point p = bz::vertex(line, k, kSamples);
    points.push_back({p.x, p.y + dy});
  }
  return points;
}

void draw_panel(cdplab::Svg& svg, const std::vector<bz::Line>& lines, const bz::Tessellation& t, const Outcome& o,
                double top) {
  int right = 0;
  for (int i = 0; o.ran && i < kLines; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    if (judge(lines[k], t, o.counts[k], o.vertices[k]) == Mark::right) ++right;
  }
  const std::string status = o.ran ? std::to_string(right) + " of " + std::to_string(kLines) + " lines right" : o.problem;
  svg.text({4, top + 15}, o.title + ": " + status, 12, o.ran && right == kLines ? "#000000" : "#d62728");

  const double cells_top = top + kTitle;
  for (int i = 0; i < kLines; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    const bz::Line& line = lines[k];
    const int expected = bz::vertex_count(line, t);
    const Mark mark = o.ran ? judge(line, t, o.counts[k], o.vertices[k]) : Mark::right;
    const bool bad = o.ran && mark != Mark::right;
    const std::string red = "#d62728";
    const double x = (i % kColumns) * kCell;
    const double y = cells_top + (i / kColumns) * kCell;

    std::string tooltip = "line " + std::to_string(i) + ": expected " + std::to_string(expected) + " vertices";
    if (o.ran) tooltip += ", found " + std::to_string(o.counts[k]);
    svg.begin_group(tooltip);
    cdplab::SvgStyle frame = cdplab::SvgStyle::stroked(bad ? red : "#dddddd", bad ? 1.5 : 0.5);
    frame.fill = "#fcfcfc";
    svg.rect({x + 1, y + 1, kCell - 2, kCell - 2}, frame);
    svg.polyline(reference_curve(line, cells_top), cdplab::SvgStyle::stroked("#b9cfe6", 4.0));

    std::string label = "line " + std::to_string(i) + ": ";
    if (!o.ran) {
      label += std::to_string(expected) + " expected";
    } else {
      const auto& found = o.vertices[k];
      const std::string colour = bad ? red : "#1f77b4";
      std::vector<cdplab::SvgPoint> points;
      for (const bz::Point& p : found) points.push_back({p.x, p.y + cells_top});
      svg.polyline(points, cdplab::SvgStyle::stroked(colour, 0.8));
      for (const cdplab::SvgPoint& p : points) svg.circle(p, 1.3, cdplab::SvgStyle::filled(colour));
      label += std::to_string(o.counts[k]) + " of " + std::to_string(expected);
      if (mark == Mark::empty) label += " (empty)";
      if (mark == Mark::wrong_count) label += " (wrong count)";
      if (mark == Mark::wrong_vertices) label += " (wrong vertices)";
    }
    svg.text({x + 5, y + 13}, label, 9, bad ? red : "#444444");
    svg.end_group();
  }
}

}  // namespace

int main(int argc, char** argv) {
  cdplab::DemoOptions options;
  if (const int status = cdplab::start_demo("02", argc, argv, options); status >= 0) return status;
  const std::string picture = (options.out_dir / "bezier.svg").string();

  cdplab::Random rng(options.seed);
  const std::vector<bz::Line> lines = demo_lines(rng);
  const bz::Tessellation t{};  // the course's: curvature * 16 vertices, between 4 and 32
  const int n = kLines;
  std::vector<Outcome> outcomes;

  outcomes.push_back(run_exercise("a. fixed", [&](Outcome& o) {
    o.vertices = bz::tessellate_fixed(lines, t);
    for (const auto& v : o.vertices) o.counts.push_back(static_cast<int>(v.size()));
  }));

  outcomes.push_back(run_exercise("b. cdp", [&](Outcome& o) {
    cdplab::DeviceArray<bz::Line> device_lines(lines);
    cdplab::DeviceArray<bz::LineVertices> out(lines.size());
    bz::tessellate_cdp(device_lines.data(), out.data(), n, t);
    read_back(o, out, n, t);
    free_buffers("free_vertices", [&] { bz::free_vertices(out.data(), n); });
  }));

  outcomes.push_back(run_exercise("c. scaled", [&](Outcome& o) {
    cdplab::DeviceArray<bz::Line> device_lines(lines);
    cdplab::DeviceArray<bz::LineVertices> out(lines.size());
    bz::tessellate_scaled(device_lines.data(), out.data(), n, bz::ChildStream::named, t);
    read_back(o, out, n, t);
    free_buffers("free_scaled_vertices", [&] { bz::free_scaled_vertices(out.data(), n); });
  }));

  outcomes.push_back(run_exercise("d. per block", [&](Outcome& o) {
    o.vertices = bz::tessellate_aggregated(lines, t).lines;  // ordinary global memory: the host reads it
    for (const auto& v : o.vertices) o.counts.push_back(static_cast<int>(v.size()));
  }));

  print_table(lines, t, outcomes);

  const double panel = kTitle + kRows * kCell;
  cdplab::Svg svg(cdplab::SvgBox{0, 0, kColumns * kCell, panel * static_cast<double>(outcomes.size())}, 900,
                  static_cast<int>(900.0 * panel * static_cast<double>(outcomes.size()) / (kColumns * kCell)));
  for (std::size_t p = 0; p < outcomes.size(); ++p) {
    draw_panel(svg, lines, t, outcomes[p], panel * static_cast<double>(p));
  }
  try {
    svg.write(picture);
    std::printf("\nwrote %s: open it in a web browser\n", picture.c_str());
  } catch (const std::exception& e) {
    std::printf("\n%s\n", e.what());
    return 1;
  }
  return 0;
}
