/// @file report.h
/// @brief The report formats of a grading run, all rendered from one grading::GradeReport:
///        terminal text for a student, JSON for archives and tools, Gradescope's results.json,
///        and JUnit XML for CI servers. The formats are described in docs/reports.md.
#pragma once

#include "results/results.h"

#include <nlohmann/json.hpp>

#include <string>

namespace cdplab::report {

/// How render_terminal() writes its text.
struct TerminalOptions {
  bool color = false;       ///< ANSI colours and the markers ✓ ✗ –; without it, plain ASCII markers
  bool show_passed = true;  ///< list passed items (failed and skipped ones are always listed)
};

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
nlohmann::json to_gradescope(const grading::GradeReport& report);

/// JUnit XML: one <testsuite> per exercise ("chapter/stem") with the run's seed and device as
/// properties, one <testcase> per item, and an exercise's problem as an <error> in a testcase
/// named "build". All text is escaped; control characters are written visibly ("\x07").
std::string to_junit_xml(const grading::GradeReport& report);

}  // namespace cdplab::report
