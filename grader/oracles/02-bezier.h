/// @file 02-bezier.h
/// @brief CPU oracles of chapter 02: seeded Bezier lines of chosen curvature, the vertex counts
///        a GPU may report for them, and a judge whose messages name the line, the expected and
///        the found count or vertex.
#pragma once

#include "compare.h"

#include <cmath>  // before cdplab/bezier.h: its inline functions call sqrtf and fabsf

#include "cdplab/bezier.h"
#include "cdplab/random.h"

#include <cstddef>
#include <string>
#include <vector>

namespace cdplab::oracle::bezier {

using cdplab::bezier::Line;
using cdplab::bezier::LineVertices;
using cdplab::bezier::Point;
using cdplab::bezier::Tessellation;

// ----- inputs --------------------------------------------------------------------------

/// A line whose curvature (as cdplab::bezier::curvature defines it) is `bend`: p0 and p2 lie
/// a random chord length in [20, 60] apart, in a random direction from a p0 inside [-100, 100]^2
/// (p1 and p2 may lie outside that square), and
/// p1 lies `bend` chord lengths off the chord, on either side, somewhere along it.
Line line_with_curvature(Random& rng, double bend);

/// A degenerate line (p2 == p0) whose curvature is the distance `reach` from p0 to p1.
Line closed_line(Random& rng, double reach);

/// `count` lines with curvatures uniform in [min_bend, max_bend].
std::vector<Line> lines_with_curvatures(Random& rng, std::size_t count, double min_bend, double max_bend);

// ----- counts --------------------------------------------------------------------------

/// The vertex counts a correct GPU tessellation may report for a line: usually one value; two
/// neighbours where curvature * scale lies within rounding of an integer, since the GPU may
/// round the curvature differently (fused multiply-adds) and so truncate to the other side.
struct CountRange {
  int low;   ///< smallest acceptable count
  int high;  ///< largest acceptable count
  /// Whether `count` lies in [low, high].
  bool contains(int count) const { return low <= count && count <= high; }
};

/// curvature(line) * t.scale, computed in double from the line's float coordinates.
double wanted_vertices(const Line& line, const Tessellation& t);

/// The counts accepted for `line` (see CountRange).
CountRange acceptable_counts(const Line& line, const Tessellation& t);

/// The sum over all lines of the largest acceptable count: the fewest vertices a correct run
/// of these lines writes is at least this minus one per line.
std::size_t total_vertices(const std::vector<Line>& lines, const Tessellation& t);

// ----- judging -------------------------------------------------------------------------

/// One line as an exercise returned it.
struct FoundLine {
  int count = 0;               ///< the count it reported
  bool has_buffer = true;      ///< false when a device-heap record had a null pointer
  std::vector<Point> vertices; ///< the vertices that could be read back
};

/// Lines returned as vectors (exercise a): the count is each vector's size.
std::vector<FoundLine> found_from_vectors(const std::vector<std::vector<Point>>& lines);

/// Lines returned as device-heap records (exercises b and c) and the vertices gathered from them.
std::vector<FoundLine> found_from_records(const std::vector<LineVertices>& records,
                                          const std::vector<std::vector<Point>>& gathered);

/// What to tell a student whose lines came back empty, in the exercise's terms.
struct EmptyAdvice {
  std::string cause;   ///< completes "line i stayed empty: ..."
  std::string advice;  ///< what to check, appended after the list of empty lines
};

/// Judges every line: its count against acceptable_counts(), then each vertex against
/// vertex(line, k, count found). The message reports empty lines first (with `empty`),
/// then the first line with a wrong count, then the first line with a wrong vertex, and how
/// many lines of each kind there are.
Verdict judge_lines(const std::vector<Line>& lines, const Tessellation& t, const std::vector<FoundLine>& found,
                    const EmptyAdvice& empty);

/// What exercises b and c do when a line's cudaMalloc fails, as the feedback says it.
inline constexpr const char* kFailedAllocationAdvice =
    "When cudaMalloc fails (an error code or a null pointer), store count 0 and nullptr for the line and launch "
    "nothing for it";

/// Judges the lines of a run in which the grader made one device-heap allocation fail: exactly one
/// line is empty (count 0 and a null pointer: the one that did not get its buffer), and every
/// other line is right (judge_lines).
Verdict judge_lines_one_allocation_failed(const std::vector<Line>& lines, const Tessellation& t,
                                          const std::vector<FoundLine>& found, const EmptyAdvice& empty);

/// Judges the records after a free: every count 0 and every pointer null.
Verdict judge_freed(const std::vector<LineVertices>& records, const char* free_function);

// ----- exercise d: lines in one vertex buffer ------------------------------------------

/// Lines returned as records that point into exercise d's VertexBuffer. `points` are the
/// buffer's first points, read back from the GPU, and `base` is the buffer's device address
/// (the records' pointers are compared with it as numbers, never dereferenced). A record with a
/// null pointer comes back with has_buffer false; one that points outside `points`, or between
/// two points, comes back with its count and no vertices (judge_buffer_use says where it points).
std::vector<FoundLine> found_in_buffer(const std::vector<LineVertices>& records, const Point* base,
                                       const std::vector<Point>& points);

/// Judges how exercise d used a buffer of `capacity` points at device address `base`, whose
/// counter says `claimed` points were handed out: at most `capacity` were; every line's vertices
/// lie within the first `claimed` points, on point boundaries; no point belongs to two lines;
/// and the lines use all `claimed` points (claims of exactly each block's total leave no gaps).
Verdict judge_buffer_use(const std::vector<LineVertices>& records, const Point* base, std::size_t capacity,
                         unsigned long long claimed);

}  // namespace cdplab::oracle::bezier
