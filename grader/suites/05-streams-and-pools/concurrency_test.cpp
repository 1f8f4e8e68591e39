// Checks of exercise concurrency: launch_timed_children and its kernel concurrency_parent, which
// launches the file's concurrency_child. The checks read when each child grid ran from the
// grader's own record of the exercise's grids (device_code.h: check_grid_timeline) and judge the
// order from that record alone (support/streams_verdicts.h); of the spans the children write they
// ask only that each lies within the recorded run of the child that should have written it.
#include "harness.h"

#include "cdplab/streams.h"
#include "cdplab/timeline.h"
#include "support/streams_verdicts.h"

#include <algorithm>
#include <tuple>
#include <vector>

// Timelines of overlapping children: these checks have the GPU to themselves, and every one of
// them records the grids it judges, whoever runs it.
CDPLAB_SUITE_RUNS_ALONE;
CDPLAB_SUITE_RECORDS_GRIDS;

namespace {

namespace verdicts = cdplab::support::streams;
using cdplab::harness::RecordedGrid;
using cdplab::streams::LaunchStrategy;
using cdplab::timeline::Span;

/// The grids device-side launches made in the run just recorded, as spans: group the launching
/// block, lane the launching thread; by block, then in the order they were launched.
std::vector<Span> recorded_children(const cdplab::harness::RecordedTimeline& timeline) {
  std::vector<const RecordedGrid*> children;
  for (const RecordedGrid& g : timeline.grids)
    if (g.from_device) children.push_back(&g);
  std::stable_sort(children.begin(), children.end(), [](const RecordedGrid* a, const RecordedGrid* b) {
    return std::tie(a->parent_block, a->launched) < std::tie(b->parent_block, b->launched);
  });
  std::vector<Span> spans;
  for (const RecordedGrid* g : children) {
    Span span;
    span.group = static_cast<unsigned>(g->parent_block);
    span.lane = static_cast<unsigned>(g->parent_thread);
    span.start_ns = g->start;
    span.end_ns = g->end;  // 0 where no end was seen: the span did not run to its end
    spans.push_back(span);
  }
  return spans;
}

/// Runs the exercise and checks that every child ran; returns the recorded spans (empty when not
/// all ran, or when the run could not be recorded).
std::vector<Span> run_children(LaunchStrategy strategy, unsigned blocks, unsigned threads, unsigned child_ns) {
  cdplab::harness::advise_on_hang(
      "each child works well under a millisecond and the parent never waits for one: a hang means a "
      "kernel spins on something that never happens");
  const std::vector<Span> returned = cdplab::streams::launch_timed_children(strategy, blocks, threads, child_ns);
  const auto timeline = cdplab::harness::check_grid_timeline();
  if (timeline.runs == 0) {
    FAIL_CHECK("the grader recorded none of the exercise's grids, so it cannot tell when the children ran");
    return {};
  }
  if (timeline.left_out > 0 || !timeline.every_launch_recorded) {
    FAIL_CHECK("the grader could not record every grid of the run (" << timeline.left_out
                                                                      << " left out): its order cannot be judged");
    return {};
  }
  const std::vector<Span> spans = recorded_children(timeline);
  const auto all_ran = verdicts::judge_all_ran(spans, blocks, threads);
  CHECK_MESSAGE(all_ran.ok, all_ran.message);
  if (!all_ran.ok) return {};
  const auto worked = verdicts::judge_children_worked(spans, child_ns);
  CHECK_MESSAGE(worked.ok, worked.message);
  const auto written = verdicts::judge_returned_spans(returned, spans, blocks, threads, child_ns);
  CHECK_MESSAGE(written.ok, written.message);
  // The timeline may look right with children in another kind of stream: each launch is judged
  // where it went, as the grader saw it made.
  using cdplab::harness::LaunchStream;
  const LaunchStream into = strategy == LaunchStrategy::null_stream     ? LaunchStream::null_stream
                            : strategy == LaunchStrategy::named_streams ? LaunchStream::named
                                                                        : LaunchStream::fire_and_forget;
  cdplab::harness::expect_every_launch_into(into, std::string("the ") + cdplab::streams::to_string(strategy) +
                                                      " strategy");
  cdplab::harness::expect_launches_exactly(static_cast<unsigned long long>(blocks) * threads, "parent thread");
  return spans;
}

const char* const kNamedStreamsAdvice =
    "Each thread creates its own stream with cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), launches "
    "into it (the fourth launch parameter) and then destroys it with cudaStreamDestroy.";
const char* const kFireAndForgetAdvice =
    "Launch into cudaStreamFireAndForget (the fourth launch parameter): every such launch runs independently of the "
    "others.";

}  // namespace

GPU_CHECK("null stream serialises each block") {
  const auto spans = run_children(LaunchStrategy::null_stream, 4, 32, 20000);
  if (spans.empty()) return;
  const auto verdict = verdicts::judge_serial_within_blocks(spans);
  CHECK_MESSAGE(verdict.ok, verdict.message);
}

GPU_CHECK("null stream blocks overlap each other") {
  // Eight chains of eight 100 us children: the chains start together and last 800 us each.
  const auto spans = run_children(LaunchStrategy::null_stream, 8, 8, 100000);
  if (spans.empty()) return;
  const auto verdict = verdicts::judge_blocks_overlap(spans);
  CHECK_MESSAGE(verdict.ok, verdict.message);
}

GPU_CHECK("named streams overlap") {
  const auto spans = run_children(LaunchStrategy::named_streams, 4, 32, 100000);
  if (spans.empty()) return;
  const auto verdict = verdicts::judge_overlap_within_blocks(spans, "named streams", kNamedStreamsAdvice);
  CHECK_MESSAGE(verdict.ok, verdict.message);
}

GPU_CHECK("fire-and-forget overlaps") {
  const auto spans = run_children(LaunchStrategy::fire_and_forget, 4, 32, 100000);
  if (spans.empty()) return;
  const auto verdict = verdicts::judge_overlap_within_blocks(spans, "fire-and-forget", kFireAndForgetAdvice);
  CHECK_MESSAGE(verdict.ok, verdict.message);
}

GPU_CHECK("one thread and a block of 1024 threads") {
  // The sizes the contract allows at its ends: a parent of one thread, and one block of the most
  // threads a block may have (code that assumes blocks of 32 fails here, not in the checks above).
  for (const LaunchStrategy strategy :
       {LaunchStrategy::null_stream, LaunchStrategy::named_streams, LaunchStrategy::fire_and_forget}) {
    CAPTURE(cdplab::streams::to_string(strategy));
    (void)run_children(strategy, 1, 1, 20000);
    const auto spans = run_children(strategy, 1, 1024, 20000);
    if (spans.empty()) continue;
    const auto verdict =
        strategy == LaunchStrategy::null_stream ? verdicts::judge_serial_within_blocks(spans)
        : strategy == LaunchStrategy::named_streams
            ? verdicts::judge_overlap_within_blocks(spans, "named streams", kNamedStreamsAdvice)
            : verdicts::judge_overlap_within_blocks(spans, "fire-and-forget", kFireAndForgetAdvice);
    CHECK_MESSAGE(verdict.ok, verdict.message);
  }
}

GPU_CHECK("a failed launch reaches the host") {
  for (const LaunchStrategy strategy :
       {LaunchStrategy::null_stream, LaunchStrategy::named_streams, LaunchStrategy::fire_and_forget}) {
    CAPTURE(cdplab::streams::to_string(strategy));
    if (run_children(strategy, 4, 8, 1000).empty()) continue;  // right before one of its launches is made to fail
    cdplab::harness::expect_failed_launch_reported(
        [&] { (void)cdplab::streams::launch_timed_children(strategy, 4, 8, 1000); });
  }
}
