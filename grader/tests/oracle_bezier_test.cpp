// The CPU oracles of chapter 02 (Bezier tessellation): the seeded lines have the curvature
// asked for, judge_lines accepts an exact host tessellation and the one count a GPU may round
// to near an integer, and rejects wrong counts, moved vertices and empty lines with messages
// that name the line; judge_freed checks the records after a free; found_in_buffer and
// judge_buffer_use read and judge the lines of exercise d in their shared buffer.
#include "verdict_checks.h"
#include <doctest/doctest.h>

#include "02-bezier.h"
#include "cdplab/bezier.h"
#include "cdplab/random.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace oracle = cdplab::oracle::bezier;
using cdplab::bezier::Line;
using cdplab::bezier::LineVertices;
using cdplab::bezier::Point;
using cdplab::bezier::Tessellation;
using cdplab::oracle::Verdict;
using oracle::FoundLine;


const oracle::EmptyAdvice kEmpty{"no vertices were written", "Check the child launch"};

/// p0 = (0, 0), p1 = (1, 1), p2 = (2, 0): p1 lies 1 off a chord of 2, so the curvature is 0.5;
/// the curve is (2u, 2u(1 - u)).
const Line kArch{{0, 0}, {1, 1}, {2, 0}};
/// As kArch with p1 = (1, 1.0625): curvature 0.53125, times 16 = 8.5.
const Line kHalfway{{0, 0}, {1, 1.0625f}, {2, 0}};

/// The curvature as bezier.h defines it, in double.
double curvature_here(const Line& line) {
  const double cx = double{line.p2.x} - line.p0.x;
  const double cy = double{line.p2.y} - line.p0.y;
  const double px = double{line.p1.x} - line.p0.x;
  const double py = double{line.p1.y} - line.p0.y;
  const double chord = std::hypot(cx, cy);
  if (chord == 0.0) return std::hypot(px, py);
  return std::fabs(cx * py - cy * px) / chord / chord;  // p1's distance from the chord, per chord length
}

/// n vertices at u = k / (n - 1) of the quadratic Bezier curve, in double, rounded to float.
std::vector<Point> tessellate_here(const Line& line, int n) {
  std::vector<Point> vertices;
  for (int k = 0; k < n; ++k) {
    const double u = static_cast<double>(k) / (n - 1);
    const double v = 1.0 - u;
    vertices.push_back(Point{static_cast<float>(v * v * line.p0.x + 2 * u * v * line.p1.x + u * u * line.p2.x),
                             static_cast<float>(v * v * line.p0.y + 2 * u * v * line.p1.y + u * u * line.p2.y)});
  }
  return vertices;
}

/// The lines tessellated on the host with bezier.h's own float functions (the GPU's code).
std::vector<std::vector<Point>> tessellate_course(const std::vector<Line>& lines, const Tessellation& t) {
  std::vector<std::vector<Point>> out;
  for (const Line& line : lines) {
    const int n = cdplab::bezier::vertex_count(line, t);
    std::vector<Point> vertices;
    for (int k = 0; k < n; ++k) vertices.push_back(cdplab::bezier::vertex(line, k, n));
    out.push_back(vertices);
  }
  return out;
}

/// One line, tessellated into `count` vertices (right for that count), judged.
Verdict judge_one(const Line& line, const Tessellation& t, int count) {
  return oracle::judge_lines({line}, t, oracle::found_from_vectors({tessellate_here(line, count)}), kEmpty);
}

/// A tessellation whose scale makes kArch's curvature * scale equal `wanted` (to float precision).
Tessellation arch_scale(double wanted) {
  Tessellation t;
  t.scale = static_cast<float>(2.0 * wanted);
  return t;
}

/// The oracle's tolerance on curvature * scale near an integer (02-bezier.cpp, acceptable_counts).
double oracle_slack(double wanted) { return 1e-4 + 1e-5 * std::fabs(wanted); }

}  // namespace

// ----- inputs --------------------------------------------------------------------------

TEST_CASE("oracle bezier seeded lines have the curvature asked for") {
  cdplab::Random rng(0x0201);
  for (int i = 0; i < 200; ++i) {
    const double bend = rng.uniform(0.0, 2.5);
    const Line line = oracle::line_with_curvature(rng, bend);
    const double chord = std::hypot(double{line.p2.x} - line.p0.x, double{line.p2.y} - line.p0.y);
    INFO("line " << i << ", bend " << bend);
    CHECK(chord >= 20.0 - 1e-4);
    CHECK(chord <= 60.0 + 1e-4);
    CHECK(std::fabs(curvature_here(line) - bend) < 1e-4);
  }
  for (int i = 0; i < 20; ++i) {
    const double reach = rng.uniform(0.0, 2.0);
    const Line line = oracle::closed_line(rng, reach);
    INFO("closed line " << i << ", reach " << reach);
    CHECK(line.p2.x == line.p0.x);
    CHECK(line.p2.y == line.p0.y);
    CHECK(std::fabs(curvature_here(line) - reach) < 1e-4);
  }
  for (const Line& line : oracle::lines_with_curvatures(rng, 100, 0.5, 1.5)) {
    const double c = curvature_here(line);
    CHECK((c > 0.5 - 1e-4 && c < 1.5 + 1e-4));
  }
}

TEST_CASE("oracle bezier counts worked out by hand") {
  const Tessellation t;  // 16, [4, 32]
  CHECK(oracle::wanted_vertices(kArch, t) == doctest::Approx(8.0));
  CHECK(oracle::wanted_vertices(kHalfway, t) == doctest::Approx(8.5));
  // Exactly 8: the GPU may round just below and truncate to 7.
  CHECK(oracle::acceptable_counts(kArch, t).low == 7);
  CHECK(oracle::acceptable_counts(kArch, t).high == 8);
  // 8.5 is far from an integer: only 8.
  CHECK(oracle::acceptable_counts(kHalfway, t).low == 8);
  CHECK(oracle::acceptable_counts(kHalfway, t).high == 8);

  const Line straight{{0, 0}, {1, 0}, {2, 0}};      // curvature 0: the fewest vertices
  const Line closed{{1, 1}, {1, 4}, {1, 1}};        // reach 3, times 16 = 48: the most
  CHECK(oracle::acceptable_counts(straight, t).low == 4);
  CHECK(oracle::acceptable_counts(straight, t).high == 4);
  CHECK(oracle::acceptable_counts(closed, t).low == 32);
  CHECK(oracle::acceptable_counts(closed, t).high == 32);
  CHECK(oracle::total_vertices({kArch, kHalfway, straight, closed}, t) == 8 + 8 + 4 + 32);
}

// ----- judge_lines ---------------------------------------------------------------------

TEST_CASE("oracle bezier judge_lines accepts the exact host tessellation") {
  // kArch by hand: 8 vertices at u = k / 7 of (2u, 2u(1 - u)).
  std::vector<Point> arch;
  for (int k = 0; k < 8; ++k) {
    const double u = k / 7.0;
    arch.push_back(Point{static_cast<float>(2 * u), static_cast<float>(2 * u * (1 - u))});
  }
  const Tessellation course;
  expect_pass(oracle::judge_lines({kArch}, course, oracle::found_from_vectors({arch}), kEmpty));

  cdplab::Random rng(0x0202);
  auto lines = oracle::lines_with_curvatures(rng, 200, 0.0, 2.5);
  for (int i = 0; i < 8; ++i) lines.push_back(oracle::closed_line(rng, rng.uniform(0.0, 1.5)));
  for (const Tessellation& t : {course, Tessellation{8.0f, 3, 20}}) {
    INFO("scale " << t.scale << ", [" << t.min_vertices << ", " << t.max_vertices << "]");
    // With bezier.h's float functions, as the GPU computes them.
    auto course_vertices = tessellate_course(lines, t);
    expect_pass(oracle::judge_lines(lines, t, oracle::found_from_vectors(course_vertices), kEmpty));
    // In double, with the counts worked out here.
    std::vector<std::vector<Point>> exact;
    for (const Line& line : lines) {
      const double wanted = curvature_here(line) * t.scale;
      const int n = wanted >= t.max_vertices ? t.max_vertices : std::max(t.min_vertices, static_cast<int>(wanted));
      exact.push_back(tessellate_here(line, n));
    }
    expect_pass(oracle::judge_lines(lines, t, oracle::found_from_vectors(exact), kEmpty));

    // As device-heap records (exercises b and c), with the vertices gathered from them.
    std::vector<LineVertices> records;
    for (auto& vertices : course_vertices) records.push_back(LineVertices{static_cast<int>(vertices.size()), vertices.data()});
    const auto found = oracle::found_from_records(records, course_vertices);
    REQUIRE(found.size() == lines.size());
    CHECK(found[0].has_buffer);
    CHECK(found[0].count == static_cast<int>(course_vertices[0].size()));
    expect_pass(oracle::judge_lines(lines, t, found, kEmpty));
  }
}

TEST_CASE("oracle bezier judge_lines accepts a count off by one only next to an integer") {
  // kArch's curvature * 16 is exactly 8: 7 vertices (u = k / 6) are accepted too.
  expect_pass(judge_one(kArch, Tessellation{}, 8));
  expect_pass(judge_one(kArch, Tessellation{}, 7));
  expect_failure(judge_one(kArch, Tessellation{}, 9), {"line 0", "expected 7 or 8 vertices, found 9"});
  // 8.5 lies halfway: 8 only.
  expect_pass(judge_one(kHalfway, Tessellation{}, 8));
  expect_failure(judge_one(kHalfway, Tessellation{}, 9),
                 {"line 0 (curvature * scale = 8.5): expected 8 vertices, found 9", "1 lines have a wrong count: 0"});
  expect_failure(judge_one(kHalfway, Tessellation{}, 7), {"expected 8 vertices, found 7"});

  // Within the oracle's slack of 9, on either side: 8 and 9 are both accepted.
  const double inside = 0.5 * oracle_slack(9.0);
  const double outside = 2.0 * oracle_slack(9.0);
  for (double wanted : {9.0 - inside, 9.0 + inside}) {
    INFO("curvature * scale = " << wanted);
    const Tessellation t = arch_scale(wanted);
    REQUIRE(std::fabs(oracle::wanted_vertices(kArch, t) - wanted) < 1e-5);
    expect_pass(judge_one(kArch, t, 8));
    expect_pass(judge_one(kArch, t, 9));
    expect_failure(judge_one(kArch, t, 10), {"expected 8 or 9 vertices, found 10"});
    expect_failure(judge_one(kArch, t, 7), {"expected 8 or 9 vertices, found 7"});
  }
  // Beyond the slack: only the truncated count.
  const Tessellation below = arch_scale(9.0 - outside);
  expect_pass(judge_one(kArch, below, 8));
  expect_failure(judge_one(kArch, below, 9), {"expected 8 vertices, found 9"});
  const Tessellation above = arch_scale(9.0 + outside);
  expect_pass(judge_one(kArch, above, 9));
  expect_failure(judge_one(kArch, above, 8), {"expected 9 vertices, found 8"});
}

TEST_CASE("oracle bezier judge_lines rejects every count off by one away from an integer") {
  const Tessellation t;
  cdplab::Random rng(0x0203);
  const auto lines = oracle::lines_with_curvatures(rng, 300, 0.3, 1.9);  // 4.8 to 30.4 vertices wanted
  std::vector<std::vector<Point>> more;
  std::vector<std::vector<Point>> fewer;
  std::size_t off_integer = 0;
  for (const Line& line : lines) {
    const double wanted = curvature_here(line) * t.scale;
    int n = static_cast<int>(wanted);
    const bool far = std::fabs(wanted - std::round(wanted)) > 1e-3 && wanted > 5.0 && wanted < 31.0;
    if (far) {
      const auto range = oracle::acceptable_counts(line, t);
      CHECK(range.low == n);
      CHECK(range.high == n);
      ++off_integer;
    } else {
      n = cdplab::bezier::vertex_count(line, t);  // left right: only the far lines are wrong
    }
    more.push_back(tessellate_here(line, far ? n + 1 : n));
    fewer.push_back(tessellate_here(line, far ? n - 1 : n));
  }
  REQUIRE(off_integer > 250);
  const std::string tally = "[0 empty, " + std::to_string(off_integer) + " wrong counts, 0 wrong vertices, of 300 lines]";
  expect_failure(oracle::judge_lines(lines, t, oracle::found_from_vectors(more), kEmpty), {tally});
  expect_failure(oracle::judge_lines(lines, t, oracle::found_from_vectors(fewer), kEmpty), {tally});
}

TEST_CASE("oracle bezier judge_lines rejects a moved vertex") {
  const Tessellation t;
  const std::vector<Line> lines = {kHalfway, kHalfway, kArch};
  auto vertices = tessellate_course(lines, t);
  REQUIRE(vertices[2].size() == 8);

  // Within the tolerance (1e-3 plus 1e-5 per unit of coordinate): accepted.
  vertices[2][3].x += 5e-4f;
  expect_pass(oracle::judge_lines(lines, t, oracle::found_from_vectors(vertices), kEmpty));

  // Vertex 3 of 8 lies at u = 3/7: (6/7, 24/49) = (0.857143, 0.489796).
  vertices[2][3].x = 6.0f / 7.0f + 0.5f;
  std::ostringstream found;
  found.precision(6);
  found << "found (" << vertices[2][3].x << ", " << vertices[2][3].y << ")";
  expect_failure(oracle::judge_lines(lines, t, oracle::found_from_vectors(vertices), kEmpty),
                 {"line 2, vertex 3 of 8: expected (0.857143, 0.489796)", found.str(), "1 of its 8 vertices differ",
                  "1 lines have wrong vertices: 2", "[0 empty, 0 wrong counts, 1 wrong vertices, of 3 lines]"});

  // A moved first vertex is no stopped thread.
  vertices = tessellate_course(lines, t);
  vertices[0][0].y += 0.01f;
  const Verdict first = oracle::judge_lines(lines, t, oracle::found_from_vectors(vertices), kEmpty);
  expect_failure(first, {"line 0, vertex 0 of 8"});
  CHECK_FALSE(contains(first.message, "stop short"));

  // Vertices from 5 on never written: the threads stopped short.
  vertices = tessellate_course(lines, t);
  for (int k = 5; k < 8; ++k) vertices[2][static_cast<std::size_t>(k)] = Point{0, 0};
  expect_failure(oracle::judge_lines(lines, t, oracle::found_from_vectors(vertices), kEmpty),
                 {"line 2, vertex 5 of 8", "3 of its 8 vertices differ", "Vertices 0 to 4 are right", "stop short"});

  // A record that reports 8 vertices of which 6 came back.
  vertices = tessellate_course(lines, t);
  std::vector<LineVertices> records;
  for (auto& v : vertices) records.push_back(LineVertices{static_cast<int>(v.size()), v.data()});
  vertices[1].resize(6);
  expect_failure(oracle::judge_lines(lines, t, oracle::found_from_records(records, vertices), kEmpty),
                 {"line 1, vertex 6 of 8", "found nothing"});
}

TEST_CASE("oracle bezier judge_lines says which lines stayed empty") {
  const Tessellation t;
  const std::vector<Line> lines = {kArch, kHalfway, kArch};
  auto vertices = tessellate_course(lines, t);
  vertices[1].clear();
  expect_failure(oracle::judge_lines(lines, t, oracle::found_from_vectors(vertices), kEmpty),
                 {"line 1 stayed empty: no vertices were written", "(1 of 3 lines are empty: 1)",
                  "Check the child launch", "[1 empty, 0 wrong counts, 0 wrong vertices, of 3 lines]"});

  // A record with a count but no buffer.
  vertices = tessellate_course(lines, t);
  std::vector<LineVertices> records;
  for (auto& v : vertices) records.push_back(LineVertices{static_cast<int>(v.size()), v.data()});
  records[2].vertices = nullptr;
  expect_failure(oracle::judge_lines(lines, t, oracle::found_from_records(records, vertices), kEmpty),
                 {"line 2 reports 8 vertices but a null pointer", "(1 of 3 lines are empty: 2)"});

  // Every line empty: listed by index.
  const std::vector<std::vector<Point>> nothing(lines.size());
  expect_failure(oracle::judge_lines(lines, t, oracle::found_from_vectors(nothing), kEmpty),
                 {"line 0 stayed empty", "(3 of 3 lines are empty: 0, 1, 2)"});

  expect_failure(oracle::judge_lines(lines, t, oracle::found_from_vectors({vertices[0]}), kEmpty),
                 {"expected 3 lines back, found 1"});
}

TEST_CASE("oracle bezier judge_lines names the course constants when a tessellation is ignored") {
  const Tessellation half{8.0f, 3, 20};  // kArch: 0.5 * 8 = 4 vertices (or 3)
  const Verdict verdict = judge_one(kArch, half, 8);
  expect_failure(verdict, {"expected 3 or 4 vertices, found 8", "[3, 20]", "8 is the count for the course's constants"});
}

// ----- judge_freed ---------------------------------------------------------------------

TEST_CASE("oracle bezier judge_freed wants every record cleared") {
  Point buffer[4] = {};
  expect_pass(oracle::judge_freed({{0, nullptr}, {0, nullptr}}, "free_vertices"));
  expect_pass(oracle::judge_freed({}, "free_vertices"));
  expect_failure(oracle::judge_freed({{0, nullptr}, {3, buffer}, {0, nullptr}}, "free_vertices"),
                 {"after free_vertices, line 1 still has count 3 and a pointer", "(1 of 3 records not cleared)"});
  expect_failure(oracle::judge_freed({{0, nullptr}, {0, nullptr}, {4, nullptr}, {0, buffer}}, "free_scaled_vertices"),
                 {"after free_scaled_vertices, line 2 still has count 4 and a null pointer",
                  "(2 of 4 records not cleared)"});
  expect_failure(oracle::judge_freed({{0, buffer}}, "free_vertices"), {"line 0 still has count 0 and a pointer"});
}

// ----- exercise d: lines in one vertex buffer --------------------------------------------

TEST_CASE("oracle bezier found_in_buffer reads each line from its share of the buffer") {
  const Tessellation t;
  const std::vector<Line> lines = {kArch, kHalfway, kArch};
  const auto vertices = tessellate_course(lines, t);  // 8 vertices each
  Point buffer[24] = {};  // stands for the buffer's device address: only compared, never read
  // The lines in another order than their indices, as blocks' claims may leave them: line 2
  // first, then line 0, then line 1.
  const std::vector<LineVertices> records = {{8, buffer + 8}, {8, buffer + 16}, {8, buffer}};
  std::vector<Point> layout;
  layout.insert(layout.end(), vertices[2].begin(), vertices[2].end());
  layout.insert(layout.end(), vertices[0].begin(), vertices[0].end());
  layout.insert(layout.end(), vertices[1].begin(), vertices[1].end());
  expect_pass(oracle::judge_lines(lines, t, oracle::found_in_buffer(records, buffer, layout), kEmpty));
  expect_pass(oracle::judge_buffer_use(records, buffer, 24, 24));

  // A null pointer is an empty line; a pointer past the points read back gives no vertices.
  const auto found = oracle::found_in_buffer({{0, nullptr}, {8, buffer + 20}}, buffer, layout);
  CHECK_FALSE(found[0].has_buffer);
  CHECK(found[1].has_buffer);
  CHECK(found[1].count == 8);
  CHECK(found[1].vertices.empty());
}

TEST_CASE("oracle bezier judge_buffer_use wants the lines packed without overlaps") {
  Point buffer[40] = {};
  expect_pass(oracle::judge_buffer_use({}, buffer, 0, 0));
  expect_pass(oracle::judge_buffer_use({{4, buffer + 4}, {4, buffer}, {0, nullptr}}, buffer, 40, 8));
  expect_failure(oracle::judge_buffer_use({{4, buffer}}, buffer, 2, 4),
                 {"says 4 points were claimed, more than the buffer's 2"});
  expect_failure(oracle::judge_buffer_use({{4, buffer}, {4, buffer + 8}}, buffer, 40, 8),
                 {"line 1's 4 vertices do not lie within the 8 points claimed", "(1 lines like it: 1)"});
  const Point* between = reinterpret_cast<const Point*>(reinterpret_cast<const char*>(buffer) + 4);
  expect_failure(oracle::judge_buffer_use({{4, const_cast<Point*>(between)}}, buffer, 40, 8),
                 {"line 0's 4 vertices do not lie within"});
  expect_failure(oracle::judge_buffer_use({{4, buffer}, {4, buffer + 2}}, buffer, 40, 8),
                 {"lines 0 and 1 share points", "line 0 has points 0 to 3", "line 1 starts at point 2"});
  expect_failure(oracle::judge_buffer_use({{4, buffer}, {4, buffer + 8}}, buffer, 40, 12),
                 {"12 points were claimed but the lines use 8 of them"});
}
