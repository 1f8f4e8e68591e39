// Benchmark of chapter 02 (Bezier tessellation): the four exercises of this build, and a flat
// version without dynamic parallelism that balances the work itself (count the vertices, scan
// the counts, one thread per vertex).
//
// Usage: bench-02-bezier [--quick] [--sizes N,N,...] [--max-vertices M] [--large-max-vertices L]
//                        [--seed S]
//
// Prints the device, then one Markdown table per max_vertices (rows: number of lines; cells:
// milliseconds, and the aggregated version's ratios to the flat one and to exercise b), each
// followed by what was timed and whether every version's output matched the CPU. Exit status:
// 0 when every output matched, 1 on an error or a wrong output, 2 on a wrong command line, 77
// when there is no GPU.
#include "cdplab/bench.h"
#include "cdplab/bezier.h"
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/random.h"
#include "../suites/02-bezier/support/flat_tessellation.h"


#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace bz = cdplab::bezier;
namespace bench = cdplab::bench;
using bench::UsageError;
using bz::Line;
using bz::LineVertices;
using bz::Point;
using bz::Tessellation;
using cdplab::support::bezier::FlatTessellator;

const char* const kUsage =
    "usage: bench-02-bezier [--quick] [--sizes N,N,...] [--max-vertices M] [--large-max-vertices L] [--seed S]\n"
    "  --quick                 N = 1 000 and 10 000 only, one timed run per cell\n"
    "  --sizes N,N,...         these numbers of lines instead (default 1000,3000,10000,30000,100000)\n"
    "  --max-vertices M        max_vertices of the first table (default 32, as in the course)\n"
    "  --large-max-vertices L  max_vertices of the second table (default 1024; 0: no second table)\n"
    "  --seed S                seed of the generated lines (default 2026)\n"
    "Each table tessellates with scale = max_vertices / 2 and min_vertices = 4, so the same lines\n"
    "use the same share of the range in both tables.\n";

constexpr int kMaxVerticesLimit = 4096;         // keeps N * max_vertices (and the heap) in range
constexpr int kMaxLines = 1000000;              // likewise, for --sizes
constexpr double kCellBudgetMs = 1500.0;        // timed runs of one cell stop after about this
constexpr std::size_t kPendingHeadroom = 2048;  // launches beyond one per line, to be safe
// The device heap: every line's worst case plus kHeapBytesPerAllocation, times kHeapFactor, plus
// kHeapReserve. Generous on purpose: the heap cannot grow once b has used it, and exercise c,
// which sizes it from its own workload, must then find it large enough.
constexpr std::size_t kHeapBytesPerAllocation = 256;
constexpr std::size_t kHeapFactor = 3;
constexpr std::size_t kHeapReserve = std::size_t{64} << 20;

struct Options {
  bool help = false;
  bool quick = false;
  int max_vertices = 32;
  int large_max_vertices = 1024;
  std::uint64_t seed = 2026;
  std::vector<int> sizes;  // empty: the default sizes
};

int parse_max_vertices(const std::string& option, const char* text, bool zero_allowed) {
  const long long value = bench::parse_integer(option, text);
  if ((zero_allowed && value == 0) || (value >= 4 && value <= kMaxVerticesLimit)) return static_cast<int>(value);
  throw UsageError(option + " must lie between 4 (min_vertices) and " + std::to_string(kMaxVerticesLimit) +
                   (zero_allowed ? ", or be 0" : ""));
}

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      options.help = true;
    } else if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--sizes") {
      options.sizes = bench::parse_sizes(arg, value(), kMaxLines, "lines");
    } else if (arg == "--max-vertices") {
      options.max_vertices = parse_max_vertices(arg, value(), false);
    } else if (arg == "--large-max-vertices") {
      options.large_max_vertices = parse_max_vertices(arg, value(), true);
    } else if (arg == "--seed") {
      options.seed = bench::parse_seed(arg, value());
    } else {
      throw UsageError("unknown argument '" + arg + "'");
    }
  }
  return options;
}

/// The course's rule scaled to `max_vertices`: 16 vertices per unit of curvature at 32.
Tessellation tessellation_for(int max_vertices) {
  Tessellation t;
  t.max_vertices = max_vertices;
  t.min_vertices = 4;
  t.scale = static_cast<float>(max_vertices) / 2.0f;
  return t;
}

// ---------------------------------------------------------------------------------------------
// Input

/// `n` seeded lines on a 1024 x 1024 canvas, a mix of curvatures: curvature 2.5 u^2 for u uniform
/// in [0, 1), so most lines are gentle and about one in ten reaches max_vertices (at scale =
/// max_vertices / 2). Control points are integers, less than 2048 apart: then every product and
/// sum in curvature() is exact in float, so the GPU (which fuses multiply-adds) and the CPU
/// agree on every line's vertex count (without fast-math, which would change the division).
std::vector<Line> make_lines(int n, std::uint64_t seed) {
  cdplab::Random rng = cdplab::Random(seed).derive(static_cast<std::uint64_t>(n));
  std::vector<Line> lines(static_cast<std::size_t>(n));
  for (auto& line : lines) {
    const double x0 = static_cast<double>(rng.integer(0, 1023));
    const double y0 = static_cast<double>(rng.integer(0, 1023));
    double cx = 0.0;  // the chord p0 -> p2: 16 to 256 long, any direction
    double cy = 0.0;
    do {
      cx = static_cast<double>(rng.integer(-256, 256));
      cy = static_cast<double>(rng.integer(-256, 256));
    } while (cx * cx + cy * cy < 16.0 * 16.0 || cx * cx + cy * cy > 256.0 * 256.0);
    const double u = rng.uniform();
    const double bend = 2.5 * u * u;              // the curvature aimed at
    const double along = rng.uniform(0.2, 0.8);   // where p1 sits along the chord
    const double side = rng.uniform() < 0.5 ? -1.0 : 1.0;
    // (-cy, cx) is the chord turned by 90 degrees: p1 lies bend * |chord| away from the chord.
    const double x1 = std::round(x0 + along * cx - side * bend * cy);
    const double y1 = std::round(y0 + along * cy + side * bend * cx);
    line = Line{{static_cast<float>(x0), static_cast<float>(y0)},
                {static_cast<float>(x1), static_cast<float>(y1)},
                {static_cast<float>(x0 + cx), static_cast<float>(y0 + cy)}};
  }
  return lines;
}

/// One row of a table: the lines, in host and GPU memory, and what the CPU expects of them.
struct Workload {
  int n = 0;
  Tessellation t;
  std::vector<Line> lines;
  cdplab::DeviceArray<Line> device_lines;
  std::vector<int> expected_counts;
  long long expected_total = 0;
};

Workload make_workload(int n, const Tessellation& t, std::uint64_t seed) {
  Workload w;
  w.n = n;
  w.t = t;
  w.lines = make_lines(n, seed);
  w.device_lines = cdplab::DeviceArray<Line>(w.lines);
  w.expected_counts.reserve(w.lines.size());
  for (const Line& line : w.lines) {
    w.expected_counts.push_back(bz::vertex_count(line, t));
    w.expected_total += w.expected_counts.back();
  }
  return w;
}

// ---------------------------------------------------------------------------------------------
// Checking an output against the CPU

/// "" when every line has the vertex count the CPU computes; else the totals and the first line
/// that differs.
std::string compare_counts(const Workload& w, const std::vector<int>& counts) {
  if (counts.size() != w.expected_counts.size())
    return std::to_string(counts.size()) + " lines came back, expected " + std::to_string(w.n);
  long long total = 0;
  int first_wrong = -1;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    total += counts[i];
    if (first_wrong < 0 && counts[i] != w.expected_counts[i]) first_wrong = static_cast<int>(i);
  }
  if (first_wrong < 0) return "";
  return "total " + std::to_string(total) + " vertices, expected " + std::to_string(w.expected_total) +
         "; line " + std::to_string(first_wrong) + " has " + std::to_string(counts[first_wrong]) +
         ", expected " + std::to_string(w.expected_counts[first_wrong]);
}

/// "" when vertex k of every line (as `vertex_at(line, k)` reads it) is the curve's point within
/// float rounding (the GPU may fuse multiply-adds); else the first vertex that is not.
template <typename VertexAt>
std::string compare_vertices(const Workload& w, VertexAt&& vertex_at) {
  long long wrong = 0;
  std::string first;
  for (int i = 0; i < w.n; ++i) {
    const Line& line = w.lines[static_cast<std::size_t>(i)];
    const float magnitude = std::fmax(std::fmax(std::fmax(std::fabs(line.p0.x), std::fabs(line.p0.y)),
                                                std::fmax(std::fabs(line.p1.x), std::fabs(line.p1.y))),
                                      std::fmax(std::fabs(line.p2.x), std::fabs(line.p2.y)));
    const float tolerance = 8.0f * FLT_EPSILON * (1.0f + magnitude);
    const int count = w.expected_counts[static_cast<std::size_t>(i)];
    for (int k = 0; k < count; ++k) {
      const Point expected = bz::vertex(line, k, count);
      const Point found = vertex_at(i, k);
      if (std::fabs(found.x - expected.x) <= tolerance && std::fabs(found.y - expected.y) <= tolerance) continue;
      if (wrong++ == 0) {
        char text[160];
        std::snprintf(text, sizeof text, "line %d vertex %d is (%g, %g), expected (%g, %g)", i, k, found.x, found.y,
                      expected.x, expected.y);
        first = text;
      }
    }
  }
  if (wrong == 0) return "";
  return std::to_string(wrong) + " vertices off the curve; " + first;
}

/// Checks the output of tessellate_fixed, or of anything with its signature.
std::string check_host_output(const Workload& w, const std::vector<std::vector<Point>>& out) {
  std::vector<int> counts;
  counts.reserve(out.size());
  for (const auto& vertices : out) counts.push_back(static_cast<int>(vertices.size()));
  std::string problem = compare_counts(w, counts);
  if (!problem.empty()) return problem;
  return compare_vertices(w, [&](int i, int k) {
    return out[static_cast<std::size_t>(i)][static_cast<std::size_t>(k)];
  });
}

/// Copies every line's device-heap vertices to `flat[starts[line]...]`, one block per line.
/// Device-heap memory may be read by any later kernel, but not copied by the host directly.
__global__ void gather_heap_vertices(const LineVertices* out, const int* starts, int n, Point* flat) {
  const int line = blockIdx.x;
  if (line >= n) return;
  const LineVertices mine = out[line];
  for (int k = threadIdx.x; k < mine.count; k += blockDim.x) flat[starts[line] + k] = mine.vertices[k];
}

/// Checks the output of tessellate_cdp or tessellate_scaled (`out`: n entries in GPU memory).
std::string check_heap_output(const Workload& w, const LineVertices* out) {
  std::vector<LineVertices> entries(static_cast<std::size_t>(w.n));
  CDPLAB_CHECK(cudaMemcpy(entries.data(), out, entries.size() * sizeof(LineVertices), cudaMemcpyDeviceToHost));
  std::vector<int> counts;
  counts.reserve(entries.size());
  for (const LineVertices& e : entries) counts.push_back(e.count);
  std::string problem = compare_counts(w, counts);
  if (!problem.empty()) return problem;
  // The counts are the CPU's from here on, so their sum fits an int (see kMaxVerticesLimit).
  std::vector<int> starts;
  starts.reserve(entries.size());
  int total = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].count > 0 && entries[i].vertices == nullptr)
      return "line " + std::to_string(i) + " has " + std::to_string(entries[i].count) + " vertices but no buffer";
    starts.push_back(total);
    total += entries[i].count;
  }
  const cdplab::DeviceArray<int> device_starts(starts);
  cdplab::DeviceArray<Point> flat(static_cast<std::size_t>(total));
  if (w.n > 0) {
    gather_heap_vertices<<<w.n, 128>>>(out, device_starts.data(), w.n, flat.data());
    CDPLAB_CHECK(cudaGetLastError());
    CDPLAB_CHECK(cudaDeviceSynchronize());
  }
  const std::vector<Point> vertices = flat.download();
  return compare_vertices(w, [&](int i, int k) {
    return vertices[static_cast<std::size_t>(starts[static_cast<std::size_t>(i)] + k)];
  });
}

/// Checks the output of tessellate_aggregated: `out` (n records in GPU memory) pointing into
/// `buffer`, whose claimed part the lines must fill exactly, without overlaps.
std::string check_buffer_output(const Workload& w, const LineVertices* out, const bz::VertexBuffer& buffer) {
  std::vector<LineVertices> entries(static_cast<std::size_t>(w.n));
  CDPLAB_CHECK(cudaMemcpy(entries.data(), out, entries.size() * sizeof(LineVertices), cudaMemcpyDeviceToHost));
  std::vector<int> counts;
  counts.reserve(entries.size());
  for (const LineVertices& e : entries) counts.push_back(e.count);
  std::string problem = compare_counts(w, counts);
  if (!problem.empty()) return problem;
  unsigned long long claimed = 0;
  CDPLAB_CHECK(cudaMemcpy(&claimed, buffer.claimed, sizeof claimed, cudaMemcpyDeviceToHost));
  if (claimed != static_cast<unsigned long long>(w.expected_total))
    return std::to_string(claimed) + " points claimed from the buffer, expected " + std::to_string(w.expected_total);
  // The records hold device addresses: turn them into point indices, as numbers.
  const auto base = reinterpret_cast<std::uintptr_t>(buffer.points);
  std::vector<std::size_t> starts(entries.size());
  std::vector<char> taken(static_cast<std::size_t>(claimed), 0);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto address = reinterpret_cast<std::uintptr_t>(entries[i].vertices);
    const std::size_t count = static_cast<std::size_t>(entries[i].count);
    if (address < base || (address - base) % sizeof(Point) != 0 || (address - base) / sizeof(Point) + count > claimed)
      return "line " + std::to_string(i) + " points outside the claimed part of the buffer";
    starts[i] = (address - base) / sizeof(Point);
    for (std::size_t k = 0; k < count; ++k) {
      if (taken[starts[i] + k]++ != 0) return "line " + std::to_string(i) + " shares points with another line";
    }
  }
  std::vector<Point> points(static_cast<std::size_t>(claimed));
  if (claimed > 0)
    CDPLAB_CHECK(cudaMemcpy(points.data(), buffer.points, points.size() * sizeof(Point), cudaMemcpyDeviceToHost));
  return compare_vertices(w, [&](int i, int k) {
    return points[starts[static_cast<std::size_t>(i)] + static_cast<std::size_t>(k)];
  });
}

// ---------------------------------------------------------------------------------------------
// The flat version (grader/suites/02-bezier/support/flat_tessellation.h): no dynamic
// parallelism; the work is balanced by a scan

/// The flat version behind tessellate_fixed's signature: host lines in, host vertices out, every
/// GPU buffer allocated and freed in the call.
std::vector<std::vector<Point>> tessellate_flat_host(const std::vector<Line>& lines, const Tessellation& t) {
  const int n = static_cast<int>(lines.size());
  const cdplab::DeviceArray<Line> device_lines(lines);
  FlatTessellator flat(n);
  const int total = flat.run(device_lines.data(), t);
  const std::vector<int> offsets = flat.offsets();
  const std::vector<Point> vertices = flat.vertices(total);
  std::vector<std::vector<Point>> out(lines.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i].assign(vertices.begin() + offsets[i], vertices.begin() + offsets[i + 1]);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The versions: each runs (timed), checks its last output, and releases it (not timed)

/// Exercise a, or the flat version with its signature: host vectors in and out.
class HostVersion {
 public:
  using Entry = std::vector<std::vector<Point>> (*)(const std::vector<Line>&, const Tessellation&);
  HostVersion(const Workload& w, Entry entry) : w_(w), entry_(entry) {}
  void run() { out_ = entry_(w_.lines, w_.t); }
  std::string check() const { return check_host_output(w_, out_); }
  void release(bool /*timed_run*/) { std::vector<std::vector<Point>>().swap(out_); }

 private:
  const Workload& w_;
  Entry entry_;
  std::vector<std::vector<Point>> out_;
};

/// Exercise b: NULL-stream children. Its free_vertices is timed on its own, in `free_times`.
class CdpVersion {
 public:
  CdpVersion(const Workload& w, LineVertices* out, bench::Samples& free_times)
      : w_(w), out_(out), free_times_(free_times) {}
  void run() { bz::tessellate_cdp(w_.device_lines.data(), out_, w_.n, w_.t); }
  std::string check() const { return check_heap_output(w_, out_); }
  void release(bool timed_run) {
    const double ms = bench::time_ms([&] { bz::free_vertices(out_, w_.n); });
    if (timed_run) free_times_.add(ms);
  }

 private:
  const Workload& w_;
  LineVertices* out_;
  bench::Samples& free_times_;
};

/// Exercise c, in one of its two kinds of child stream; free_scaled_vertices is not timed.
class ScaledVersion {
 public:
  ScaledVersion(const Workload& w, LineVertices* out, bz::ChildStream stream) : w_(w), out_(out), stream_(stream) {}
  void run() { bz::tessellate_scaled(w_.device_lines.data(), out_, w_.n, stream_, w_.t); }
  std::string check() const { return check_heap_output(w_, out_); }
  void release(bool /*timed_run*/) { bz::free_scaled_vertices(out_, w_.n); }

 private:
  const Workload& w_;
  LineVertices* out_;
  bz::ChildStream stream_;
};

/// Exercise d: lines already in GPU memory, its output left in a buffer allocated once per row.
class AggregatedVersion {
 public:
  explicit AggregatedVersion(const Workload& w)
      : w_(w), points_(static_cast<std::size_t>(w.n) * static_cast<std::size_t>(w.t.max_vertices)), claimed_(1),
        out_(static_cast<std::size_t>(w.n)) {}
  void run() { bz::tessellate_aggregated(w_.device_lines.data(), out_.data(), w_.n, buffer(), w_.t); }
  std::string check() const { return check_buffer_output(w_, out_.data(), buffer()); }
  void release(bool /*timed_run*/) {}  // nothing to free: the buffer is reused

 private:
  bz::VertexBuffer buffer() const { return bz::VertexBuffer{points_.data(), points_.size(), claimed_.data()}; }

  const Workload& w_;
  cdplab::DeviceArray<Point> points_;
  cdplab::DeviceArray<unsigned long long> claimed_;
  cdplab::DeviceArray<LineVertices> out_;
};

/// The flat version on data already in GPU memory, its output left there.
class FlatVersion {
 public:
  explicit FlatVersion(const Workload& w) : w_(w), flat_(w.n) {}
  void run() { total_ = flat_.run(w_.device_lines.data(), w_.t); }
  std::string check() const {
    const std::vector<int> offsets = flat_.offsets();
    std::vector<int> counts(static_cast<std::size_t>(w_.n));
    for (int i = 0; i < w_.n; ++i) counts[i] = offsets[i + 1] - offsets[i];
    std::string problem = compare_counts(w_, counts);
    if (!problem.empty()) return problem;
    const std::vector<Point> vertices = flat_.vertices(total_);
    return compare_vertices(w_, [&](int i, int k) { return vertices[static_cast<std::size_t>(offsets[i] + k)]; });
  }
  void release(bool /*timed_run*/) {}

 private:
  const Workload& w_;
  FlatTessellator flat_;
  int total_ = 0;
};

/// One cell of a table: the median time, how many timed runs it took, and the output's check.
struct Cell {
  double ms = 0.0;
  int runs = 0;
  std::string problem;  // "" when the output matched the CPU
};

/// A warm-up call, then up to `max_runs` timed calls (fewer when one call is slow, see
/// kCellBudgetMs); the output of the last one is checked before it is released.
template <typename Version>
Cell measure(Version& version, int max_runs) {
  const double warm_up_ms = bench::time_ms([&] { version.run(); });
  version.release(false);
  Cell cell;
  cell.runs = bench::runs_within(warm_up_ms, kCellBudgetMs, max_runs);
  bench::Samples times;
  for (int r = 0; r < cell.runs; ++r) {
    times.add(bench::time_ms([&] { version.run(); }));
    if (r == cell.runs - 1) cell.problem = version.check();
    version.release(true);
  }
  cell.ms = times.median();
  return cell;
}

// ---------------------------------------------------------------------------------------------
// Device runtime limits

std::size_t get_limit(cudaLimit limit) {
  std::size_t value = 0;
  CDPLAB_CHECK(cudaDeviceGetLimit(&value, limit));
  return value;
}

/// The pending launch pool and device heap this benchmark runs with.
struct CdpLimits {
  std::size_t pending_before = 0;
  std::size_t pending = 0;
  std::size_t heap_before = 0;
  std::size_t heap = 0;
};

/// Raises the pending launch pool and the device heap for `max_lines` lines of up to
/// `max_vertices` vertices each. Must run before any kernel allocates on the device heap: its
/// size cannot change after that. A limit already large enough is left as it is.
CdpLimits raise_cdp_limits(int max_lines, int max_vertices) {
  CdpLimits limits;
  limits.pending_before = get_limit(cudaLimitDevRuntimePendingLaunchCount);
  limits.heap_before = get_limit(cudaLimitMallocHeapSize);
  const auto lines = static_cast<std::size_t>(max_lines);
  const std::size_t pending = lines + kPendingHeadroom;  // one child per line
  const std::size_t per_line = static_cast<std::size_t>(max_vertices) * sizeof(Point) + kHeapBytesPerAllocation;
  const std::size_t mib = std::size_t{1} << 20;
  const std::size_t heap = (kHeapFactor * lines * per_line + kHeapReserve + mib - 1) / mib * mib;
  if (pending > limits.pending_before) CDPLAB_CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, pending));
  if (heap > limits.heap_before) CDPLAB_CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, heap));
  limits.pending = get_limit(cudaLimitDevRuntimePendingLaunchCount);
  limits.heap = get_limit(cudaLimitMallocHeapSize);
  return limits;
}

/// Raises the pending launch pool back to `wanted` if an exercise lowered it (exercise c sizes it
/// from its own workload); returns whether it had to.
bool restore_pending_launches(std::size_t wanted) {
  if (get_limit(cudaLimitDevRuntimePendingLaunchCount) >= wanted) return false;
  CDPLAB_CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, wanted));
  return true;
}

/// Sets the pending launch pool to `launches`, lowering it too.
void set_pending_launches(std::size_t launches) {
  CDPLAB_CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, launches));
}

std::string mib_text(std::size_t bytes) { return bench::format_count(static_cast<long long>(bytes >> 20)) + " MiB"; }

// ---------------------------------------------------------------------------------------------
// Tables

/// The columns of a table; the versions' cells follow the order of measurement in run_table.
const std::vector<std::string> kColumns = {"N lines",
                                           "vertices",
                                           "a: fixed (host I/O)",
                                           "flat (host I/O)",
                                           "b: CDP, NULL stream",
                                           "c: CDP, named",
                                           "c: CDP, fire-and-forget",
                                           "d: CDP, aggregated",
                                           "flat (GPU)",
                                           "d / flat (GPU)",
                                           "b / d",
                                           "b: free_vertices"};

/// "2.31x": how many times `numerator` is `denominator`.
std::string ratio_text(double numerator, double denominator) {
  if (!(denominator > 0.0)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, numerator / denominator >= 100.0 ? "%.0fx" : "%.2fx", numerator / denominator);
  return text;
}

/// Runs every version on `sizes` lines at `max_vertices` and prints the table and its notes.
/// Returns whether every output matched the CPU.
bool run_table(const Options& options, const std::vector<int>& sizes, int max_vertices, const CdpLimits& limits) {
  const Tessellation t = tessellation_for(max_vertices);
  std::printf("\n### max_vertices = %d (scale %g, min_vertices %d)\n\n", t.max_vertices, static_cast<double>(t.scale),
              t.min_vertices);
  const bench::MarkdownTable table(kColumns);
  table.print_header();

  std::vector<std::string> problems;
  std::vector<std::string> summaries;  // d against b, c and flat, one line per row
  Cell d_large_pool;                   // d at the largest N with the pool raised for b
  double flat_at_largest = 0.0;
  int fewer_runs = 0;
  int pool_restored = 0;
  for (const int n : sizes) {
    const int max_runs = options.quick ? 1 : (n >= 30000 ? 3 : 5);
    const Workload w = make_workload(n, t, options.seed);
    cdplab::DeviceArray<LineVertices> out(static_cast<std::size_t>(n));
    bench::Samples free_times;

    HostVersion fixed(w, &bz::tessellate_fixed);
    HostVersion flat_host(w, &tessellate_flat_host);
    CdpVersion cdp(w, out.data(), free_times);
    ScaledVersion named(w, out.data(), bz::ChildStream::named);
    ScaledVersion fire_and_forget(w, out.data(), bz::ChildStream::fire_and_forget);
    AggregatedVersion aggregated(w);
    FlatVersion flat(w);

    std::vector<std::pair<const char*, Cell>> cells;
    cells.emplace_back(kColumns[2].c_str(), measure(fixed, max_runs));
    cells.emplace_back(kColumns[3].c_str(), measure(flat_host, max_runs));
    if (restore_pending_launches(limits.pending)) ++pool_restored;
    cells.emplace_back(kColumns[4].c_str(), measure(cdp, max_runs));
    cells.emplace_back(kColumns[5].c_str(), measure(named, max_runs));
    cells.emplace_back(kColumns[6].c_str(), measure(fire_and_forget, max_runs));
    // d reserves what it needs itself (one pending launch per parent block): it runs with the pool
    // the process started with, not the one raised for b, which makes every device launch slower.
    set_pending_launches(limits.pending_before);
    cells.emplace_back(kColumns[7].c_str(), measure(aggregated, max_runs));
    if (n == sizes.back()) {
      set_pending_launches(limits.pending);
      d_large_pool = measure(aggregated, max_runs);
      if (!d_large_pool.problem.empty())
        problems.push_back("d with the pool raised for b, N = " + bench::format_count(n) + ": " + d_large_pool.problem);
    }
    set_pending_launches(limits.pending);
    cells.emplace_back(kColumns[8].c_str(), measure(flat, max_runs));
    const double b_ms = cells[2].second.ms;
    const double d_ms = cells[5].second.ms;
    const double flat_ms = cells[6].second.ms;
    if (n == sizes.back()) flat_at_largest = flat_ms;

    std::vector<std::string> row = {bench::format_count(n), bench::format_count(w.expected_total)};
    for (const auto& [name, cell] : cells) {
      std::string text = bench::format_ms(cell.ms);
      if (cell.runs < max_runs) {
        text += " [" + std::to_string(cell.runs) + "]";
        ++fewer_runs;
      }
      row.push_back(text);
      if (!cell.problem.empty())
        problems.push_back(std::string(name) + ", N = " + bench::format_count(n) + ": " + cell.problem);
    }
    row.push_back(ratio_text(d_ms, flat_ms));
    row.push_back(ratio_text(b_ms, d_ms));
    row.push_back(bench::format_ms(free_times.median()));
    table.print_row(row);
    summaries.push_back("N = " + bench::format_count(n) + ": d takes " + bench::format_ms(d_ms) + " ms, " +
                        ratio_text(b_ms, d_ms) + " faster than b (" + bench::format_ms(b_ms) + " ms), " +
                        ratio_text(cells[4].second.ms, d_ms) + " faster than c with fire-and-forget, and " +
                        ratio_text(d_ms, flat_ms) + " the time of flat (GPU) (" + bench::format_ms(flat_ms) + " ms)");
  }

  const char* runs_text = options.quick ? "1 timed run" : "median of 5 timed runs (3 for N >= 30 000)";
  std::printf("\nTimed on the host (std::chrono::steady_clock) around whole calls, in ms: %s after one\n"
              "warm-up call%s.\n",
              runs_text, fewer_runs > 0 ? "; [k]: only k runs, one run took long" : "");
  std::printf("- host I/O columns: host vectors in and out, as tessellate_fixed's signature has it: upload of the\n"
              "  lines, GPU buffers allocated and freed in the call, download of the vertices (a: every line's\n"
              "  fixed slot of max_vertices points; flat: the vertices only).\n");
  std::printf("- b, c, flat (GPU): lines already in GPU memory, vertices left in GPU memory. b and c include each\n"
              "  line's device-heap cudaMalloc and the host's wait for the whole tree of grids; their frees are not\n"
              "  included: b: free_vertices is timed alone (last column), free_scaled_vertices is not timed.\n");
  std::printf("- d: lines already in GPU memory, vertices left in a buffer allocated once per row (every line's\n"
              "  worst case); one child grid per parent block of %d lines, each block's room claimed with one\n"
              "  atomicAdd; includes the reset of the buffer's counter and the host's wait for the whole tree.\n",
              bz::kLinesPerAggregate);
  std::printf("- flat: a count kernel, cub::DeviceScan::ExclusiveSum, the total read back to the host (it sizes the\n"
              "  next grid), one thread per vertex (binary search over the line starts); flat (GPU) allocates its\n"
              "  buffers in the warm-up call and reuses them.\n");
  std::printf("- d runs with the pending launch pool the process started with (%s launches; it reserves one per\n"
              "  parent block itself): with the pool left at %s, as raised for b, d took %s ms at N = %s\n"
              "  (%s the time of flat (GPU)): a larger pool makes every device-side launch slower.\n",
              bench::format_count(static_cast<long long>(limits.pending_before)).c_str(),
              bench::format_count(static_cast<long long>(limits.pending)).c_str(),
              bench::format_ms(d_large_pool.ms).c_str(), bench::format_count(sizes.back()).c_str(),
              ratio_text(d_large_pool.ms, flat_at_largest).c_str());
  std::printf("- d / flat (GPU): d's time over flat (GPU)'s; b / d: b's time over d's (the speedup of aggregation).\n");
  for (const auto& summary : summaries) std::printf("- %s\n", summary.c_str());
  if (pool_restored > 0)
    std::printf("- the pending launch pool was found lowered (by an exercise) %d time(s) and raised again before b.\n",
                pool_restored);
  if (problems.empty()) {
    std::printf("- check of every version's last output against the CPU (each line's vertex count, the total, and\n"
                "  every vertex): ok\n");
  } else {
    std::printf("- check of every version's last output against the CPU: %zu MISMATCH(ES)\n", problems.size());
    for (const auto& problem : problems) std::printf("  - %s\n", problem.c_str());
  }
  return problems.empty();
}

int run(const Options& options) {
  const auto started = std::chrono::steady_clock::now();
  if (!bench::print_device_or_skip("bench-02-bezier")) return bench::kNoGpuExitCode;

  const std::vector<int> sizes = !options.sizes.empty() ? options.sizes
                                 : options.quick        ? std::vector<int>{1000, 10000}
                                                        : std::vector<int>{1000, 3000, 10000, 30000, 100000};
  std::vector<int> tables = {options.max_vertices};
  if (options.large_max_vertices != 0 && options.large_max_vertices != options.max_vertices)
    tables.push_back(options.large_max_vertices);
  const int largest_n = sizes.back();
  int largest_max_vertices = 0;
  for (const int m : tables) largest_max_vertices = std::max(largest_max_vertices, m);

  const CdpLimits limits = raise_cdp_limits(largest_n, largest_max_vertices);
  std::printf("Lines: seeded (seed %llu), integer control points on a 1024 x 1024 canvas, chords 16 to 256 long,\n"
              "curvature 2.5 u^2 for u uniform in [0, 1): most lines gentle, about one in ten at max_vertices.\n",
              static_cast<unsigned long long>(options.seed));
  std::printf("CDP limits, raised before the first CDP call for the largest run (N = %s lines of up to %d\n"
              "vertices; b launches more than 2048 children, the default pool, into the NULL stream):\n",
              bench::format_count(largest_n).c_str(), largest_max_vertices);
  std::printf("- cudaLimitDevRuntimePendingLaunchCount: %s -> %s pending launches\n",
              bench::format_count(static_cast<long long>(limits.pending_before)).c_str(),
              bench::format_count(static_cast<long long>(limits.pending)).c_str());
  std::printf("- cudaLimitMallocHeapSize: %s -> %s (%zu x every line's worst case + %s: the heap cannot grow\n"
              "  once a kernel has used it)\n",
              mib_text(limits.heap_before).c_str(), mib_text(limits.heap).c_str(), kHeapFactor,
              mib_text(kHeapReserve).c_str());

  bool all_ok = true;
  for (const int m : tables) all_ok = run_table(options, sizes, m, limits) && all_ok;

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("\nTotal run time %.1f s.%s\n", seconds,
              all_ok ? "" : " Some outputs were WRONG (see the checks above).");
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return bench::run_main("bench-02-bezier", kUsage, argc, argv, parse_options, run);
}
