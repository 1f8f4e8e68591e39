// Checks of exercise fixed-tessellation: tessellate_fixed and its kernel tessellate_fixed_kernel.
#include "harness.h"

#include "02-bezier.h"
#include "cdplab/bezier.h"
#include "cdplab/random.h"

#include <cstddef>
#include <vector>

namespace {

namespace oracle = cdplab::oracle::bezier;
using cdplab::bezier::Line;
using cdplab::bezier::Tessellation;

/// Tessellates `lines` with tessellate_fixed and judges every line's count and vertices.
void expect_fixed(const std::vector<Line>& lines, const Tessellation& t) {
  const oracle::EmptyAdvice empty{"it came back with no vertices",
                                  "Block b stores line b's count, vertex_count(line, t), in counts[b]; a count "
                                  "of 0 means no thread wrote it"};
  const auto found = cdplab::bezier::tessellate_fixed(lines, t);
  const auto verdict = oracle::judge_lines(lines, t, oracle::found_from_vectors(found), empty);
  CHECK_MESSAGE(verdict.ok, verdict.message);
}

}  // namespace

GPU_CHECK("straight and curved lines") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // Straight lines get the fewest vertices, strongly bent ones the most, and a line whose
  // ends coincide is measured by the reach of its middle control point.
  std::vector<Line> lines;
  for (int i = 0; i < 300; ++i) {
    const double kind = rng.uniform();
    if (kind < 0.3) {
      lines.push_back(oracle::line_with_curvature(rng, 0.0));
    } else if (kind < 0.33) {
      lines.push_back(oracle::closed_line(rng, rng.uniform(0.1, 3.0)));
    } else {
      lines.push_back(oracle::line_with_curvature(rng, rng.uniform(0.05, 3.0)));
    }
  }
  expect_fixed(lines, Tessellation{});
}

GPU_CHECK("worst case vertices") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // Every line needs the most vertices there are, 1024: many more than a block has threads.
  const Tessellation t{512.0f, 4, 1024};
  const auto lines = oracle::lines_with_curvatures(rng, 300, 2.5, 4.0);
  for (const Line& line : lines) REQUIRE(oracle::acceptable_counts(line, t).low == t.max_vertices);
  expect_fixed(lines, t);
}

GPU_CHECK("single line") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // One block in the whole grid, with a count between the bounds.
  expect_fixed({oracle::line_with_curvature(rng, rng.uniform(0.8, 1.6))}, Tessellation{});
}
