/// @file launch_tree.h
/// @brief The launch tree a check's runs made on the GPU (grading::LaunchTreeEdge, counted by the
///        grader's device-runtime hooks), in words for the terminal and drawn for the feedback
///        pages and the docs, with the lesson's launches beside it.
#pragma once

#include "results/results.h"

#include <functional>
#include <string>
#include <vector>

namespace cdplab::report {

/// The check whose launch tree an exercise's feedback shows: its first failed check whose
/// launches the grader counted; without one (and unless `failed_only`), the counted check that
/// launched the most grids. nullptr when there is none (a check that launched nothing counts
/// only where the lesson asks for launches).
const grading::Item* shown_launch_tree(const grading::ExerciseResult& exercise, bool failed_only);

/// One edge's grids in words: "12 grids into the NULL stream", or by stream where they went to
/// several ("3 grids: 1 into the NULL stream, 2 fire-and-forget"), and the failed ones.
std::string describe_launches(const grading::LaunchTreeEdge& edge);

/// The tree as lines: each launching kernel, and under it ("-> ") every kernel it launched with
/// its grids. A kernel launched from more than one place, or by itself, is named again, not
/// expanded again. An edge the lesson's rules do not allow (LaunchTreeEdge::fault) ends in
/// "[against the lesson]". "(nothing launched from device code)" for an empty tree.
std::vector<std::string> launch_tree_lines(const std::vector<grading::LaunchTreeEdge>& edges);

/// A self-contained SVG picture of the tree: a box per kernel, an arrow per edge labelled with
/// its grids (red, "against the lesson", where the lesson's rules do not allow the edge), kernels
/// further right the deeper they are launched; `caption` above it and the
/// lesson's launches (`lesson`, one sentence each) below it.
std::string launch_tree_svg(const std::vector<grading::LaunchTreeEdge>& edges, const std::vector<std::string>& lesson,
                            const std::string& caption);

/// Writes `draw(exercise)`, SVG documents, for each exercise into `folder`, creating the folder:
/// the first as <chapter>-<file stem>.svg, the next ones as <chapter>-<file stem>-2.svg, -3 and so
/// on; empty drawings are skipped. Returns how many files. Throws std::runtime_error naming a file
/// it cannot write. (The launch trees' and the timelines' files.)
int write_exercise_pictures(const grading::GradeReport& report, const std::string& folder,
                            const std::function<std::vector<std::string>(const grading::ExerciseResult&)>& draw);

/// Writes the picture of each exercise's shown tree (shown_launch_tree(), passed checks included)
/// into `folder` as <chapter>-<file stem>.svg, creating the folder; returns how many. Throws
/// std::runtime_error naming a file it cannot write.
int write_launch_tree_pictures(const grading::GradeReport& report, const std::string& folder);

}  // namespace cdplab::report
