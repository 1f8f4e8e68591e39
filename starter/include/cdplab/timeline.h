/// @file timeline.h
/// @brief When grids ran: spans of GPU time, how many overlapped, and pictures of them
///        (a text chart for the terminal, an SVG for the browser).
///
/// Times come from the GPU's global timer (`%globaltimer`, nanoseconds, the same clock on every
/// SM), so spans recorded by different grids can be compared with each other.
#pragma once

#include <string>
#include <vector>

namespace cdplab::timeline {

/// One grid's run: who launched it and when it started and ended.
struct Span {
  unsigned group = 0;               ///< what the span belongs to, e.g. the parent block
  unsigned lane = 0;                ///< its place in the group, e.g. the parent thread
  unsigned long long start_ns = 0;  ///< global timer when it started; 0 when it never ran
  unsigned long long end_ns = 0;    ///< global timer when it ended
  /// Whether the span was recorded (its grid ran).
  bool ran() const { return start_ns != 0 && end_ns >= start_ns; }
};

/// The most spans running at one moment. Spans that only touch (one ends when the next starts)
/// do not overlap; spans that never ran are ignored.
int max_overlap(const std::vector<Span>& spans);

/// max_overlap of the spans of each group, the highest of them: how many of one group's grids
/// ran at once.
int max_overlap_within_group(const std::vector<Span>& spans);

/// A text chart, one row per span (at most `max_rows` rows, the rest summed up in one line),
/// with time running left to right over `width` columns:
/// `block 0 thread  3 |      ####            |`.
std::string render_text(const std::vector<Span>& spans, int width = 60, int max_rows = 32);

/// The same chart as a standalone SVG document, one bar per span, coloured by group,
/// with a time axis in microseconds and `title` above it.
std::string render_svg(const std::vector<Span>& spans, const std::string& title);

}  // namespace cdplab::timeline
