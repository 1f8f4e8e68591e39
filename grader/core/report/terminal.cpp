// The terminal report: what `cdplab check` prints for a student.
#include "report/report.h"
#include "report/text.h"

#include <algorithm>
#include <sstream>

namespace cdplab::report {
namespace {

using grading::ExerciseResult;
using grading::GradeReport;
using grading::Item;
using grading::Outcome;

/// How many lines of a failed build are shown; the rest is counted.
constexpr std::size_t kBuildLogLines = 20;

/// Wraps text in ANSI colour codes, or leaves it alone when colour is off.
class Style {
 public:
  explicit Style(bool color) : color_(color) {}
  std::string bold(const std::string& s) const { return wrap("1", s); }
  std::string green(const std::string& s) const { return wrap("32", s); }
  std::string red(const std::string& s) const { return wrap("31", s); }
  std::string yellow(const std::string& s) const { return wrap("33", s); }
  std::string cyan(const std::string& s) const { return wrap("36", s); }
  std::string dim(const std::string& s) const { return wrap("2", s); }

  /// The marker of an outcome: ✓ ✗ – in colour, or [pass] [FAIL] [skip] in plain ASCII.
  std::string marker(Outcome outcome) const {
    switch (outcome) {
      case Outcome::passed: return color_ ? green("\u2713") : "[pass]";
      case Outcome::failed: return color_ ? red("\u2717") : "[FAIL]";
      case Outcome::skipped: return color_ ? yellow("\u2013") : "[skip]";
    }
    return "?";
  }
  /// Columns the marker takes, so that feedback lines up under the item's name.
  std::size_t marker_width() const { return color_ ? 1 : 6; }

 private:
  std::string wrap(const char* code, const std::string& s) const {
    return color_ ? "\x1b[" + std::string(code) + "m" + s + "\x1b[0m" : s;
  }
  bool color_;
};

std::string spaces(std::size_t n) { return std::string(n, ' '); }

/// `left`, padded to `column`, then `right`, with at least `gap` spaces between them.
std::string columns(const std::string& left, std::size_t left_width, std::size_t column,
                    const std::string& right, std::size_t gap = 2) {
  return left + spaces(std::max(column, left_width) - left_width + gap) + right;
}

/// Writes `text` line by line, each line after `indent`.
void write_indented(std::ostream& out, const std::string& text, std::size_t indent) {
  for (const auto& line : text::split_lines(text)) out << spaces(indent) << line << "\n";
}

void write_problem(std::ostream& out, const ExerciseResult& exercise, const Style& style) {
  out << "  " << style.red("problem:") << " " << text::plain(exercise.problem) << "\n";
  const auto log = text::split_lines(text::plain(exercise.build_log));
  const std::size_t shown = std::min(log.size(), kBuildLogLines);
  for (std::size_t i = 0; i < shown; ++i) out << "    " << log[i] << "\n";
  if (log.size() > shown) {
    out << "    " << style.dim("... (" + std::to_string(log.size() - shown) + " more lines)") << "\n";
  }
}

void write_items(std::ostream& out, const ExerciseResult& exercise, const Style& style,
                 const TerminalOptions& options) {
  std::size_t label_column = 0;
  for (const auto& item : exercise.items)
    label_column = std::max(label_column, text::display_width(text::plain(text::item_label(item))));

  const std::size_t feedback_indent = 2 + style.marker_width() + 1;
  int hidden = 0;
  std::string previous_feedback;
  for (const Item& item : exercise.items) {
    if (item.outcome == Outcome::passed && !options.show_passed) {
      ++hidden;
      continue;
    }
    const std::string label = text::plain(text::item_label(item));
    out << "  " << style.marker(item.outcome) << " "
        << columns(label, text::display_width(label), label_column,
                   text::format_score(item.points, item.max_points))
        << "\n";
    const std::string feedback = text::plain(item.feedback);
    if (feedback.empty()) continue;
    if (item.outcome == Outcome::passed) {  // what a passed check measured (a speed check's times)
      write_indented(out, style.dim(feedback), feedback_indent);
      continue;
    }
    // A problem fails every item with the same reason: say it once.
    if (feedback == previous_feedback) {
      out << spaces(feedback_indent) << style.dim("(same as above)") << "\n";
      continue;
    }
    write_indented(out, feedback, feedback_indent);
    previous_feedback = feedback;
  }
  if (hidden > 0) {
    out << "  " << style.dim("(" + std::to_string(hidden) + " passed " + (hidden == 1 ? "item" : "items") +
                             " not shown)")
        << "\n";
  }
}

void write_exercise(std::ostream& out, const ExerciseResult& exercise, std::size_t header_column,
                    const Style& style, const TerminalOptions& options) {
  const std::string file = text::plain(exercise.file.empty() ? text::exercise_path(exercise) : exercise.file);
  const std::string title = text::plain(exercise.title);
  const std::string head = title.empty() ? file : file + "  " + title;
  const std::string head_styled = title.empty() ? style.bold(file) : style.bold(file) + "  " + title;
  out << columns(head_styled, text::display_width(head), header_column,
                 style.bold(text::format_score(exercise.points(), exercise.max_points())), 3)
      << "\n";

  if (!exercise.problem.empty()) write_problem(out, exercise, style);
  if (exercise.items.empty() && exercise.problem.empty()) out << "  " << style.dim("(nothing graded)") << "\n";
  write_items(out, exercise, style, options);

  if (text::has_failure(exercise) && !exercise.hint.empty()) {
    out << "  " << style.cyan("hint:") << " " << text::plain(exercise.hint) << "\n";
    out << "  " << style.cyan("more hints:") << " cdplab hint " << exercise.id << "\n";
  }
}

std::size_t header_width(const ExerciseResult& exercise) {
  const std::string file = exercise.file.empty() ? text::exercise_path(exercise) : exercise.file;
  const std::size_t width = text::display_width(text::plain(file));
  return exercise.title.empty() ? width : width + 2 + text::display_width(text::plain(exercise.title));
}

}  // namespace

std::string render_terminal(const GradeReport& report, const TerminalOptions& options) {
  const Style style(options.color);
  std::ostringstream out;

  std::size_t header_column = 0;
  for (const auto& exercise : report.exercises) header_column = std::max(header_column, header_width(exercise));

  if (report.exercises.empty()) out << "No exercises were graded.\n\n";
  for (const auto& exercise : report.exercises) {
    write_exercise(out, exercise, header_column, style, options);
    out << "\n";
  }

  const auto summary = text::summary_lines(report);
  for (std::size_t i = 0; i < summary.size(); ++i) {
    // summary_lines() puts "grade incomplete" last when something was skipped.
    const bool incomplete = !report.complete() && i + 1 == summary.size();
    out << (incomplete ? style.yellow(style.bold(summary[i])) : summary[i]) << "\n";
  }
  return out.str();
}

}  // namespace cdplab::report
