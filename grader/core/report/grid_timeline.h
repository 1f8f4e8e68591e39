/// @file grid_timeline.h
/// @brief When the exercise's grids ran in a check (grading::GridTimeline, recorded by the
///        grader's device hooks): a text timeline for the terminal, at most 100 columns, and an
///        SVG Gantt chart for the feedback pages and the docs.
///
/// Both draw the same rows. The host's grids come first; under each grid, the grids it launched,
/// one row per place they were launched into: the launching block's NULL stream, the grid's tail
/// stream, fire-and-forget, or the named streams. Grids of one row that ran at the same time are
/// stacked on lines of their own, so that overlap shows as lines and one-after-another as one line.
#pragma once

#include "results/results.h"

#include <functional>
#include <string>
#include <vector>

namespace cdplab::report {

/// One line of the timeline: the grids drawn on it (indices into GridTimeline::grids) and what it
/// is (the first line of a row carries the label; the lines stacked under it carry none).
struct TimelineLine {
  std::string label;          ///< "host", "A1 > null stream, block 0", ...; empty on a stacked line
  std::string stream;         ///< GridSpan::stream of its grids
  int depth = 0;              ///< how many launches deep its grids are (the host's: 0)
  std::vector<std::size_t> grids;
};

/// The timeline's lines, in the order both pictures draw them (see the file comment). Grids are
/// named by their kernel's letter (A, B, ... in the order the kernels first started) and their
/// start order among that kernel's grids: "B3".
std::vector<TimelineLine> timeline_lines(const grading::GridTimeline& timeline);

/// The short name of grid `index` ("B3"), as the lines' labels use it.
std::string grid_name(const grading::GridTimeline& timeline, std::size_t index);

/// The text timeline, every line at most `width` columns (at least 60): a heading with the run and
/// the grids' count, the kernels' letters, at most `max_lines` lines of bars (each grid drawn with
/// its kernel's letter, upper and lower case in turn so that grids one after another stay apart;
/// `.` where a launched grid waited to start), and a time axis in microseconds.
std::string timeline_text(const grading::GridTimeline& timeline, int width = 100, int max_lines = 24);

/// The same timeline as a self-contained SVG document: a bar per grid, coloured by where it was
/// launched, a thin line from each device launch to its grid's start, a time axis in microseconds,
/// `title` above it and a legend below.
std::string timeline_svg(const grading::GridTimeline& timeline, const std::string& title);

/// The checks of an exercise whose timelines a report draws: those that kept one (the grader keeps
/// a check's timeline where the order of its grids is what it judges and it failed, or where
/// `--timeline` asked for every check's).
std::vector<const grading::Item*> checks_with_timelines(const grading::ExerciseResult& exercise);

/// The checks whose timelines stand for the exercise in pictures: those with one whose manifest
/// entry judges the order of grids (`ordered`, their names, in that order), else the one that
/// recorded the most grids; empty when none has one.
std::vector<const grading::Item*> shown_timelines(const grading::ExerciseResult& exercise,
                                                  const std::vector<std::string>& ordered);

/// The first of shown_timelines; nullptr when there is none.
const grading::Item* shown_timeline(const grading::ExerciseResult& exercise, const std::vector<std::string>& ordered);

/// Writes the pictures of each exercise's shown timelines into `folder` (write_exercise_pictures:
/// <chapter>-<file stem>.svg, then -2.svg, ... for the next check), creating the folder, each
/// titled with its check and `device`; `ordered_checks(exercise)` names the exercise's checks
/// marked `timeline = true`. Returns how many; throws std::runtime_error naming a file it cannot
/// write.
int write_timeline_pictures(const grading::GradeReport& report,
                            const std::function<std::vector<std::string>(const grading::ExerciseResult&)>& ordered_checks,
                            const std::string& folder);

}  // namespace cdplab::report
