// The terminal report: what `cdplab check` prints for a student.
#include "report/grid_timeline.h"
#include "report/launch_tree.h"
#include "report/report.h"
#include "report/text.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>
#include <vector>

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

/// `names` joined by ", " in lines of at most `width` columns, broken only between two names (a
/// name is never split unless it alone is wider than a line).
std::vector<std::string> wrapped_names(const std::vector<std::string>& names, std::size_t width) {
  std::vector<std::string> out{""};
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string piece = names[i] + (i + 1 < names.size() ? "," : "");
    const bool fits = text::display_width(out.back()) + (out.back().empty() ? 0 : 1) + text::display_width(piece) <= width;
    if (!out.back().empty() && !fits) out.emplace_back();
    if (text::display_width(piece) > width && out.back().empty()) {
      const auto pieces = text::wrap_lines(piece, width);
      out.back() = pieces.front();
      out.insert(out.end(), pieces.begin() + 1, pieces.end());
      continue;
    }
    out.back() += (out.back().empty() ? "" : " ") + piece;
  }
  return out;
}

/// Writes `text` line by line, each line after `indent`, wrapped to fit `width` columns in all.
void write_indented(std::ostream& out, const std::string& text, std::size_t indent, std::size_t width,
                    const Style* dim = nullptr) {
  const std::size_t room = width > indent + 20 ? width - indent : 20;
  for (const auto& line : text::wrap_lines(text, room)) out << spaces(indent) << (dim ? dim->dim(line) : line) << "\n";
}

void write_problem(std::ostream& out, const ExerciseResult& exercise, const Style& style, std::size_t width) {
  // "  problem: " and the text wrapped under its first word; the build log's lines wrapped too.
  const std::size_t indent = 11;
  const auto problem = text::wrap_lines(text::plain(exercise.problem), width > indent + 20 ? width - indent : 20);
  for (std::size_t i = 0; i < problem.size(); ++i)
    out << (i == 0 ? "  " + style.red("problem:") + " " : spaces(indent)) << problem[i] << "\n";
  const auto log = text::split_lines(text::plain(exercise.build_log));
  const std::size_t shown = std::min(log.size(), kBuildLogLines);
  for (std::size_t i = 0; i < shown; ++i) write_indented(out, log[i], 4, width);
  if (log.size() > shown) {
    out << "    " << style.dim("... (" + std::to_string(log.size() - shown) + " more lines)") << "\n";
  }
}

/// `said`: the reasons for skips already given in this report (each is given once).
void write_items(std::ostream& out, const ExerciseResult& exercise, const Style& style,
                 const TerminalOptions& options, std::set<std::string>& said) {
  std::size_t label_column = 0, score_width = 0;
  for (const auto& item : exercise.items) {
    label_column = std::max(label_column, text::display_width(text::plain(text::item_label(item))));
    score_width = std::max(score_width, text::display_width(text::format_score(item.points, item.max_points)));
  }
  // Skipped items in a row show their points together (below): no wider than the exercise's.
  score_width = std::max(score_width,
                         text::display_width(text::format_score(exercise.points(), exercise.max_points())));
  const std::size_t feedback_indent = 2 + style.marker_width() + 1;
  // A long name (a rule's sentence) wraps rather than pushing every score past the width.
  const std::size_t room = feedback_indent + 2 + score_width + 20 < options.width
                               ? options.width - feedback_indent - 2 - score_width
                               : 20;
  label_column = std::min(label_column, room);
  int hidden = 0;
  std::string previous_feedback;
  const auto& items = exercise.items;
  for (std::size_t at = 0; at < items.size(); ++at) {
    const Item& item = items[at];
    if (item.outcome == Outcome::passed && !options.show_passed) {
      ++hidden;
      continue;
    }
    const std::string feedback = text::plain(item.feedback);
    // Skipped items in a row for the same reason (every GPU check without a GPU) take one line:
    // their names, and their points together.
    std::vector<std::string> names = {text::plain(text::item_label(item))};
    double points = item.points;
    double max_points = item.max_points;
    if (item.outcome == Outcome::skipped) {
      while (at + 1 < items.size() && items[at + 1].outcome == Outcome::skipped &&
             text::plain(items[at + 1].feedback) == feedback) {
        ++at;
        names.push_back(text::plain(text::item_label(items[at])));
        points += items[at].points;
        max_points += items[at].max_points;
      }
    }
    const auto label = names.size() == 1 ? text::wrap_lines(names.front(), label_column) : wrapped_names(names, label_column);
    out << "  " << style.marker(item.outcome) << " "
        << columns(label.front(), text::display_width(label.front()), label_column,
                   text::format_score(points, max_points))
        << "\n";
    for (std::size_t i = 1; i < label.size(); ++i) out << spaces(feedback_indent) << label[i] << "\n";
    if (feedback.empty()) continue;
    if (item.outcome == Outcome::passed) {  // what a passed check measured (a speed check's times)
      write_indented(out, feedback, feedback_indent, options.width, &style);
      continue;
    }
    // A problem fails every item with the same reason, and every GPU check of a report is
    // skipped for the same one: say it once.
    if (feedback == previous_feedback || said.count(feedback) > 0) {
      out << spaces(feedback_indent) << style.dim("(same as above)") << "\n";
      continue;
    }
    write_indented(out, feedback, feedback_indent, options.width);
    previous_feedback = feedback;
    if (item.outcome == Outcome::skipped) said.insert(feedback);
  }
  if (hidden > 0) {
    out << "  " << style.dim("(" + std::to_string(hidden) + " passed " + (hidden == 1 ? "item" : "items") +
                             " not shown)")
        << "\n";
  }
}

/// The launch tree of a failed check, and the lesson's launches, beside the items.
void write_launch_tree(std::ostream& out, const ExerciseResult& exercise, const Item& check, const Style& style,
                       const TerminalOptions& options) {
  out << "  " << style.cyan("launches:") << " what \"" << text::plain(check.name) << "\" ran on the GPU\n";
  for (const auto& line : launch_tree_lines(check.launches)) {
    const std::size_t nested = line.find_first_not_of(' ');  // a launched kernel sits under its caller
    write_indented(out, text::plain(line.substr(nested)), 4 + nested, options.width);
  }
  if (exercise.lesson_launches.empty()) return;
  out << "  " << style.cyan("the lesson:") << "\n";
  for (const auto& line : exercise.lesson_launches) write_indented(out, "- " + text::plain(line), 4, options.width);
}

void write_exercise(std::ostream& out, const ExerciseResult& exercise, std::size_t header_column,
                    const Style& style, const TerminalOptions& options, std::set<std::string>& said) {
  const std::string file = text::plain(exercise.file.empty() ? text::exercise_path(exercise) : exercise.file);
  const std::string title = text::plain(exercise.title);
  // The file in bold, the title after it; what of a long title does not fit goes on below.
  const std::size_t file_width = text::display_width(file);
  const std::size_t room = header_column > file_width + 2 + 15 ? header_column - file_width - 2 : 15;
  const auto title_lines = title.empty() ? std::vector<std::string>{""} : text::wrap_lines(title, room);
  const std::string first = title.empty() ? file : file + "  " + title_lines.front();
  const std::string first_styled = title.empty() ? style.bold(file) : style.bold(file) + "  " + title_lines.front();
  out << columns(first_styled, text::display_width(first), header_column,
                 style.bold(text::format_score(exercise.points(), exercise.max_points())), 3)
      << "\n";
  for (std::size_t i = 1; i < title_lines.size(); ++i) out << spaces(file_width + 2) << title_lines[i] << "\n";

  if (!exercise.problem.empty()) write_problem(out, exercise, style, options.width);
  if (exercise.items.empty() && exercise.problem.empty()) out << "  " << style.dim("(nothing graded)") << "\n";
  write_items(out, exercise, style, options, said);
  if (const auto* tree = shown_launch_tree(exercise, true)) write_launch_tree(out, exercise, *tree, style, options);
  for (const auto* check : checks_with_timelines(exercise)) {
    out << "  " << style.cyan("timeline:") << " when the grids of \"" << text::plain(check->name) << "\" ran\n";
    const int width = options.width > 64 ? static_cast<int>(options.width) - 4 : 60;
    for (const auto& line : text::split_lines(text::plain(timeline_text(check->timeline, width))))
      out << "    " << line << "\n";
  }
  if (!exercise.host_parts_output.empty()) {
    // The end of it: the last lines are the ones nearest the check that failed.
    const auto printed = text::split_lines(text::plain(exercise.host_parts_output));
    const std::size_t from = printed.size() > kBuildLogLines ? printed.size() - kBuildLogLines : 0;
    out << "  " << style.dim("your host parts printed" + std::string(from > 0 ? " (the last lines):" : ":")) << "\n";
    for (std::size_t i = from; i < printed.size(); ++i) out << "    " << printed[i] << "\n";
  }

  if (text::has_failure(exercise) && !exercise.hint.empty()) {
    const auto hint = text::wrap_lines(text::plain(exercise.hint), options.width > 28 ? options.width - 8 : 20);
    out << "  " << style.cyan("hint:") << " " << hint.front() << "\n";
    for (std::size_t i = 1; i < hint.size(); ++i) out << spaces(8) << hint[i] << "\n";
    out << "  " << style.cyan("more hints:") << " cdplab hint " << exercise.id << "\n";
  }
}

std::size_t header_width(const ExerciseResult& exercise) {
  const std::string file = exercise.file.empty() ? text::exercise_path(exercise) : exercise.file;
  const std::size_t width = text::display_width(text::plain(file));
  return exercise.title.empty() ? width : width + 2 + text::display_width(text::plain(exercise.title));
}

}  // namespace

std::size_t terminal_width() {
  // COLUMNS, when exported, wins (a pager's width, a narrow window in a script); then the
  // terminal's own; 100 when the output is no terminal (a file, a pipe, a CI log).
  if (const char* columns = std::getenv("COLUMNS")) {
    const long value = std::strtol(columns, nullptr, 10);
    if (value >= 40 && value <= 1000) return static_cast<std::size_t>(value);
  }
  winsize size{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col >= 40) return size.ws_col;
  return 100;
}

std::string render_terminal(const GradeReport& report, const TerminalOptions& options) {
  const Style style(options.color);
  std::ostringstream out;

  std::size_t header_column = 0, score_width = 0;
  for (const auto& exercise : report.exercises) {
    header_column = std::max(header_column, header_width(exercise));
    score_width = std::max(score_width, text::display_width(text::format_score(exercise.points(), exercise.max_points())));
  }
  if (header_column + 3 + score_width > options.width)
    header_column = options.width > score_width + 3 + 30 ? options.width - score_width - 3 : 30;

  if (report.exercises.empty()) out << "No exercises were graded.\n\n";
  std::set<std::string> said;
  for (const auto& exercise : report.exercises) {
    write_exercise(out, exercise, header_column, style, options, said);
    out << "\n";
  }

  for (const auto& note : report.notes)  // remarks on the whole run: files left out, a remote without a GPU
    for (const auto& line : text::wrap_lines("note: " + text::plain(note), options.width, 6)) out << line << "\n";
  const auto summary = text::summary_lines(report);
  for (std::size_t i = 0; i < summary.size(); ++i) {
    // summary_lines() puts "grade incomplete" last when something was skipped.
    const bool incomplete = !report.complete() && i + 1 == summary.size();
    for (const auto& line : text::wrap_lines(summary[i], options.width))
      out << (incomplete ? style.yellow(style.bold(line)) : line) << "\n";
  }
  return out.str();
}

}  // namespace cdplab::report
