// Checks of exercise aggregated-tessellation: tessellate_aggregated, its kernels
// aggregated_parent and aggregated_child, and its speed beside the reference solution's.
//
// Every line is judged by the chapter's oracle, read back from the caller's vertex buffer, and
// the buffer's use is judged too: the lines share it without overlaps and fill its claimed part
// without gaps. The child grids count themselves: one per parent block of kLinesPerAggregate
// lines is expected.
#include "harness.h"
#include "speed.h"

#include "02-bezier.h"
#include "cdplab/bezier.h"
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/gpu_timer.h"
#include "cdplab/random.h"
#include "support/flat_tessellation.h"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace oracle = cdplab::oracle::bezier;
using cdplab::DeviceArray;
using cdplab::bezier::kLinesPerAggregate;
using cdplab::bezier::Line;
using cdplab::bezier::LineVertices;
using cdplab::bezier::Point;
using cdplab::bezier::Tessellation;
using cdplab::bezier::VertexBuffer;
using cdplab::oracle::Verdict;

/// Lines of the largest checks and of the speed check.
constexpr int kManyLines = 100000;

const oracle::EmptyAdvice kEmpty{
    "its record was never written, or its block's claim failed",
    "aggregated_parent writes out[i] for every line that exists: its count, and the block's claimed room plus "
    "the line's offset from the scan. Count 0 and nullptr are only for a claim that does not fit in the buffer, "
    "and the buffer of this check holds every line's worst case"};

/// The parent blocks of `n` lines: one child grid each, since every line has vertices.
unsigned blocks_for(int n) { return static_cast<unsigned>((n + kLinesPerAggregate - 1) / kLinesPerAggregate); }

/// The GPU memory of a workload: the lines, the records and the vertex buffer
/// tessellate_aggregated fills in, and the counter its child grids add themselves to.
struct DeviceWork {
  DeviceArray<Line> lines;
  DeviceArray<LineVertices> out;
  DeviceArray<Point> points;
  DeviceArray<unsigned long long> claimed;
  DeviceArray<unsigned> child_grids;

  DeviceWork(const std::vector<Line>& host, const Tessellation& t)
      : lines(host),
        out(host.size()),
        points(host.size() * static_cast<std::size_t>(t.max_vertices)),  // every line's worst case
        claimed(1),
        child_grids(1) {}

  VertexBuffer buffer() const { return VertexBuffer{points.data(), points.size(), claimed.data()}; }
};

/// What a run left in GPU memory, read back: the records, the buffer's counter and its first
/// `used` points (at most its capacity), and the buffer's device address (compared with the
/// records' pointers as a number, never dereferenced).
struct Stored {
  std::vector<LineVertices> records;
  unsigned long long used;
  std::vector<Point> points;
  const Point* base;
};

/// Lines in global memory, the records and the vertex buffer tessellate_aggregated fills in,
/// and the counter its child grids add themselves to.
struct Workload {
  std::vector<Line> host;
  Tessellation t;
  int n;
  std::size_t capacity;  // points in the buffer: every line's worst case
  DeviceWork device;

  Workload(std::vector<Line> input, const Tessellation& tessellation)
      : host(std::move(input)),
        t(tessellation),
        n(static_cast<int>(host.size())),
        capacity(host.size() * static_cast<std::size_t>(t.max_vertices)),
        device(host, t) {}

  /// Runs tessellate_aggregated; `count_grids` lets the child grids count themselves.
  void run(bool count_grids = true) {
    const std::string call = "tessellate_aggregated(" + std::to_string(n) + " lines): ";
    try {
      cdplab::bezier::tessellate_aggregated(device.lines.data(), device.out.data(), n, device.buffer(), t,
                                            count_grids ? device.child_grids.data() : nullptr);
    } catch (const cdplab::DeviceLaunchError& error) {
      std::string message = call + error.what();
      if (error.code() == cudaErrorLaunchPendingCountExceeded) {
        message += ". The host made room in the pending launch pool for one child grid per parent block: only "
                   "thread 0 of a block launches, once, for all of the block's lines";
      } else {
        message += ". Launch one child grid per block, with (total + kAggregatedChildThreads - 1) / "
                   "kAggregatedChildThreads blocks of kAggregatedChildThreads threads, and only when total > 0";
      }
      throw std::runtime_error(message);
    }
  }

  /// Reads back the records, the buffer's counter and the points it claims.
  Stored read_back() const {
    Stored stored{device.out.download(), device.claimed.download().front(), {}, device.points.data()};
    const std::size_t readable = stored.used < capacity ? static_cast<std::size_t>(stored.used) : capacity;
    stored.points.resize(readable);
    if (readable > 0) {
      CDPLAB_CHECK(
          cudaMemcpy(stored.points.data(), device.points.data(), readable * sizeof(Point), cudaMemcpyDeviceToHost));
    }
    return stored;
  }

  /// Reads every line back from the buffer and judges the lines, then the buffer's use.
  Verdict judge() const {
    const Stored stored = read_back();
    const std::string call = "tessellate_aggregated(" + std::to_string(n) + " lines): ";
    Verdict verdict =
        oracle::judge_lines(host, t, oracle::found_in_buffer(stored.records, stored.base, stored.points), kEmpty);
    if (!verdict.ok) {
      verdict.message = call + verdict.message;
      return verdict;
    }
    verdict = oracle::judge_buffer_use(stored.records, stored.base, capacity, stored.used);
    if (!verdict.ok) verdict.message = call + verdict.message;
    return verdict;
  }

  /// The buffer's counter: how many points were handed out.
  unsigned long long claimed() const { return device.claimed.download().front(); }

  /// The child grids that ran (counted by the given aggregated_child).
  unsigned child_grids_ran() const { return device.child_grids.download().front(); }
};

/// Tessellates and judges `lines`; with `expect_grids`, also the number of child grids.
void expect_tessellation(std::vector<Line> lines, const Tessellation& t, bool expect_grids = true) {
  Workload work(std::move(lines), t);
  work.run();
  const Verdict verdict = work.judge();
  CHECK_MESSAGE(verdict.ok, verdict.message);
  // The launches the grader saw: every line has vertices, so every parent block launches one grid.
  if (verdict.ok) {
    cdplab::harness::expect_launches_exactly(blocks_for(work.n),
                                             "parent block (thread 0 launches one grid for all of its lines)");
  }
  if (!expect_grids) return;
  const unsigned ran = work.child_grids_ran();
  const unsigned expected = blocks_for(work.n);
  CHECK_MESSAGE(ran == expected, work.n << " lines make " << expected << " parent block(s) of " << kLinesPerAggregate
                                        << " lines, and " << ran << " child grid(s) ran; expected one per block: "
                                        << "thread 0 launches, once, for all of its block's lines");
}

/// Lines that all get the fewest vertices: straight ones.
std::vector<Line> straight_lines(cdplab::Random& rng, std::size_t count) {
  return oracle::lines_with_curvatures(rng, count, 0.0, 0.0);
}

/// One timed run of the speed check: 100 000 lines of the course's tessellation (made on the
/// first run, kept for the others).
double time_many_lines(cdplab::Random& rng, bool judge) {
  const Tessellation t{};
  static const std::vector<Line> lines = oracle::lines_with_curvatures(rng, kManyLines, 0.0, 2.5);
  Workload work(lines, t);
  cdplab::GpuTimer timer;
  timer.start();
  work.run(false);
  timer.stop();
  const double ms = timer.elapsed_ms();
  if (judge) {
    const Verdict verdict = work.judge();
    if (!verdict.ok) throw std::runtime_error(verdict.message);
  }
  return ms;
}

}  // namespace

/// The baseline (grader/harness/speed.h): the same lines tessellated without dynamic parallelism
/// (a count kernel, a scan, one thread per vertex), its buffers allocated by an untimed first run.
double time_flat_many_lines(cdplab::Random& rng, bool /*judge*/) {
  const Tessellation t{};
  static const std::vector<Line> lines = oracle::lines_with_curvatures(rng, kManyLines, 0.0, 2.5);
  const cdplab::DeviceArray<Line> device_lines(lines);
  cdplab::support::bezier::FlatTessellator flat(static_cast<int>(lines.size()));
  flat.run(device_lines.data(), t);
  cdplab::GpuTimer timer;
  timer.start();
  flat.run(device_lines.data(), t);
  timer.stop();
  return timer.elapsed_ms();
}

/// The speed check's bar: at most this many times the flat tessellation of the same lines.
constexpr double kTessellationSpeedBar = 4.0;

CDPLAB_SPEED_WORKLOAD("100 000 lines", time_many_lines);
CDPLAB_SPEED_BASELINE("100 000 lines", time_flat_many_lines, "the flat tessellation of the same lines (no CDP)");

GPU_CHECK("lines of every curvature") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // The course's tessellation, from straight lines to strongly bent ones.
  expect_tessellation(oracle::lines_with_curvatures(rng, 3000, 0.0, 2.5), Tessellation{});
  // Not the course's constants: 40 vertices per unit of curvature, between 3 and 48, counts below
  // the minimum and above the maximum, and lines whose ends coincide.
  auto lines = oracle::lines_with_curvatures(rng, 1200, 0.0, 1.5);
  for (int i = 0; i < 40; ++i) lines.push_back(oracle::closed_line(rng, rng.uniform(0.0, 1.5)));
  expect_tessellation(std::move(lines), Tessellation{40.0f, 3, 48});
}

GPU_CHECK("no lines and one line") {
  cdplab::Random rng = cdplab::harness::check_rng();
  {
    Workload none({}, Tessellation{});
    none.run();
    CHECK_MESSAGE(none.claimed() == 0, "no lines, yet the buffer's counter is not 0");
    const unsigned ran = none.child_grids_ran();
    CHECK_MESSAGE(ran == 0, "no lines, yet " << ran << " child grid(s) ran");
    const auto run = cdplab::bezier::tessellate_aggregated(std::vector<Line>{});
    CHECK_MESSAGE(run.lines.empty(), "the host-side call with no lines returned " << run.lines.size() << " lines");
    CHECK_MESSAGE(run.child_grids == 0, "the host-side call with no lines ran " << run.child_grids << " child grid(s)");
  }
  // One line: a parent block in which only thread 0 has a line.
  expect_tessellation(oracle::lines_with_curvatures(rng, 1, 1.0, 2.0), Tessellation{});
  // The host-side call, which reads the vertices back itself.
  const auto lines = oracle::lines_with_curvatures(rng, 1, 0.5, 1.0);
  const auto run = cdplab::bezier::tessellate_aggregated(lines);
  const Verdict verdict = oracle::judge_lines(lines, Tessellation{}, oracle::found_from_vectors(run.lines), kEmpty);
  CHECK_MESSAGE(verdict.ok, "the host-side tessellate_aggregated(1 line): " << verdict.message);
  CHECK_MESSAGE(run.child_grids == 1, "one line, and " << run.child_grids << " child grid(s) ran; expected 1");
}

GPU_CHECK("whole and partial blocks") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // A block short of one line, exactly one block, a last block of one line, and the same at
  // four blocks: the lines past n must count 0 vertices and get no record.
  for (const int n : {kLinesPerAggregate - 1, kLinesPerAggregate, kLinesPerAggregate + 1, 4 * kLinesPerAggregate,
                      4 * kLinesPerAggregate + 1}) {
    INFO(n << " lines");
    expect_tessellation(oracle::lines_with_curvatures(rng, static_cast<std::size_t>(n), 0.0, 2.5), Tessellation{});
  }
}

GPU_CHECK("fewest and most vertices") {
  cdplab::Random rng = cdplab::harness::check_rng();
  {
    INFO("every line straight: t.min_vertices each");
    expect_tessellation(straight_lines(rng, 3 * kLinesPerAggregate + 5), Tessellation{});
  }
  {
    // Up to 1024 vertices per line and every line at the maximum: a full block's child grid has
    // a thread for each of its million vertices.
    INFO("every line at t.max_vertices = 1024");
    const Tessellation t{512.0f, 4, 1024};
    auto lines = oracle::lines_with_curvatures(rng, 2 * kLinesPerAggregate + 3, 2.5, 4.0);
    for (const Line& line : lines) REQUIRE(oracle::acceptable_counts(line, t).low == t.max_vertices);
    expect_tessellation(std::move(lines), t);
  }
  {
    // In every block one line at the maximum among straight ones, at a different place in each
    // block: the child's search must find the long line among short ones.
    INFO("one line at t.max_vertices in every block, the others at t.min_vertices");
    const Tessellation t{64.0f, 4, 256};
    auto lines = straight_lines(rng, 5 * kLinesPerAggregate);
    for (int block = 0; block < 5; ++block) {
      const int place = block == 0   ? 0
                        : block == 4 ? kLinesPerAggregate - 1
                                     : static_cast<int>(rng.integer(1, kLinesPerAggregate - 2));
      lines[static_cast<std::size_t>(block * kLinesPerAggregate + place)] = oracle::line_with_curvature(rng, 5.0);
    }
    expect_tessellation(std::move(lines), t);
  }
}

GPU_CHECK("one hundred thousand lines") {
  cdplab::Random rng = cdplab::harness::check_rng();
  expect_tessellation(oracle::lines_with_curvatures(rng, kManyLines, 0.0, 2.5), Tessellation{}, false);
}

GPU_CHECK("one child grid per block") {
  cdplab::Random rng = cdplab::harness::check_rng();
  Workload work(oracle::lines_with_curvatures(rng, kManyLines, 0.0, 2.5), Tessellation{});
  work.run();
  const unsigned ran = work.child_grids_ran();
  const unsigned blocks = blocks_for(work.n);
  CHECK_MESSAGE(ran == blocks, kManyLines << " lines make " << blocks << " parent blocks of " << kLinesPerAggregate
                                          << " lines, and " << ran << " child grids ran; expected one per block"
                                          << (ran > blocks ? ": only thread 0 of a block launches, once, for all of "
                                                             "its block's lines"
                                                           : ": every block with lines launches its child grid"));
}

// The reference solution takes 1.8 to 2.2 times the flat tessellation on an H100 (the instructor
// guide's speed table); about twice that passes.
GPU_CHECK("speed at 100 000 lines") { cdplab::harness::expect_speed("100 000 lines", kTessellationSpeedBar); }

GPU_CHECK("a failed launch reaches the host") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // Five parent blocks, five child grids: the third fails.
  const auto lines = oracle::lines_with_curvatures(rng, 4 * kLinesPerAggregate + 17, 0.0, 4.0);
  expect_tessellation(lines, Tessellation{});  // the run is right before one of its launches is made to fail
  cdplab::harness::expect_failed_launch_reported([&] { (void)cdplab::bezier::tessellate_aggregated(lines, Tessellation{}); });
}
