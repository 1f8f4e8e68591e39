// Gradescope's autograder results.json. Only fields of Gradescope's published specification
// ("Autograder Specifications", output format) are written: top level score, execution_time,
// output, output_format, visibility, tests; per test name, score, max_score, status, output,
// number, tags, visibility.
#include "report/report.h"
#include "report/text.h"

#include <cmath>

namespace cdplab::report {
namespace {

using grading::ExerciseResult;
using grading::GradeReport;
using grading::Item;
using grading::Outcome;
using nlohmann::json;

json tags_of(const ExerciseResult& exercise, const char* kind) {
  return json::array({text::valid_utf8(exercise.chapter), text::valid_utf8(exercise.id), kind});
}

std::string test_name(const ExerciseResult& exercise, const std::string& label) {
  return text::plain(text::exercise_path(exercise) + ": " + label);
}

/// A skipped item is reported as a failed test worth nothing: Gradescope has no "skipped",
/// and a check that did not run has not shown that the work is right.
std::string item_output(const Item& item) {
  const std::string feedback = text::plain(item.feedback);
  if (item.outcome != Outcome::skipped) return feedback;
  return "not run, so not passed: this check was skipped" + (feedback.empty() ? std::string(".") : " (" + feedback + ").") +
         " It earns its points once it runs on a GPU.";
}

json item_test(const ExerciseResult& exercise, const Item& item, const std::string& number) {
  const bool passed = item.outcome == Outcome::passed;
  return {
      {"name", test_name(exercise, text::item_label(item))},
      {"number", number},
      {"score", passed ? item.points : 0.0},
      {"max_score", item.max_points},
      {"status", passed ? "passed" : "failed"},
      {"output", item_output(item)},
      {"tags", tags_of(exercise, grading::to_string(item.kind))},
  };
}

/// An exercise that could not be built or was missing: one failed test that says why.
json problem_test(const ExerciseResult& exercise, const std::string& number) {
  std::string output = text::plain(exercise.problem);
  const std::string log = text::plain(exercise.build_log);
  if (!log.empty()) output += "\n\n" + log;
  return {
      {"name", test_name(exercise, "build")},
      {"number", number},
      {"score", 0.0},
      {"max_score", 0.0},
      {"status", "failed"},
      {"output", output},
      {"tags", tags_of(exercise, "build")},
  };
}

/// The text above the tests: the summary and the hints of exercises with failures.
std::string overall_output(const GradeReport& report) {
  std::string out;
  // A grade with skipped checks looks like any other in Gradescope's list of tests: say it first.
  if (!report.complete()) {
    const int skipped = report.count(Outcome::skipped);
    out += "NOT FINAL: " + std::to_string(skipped) + (skipped == 1 ? " check was" : " checks were") +
           " skipped (not run, e.g. no GPU), worth " +
           text::format_points(report.max_points() - report.decided_max_points()) +
           " points; this score counts them as 0 until the work is graded again where they run.\n\n";
  }
  for (const auto& line : text::summary_lines(report)) out += line + "\n";
  for (const auto& exercise : report.exercises) {
    if (!text::has_failure(exercise) || exercise.hint.empty()) continue;
    out += "\n" + text::plain(text::exercise_path(exercise)) + ": hint: " + text::plain(exercise.hint) + "\n" +
           "more hints: cdplab hint " + text::plain(exercise.id) + "\n";
  }
  return out;
}

}  // namespace

json to_gradescope(const GradeReport& report, const std::string& visibility) {
  json tests = json::array();
  double score = 0;
  for (std::size_t e = 0; e < report.exercises.size(); ++e) {
    const auto& exercise = report.exercises[e];
    const std::string prefix = std::to_string(e + 1) + ".";
    if (!exercise.problem.empty()) tests.push_back(problem_test(exercise, prefix + "0"));
    for (std::size_t i = 0; i < exercise.items.size(); ++i) {
      tests.push_back(item_test(exercise, exercise.items[i], prefix + std::to_string(i + 1)));
      score += tests.back()["score"].get<double>();
    }
  }
  for (auto& test : tests) test["visibility"] = visibility;
  return {
      {"score", score},
      {"execution_time", std::lround(report.seconds)},
      {"output", overall_output(report)},
      {"output_format", "text"},
      {"visibility", visibility},
      {"tests", tests},
  };
}

}  // namespace cdplab::report
