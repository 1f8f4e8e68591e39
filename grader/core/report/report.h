/// @file report.h
/// @brief The report formats of a grading run, all rendered from one grading::GradeReport:
///        terminal text for a student, JSON for archives and tools, Gradescope's results.json,
///        and JUnit XML for CI servers. The formats are described in docs/reports.md.
#pragma once

#include "results/results.h"

#include <nlohmann/json.hpp>

#include <map>
#include <cstddef>
#include <string>
#include <vector>

namespace cdplab::report {

/// How render_terminal() writes its text.
struct TerminalOptions {
  bool color = false;       ///< ANSI colours and the markers ✓ ✗ –; without it, plain ASCII markers
  bool show_passed = true;  ///< list passed items (failed and skipped ones are always listed)
  std::size_t width = 100;  ///< columns: item names and feedback wrap at spaces to fit
};

/// The columns of the terminal on standard output, or 100 when it is not a terminal.
std::size_t terminal_width();

/// Feedback for a student: per exercise a header line with its points, every item with a
/// pass/fail/skip marker, the feedback of what failed, the exercise's problem (with the start
/// of the build log), its first hint, and a summary of points, counts and device.
std::string render_terminal(const grading::GradeReport& report, const TerminalOptions& options = {});

/// The format identifier written to and required by the JSON format.
inline constexpr const char* kJsonFormat = "cdplab-grade/1";

/// The whole report as JSON (format "cdplab-grade/1"): every field of the model, plus derived
/// totals ("summary", per-exercise "points" and "max_points") for readers that do not add up.
/// Strings are valid UTF-8 (invalid bytes become U+FFFD), so dump() never throws.
nlohmann::json to_json(const grading::GradeReport& report);

/// Reads what to_json() wrote. The derived totals are ignored (they are recomputed from the
/// items). Throws std::runtime_error naming the field when the format is not "cdplab-grade/1",
/// a required field is missing, or a field has the wrong type or an unknown value.
grading::GradeReport from_json(const nlohmann::json& json);

/// Gradescope's autograder results.json, documented fields only. Every item is one test
/// ("number" "exercise.item"); an exercise's problem is one more failed test worth 0 points;
/// a skipped item is reported failed with score 0, never passed.
/// Gradescope's `visibility` of the results and of each test: "visible" (default), "hidden",
/// "after_due_date" or "after_published".
inline const char* const kGradescopeVisibilities[] = {"visible", "hidden", "after_due_date", "after_published"};
nlohmann::json to_gradescope(const grading::GradeReport& report, const std::string& visibility = "visible");

/// JUnit XML: one <testsuite> per exercise ("chapter/stem") with the run's seed and device as
/// properties, one <testcase> per item, and an exercise's problem as an <error> in a testcase
/// named "build". All text is escaped; control characters are written visibly ("\x07").
std::string to_junit_xml(const grading::GradeReport& report);

/// Pictures for the feedback pages: per exercise ("chapter/stem"), the file name of its
/// launch-graph SVG, relative to the page.
using Pictures = std::map<std::string, std::string>;

/// Feedback for one student as Markdown: the score, then per exercise its items, what failed
/// and why, the first hint, and the launch-graph picture where there is one.
std::string to_feedback_markdown(const grading::GradeReport& report, const std::string& student,
                                 const Pictures& pictures = {});

/// The same feedback as one self-contained HTML page (pictures are linked, not embedded).
std::string to_feedback_html(const grading::GradeReport& report, const std::string& student,
                             const Pictures& pictures = {});

/// One student's row of a class: who, and the grade (or why there is none).
struct ClassRow {
  std::string student;
  grading::GradeReport report;
};

/// The gradebook as CSV (RFC 4180): a row per student, a column per exercise (its points), then
/// the total, the maximum, and whether the grade is complete; the second row holds each column's
/// maximum. Exercises are the union of those in the reports, in the order first seen.
std::string to_gradebook_csv(const std::vector<ClassRow>& rows);

/// A class summary in Markdown: how many were graded, the spread of total scores (mean,
/// median, lowest, highest, a histogram by tenths), each exercise's mean, the items that failed
/// most often, and the students whose work could not be built or read.
std::string to_class_summary(const std::vector<ClassRow>& rows);

}  // namespace cdplab::report
