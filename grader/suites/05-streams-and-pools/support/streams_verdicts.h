/// @file streams_verdicts.h
/// @brief How the checks of chapter 05's concurrency and pools exercises judge a run: pure
///        functions of the recorded timeline or PoolRun, so that the project's CPU tests can
///        feed them made-up runs (serial, overlapping, short of pool entries) as well.
#pragma once

#include "compare.h"
#include "cdplab/check.h"
#include "cdplab/streams.h"
#include "cdplab/timeline.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

namespace cdplab::support::streams {

using cdplab::oracle::Verdict;
using cdplab::streams::PoolRun;
using cdplab::timeline::Span;

/// How many of one block's children must run at once for a strategy to count as concurrent.
/// A NULL-stream parent never gets past 1; a named-stream or fire-and-forget parent of 32
/// threads per block issues its launches within a few tens of microseconds, so children of
/// 100 us overlap by far more than this on every run.
constexpr int kConcurrentThreshold = 4;

/// Spans are shortened by this much at their end before the NULL-stream check counts overlaps,
/// so that a few hundred nanoseconds of timer skew between SMs can never show a chain of
/// children that ran one after the other as overlapping. Children run for 20 us or more.
constexpr unsigned long long kClockSlackNs = 1000;

/// cudaLimitDevRuntimePendingLaunchCount before anything raises it.
constexpr std::size_t kDefaultPendingLaunches = 2048;

/// The text timeline of the spans of blocks 0 .. blocks - 1, introduced by a line.
inline std::string timeline_of_first_blocks(const std::vector<Span>& spans, unsigned blocks) {
  std::vector<Span> first;
  for (const Span& s : spans)
    if (s.group < blocks) first.push_back(s);
  return "\nthe children of the first " + (blocks == 1 ? std::string("block") : std::to_string(blocks) + " blocks") +
         ", in time:\n" + timeline::render_text(first, 60, 48);
}

/// The block with the most children running at once, and that number.
inline std::pair<unsigned, int> busiest_block(const std::vector<Span>& spans) {
  std::pair<unsigned, int> best{0, 0};
  std::vector<unsigned> groups;
  for (const Span& s : spans) groups.push_back(s.group);
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  for (unsigned g : groups) {
    std::vector<Span> members;
    for (const Span& s : spans)
      if (s.group == g) members.push_back(s);
    const int overlap = timeline::max_overlap(members);
    if (overlap > best.second) best = {g, overlap};
  }
  return best;
}

/// Every one of the blocks x threads children ran: the grader recorded one child grid per parent
/// thread (group: the launching block, lane: the launching thread), and saw each of them end.
inline Verdict judge_all_ran(const std::vector<Span>& spans, unsigned blocks, unsigned threads) {
  const std::size_t expected = std::size_t{blocks} * threads;
  const std::string launch = "Every parent thread launches concurrency_child<<<1, kConcurrencyChildThreads>>>(spans, "
                             "slot, child_ns) once, with its own slot blockIdx.x * blockDim.x + threadIdx.x";
  std::ostringstream out;
  if (spans.empty()) {
    out << "no child grid ran: the grader recorded no grid launched from device code, where it expected " << expected
        << " (one per parent thread). " << launch;
    return oracle::fail(out.str());
  }
  // Children per parent thread: exactly one each, from the threads of the parent grid only.
  std::vector<unsigned> per_thread(expected, 0);
  std::size_t strangers = 0;
  for (const Span& s : spans) {
    if (s.group < blocks && s.lane < threads) ++per_thread[std::size_t{s.group} * threads + s.lane];
    else ++strangers;
  }
  const auto odd = std::find_if(per_thread.begin(), per_thread.end(), [](unsigned n) { return n != 1; });
  if (spans.size() != expected || odd != per_thread.end() || strangers > 0) {
    out << spans.size() << " child grids ran; expected " << expected << ", one per parent thread";
    if (odd != per_thread.end()) {
      const auto at = static_cast<std::size_t>(odd - per_thread.begin());
      out << "; block " << at / threads << " thread " << at % threads << " launched " << *odd;
    } else if (strangers > 0) {
      out << "; " << strangers << " came from outside the parent's " << blocks << " x " << threads << " threads";
    }
    out << ". " << launch;
    return oracle::fail(out.str());
  }
  std::size_t unfinished = 0;
  const Span* first = nullptr;
  for (const Span& s : spans) {
    if (s.ran()) continue;
    if (unfinished++ == 0) first = &s;
  }
  if (unfinished == 0) return oracle::pass();
  out << unfinished << " of " << expected << " child grids started but were never seen to end, the first of them "
      << "launched by block " << first->group << " thread " << first->lane << ". Each child ends once it has worked "
      << "child_ns: a child that never ends waits for something";
  return oracle::fail(out.str());
}

/// Every recorded child grid lasted at least `child_ns`: the parent passed its own child_ns on (a
/// child told to work less ends early, and a timeline of such children tells the strategies apart
/// no more). The record's start and end enclose the child's own wait, on the same global timer.
inline Verdict judge_children_worked(const std::vector<Span>& spans, unsigned child_ns) {
  const auto short_one =
      std::find_if(spans.begin(), spans.end(), [&](const Span& s) { return s.end_ns - s.start_ns < child_ns; });
  if (short_one == spans.end()) return oracle::pass();
  std::ostringstream out;
  out << "the child launched by block " << short_one->group << " thread " << short_one->lane << " ran "
      << short_one->end_ns - short_one->start_ns << " ns, less than the " << child_ns
      << " ns it is given to work: pass concurrency_parent's child_ns on to concurrency_child unchanged";
  return oracle::fail(out.str());
}

/// What launch_timed_children returned: one span per parent thread, in slot order, each written by
/// the child its own thread launched. `recorded` are the grids the grader saw (group: launching
/// block, lane: launching thread; judge_all_ran has passed them): a child's own start and end lie
/// within its grid's recorded start and end, so a slot written by another thread's child (slots
/// given out shifted, say) shows. A child given another thread's slot also leaves its own at zero.
inline Verdict judge_returned_spans(const std::vector<Span>& returned, const std::vector<Span>& recorded,
                                    unsigned blocks, unsigned threads, unsigned child_ns) {
  const std::size_t expected = std::size_t{blocks} * threads;
  std::ostringstream out;
  if (returned.size() != expected) {
    out << "launch_timed_children returned " << returned.size() << " spans; expected " << expected
        << ", one per parent thread";
    return oracle::fail(out.str());
  }
  const std::string advice = ": each thread passes its own slot, blockIdx.x * blockDim.x + threadIdx.x, and child_ns "
                             "to concurrency_child, so that every child records its own span";
  const auto length_ns = [](const Span& s) { return s.end_ns > s.start_ns ? s.end_ns - s.start_ns : 0ull; };
  for (std::size_t slot = 0; slot < expected; ++slot) {
    const Span& s = returned[slot];
    if (s.start_ns != 0 && s.end_ns >= s.start_ns + child_ns) continue;
    out << "span " << slot << " of what launch_timed_children returned (block " << slot / threads << " thread "
        << slot % threads << ") ";
    if (s.start_ns == 0) out << "was never written";
    else out << "lasted " << length_ns(s) << " ns, less than " << child_ns;
    out << advice;
    return oracle::fail(out.str());
  }
  for (const Span& grid : recorded) {
    if (grid.group >= blocks || grid.lane >= threads) continue;
    const std::size_t slot = std::size_t{grid.group} * threads + grid.lane;
    const Span& s = returned[slot];
    if (s.start_ns >= grid.start_ns && s.end_ns <= grid.end_ns) continue;
    const bool later = s.start_ns >= grid.start_ns;
    out << "span " << slot << " of what launch_timed_children returned (block " << grid.group << " thread "
        << grid.lane << ") was not written by the child that thread launched: that child's grid ran "
        << grid.end_ns - grid.start_ns << " ns, and the span starts "
        << (later ? s.start_ns - grid.start_ns : grid.start_ns - s.start_ns) << " ns " << (later ? "after" : "before")
        << " that grid started and lasts " << length_ns(s) << " ns" << advice;
    return oracle::fail(out.str());
  }
  return oracle::pass();
}

/// NULL stream: the children of each block ran one at a time.
inline Verdict judge_serial_within_blocks(const std::vector<Span>& spans) {
  std::vector<Span> trimmed = spans;
  for (Span& s : trimmed) s.end_ns = std::max(s.start_ns, s.end_ns - std::min(s.end_ns, kClockSlackNs));
  const auto [block, overlap] = busiest_block(trimmed);
  if (overlap <= 1) return oracle::pass();
  std::ostringstream out;
  out << "null stream: up to " << overlap << " children of block " << block << " ran at the same time; expected 1. "
      << "Launches of one block into the NULL stream run one after the other: for this strategy launch without a "
      << "stream argument (concurrency_child<<<1, kConcurrencyChildThreads>>>), not into a stream of your own"
      << timeline_of_first_blocks(spans, 1);
  return oracle::fail(out.str());
}

/// NULL stream, several blocks: children of different blocks ran at the same time.
inline Verdict judge_blocks_overlap(const std::vector<Span>& spans) {
  const int overlap = timeline::max_overlap(spans);
  if (overlap >= 2) return oracle::pass();
  std::ostringstream out;
  out << "null stream: at most " << overlap << " child ran at any moment over all blocks; expected at least 2. "
      << "Each block has a NULL stream of its own, so the chains of different blocks run side by side: let every "
      << "thread of every block launch its own child, with nothing that makes one block wait for another"
      << timeline_of_first_blocks(spans, 4);
  return oracle::fail(out.str());
}

/// Named streams or fire-and-forget: at least `threshold` children of one block ran at once.
/// `strategy` names it in the message; `advice` says how to launch it.
inline Verdict judge_overlap_within_blocks(const std::vector<Span>& spans, const std::string& strategy,
                                           const std::string& advice, int threshold = kConcurrentThreshold) {
  const int overlap = timeline::max_overlap_within_group(spans);
  if (overlap >= threshold) return oracle::pass();
  std::ostringstream out;
  out << strategy << ": at most " << overlap << " children of one block ran at the same time; expected at least "
      << threshold << " (in the NULL stream it is 1: each child waits for the one before it). " << advice
      << timeline_of_first_blocks(spans, 1);
  return oracle::fail(out.str());
}

/// Every child ran, no launch failed, no child gave up waiting.
inline Verdict judge_pool_run(const PoolRun& run) {
  std::ostringstream out;
  if (run.launch_failures > 0) {
    const auto code = static_cast<cudaError_t>(run.first_error);
    if (code == cudaErrorLaunchPendingCountExceeded) {
      out << run.launch_failures << " of " << run.children << " launches failed with error " << run.first_error
          << " (cudaErrorLaunchPendingCountExceeded): the pool held " << run.pool_limit
          << " pending launches; in CDP2 a launch that finds the pool full fails, and its child never runs. "
          << "Before launching pool_parent, raise cudaLimitDevRuntimePendingLaunchCount to at least the "
          << run.children << " children that are pending at once, plus a margin";
    } else {
      out << run.launch_failures << " of " << run.children << " launches failed, the first with "
          << cdplab::explain_cuda_error(code);
    }
    return oracle::fail(out.str());
  }
  if (run.children_gave_up) {
    out << "children gave up waiting: report every launch with grader::report_launch (right after the launch, with "
        << "cudaGetLastError()). Each child waits until all " << run.children
        << " launches have been reported, the failed ones too; " << run.children_ran << " of " << run.children
        << " children ran";
    return oracle::fail(out.str());
  }
  if (run.children_ran != run.children) {
    out << run.children_ran << " of " << run.children << " children ran, yet no launch was reported as failed: every "
        << "thread i < " << run.children << " of pool_parent launches grader::held_child<<<1, 32>>>(board, i) once";
    return oracle::fail(out.str());
  }
  return oracle::pass();
}

/// The pool limits of two runs, each started from the default limit, show a pool sized from
/// the workload: each holds that run's children, and the larger workload got the larger pool
/// (a fixed limit, however large, does not grow).
/// The most entries a pool sized from the workload may hold, from the default pool: the lesson's
/// bound (four times the children plus 4096), far above what a margin needs.
inline std::size_t most_pool_entries(unsigned children) { return 4 * std::size_t{children} + 4096; }

inline Verdict judge_pool_sizing(const PoolRun& smaller, const PoolRun& larger) {
  std::ostringstream out;
  for (const PoolRun* run : {&smaller, &larger}) {
    if (run->pool_limit < run->children) {
      out << "for " << run->children << " children the pending launch pool in effect held " << run->pool_limit
          << " entries, fewer than the children pending at once: set cudaLimitDevRuntimePendingLaunchCount from "
          << "the workload";
      return oracle::fail(out.str());
    }
    if (run->pool_limit > most_pool_entries(run->children)) {
      out << "for " << run->children << " children the pending launch pool in effect held " << run->pool_limit
          << " entries (the run started from the default of " << kDefaultPendingLaunches << "): more than "
          << most_pool_entries(run->children) << ", four times the children plus 4096. Every entry costs device "
          << "memory: size the pool from the workload, with a margin, not a large fixed number";
      return oracle::fail(out.str());
    }
  }
  if (larger.pool_limit <= smaller.pool_limit) {
    out << "the pool does not follow the workload: " << smaller.children << " children got a pool of "
        << smaller.pool_limit << ", " << larger.children << " children a pool of " << larger.pool_limit
        << " (both runs started from the default of " << kDefaultPendingLaunches << "). Compute the limit from the "
        << "number of children (plus a margin) instead of a fixed number: every pool entry costs device memory";
    return oracle::fail(out.str());
  }
  return oracle::pass();
}

}  // namespace cdplab::support::streams
