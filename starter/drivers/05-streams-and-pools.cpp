// Demo of chapter 05: runs the four exercises of this checkout and shows what they did.
//
// Usage: demo-05-streams-and-pools [--out FOLDER] [seed]
//   --out FOLDER  where the timelines go (default: the current folder)
//   seed          which data the sort and the aggregation get (default 1)
//
// a. concurrency: the same parent (2 blocks x 16 threads, one 50 us child per thread) with each
//    launch strategy; prints each timeline and how many children ran at once, and writes it as
//    timeline-<strategy>.svg (open it in a web browser; hover a bar for its times).
// b. pools: 10000 children, all pending at once; prints the pool the exercise set and what ran.
// c. quicksort: sorts seeded data; prints whether it is sorted, the recursion depth, the grids.
// d. aggregation: expands seeded items per thread, per warp and per block; prints the child
//    grids each launched and whether the outputs are right.
#include "cdplab/check.h"
#include "cdplab/demo.h"
#include "cdplab/random.h"
#include "cdplab/streams.h"
#include "cdplab/timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using cdplab::run_demo;

namespace fs = std::filesystem;
namespace st = cdplab::streams;
namespace tl = cdplab::timeline;

constexpr unsigned kBlocks = 2;
constexpr unsigned kThreads = 16;
constexpr unsigned kChildNs = 50000;
constexpr unsigned kPoolChildren = 10000;
constexpr std::size_t kSortSize = 200000;
constexpr std::size_t kItems = 5000;

/// "null stream" -> "null-stream": the strategy's part of a file name.
std::string file_part(const char* name) {
  std::string part = name;
  std::replace(part.begin(), part.end(), ' ', '-');
  return part;
}

/// a. One parent per strategy: the timeline in the terminal and as an SVG file.
void demo_concurrency(st::LaunchStrategy strategy, const fs::path& out_dir) {
  const std::vector<tl::Span> spans = st::launch_timed_children(strategy, kBlocks, kThreads, kChildNs);
  std::size_t ran = 0;
  for (const tl::Span& s : spans) ran += s.ran() ? 1 : 0;
  const int overall = tl::max_overlap(spans);
  const int per_block = tl::max_overlap_within_group(spans);
  std::printf("  %zu of %zu children ran; at most %d at once, at most %d of one block at once\n", ran, spans.size(),
              overall, per_block);
  std::printf("%s", tl::render_text(spans, 60, static_cast<int>(spans.size())).c_str());

  const std::string title = std::string(st::to_string(strategy)) + ": " + std::to_string(kBlocks) + " blocks x " +
                            std::to_string(kThreads) + " threads, " + std::to_string(kChildNs / 1000) +
                            " us children; up to " + std::to_string(per_block) + " of one block at once";
  const fs::path file = out_dir / ("timeline-" + file_part(st::to_string(strategy)) + ".svg");
  std::ofstream svg(file, std::ios::binary);
  svg << tl::render_svg(spans, title);
  svg.close();
  if (svg) {
    std::printf("  wrote %s\n", file.string().c_str());
  } else {
    std::printf("  could not write %s\n", file.string().c_str());
  }
}

/// b. Many children pending at once.
void demo_pool() {
  const st::PoolRun run = st::launch_many_children(kPoolChildren);
  std::printf("  %u children asked for, pending launch pool: %zu entries (the default is 2048)\n", run.children,
              run.pool_limit);
  std::printf("  %u ran, %u launches failed", run.children_ran, run.launch_failures);
  if (run.launch_failures > 0) {
    std::printf(", the first with %s", cdplab::explain_cuda_error(static_cast<cudaError_t>(run.first_error)).c_str());
  }
  std::printf("\n");
  if (run.children_gave_up) std::printf("  children gave up waiting: some launches were never reported\n");
}

/// c. Quicksort of seeded data with duplicates.
void demo_quicksort(cdplab::Random& rng) {
  std::vector<int> data(kSortSize);
  for (int& x : data) x = static_cast<int>(rng.integer(-50000, 50000));
  const st::SortRun run = st::quicksort(data);
  std::vector<int> expected = data;
  std::sort(expected.begin(), expected.end());
  std::printf("  %zu values: %s; deepest level %d (at most %d), %u grids\n", data.size(),
              run.sorted == expected ? "sorted" : "NOT sorted", run.max_depth, st::kQuicksortMaxDepth, run.grids);
}

/// d. The same items expanded with each aggregation.
void demo_aggregation(cdplab::Random& rng) {
  std::vector<unsigned> counts(kItems);
  std::vector<float> values(kItems);
  for (std::size_t i = 0; i < kItems; ++i) {
    counts[i] = rng.integer(0, 3) == 0 ? 0u : static_cast<unsigned>(rng.integer(1, st::kMaxOutputsPerItem));
    values[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
  }
  for (st::Aggregation how : {st::Aggregation::per_thread, st::Aggregation::per_warp, st::Aggregation::per_block}) {
    run_demo((std::string("d. aggregation, ") + st::to_string(how)).c_str(), [&] {
      const st::ExpandRun run = st::expand_items(counts, values, how);
      std::size_t wrong = run.out.size() == kItems * st::kMaxOutputsPerItem ? 0 : 1;
      for (std::size_t i = 0; wrong == 0 && i < kItems; ++i) {
        for (unsigned k = 0; k < st::kMaxOutputsPerItem; ++k) {
          const float expected = k < counts[i] ? values[i] * static_cast<float>(k + 1) : 0.0f;
          if (std::fabs(run.out[i * st::kMaxOutputsPerItem + k] - expected) > 1e-5f) ++wrong;
        }
      }
      std::printf("  %zu items: %u child grids, outputs %s\n", kItems, run.child_grids, wrong == 0 ? "right" : "WRONG");
    });
  }
}

}  // namespace

int main(int argc, char** argv) {
  cdplab::DemoOptions options;
  if (const int status = cdplab::start_demo("05", argc, argv, options); status >= 0) return status;
  const fs::path& out_dir = options.out_dir;

  for (st::LaunchStrategy strategy :
       {st::LaunchStrategy::null_stream, st::LaunchStrategy::named_streams, st::LaunchStrategy::fire_and_forget}) {
    run_demo((std::string("a. concurrency, ") + st::to_string(strategy)).c_str(),
             [&] { demo_concurrency(strategy, out_dir); });
  }
  run_demo("b. pools", demo_pool);
  cdplab::Random rng(options.seed);
  cdplab::Random sort_rng = rng.derive(1);
  cdplab::Random items_rng = rng.derive(2);
  run_demo("c. quicksort", [&] { demo_quicksort(sort_rng); });
  demo_aggregation(items_rng);
  return 0;
}
