#include "02-bezier.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

namespace cdplab::oracle::bezier {
namespace {

constexpr double kPi = 3.14159265358979323846;
/// Empty or wrong lines listed by index in a message before "...".
constexpr std::size_t kListedLines = 8;

Point point(double x, double y) { return Point{static_cast<float>(x), static_cast<float>(y)}; }

/// vertex_count's clamp, applied to a wanted number of vertices given in double.
int clamp_count(double wanted, const Tessellation& t) {
  if (!(wanted < static_cast<double>(t.max_vertices))) return t.max_vertices;
  const int n = static_cast<int>(wanted);
  return n < t.min_vertices ? t.min_vertices : n;
}

/// The largest absolute control-point coordinate (at least 1): positions scale with it.
double magnitude(const Line& line) {
  double m = 1.0;
  for (const Point& p : {line.p0, line.p1, line.p2}) m = std::max({m, std::fabs(double{p.x}), std::fabs(double{p.y})});
  return m;
}

/// Vertex k of n, computed in double.
void expected_vertex(const Line& line, int k, int n, double& x, double& y) {
  const double u = static_cast<double>(k) / static_cast<double>(n - 1);
  const double a = (1.0 - u) * (1.0 - u);
  const double b = 2.0 * u * (1.0 - u);
  const double c = u * u;
  x = a * line.p0.x + b * line.p1.x + c * line.p2.x;
  y = a * line.p0.y + b * line.p1.y + c * line.p2.y;
}

/// "a, b, c, ..." for the first kListedLines entries of `lines`.
std::string list_of(const std::vector<std::size_t>& lines) {
  std::ostringstream out;
  for (std::size_t i = 0; i < lines.size() && i < kListedLines; ++i) out << (i > 0 ? ", " : "") << lines[i];
  if (lines.size() > kListedLines) out << ", ...";
  return out.str();
}

/// The first wrong vertex of a line, and how the wrong vertices lie.
struct VertexProblem {
  int first = -1;        ///< index of the first wrong vertex, -1 when all are right
  int wrong = 0;         ///< how many are wrong
  bool suffix = false;   ///< the wrong ones are exactly first .. n-1, and far off: never written
  double expected_x = 0, expected_y = 0;
};

VertexProblem check_vertices(const Line& line, const std::vector<Point>& vertices, int count) {
  VertexProblem problem;
  const double tolerance = 1e-3 + 1e-5 * magnitude(line);
  double first_error = 0.0;
  for (int k = 0; k < count; ++k) {
    double x = 0.0;
    double y = 0.0;
    expected_vertex(line, k, count, x, y);
    const bool missing = k >= static_cast<int>(vertices.size());
    const bool right = !missing && std::fabs(vertices[static_cast<std::size_t>(k)].x - x) <= tolerance &&
                       std::fabs(vertices[static_cast<std::size_t>(k)].y - y) <= tolerance;
    if (right) continue;
    if (problem.wrong++ == 0) {
      problem.first = k;
      problem.expected_x = x;
      problem.expected_y = y;
      if (!missing) {
        const Point& v = vertices[static_cast<std::size_t>(k)];
        first_error = std::max(std::fabs(v.x - x), std::fabs(v.y - y));
      }
    }
  }
  // A formula slightly off (u = k / n, say) drifts away from the curve gradually; vertices that
  // were never written are far off from the first one on.
  const bool jump = first_error > 100.0 * tolerance || problem.first >= static_cast<int>(vertices.size());
  problem.suffix = problem.first > 0 && problem.wrong == count - problem.first && jump;
  return problem;
}

std::string range_text(const CountRange& range) {
  std::ostringstream out;
  out << range.low;
  if (range.high > range.low) out << " or " << range.high;
  return out.str();
}

}  // namespace

// ----- inputs --------------------------------------------------------------------------

Line line_with_curvature(Random& rng, double bend) {
  const double chord = rng.uniform(20.0, 60.0);
  const double angle = rng.uniform(0.0, 2.0 * kPi);
  const double dx = std::cos(angle);
  const double dy = std::sin(angle);
  const double x0 = rng.uniform(-100.0, 100.0);
  const double y0 = rng.uniform(-100.0, 100.0);
  const double along = rng.uniform(0.2, 0.8) * chord;         // where p1's foot lies on the chord
  const double off = (rng.uniform() < 0.5 ? -1.0 : 1.0) * bend * chord;  // p1's distance from it
  Line line;
  line.p0 = point(x0, y0);
  line.p2 = point(x0 + chord * dx, y0 + chord * dy);
  line.p1 = point(x0 + along * dx - off * dy, y0 + along * dy + off * dx);
  return line;
}

Line closed_line(Random& rng, double reach) {
  const double angle = rng.uniform(0.0, 2.0 * kPi);
  const double x0 = rng.uniform(-100.0, 100.0);
  const double y0 = rng.uniform(-100.0, 100.0);
  Line line;
  line.p0 = point(x0, y0);
  line.p2 = line.p0;
  line.p1 = point(x0 + reach * std::cos(angle), y0 + reach * std::sin(angle));
  return line;
}

std::vector<Line> lines_with_curvatures(Random& rng, std::size_t count, double min_bend, double max_bend) {
  std::vector<Line> lines(count);
  for (auto& line : lines) line = line_with_curvature(rng, rng.uniform(min_bend, max_bend));
  return lines;
}

// ----- counts --------------------------------------------------------------------------

double wanted_vertices(const Line& line, const Tessellation& t) {
  const double cx = double{line.p2.x} - line.p0.x;
  const double cy = double{line.p2.y} - line.p0.y;
  const double dx = double{line.p1.x} - line.p0.x;
  const double dy = double{line.p1.y} - line.p0.y;
  const double chord = std::sqrt(cx * cx + cy * cy);
  const double curvature = chord == 0.0 ? std::sqrt(dx * dx + dy * dy) : std::fabs(cx * dy - cy * dx) / (chord * chord);
  return curvature * static_cast<double>(t.scale);
}

CountRange acceptable_counts(const Line& line, const Tessellation& t) {
  // Float rounding moves curvature * scale by far less than this; only a value this close to an
  // integer can be truncated to the neighbouring count.
  const double wanted = wanted_vertices(line, t);
  const double slack = 1e-4 + 1e-5 * std::fabs(wanted);
  const int host = cdplab::bezier::vertex_count(line, t);  // the same float code the GPU runs
  CountRange range{clamp_count(wanted - slack, t), clamp_count(wanted + slack, t)};
  range.low = std::min(range.low, host);
  range.high = std::max(range.high, host);
  return range;
}

std::size_t total_vertices(const std::vector<Line>& lines, const Tessellation& t) {
  std::size_t total = 0;
  for (const Line& line : lines) total += static_cast<std::size_t>(acceptable_counts(line, t).high);
  return total;
}

// ----- judging -------------------------------------------------------------------------

std::vector<FoundLine> found_from_vectors(const std::vector<std::vector<Point>>& lines) {
  std::vector<FoundLine> found(lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    found[i].count = static_cast<int>(lines[i].size());
    found[i].vertices = lines[i];
  }
  return found;
}

std::vector<FoundLine> found_from_records(const std::vector<LineVertices>& records,
                                          const std::vector<std::vector<Point>>& gathered) {
  std::vector<FoundLine> found(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    found[i].count = records[i].count;
    found[i].has_buffer = records[i].vertices != nullptr;
    if (i < gathered.size()) found[i].vertices = gathered[i];
  }
  return found;
}

Verdict judge_lines_one_allocation_failed(const std::vector<Line>& lines, const Tessellation& t,
                                          const std::vector<FoundLine>& found, const EmptyAdvice& empty) {
  if (found.size() != lines.size()) return judge_lines(lines, t, found, empty);
  std::vector<std::size_t> empty_lines;
  std::vector<Line> others;
  std::vector<FoundLine> others_found;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (found[i].count == 0 && !found[i].has_buffer) {
      empty_lines.push_back(i);
    } else {
      others.push_back(lines[i]);
      others_found.push_back(found[i]);
    }
  }
  std::ostringstream out;
  if (empty_lines.size() != 1) {
    out << "exactly the line whose allocation failed should be left empty (count 0 and nullptr, no child), and "
        << empty_lines.size() << " lines are" << (empty_lines.empty() ? "" : ": " + list_of(empty_lines));
    return fail(out.str());
  }
  Verdict verdict = judge_lines(others, t, others_found, empty);
  if (!verdict.ok) verdict.message = "apart from the line left empty (line " + std::to_string(empty_lines.front()) +
                                     "), counted among the others: " + verdict.message;
  return verdict;
}

Verdict judge_lines(const std::vector<Line>& lines, const Tessellation& t, const std::vector<FoundLine>& found,
                    const EmptyAdvice& empty) {
  std::ostringstream out;
  if (found.size() != lines.size()) {
    out << "expected " << lines.size() << " lines back, found " << found.size();
    return fail(out.str());
  }
  std::vector<std::size_t> empty_lines;
  std::vector<std::size_t> count_lines;
  std::vector<std::size_t> vertex_lines;
  VertexProblem first_vertex_problem;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const FoundLine& f = found[i];
    if (f.count == 0 || !f.has_buffer) {
      empty_lines.push_back(i);
      continue;
    }
    if (!acceptable_counts(lines[i], t).contains(f.count)) {
      count_lines.push_back(i);
      continue;
    }
    const VertexProblem problem = check_vertices(lines[i], f.vertices, f.count);
    if (problem.wrong == 0) continue;
    if (vertex_lines.empty()) first_vertex_problem = problem;
    vertex_lines.push_back(i);
  }
  if (empty_lines.empty() && count_lines.empty() && vertex_lines.empty()) return pass();

  out.precision(6);
  const char* separator = "";
  if (!empty_lines.empty()) {
    const std::size_t i = empty_lines.front();
    if (found[i].count != 0) {
      out << "line " << i << " reports " << found[i].count << " vertices but a null pointer";
    } else {
      out << "line " << i << " stayed empty: " << empty.cause;
    }
    out << " (" << empty_lines.size() << " of " << lines.size() << " lines are empty: " << list_of(empty_lines)
        << ")";
    if (!empty.advice.empty()) out << ". " << empty.advice;
    separator = ". ";
  }
  if (!count_lines.empty()) {
    const std::size_t i = count_lines.front();
    const CountRange range = acceptable_counts(lines[i], t);
    out << separator << "line " << i << " (curvature * scale = " << wanted_vertices(lines[i], t) << "): expected "
        << range_text(range) << " vertices, found " << found[i].count << " (" << count_lines.size()
        << " lines have a wrong count: " << list_of(count_lines) << "). The count is vertex_count(line, t): "
        << "curvature(line) times t.scale, clamped to [t.min_vertices, t.max_vertices] = [" << t.min_vertices << ", "
        << t.max_vertices << "]";
    const Tessellation course{};
    const bool other_than_course =
        t.scale != course.scale || t.min_vertices != course.min_vertices || t.max_vertices != course.max_vertices;
    if (other_than_course && found[i].count == cdplab::bezier::vertex_count(lines[i], course) &&
        !range.contains(found[i].count)) {
      out << "; " << found[i].count << " is the count for the course's constants (16, 4, 32): use the "
          << "Tessellation passed in";
    }
    separator = ". ";
  }
  if (!vertex_lines.empty()) {
    const std::size_t i = vertex_lines.front();
    const VertexProblem& p = first_vertex_problem;
    const int n = found[i].count;
    out << separator << "line " << i << ", vertex " << p.first << " of " << n << ": expected (" << p.expected_x
        << ", " << p.expected_y << "), found ";
    if (p.first < static_cast<int>(found[i].vertices.size())) {
      const Point& v = found[i].vertices[static_cast<std::size_t>(p.first)];
      out << "(" << v.x << ", " << v.y << ")";
    } else {
      out << "nothing";
    }
    out << " (" << p.wrong << " of its " << n << " vertices differ; " << vertex_lines.size()
        << " lines have wrong vertices: " << list_of(vertex_lines) << "). Vertex k lies at u = k / (n - 1) on the "
        << "curve: vertex(line, k, n) with the line's own count n";
    if (p.suffix) {
      out << ". Vertices 0 to " << p.first - 1 << " are right and all from " << p.first
          << " on are wrong: the threads stop short of the line's count (too few blocks, or a loop that ends early)";
    }
  }
  out << " [" << empty_lines.size() << " empty, " << count_lines.size() << " wrong counts, " << vertex_lines.size()
      << " wrong vertices, of " << lines.size() << " lines]";
  return fail(out.str());
}

Verdict judge_freed(const std::vector<LineVertices>& records, const char* free_function) {
  std::size_t first = records.size();
  std::size_t left = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (records[i].count == 0 && records[i].vertices == nullptr) continue;
    if (left++ == 0) first = i;
  }
  if (left == 0) return pass();
  std::ostringstream out;
  out << "after " << free_function << ", line " << first << " still has count " << records[first].count << " and "
      << (records[first].vertices == nullptr ? "a null pointer" : "a pointer") << " (" << left << " of "
      << records.size() << " records not cleared). Once a line's buffer is freed, set its record to count 0 and "
      << "nullptr, so that nothing frees or reads it again";
  return fail(out.str());
}

// ----- exercise d: lines in one vertex buffer ------------------------------------------

namespace {

/// Where a record's vertices start in a buffer at `base`, in points; false when the pointer
/// lies before the buffer or between two points.
bool point_index(const LineVertices& record, const Point* base, std::size_t& index) {
  const auto address = reinterpret_cast<std::uintptr_t>(record.vertices);
  const auto start = reinterpret_cast<std::uintptr_t>(base);
  if (address < start || (address - start) % sizeof(Point) != 0) return false;
  index = static_cast<std::size_t>((address - start) / sizeof(Point));
  return true;
}

}  // namespace

std::vector<FoundLine> found_in_buffer(const std::vector<LineVertices>& records, const Point* base,
                                       const std::vector<Point>& points) {
  std::vector<FoundLine> found(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    const LineVertices& record = records[i];
    found[i].count = record.count;
    found[i].has_buffer = record.vertices != nullptr;
    std::size_t first = 0;
    if (record.vertices == nullptr || record.count <= 0 || !point_index(record, base, first)) continue;
    if (first > points.size() || static_cast<std::size_t>(record.count) > points.size() - first) continue;
    const auto begin = points.begin() + static_cast<std::ptrdiff_t>(first);
    found[i].vertices.assign(begin, begin + record.count);
  }
  return found;
}

Verdict judge_buffer_use(const std::vector<LineVertices>& records, const Point* base, std::size_t capacity,
                         unsigned long long claimed) {
  std::ostringstream out;
  if (claimed > capacity) {
    out << "the buffer's counter says " << claimed << " points were claimed, more than the buffer's " << capacity
        << ": a block's claim must add exactly its lines' total, once";
    return fail(out.str());
  }
  struct Range {
    std::size_t first, count, line;
  };
  std::vector<Range> ranges;
  std::vector<std::size_t> outside;
  std::size_t used = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const LineVertices& record = records[i];
    if (record.vertices == nullptr || record.count <= 0) continue;  // an empty line uses nothing
    std::size_t first = 0;
    const auto count = static_cast<std::size_t>(record.count);
    if (!point_index(record, base, first) || first > claimed || count > claimed - first) {
      outside.push_back(i);
      continue;
    }
    ranges.push_back(Range{first, count, i});
    used += count;
  }
  if (!outside.empty()) {
    const LineVertices& record = records[outside.front()];
    out << "line " << outside.front() << "'s " << record.count << " vertices do not lie within the " << claimed
        << " points claimed from the start of the buffer (" << outside.size() << " lines like it: " << list_of(outside)
        << "). out[i].vertices is the block's claimed room (buffer.points plus the start the atomicAdd returned) "
        << "plus the line's offset from the scan";
    return fail(out.str());
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.first < b.first; });
  for (std::size_t r = 1; r < ranges.size(); ++r) {
    const Range& before = ranges[r - 1];
    if (before.first + before.count <= ranges[r].first) continue;
    out << "lines " << before.line << " and " << ranges[r].line << " share points: line " << before.line
        << " has points " << before.first << " to " << before.first + before.count - 1 << " of the buffer, line "
        << ranges[r].line << " starts at point " << ranges[r].first
        << ". Each line's offset is the exclusive scan of the counts before it in its block, and each block "
           "claims its own room with one atomicAdd of its total";
    return fail(out.str());
  }
  if (used != claimed) {
    out << claimed << " points were claimed but the lines use " << used << " of them: a block must claim "
        << "exactly its lines' total (the scan's total), so that the vertices fill the buffer with no gaps";
    return fail(out.str());
  }
  return pass();
}

}  // namespace cdplab::oracle::bezier
