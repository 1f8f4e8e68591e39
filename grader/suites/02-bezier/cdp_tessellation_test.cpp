// Checks of exercise cdp-tessellation: tessellate_cdp and free_vertices, and their kernels
// tessellate_parent, tessellate_child and free_vertices_kernel.
#include "harness.h"

#include "02-bezier.h"
#include "cdplab/bezier.h"
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/random.h"
#include "cdplab/heap_vertices.h"

#include <cstddef>
#include <exception>
#include <string>
#include <vector>

namespace {

namespace oracle = cdplab::oracle::bezier;
namespace support = cdplab::heap_vertices;
using cdplab::DeviceArray;
using cdplab::bezier::Line;
using cdplab::bezier::LineVertices;
using cdplab::bezier::Point;
using cdplab::bezier::Tessellation;

const oracle::EmptyAdvice kEmpty{
    "its child never ran or its cudaMalloc failed",
    "tessellate_parent stores count 0 and nullptr only when its device-side cudaMalloc fails; otherwise it "
    "stores the count and the buffer, then launches the line's child grid (check the launch with "
    "CDPLAB_CHECK_LAUNCH())"};

/// The lines and the records tessellate_cdp fills in, in global memory.
struct DeviceLines {
  DeviceArray<Line> lines;
  DeviceArray<LineVertices> out;
  explicit DeviceLines(const std::vector<Line>& host) : lines(host), out(host.size()) {}
};

/// What tessellate_cdp left: the records, and the vertices they point to, read back.
struct Tessellated {
  std::vector<LineVertices> records;
  std::vector<std::vector<Point>> gathered;
};

/// Lines in global memory and the records tessellate_cdp fills in.
struct Workload {
  std::vector<Line> host;
  int n;
  DeviceLines device;

  explicit Workload(std::vector<Line> input)
      : host(std::move(input)), n(static_cast<int>(host.size())), device(host) {}

  /// Runs tessellate_cdp, reads every line back from the device heap and judges it.
  cdplab::oracle::Verdict tessellate_and_judge(const Tessellation& t) {
    cdplab::bezier::tessellate_cdp(device.lines.data(), device.out.data(), n, t);
    // The records live in global memory; their buffers do not.
    const Tessellated found{device.out.download(), support::gather_vertices(device.out.data(), n, t.max_vertices)};
    cdplab::harness::expect_launches_at_most(static_cast<unsigned long long>(n), "line");
    // A child for every line that got its buffer (a parent that writes a short line itself
    // gives the same vertices without the lesson's launch).
    unsigned long long with_buffer = 0;
    for (const auto& record : found.records) with_buffer += record.vertices != nullptr && record.count > 0 ? 1 : 0;
    cdplab::harness::expect_launches_at_least(with_buffer, "line that got its buffer");
    return oracle::judge_lines(host, t, oracle::found_from_records(found.records, found.gathered), kEmpty);
  }
};

void expect_tessellation(std::vector<Line> lines, const Tessellation& t) {
  Workload work(std::move(lines));
  const auto verdict = work.tessellate_and_judge(t);
  CHECK_MESSAGE(verdict.ok, verdict.message);
  cdplab::harness::release_after_check([&] { cdplab::bezier::free_vertices(work.device.out.data(), work.n); });
}

}  // namespace

GPU_CHECK("curved lines") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // From straight to strongly bent: counts from the fewest (4) to the most (32).
  expect_tessellation(oracle::lines_with_curvatures(rng, 256, 0.0, 2.5), Tessellation{});
  // Nearly straight lines under a generous maximum: each needs a few vertices, and their buffers
  // fit the default 8 MiB heap many times over; buffers of the maximum (32 KiB each, 47 MiB in
  // all) would not. 1500 lines, as in "many lines": fewer children than the default pool holds.
  expect_tessellation(oracle::lines_with_curvatures(rng, 1500, 0.0, 0.5), Tessellation{16.0f, 4, 4096});
}

GPU_CHECK("counts match curvature") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // Not the course's constants: 40 vertices per unit of curvature, between 3 and 48, so a line
  // may need two child blocks. The curvatures reach below the minimum and above the maximum.
  const Tessellation t{40.0f, 3, 48};
  auto lines = oracle::lines_with_curvatures(rng, 600, 0.0, 1.5);
  for (int i = 0; i < 8; ++i) lines.push_back(oracle::closed_line(rng, rng.uniform(0.0, 1.5)));
  expect_tessellation(lines, t);
}

GPU_CHECK("lines of more than 1024 vertices") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // Up to 3000 vertices a line: a child grid of one block of `count` threads cannot launch past
  // 1024 threads, so only a child of several blocks draws these lines (3 MiB of buffers: the
  // default device heap holds them).
  const Tessellation t{1500.0f, 900, 3000};
  expect_tessellation(oracle::lines_with_curvatures(rng, 120, 0.5, 2.5), t);
}

GPU_CHECK("many lines") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // 1500 children: many parent blocks, and still fewer pending launches than the default pool.
  const int n = cdplab::harness::tenth_under_sanitizer(1500);
  expect_tessellation(oracle::lines_with_curvatures(rng, n, 0.0, 2.5), Tessellation{});
}

GPU_CHECK("buffers are freed") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // Every line needs 256 vertices (2 KiB). The heap is set, before any kernel uses it, to what
  // one round of these lines needs with the lesson's margin; rounds repeat until buffers that
  // were never freed would have filled it, and then some.
  const Tessellation t{64.0f, 4, 256};
  Workload work(oracle::lines_with_curvatures(rng, 1024, 4.5, 6.0));
  for (const Line& line : work.host) REQUIRE(oracle::acceptable_counts(line, t).low == t.max_vertices);
  const std::size_t heap = support::set_heap_limit(support::heap_bytes_for(work.host.size(), t.max_vertices));
  const std::size_t per_round = work.host.size() * static_cast<std::size_t>(t.max_vertices) * sizeof(cdplab::bezier::Point);
  const int rounds = 50;
  REQUIRE_MESSAGE(heap / per_round + 2 <= static_cast<std::size_t>(rounds),
                  "the check could not make the device heap tight: it is " << (heap >> 20) << " MiB");

  for (int round = 1; round <= rounds; ++round) {
    const std::string where = "round " + std::to_string(round) + " of " + std::to_string(rounds) + " (heap " +
                              std::to_string(heap >> 20) + " MiB, each round allocates " +
                              std::to_string(per_round >> 10) + " KiB)";
    cdplab::oracle::Verdict verdict;
    try {
      verdict = work.tessellate_and_judge(t);
    } catch (const cdplab::NotImplemented&) {
      throw;
    } catch (const std::exception& error) {
      FAIL(where << ": " << error.what()
                 << ". If earlier rounds passed, the heap filled up with buffers that were never freed, and a "
                    "child was handed a null pointer: check the result of cudaMalloc in tessellate_parent");
    }
    if (!verdict.ok) {
      FAIL(where << ": " << verdict.message
                 << ". One round fits in the heap; if a later round does not, the buffers of the earlier rounds "
                    "are still allocated: free_vertices_kernel must cudaFree every line's buffer");
    }
    cdplab::bezier::free_vertices(work.device.out.data(), work.n);
    const auto freed = oracle::judge_freed(work.device.out.download(), "free_vertices");
    REQUIRE_MESSAGE(freed.ok, where << ": " << freed.message);
  }
}

GPU_CHECK("a failed launch reaches the host") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const Tessellation t;
  expect_tessellation(oracle::lines_with_curvatures(rng, 512, 0.0, 4.0), t);  // right before a launch fails
  DeviceLines device(oracle::lines_with_curvatures(rng, 512, 0.0, 4.0));
  const int n = 512;
  cdplab::harness::expect_failed_launch_reported([&] {
    try {
      cdplab::bezier::tessellate_cdp(device.lines.data(), device.out.data(), n, t);
    } catch (...) {
      cdplab::bezier::free_vertices(device.out.data(), n);  // the lines whose children ran, and the one that failed
      throw;
    }
    cdplab::bezier::free_vertices(device.out.data(), n);
  });
}

GPU_CHECK("a full device heap leaves its line empty") {
  cdplab::Random rng = cdplab::harness::check_rng();
  const Tessellation t;
  const auto lines = oracle::lines_with_curvatures(rng, 512, 0.0, 4.0);
  Workload work(lines);
  cdplab::harness::expect_failed_allocation_handled(
      [&] { expect_tessellation(lines, t); },  // judged first: the point goes only to right output
      [&](const std::string& made) {
        try {
          cdplab::bezier::tessellate_cdp(work.device.lines.data(), work.device.out.data(), work.n, t);
        } catch (const std::exception& error) {
          FAIL_CHECK(made << "; the run ended with: " << error.what() << ". " << oracle::kFailedAllocationAdvice);
          cdplab::harness::release_after_check([&] { cdplab::bezier::free_vertices(work.device.out.data(), work.n); });
          return;
        }
        const Tessellated found{work.device.out.download(),
                                support::gather_vertices(work.device.out.data(), work.n, t.max_vertices)};
        const auto verdict = oracle::judge_lines_one_allocation_failed(
            work.host, t, oracle::found_from_records(found.records, found.gathered), kEmpty);
        CHECK_MESSAGE(verdict.ok, made << "; " << verdict.message);
        cdplab::harness::expect_launches_at_most(static_cast<unsigned long long>(work.n) - 1,
                                                 "line that got its buffer (the empty line launches nothing)");
        cdplab::harness::release_after_check([&] { cdplab::bezier::free_vertices(work.device.out.data(), work.n); });
      });
}
