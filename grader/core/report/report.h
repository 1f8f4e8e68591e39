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

/// What a student's feedback says of the due date, where a class has one (batch/class_policy.h).
struct LateNote {
  std::string due;               ///< ISO 8601
  std::string submitted;         ///< ISO 8601; empty when not known
  int days_late = 0;             ///< a started day counts as one
  bool unknown = false;          ///< no submission time: lateness not judged
  double percent_per_day = 0;    ///< the policy
  int limit_days = -1;           ///< later than this: no points; -1: no limit
  double penalty = 0;            ///< points taken off
  double after_penalty = 0;      ///< the points after it
};

/// Feedback for one student as Markdown: the score, with a due date when it was due, when the
/// work came, the days late and the penalty, then per exercise its items, what failed and why,
/// the first hint, and the launch-graph picture where there is one.
std::string to_feedback_markdown(const grading::GradeReport& report, const std::string& student,
                                 const Pictures& pictures = {}, const LateNote* late = nullptr);

/// The same feedback as one self-contained HTML page (pictures are linked, not embedded).
std::string to_feedback_html(const grading::GradeReport& report, const std::string& student,
                             const Pictures& pictures = {}, const LateNote* late = nullptr);

/// One student's row of a class: who, the grade, and when it was handed in.
struct ClassRow {
  std::string student;            ///< the submission's name (its folder or archive)
  grading::GradeReport report;
  bool submitted = true;          ///< false: on the roster, and no submission of theirs was graded
  /// From the roster, where there is one (batch/class_policy.h); empty otherwise.
  std::string id, full_name, login, email, section, canvas_id;
  std::string submitted_at;       ///< ISO 8601: the roster's time, else the one the grader found
  int days_late = 0;              ///< a started day counts as one
  bool lateness_unknown = false;  ///< a due date, and no time to judge by
  double late_share = 0;          ///< share of the points taken off for lateness, 0 to 1

  double late_penalty() const { return report.points() * late_share; }
  double final_points() const { return report.points() - late_penalty(); }
};

/// What a gradebook shows beside the grades.
struct GradebookColumns {
  bool roster = false;  ///< the student's ID and name
  bool due = false;     ///< when each submitted, days late, the late penalty and the final points
};

/// How a row's grade stands: "final"; "not final" (items skipped, e.g. no GPU); "partial" (graded
/// on fewer exercises than the class: an earlier --only run); "no submission". `exercises`: the
/// number of exercises of the class.
std::string grade_status(const ClassRow& row, std::size_t exercises);

/// The gradebook as CSV (RFC 4180): one row per student and nothing else; the student (with the
/// roster's ID and name), a column per exercise (its points; the heading gives its maximum), the
/// total and the maximum, with a due date the submission time, days late, penalty and final
/// points, and the status (grade_status). Exercises are the union of those in the reports, in
/// the order first seen.
std::string to_gradebook_csv(const std::vector<ClassRow>& rows, const GradebookColumns& columns = {});

/// The grades as Canvas's gradebook import reads them: Student, ID, SIS User ID, SIS Login ID,
/// Section, then one column named `assignment`, with a "Points Possible" row. Only final grades
/// are given (after any late penalty); a grade that is not final, partial or missing is an
/// empty cell, which the import leaves as it is.
std::string to_canvas_csv(const std::vector<ClassRow>& rows, const std::string& assignment);

/// The grades as Moodle's grade import from CSV reads them (each column is mapped on import):
/// ID number, Username, Email address, Full name, Student, and the `assignment` column; empty
/// cells as for Canvas.
std::string to_moodle_csv(const std::vector<ClassRow>& rows, const std::string& assignment);

/// A class summary in Markdown: how many were graded (and, with a roster, who submitted nothing),
/// what was not decided (skipped items count apart: each score is a share of the points that
/// were decided), the spread of total scores, each exercise's mean, lateness, the items that
/// failed most often, and the students whose work could not be built or read. With
/// `histograms`, each exercise's row links its picture (histogram_file).
std::string to_class_summary(const std::vector<ClassRow>& rows, bool histograms = false);

/// Where an exercise's score histogram is kept, relative to the results folder:
/// "histograms/01-fundamentals.child_grids.svg".
std::string histogram_file(const std::string& exercise_key);

/// The spread of each exercise's scores over the class as SVG documents, keyed by the
/// exercise ("01-fundamentals/child_grids"): how many students scored in each tenth of its
/// decided points. Students whose exercise was skipped entirely are left out.
std::map<std::string, std::string> to_score_histograms(const std::vector<ClassRow>& rows);

}  // namespace cdplab::report
