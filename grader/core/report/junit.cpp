// JUnit XML, the test-report format CI servers read (GitLab, Jenkins, GitHub test reporters).
#include "report/report.h"
#include "report/text.h"

#include <cstdio>
#include <sstream>

namespace cdplab::report {
namespace {

using grading::ExerciseResult;
using grading::GradeReport;
using grading::Item;
using grading::Outcome;

/// Longest failure message attribute; the whole text is the element's content.
constexpr std::size_t kMessageChars = 200;

std::string attr(std::string_view value) { return "\"" + text::markup_escape(value, true) + "\""; }

std::string seconds(double s) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", s < 0 ? 0.0 : s);
  return buffer;
}

/// "01-fundamentals.child_grids": JUnit's class name is dotted.
std::string class_name(const ExerciseResult& exercise) {
  std::string name = text::exercise_path(exercise);
  for (char& c : name)
    if (c == '/') c = '.';
  return name;
}

struct Counts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double seconds = 0;
};

Counts count(const ExerciseResult& exercise) {
  Counts c;
  c.tests = static_cast<int>(exercise.items.size()) + (exercise.problem.empty() ? 0 : 1);
  c.errors = exercise.problem.empty() ? 0 : 1;
  for (const auto& item : exercise.items) {
    c.failures += item.outcome == Outcome::failed ? 1 : 0;
    c.skipped += item.outcome == Outcome::skipped ? 1 : 0;
    c.seconds += item.seconds;
  }
  return c;
}

std::string count_attributes(const Counts& c) {
  return " tests=\"" + std::to_string(c.tests) + "\" failures=\"" + std::to_string(c.failures) + "\" errors=\"" +
         std::to_string(c.errors) + "\" skipped=\"" + std::to_string(c.skipped) + "\"";
}

void write_property(std::ostream& out, const char* name, const std::string& value) {
  out << "      <property name=" << attr(name) << " value=" << attr(value) << "/>\n";
}

void write_properties(std::ostream& out, const GradeReport& report, const ExerciseResult& exercise) {
  out << "    <properties>\n";
  write_property(out, "seed", std::to_string(report.seed));
  write_property(out, "device", report.device);
  if (!report.ran_on.empty()) write_property(out, "ran_on", report.ran_on);
  if (!report.gpu_problem.empty()) write_property(out, "gpu_problem", report.gpu_problem);
  write_property(out, "source", report.source);
  write_property(out, "tool_version", report.tool_version);
  write_property(out, "started_at", report.started_at);
  write_property(out, "exercise", exercise.id);
  write_property(out, "points", text::format_points(exercise.points()));
  write_property(out, "max_points", text::format_points(exercise.max_points()));
  out << "    </properties>\n";
}

void write_item(std::ostream& out, const ExerciseResult& exercise, const Item& item) {
  out << "    <testcase classname=" << attr(class_name(exercise)) << " name=" << attr(text::item_label(item))
      << " time=\"" << seconds(item.seconds) << "\"";
  const std::string message = text::first_line(text::plain(item.feedback), kMessageChars);
  switch (item.outcome) {
    case Outcome::passed:
      out << "/>\n";
      return;
    case Outcome::skipped:
      out << ">\n      <skipped message=" << attr(message.empty() ? "skipped" : message) << "/>\n";
      break;
    case Outcome::failed:
      out << ">\n      <failure message=" << attr(message.empty() ? "failed" : message)
          << " type=" << attr(grading::to_string(item.kind)) << ">" << text::markup_escape(item.feedback, false)
          << "</failure>\n";
      break;
  }
  out << "    </testcase>\n";
}

void write_problem(std::ostream& out, const ExerciseResult& exercise) {
  std::string body = exercise.problem;
  if (!exercise.build_log.empty()) body += "\n\n" + exercise.build_log;
  out << "    <testcase classname=" << attr(class_name(exercise)) << " name=\"build\" time=\"0.000\">\n"
      << "      <error message=" << attr(text::first_line(text::plain(exercise.problem), kMessageChars))
      << " type=\"build\">" << text::markup_escape(body, false) << "</error>\n"
      << "    </testcase>\n";
}

}  // namespace

std::string to_junit_xml(const GradeReport& report) {
  Counts total;
  for (const auto& exercise : report.exercises) {
    const Counts c = count(exercise);
    total.tests += c.tests;
    total.failures += c.failures;
    total.errors += c.errors;
    total.skipped += c.skipped;
  }

  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"cdp-lab\"" << count_attributes(total) << " time=\"" << seconds(report.seconds)
      << "\">\n";
  for (const auto& exercise : report.exercises) {
    const Counts c = count(exercise);
    out << "  <testsuite name=" << attr(text::exercise_path(exercise)) << count_attributes(c) << " time=\""
        << seconds(c.seconds) << "\">\n";
    write_properties(out, report, exercise);
    if (!exercise.problem.empty()) write_problem(out, exercise);
    for (const auto& item : exercise.items) write_item(out, exercise, item);
    out << "  </testsuite>\n";
  }
  out << "</testsuites>\n";
  return out.str();
}

}  // namespace cdplab::report
