// The timeline (cdplab/timeline.h): overlap counts and the two charts. And the judges of chapter
// 05's concurrency and pools checks, fed made-up runs: a NULL-stream parent's serial chains
// must fail the concurrency threshold on every run, a named-stream parent's overlapping
// children must pass it, and a pool run short of entries must say how many launches failed.
#include "verdict_checks.h"
#include <doctest/doctest.h>

#include "cdplab/random.h"
#include "cdplab/streams.h"
#include "cdplab/timeline.h"

#include "../suites/05-streams-and-pools/support/streams_verdicts.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace {

using cdplab::streams::PoolRun;
using cdplab::timeline::Span;
namespace tl = cdplab::timeline;
namespace verdicts = cdplab::support::streams;

/// A span of group `g`, lane `l`, from `start` to `end` nanoseconds (global timer values are large).
Span span(unsigned g, unsigned l, unsigned long long start, unsigned long long end) {
  constexpr unsigned long long kEpoch = 1'700'000'000'000'000'000ull;
  Span s;
  s.group = g;
  s.lane = l;
  s.start_ns = kEpoch + start;
  s.end_ns = kEpoch + end;
  return s;
}

Span never_ran(unsigned g, unsigned l) {
  Span s;
  s.group = g;
  s.lane = l;
  return s;
}

/// What a NULL-stream parent records: in every block, each child starts after the one before
/// it has ended (`gap` later, 0: touching); all blocks start together at `offset`.
std::vector<Span> serial_chains(unsigned blocks, unsigned threads, unsigned long long child_ns,
                                unsigned long long gap_ns, unsigned long long offset = 0) {
  std::vector<Span> spans;
  for (unsigned b = 0; b < blocks; ++b) {
    for (unsigned t = 0; t < threads; ++t) {
      const unsigned long long start = offset + t * (child_ns + gap_ns);
      spans.push_back(span(b, t, start, start + child_ns));
    }
  }
  return spans;
}

/// What a named-stream parent records: launch t of a block is issued `issue_ns` after launch
/// t - 1, its child starts `latency_ns` later and works `child_ns`.
std::vector<Span> independent_children(unsigned blocks, unsigned threads, unsigned long long child_ns,
                                       unsigned long long issue_ns, unsigned long long latency_ns) {
  std::vector<Span> spans;
  for (unsigned b = 0; b < blocks; ++b) {
    for (unsigned t = 0; t < threads; ++t) {
      const unsigned long long start = t * issue_ns + latency_ns;
      spans.push_back(span(b, t, start, start + child_ns));
    }
  }
  return spans;
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t begin = 0;
  for (auto end = text.find('\n'); end != std::string::npos; end = text.find('\n', begin)) {
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return lines;
}

}  // namespace

// ----- overlap counts --------------------------------------------------------------------

TEST_CASE("timeline: max_overlap counts spans running at one moment") {
  CHECK(tl::max_overlap({}) == 0);
  CHECK(tl::max_overlap({span(0, 0, 10, 20)}) == 1);
  CHECK(tl::max_overlap({span(0, 0, 10, 20), span(0, 1, 15, 30)}) == 2);
  CHECK(tl::max_overlap({span(0, 0, 10, 20), span(0, 1, 30, 40)}) == 1);
  // A long span with three short ones inside it, two of which overlap each other.
  CHECK(tl::max_overlap({span(0, 0, 0, 100), span(0, 1, 10, 20), span(0, 2, 15, 25), span(0, 3, 50, 60)}) == 3);
  // Same start: both run from the first nanosecond.
  CHECK(tl::max_overlap({span(0, 0, 5, 6), span(0, 1, 5, 9)}) == 2);
  // Too short for the timer to tick: it ran, and it ran while the long one did.
  CHECK(tl::max_overlap({span(0, 0, 7, 7)}) == 1);
  CHECK(tl::max_overlap({span(0, 0, 0, 100), span(0, 1, 7, 7), span(0, 2, 7, 7)}) == 3);
  CHECK(tl::max_overlap({span(0, 0, 0, 7), span(0, 1, 7, 7)}) == 1);
}

TEST_CASE("timeline: touching spans do not overlap, spans that never ran do not count") {
  CHECK(tl::max_overlap({span(0, 0, 10, 20), span(0, 1, 20, 30), span(0, 2, 30, 40)}) == 1);
  // Listed out of order, touching at both ends of the middle one.
  CHECK(tl::max_overlap({span(0, 2, 30, 40), span(0, 0, 10, 20), span(0, 1, 20, 30)}) == 1);
  CHECK(tl::max_overlap({never_ran(0, 0), never_ran(0, 1)}) == 0);
  CHECK(tl::max_overlap({span(0, 0, 10, 20), never_ran(0, 1), never_ran(0, 2)}) == 1);
  Span backwards = span(0, 0, 20, 10);  // an end before the start was not recorded properly
  CHECK_FALSE(backwards.ran());
  CHECK(tl::max_overlap({backwards, span(0, 1, 12, 18)}) == 1);
}

TEST_CASE("timeline: max_overlap_within_group takes the busiest group") {
  // Two groups, each serial in itself, running side by side.
  const auto chains = serial_chains(2, 5, 1000, 0);
  CHECK(tl::max_overlap(chains) == 2);
  CHECK(tl::max_overlap_within_group(chains) == 1);
  auto mixed = chains;
  mixed.push_back(span(1, 5, 500, 2500));  // overlaps two children of group 1, one at a time
  mixed.push_back(span(1, 6, 600, 700));
  CHECK(tl::max_overlap_within_group(mixed) == 3);
  CHECK(tl::max_overlap_within_group({}) == 0);
}

// ----- text chart ------------------------------------------------------------------------

TEST_CASE("timeline: render_text draws one bar per span in the columns it covers") {
  const std::vector<Span> spans = {span(0, 0, 0, 50), span(0, 1, 50, 100), never_ran(1, 3)};
  const std::string text = tl::render_text(spans, 20, 32);
  INFO(text);
  const auto lines = lines_of(text);
  REQUIRE(lines.size() == 4);  // the time line and three rows
  CHECK(contains(lines[0], "0 us .. 0.1 us"));
  CHECK(contains(lines[1], "block 0 thread  0 |##########          |"));
  CHECK(contains(lines[2], "block 0 thread  1 |          ##########|"));
  CHECK(contains(lines[3], "block 1 thread  3 |                    | never ran"));
  // Labels are padded to one width, so the bars line up.
  CHECK(lines[1].find('|') == lines[3].find('|'));
}

TEST_CASE("timeline: render_text keeps short spans visible and sums up rows beyond max_rows") {
  std::vector<Span> spans = {span(0, 0, 0, 1'000'000), span(0, 1, 500'000, 500'001)};
  for (unsigned t = 2; t < 12; ++t) spans.push_back(span(0, t, 0, 10));
  spans.push_back(never_ran(0, 12));
  const std::string text = tl::render_text(spans, 40, 2);
  INFO(text);
  const auto lines = lines_of(text);
  REQUIRE(lines.size() == 4);
  CHECK(count_of(lines[1], "#") == 40);
  CHECK(count_of(lines[2], "#") == 1);  // a nanosecond in a million still gets a column
  CHECK(contains(lines[3], "11 more spans not shown (10 of them ran)"));
  CHECK(contains(tl::render_text({}, 10, 5), "no spans"));
}

// ----- SVG -------------------------------------------------------------------------------

TEST_CASE("timeline: render_svg is a standalone document with a bar per span that ran") {
  const auto spans = serial_chains(3, 4, 20'000, 1'000);
  auto with_missing = spans;
  with_missing.push_back(never_ran(2, 4));
  const std::string svg = tl::render_svg(with_missing, "null stream: 3 blocks & 4 threads <each>");
  CHECK(svg.rfind("<?xml", 0) == 0);
  CHECK(contains(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK(contains(svg, "</svg>"));
  CHECK(contains(svg, "null stream: 3 blocks &amp; 4 threads &lt;each&gt;"));
  CHECK(count_of(svg, "<rect") == spans.size() + 1);  // the background and one bar per span
  CHECK(contains(svg, "never ran"));
  CHECK(contains(svg, ">time (us)<"));                  // the axis and its unit
  CHECK(contains(svg, "block 2 thread  3: 63 us to 83 us"));  // a bar's tooltip
  // Colours by group: each of the three groups has its own.
  CHECK(count_of(svg, "fill=\"#1f77b4\"") == 4);
  CHECK(count_of(svg, "fill=\"#ff7f0e\"") == 4);
  CHECK(count_of(svg, "fill=\"#2ca02c\"") == 4);
  CHECK(contains(tl::render_svg({}, "empty"), "no spans"));
}

// ----- judges of the concurrency checks -----------------------------------------------

TEST_CASE("timeline verdicts: every NULL-stream timeline fails the concurrency threshold") {
  // Serial chains of any length, gap and size, touching or not: at most one child of a block
  // runs at a time, so a parent that launches into the NULL stream never passes.
  cdplab::Random rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const auto blocks = static_cast<unsigned>(rng.integer(1, 8));
    const auto threads = static_cast<unsigned>(rng.integer(1, 64));
    const auto child = static_cast<unsigned long long>(rng.integer(1, 200'000));
    const auto gap = static_cast<unsigned long long>(rng.integer(0, 3) == 0 ? 0 : rng.integer(0, 10'000));
    const auto spans = serial_chains(blocks, threads, child, gap, static_cast<unsigned long long>(rng.integer(0, 999)));
    INFO("trial " << trial << ": " << blocks << " x " << threads << ", child " << child << " ns, gap " << gap);
    CHECK(verdicts::judge_serial_within_blocks(spans).ok);
    CHECK_FALSE(verdicts::judge_overlap_within_blocks(spans, "named streams", "").ok);
  }
  expect_failure(verdicts::judge_overlap_within_blocks(serial_chains(4, 32, 100'000, 2'000), "named streams",
                                                       "Create a stream per thread."),
                 {"named streams: at most 1 children of one block ran", "expected at least 4",
                  "Create a stream per thread.", "block 0 thread 31 |"});
}

TEST_CASE("timeline verdicts: independent children pass the threshold and fail the NULL-stream check") {
  // The measured named-stream launch cost, 0.8 us per launch, and 100 us children: all 32 of
  // a block overlap. Even launches ten times slower leave far more than the threshold.
  for (unsigned long long issue : {800ull, 8'000ull}) {
    const auto spans = independent_children(4, 32, 100'000, issue, 5'000);
    INFO("issued every " << issue << " ns");
    CHECK(tl::max_overlap_within_group(spans) >= verdicts::kConcurrentThreshold);
    expect_pass(verdicts::judge_overlap_within_blocks(spans, "fire-and-forget", ""));
    expect_failure(verdicts::judge_serial_within_blocks(spans),
                   {"null stream: up to", "children of block 0 ran at the same time; expected 1", "without a stream"});
  }
  // Exactly at the threshold passes; one below fails.
  CHECK(verdicts::judge_overlap_within_blocks(independent_children(1, 4, 10'000, 100, 0), "x", "").ok);
  CHECK_FALSE(verdicts::judge_overlap_within_blocks(independent_children(1, 3, 10'000, 100, 0), "x", "").ok);
}

TEST_CASE("timeline verdicts: timer skew between SMs does not make a serial chain overlap") {
  // Each child appears to start 300 ns before the one before it ended.
  std::vector<Span> skewed;
  for (unsigned t = 0; t < 16; ++t) skewed.push_back(span(0, t, t * 20'000, t * 20'000 + 20'300));
  CHECK(tl::max_overlap_within_group(skewed) == 2);
  expect_pass(verdicts::judge_serial_within_blocks(skewed));
}

TEST_CASE("timeline verdicts: NULL-stream blocks must overlap each other") {
  expect_pass(verdicts::judge_blocks_overlap(serial_chains(8, 8, 100'000, 1'000)));
  // Blocks one after the other: what a parent would show if blocks waited for each other.
  std::vector<Span> one_after_another;
  for (unsigned b = 0; b < 8; ++b) {
    for (const Span& s : serial_chains(1, 8, 100'000, 0, b * 800'000ull)) {
      Span moved = s;
      moved.group = b;
      one_after_another.push_back(moved);
    }
  }
  expect_failure(verdicts::judge_blocks_overlap(one_after_another),
                 {"at most 1 child ran at any moment over all blocks", "expected at least 2", "block 3 thread  7"});
}

TEST_CASE("timeline verdicts: children that never ran, or never ended, are reported as such") {
  // The spans are the grids the grader recorded: a child that never ran has none.
  auto spans = serial_chains(4, 32, 20'000, 0);
  expect_pass(verdicts::judge_all_ran(spans, 4, 32));
  expect_failure(verdicts::judge_all_ran(spans, 4, 16),
                 {"128 child grids ran; expected 64, one per parent thread",
                  "64 came from outside the parent's 4 x 16 threads"});
  std::vector<Span> missing;  // block 1's threads 5 and 6 launched nothing
  for (const Span& s : spans)
    if (s.group != 1 || (s.lane != 5 && s.lane != 6)) missing.push_back(s);
  expect_failure(verdicts::judge_all_ran(missing, 4, 32),
                 {"126 child grids ran; expected 128", "block 1 thread 5 launched 0",
                  "blockIdx.x * blockDim.x + threadIdx.x"});
  // The right number in all, from the wrong threads: thread 5 of block 1 launched twice, thread 6 never.
  auto doubled = spans;
  doubled[38].lane = 5;
  expect_failure(verdicts::judge_all_ran(doubled, 4, 32),
                 {"128 child grids ran; expected 128", "block 1 thread 5 launched 2"});
  // Block 0 launched for block 1: the per-block count, not only the total, is judged.
  auto shifted = spans;
  for (auto& s : shifted)
    if (s.group == 1) s.group = 0;
  expect_failure(verdicts::judge_all_ran(shifted, 4, 32), {"block 0 thread 0 launched 2"});
  auto stranger = spans;
  stranger.push_back(span(7, 0, 10, 20));
  expect_failure(verdicts::judge_all_ran(stranger, 4, 32), {"129 child grids ran", "1 came from outside the parent's 4 x 32 threads"});
  auto unfinished = spans;
  unfinished[37].end_ns = 0;
  unfinished[38].end_ns = 0;
  expect_failure(verdicts::judge_all_ran(unfinished, 4, 32),
                 {"2 of 128 child grids started but were never seen to end", "launched by block 1 thread 5"});
  expect_failure(verdicts::judge_all_ran({}, 4, 32), {"no child grid ran", "where it expected 128"});
}

TEST_CASE("timeline verdicts: children that worked less than child_ns, or wrote another's span, are reported") {
  const auto spans = serial_chains(4, 32, 20'000, 0, 5'000);
  expect_pass(verdicts::judge_children_worked(spans, 20'000));
  expect_failure(verdicts::judge_children_worked(spans, 20'001),
                 {"the child launched by block 0 thread 0 ran 20000 ns, less than the 20001 ns", "child_ns"});
  auto one_short = spans;
  one_short[70].end_ns -= 1;  // block 2 thread 6
  expect_failure(verdicts::judge_children_worked(one_short, 20'000), {"block 2 thread 6 ran 19999 ns"});

  // What launch_timed_children returns is judged slot by slot: in slot order, each one written, each
  // within the recorded run of the child its own thread launched.
  const auto written_by = [](std::vector<Span> children) {  // what each child writes: its own run, inside its grid
    for (Span& s : children) {
      s.start_ns += 300;
      s.end_ns -= 200;
    }
    return children;
  };
  const auto recorded = serial_chains(4, 32, 20'500, 0, 5'000);
  const auto returned = written_by(recorded);
  expect_pass(verdicts::judge_returned_spans(returned, recorded, 4, 32, 20'000));
  expect_failure(verdicts::judge_returned_spans(returned, recorded, 4, 16, 20'000),
                 {"returned 128 spans; expected 64"});
  auto overwritten = returned;  // every child given slot threadIdx.x: only block 0's slots written
  for (std::size_t slot = 32; slot < overwritten.size(); ++slot) overwritten[slot].start_ns = overwritten[slot].end_ns = 0;
  expect_failure(verdicts::judge_returned_spans(overwritten, recorded, 4, 32, 20'000),
                 {"span 32 of what launch_timed_children returned (block 1 thread 0) was never written",
                  "blockIdx.x * blockDim.x + threadIdx.x"});
  auto too_short = returned;
  too_short[70].end_ns = too_short[70].start_ns + 19'999;  // block 2 thread 6
  expect_failure(verdicts::judge_returned_spans(too_short, recorded, 4, 32, 20'000),
                 {"span 70", "(block 2 thread 6) lasted 19999 ns, less than 20000"});
  auto backwards = returned;
  std::swap(backwards[3].start_ns, backwards[3].end_ns);
  expect_failure(verdicts::judge_returned_spans(backwards, recorded, 4, 32, 20'000), {"span 3", "lasted 0 ns"});
  // Slots given out shifted by one within a block: every slot written, each by a neighbour's child.
  auto shifted = returned;
  for (unsigned b = 0; b < 4; ++b)
    for (unsigned t = 0; t < 32; ++t) shifted[b * 32 + (t + 1) % 32] = returned[b * 32 + t];
  expect_failure(verdicts::judge_returned_spans(shifted, recorded, 4, 32, 20'000),
                 {"span 0 of what launch_timed_children returned (block 0 thread 0) was not written by the child "
                  "that thread launched: that child's grid ran 20500 ns, and the span starts 635800 ns after that "
                  "grid started and lasts 20000 ns"});
  auto early = returned;  // a span that starts before its child's grid did
  early[5].start_ns -= 1'000;
  expect_failure(verdicts::judge_returned_spans(early, recorded, 4, 32, 20'000),
                 {"span 5", "the span starts 700 ns before that grid started"});
}

// ----- judges of the pools checks --------------------------------------------------------

TEST_CASE("timeline verdicts: a pool run short of entries says how many launches failed") {
  PoolRun full;
  full.children = 3000;
  full.children_ran = 3000;
  full.pool_limit = 4024;
  expect_pass(verdicts::judge_pool_run(full));

  // The measured CDP2 behaviour: 3000 held children, the default pool of 2048.
  PoolRun short_pool;
  short_pool.children = 3000;
  short_pool.children_ran = 2048;
  short_pool.launch_failures = 952;
  short_pool.first_error = static_cast<int>(cudaErrorLaunchPendingCountExceeded);
  short_pool.pool_limit = 2048;
  expect_failure(verdicts::judge_pool_run(short_pool),
                 {"952 of 3000 launches failed with error 69 (cudaErrorLaunchPendingCountExceeded)",
                  "the pool held 2048 pending launches", "cudaLimitDevRuntimePendingLaunchCount"});

  PoolRun other_error = short_pool;
  other_error.first_error = static_cast<int>(cudaErrorInvalidConfiguration);
  expect_failure(verdicts::judge_pool_run(other_error), {"952 of 3000 launches failed, the first with", "(9)"});

  PoolRun silent = full;
  silent.children_ran = 100;
  silent.children_gave_up = true;
  expect_failure(verdicts::judge_pool_run(silent),
                 {"children gave up waiting: report every launch with grader::report_launch", "100 of 3000"});

  PoolRun missing = full;
  missing.children_ran = 2999;
  expect_failure(verdicts::judge_pool_run(missing), {"2999 of 3000 children ran", "held_child<<<1, 32>>>"});
}

TEST_CASE("timeline verdicts: the pool is sized from the workload") {
  auto run = [](unsigned children, std::size_t limit) {
    PoolRun r;
    r.children = children;
    r.children_ran = children;
    r.pool_limit = limit;
    return r;
  };
  expect_pass(verdicts::judge_pool_sizing(run(5000, 6024), run(30000, 31024)));
  expect_pass(verdicts::judge_pool_sizing(run(5000, 5000), run(30000, 60000)));
  // A fixed limit does not follow the workload: within the bounds of the smaller run, it is too
  // small for the larger one; large enough for the larger one, it is past the smaller's bound.
  expect_failure(verdicts::judge_pool_sizing(run(5000, 24000), run(30000, 24000)),
                 {"for 30000 children", "fewer than the children"});
  expect_failure(verdicts::judge_pool_sizing(run(5000, 31024), run(30000, 31024)), {"for 5000 children", "more than"});
  // The pool in effect (read back by the check) holds fewer than the children.
  expect_failure(verdicts::judge_pool_sizing(run(5000, 0), run(30000, 31024)),
                 {"for 5000 children the pending launch pool in effect held 0 entries"});
  // The upper bound: four times the children plus 4096, however the pool follows the workload.
  expect_pass(verdicts::judge_pool_sizing(run(5000, 24096), run(30000, 124096)));
  expect_failure(verdicts::judge_pool_sizing(run(5000, 24097), run(30000, 124096)),
                 {"for 5000 children", "more than 24096"});
  expect_failure(verdicts::judge_pool_sizing(run(5000, 1'000'000), run(30000, 6'000'000)),
                 {"four times the children plus 4096"});
  expect_failure(verdicts::judge_pool_sizing(run(5000, 6024), run(30000, 20000)), {"for 30000 children"});
}
