// The feedback pages of a graded student (Markdown, HTML). The class's own files are in
// gradebook.cpp.
#include "report/report.h"
#include "report/grid_timeline.h"
#include "report/launch_tree.h"
#include "report/text.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <sstream>

namespace cdplab::report {
namespace {

using grading::ExerciseResult;
using grading::GradeReport;
using grading::Item;
using grading::Outcome;

const char* outcome_word(Outcome outcome) {
  switch (outcome) {
    case Outcome::passed: return "passed";
    case Outcome::failed: return "failed";
    case Outcome::skipped: return "skipped";
  }
  return "failed";
}

std::string md_cell(const std::string& raw) { return text::markdown_cell(raw); }

using text::percent;

/// A name in running Markdown text (a heading): one line, its markup characters as themselves.
std::string md_text(const std::string& raw) {
  std::string out;
  for (const char c : text::plain(raw)) {
    if (c == '\n' || c == '\t') out += ' ';
    else if (std::string("\\`*_[]<>#|!").find(c) != std::string::npos) out += std::string("\\") + c;
    else out += c;
  }
  return out;
}

/// A fenced Markdown block that the text cannot close early.
std::string md_block(const std::string& raw) {
  const std::string body = text::plain(raw);
  std::string fence = "```";
  while (body.find(fence) != std::string::npos) fence += '`';
  return fence + "text\n" + body + (body.empty() || body.back() == '\n' ? "" : "\n") + fence + "\n";
}

std::string picture_of(const Pictures& pictures, const ExerciseResult& e) {
  const auto found = pictures.find(text::exercise_path(e));
  return found == pictures.end() ? "" : found->second;
}

/// "62.5 %" after the score: the share the class summary counts too (text::score_share).
std::string score_percent(const GradeReport& report) {
  const auto share = text::score_share(report);
  if (!share) return "-";
  return text::share_text(*share) + (report.complete() ? "" : " of the points decided");
}

/// The due date's lines of the feedback: when it was due, when the work came, how late, and the
/// penalty. Plain text; each line starts with its label ("Due date", "Late penalty").
std::vector<std::pair<std::string, std::string>> late_lines(const GradeReport& report, const LateNote& late) {
  std::vector<std::pair<std::string, std::string>> lines;
  std::string when = late.due + ". ";
  if (late.unknown || late.submitted.empty()) {
    lines.emplace_back("Due date", when + "The time of your submission is not known, so no lateness was judged and no "
                                          "penalty taken.");
    return lines;
  }
  when += "Submitted " + late.submitted;
  if (late.days_late <= 0) {
    lines.emplace_back("Due date", when + ": on time, no late penalty.");
    return lines;
  }
  lines.emplace_back("Due date", when + ": " + std::to_string(late.days_late) +
                                     (late.days_late == 1 ? " day" : " days") + " late (a started day counts as one).");
  std::string policy = text::format_points(late.percent_per_day) + " % of the points a day late";
  if (late.limit_days >= 0)
    policy += ", no points after " + std::to_string(late.limit_days) + (late.limit_days == 1 ? " day" : " days");
  lines.emplace_back("Late penalty", policy + ": " + text::format_points(late.penalty) + " points off, " +
                                         text::format_score(late.after_penalty, report.max_points()) +
                                         " after the penalty.");
  return lines;
}

}  // namespace

std::string to_feedback_markdown(const GradeReport& report, const std::string& student, const Pictures& pictures,
                                 const LateNote* late) {
  std::ostringstream out;
  out << "# Feedback for " << md_text(student) << "\n\n";
  out << "**Score: " << text::format_score(report.points(), report.max_points()) << "** ("
      << score_percent(report) << ")";
  if (!report.complete()) out << ", not final: some items were skipped";
  out << "\n\n";
  if (late != nullptr) {
    for (const auto& [label, line] : late_lines(report, *late)) out << "**" << label << ":** " << md_cell(line) << "\n\n";
  }
  for (const auto& line : text::summary_lines(report)) out << "- " << text::plain(line) << "\n";
  for (const auto& note : report.notes) out << "- note: " << text::plain(note) << "\n";
  // A feedback text given before (the same skip reason for every GPU check, say) is named, not repeated.
  std::map<std::string, std::string> said;  // feedback -> the item that gave it first
  for (const auto& e : report.exercises) {
    out << "\n## " << text::exercise_path(e) << ": " << text::plain(e.title) << " ("
        << text::format_score(e.points(), e.max_points()) << ")\n\n";
    if (!e.problem.empty()) {
      out << "**Problem:** " << md_cell(e.problem) << "\n\n";
      if (!e.build_log.empty()) out << md_block(e.build_log) << "\n";
    }
    if (!e.host_parts_output.empty()) out << "**Your host parts printed:**\n\n" << md_block(e.host_parts_output) << "\n";
    out << "| item | outcome | points |\n| --- | --- | --- |\n";
    for (const auto& item : e.items)
      out << "| " << md_cell(text::item_label(item)) << " | " << outcome_word(item.outcome) << " | "
          << text::format_score(item.points, item.max_points) << " |\n";
    for (const auto& item : e.items) {
      if (item.outcome == Outcome::passed || item.feedback.empty()) continue;
      out << "\n**" << md_cell(text::item_label(item)) << "** (" << outcome_word(item.outcome) << ")";
      const std::string label = text::exercise_path(e) + ", " + text::item_label(item);
      if (const auto first = said.emplace(item.feedback, label); !first.second)
        out << ": as for " << md_cell(first.first->second) << ", above\n";
      else
        out << "\n\n" << md_block(item.feedback);
    }
    if (text::has_failure(e) && !e.hint.empty()) out << "\nHint: " << md_cell(e.hint) << "\n";
    if (const auto* tree = shown_launch_tree(e, false)) {
      std::string lines;
      for (const auto& line : launch_tree_lines(tree->launches)) lines += line + "\n";
      out << "\nLaunches of the check " << md_cell(tree->name) << ", as the grader saw them:\n\n" << md_block(lines);
      if (!e.lesson_launches.empty()) {
        out << "\nThe lesson asks for:\n\n";
        for (const auto& line : e.lesson_launches) out << "- " << md_cell(line) << "\n";
      }
    }
    for (const auto* check : checks_with_timelines(e))
      out << "\nWhen the grids of the check " << md_cell(check->name) << " ran:\n\n"
          << md_block(timeline_text(check->timeline));
    if (const std::string picture = picture_of(pictures, e); !picture.empty())
      out << "\n![launch graph of " << text::exercise_path(e) << "](" << picture << ")\n";
  }
  return out.str();
}

std::string to_feedback_html(const GradeReport& report, const std::string& student, const Pictures& pictures,
                             const LateNote* late) {
  const auto esc = [](const std::string& raw) { return text::markup_escape(raw, false); };
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Feedback for "
      << esc(student) << "</title>\n<style>\n"
      << "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}\n"
      << "table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.2rem .6rem;text-align:left}\n"
      << ".passed{color:#1a7f37}.failed{color:#cf222e}.skipped{color:#9a6700}\n"
      << "pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;white-space:pre-wrap}\n"
      << "img{max-width:100%;border:1px solid #ddd}\n</style>\n</head>\n<body>\n";
  out << "<h1>Feedback for " << esc(student) << "</h1>\n<p><strong>Score: "
      << esc(text::format_score(report.points(), report.max_points())) << "</strong> ("
      << esc(score_percent(report)) << ")"
      << (report.complete() ? "" : ", not final: some items were skipped") << "</p>\n";
  if (late != nullptr) {
    for (const auto& [label, line] : late_lines(report, *late))
      out << "<p><strong>" << esc(label) << ":</strong> " << esc(line) << "</p>\n";
  }
  out << "<ul>\n";
  for (const auto& line : text::summary_lines(report)) out << "<li>" << esc(line) << "</li>\n";
  for (const auto& note : report.notes) out << "<li>note: " << esc(note) << "</li>\n";
  out << "</ul>\n";
  std::map<std::string, std::string> said;  // feedback -> the item that gave it first
  for (const auto& e : report.exercises) {
    out << "<h2>" << esc(text::exercise_path(e)) << ": " << esc(e.title) << " ("
        << esc(text::format_score(e.points(), e.max_points())) << ")</h2>\n";
    if (!e.problem.empty()) {
      out << "<p class=\"failed\"><strong>Problem:</strong> " << esc(e.problem) << "</p>\n";
      if (!e.build_log.empty()) out << "<pre>" << esc(e.build_log) << "</pre>\n";
    }
    if (!e.host_parts_output.empty())
      out << "<p><strong>Your host parts printed:</strong></p>\n<pre>" << esc(e.host_parts_output) << "</pre>\n";
    out << "<table>\n<tr><th>item</th><th>outcome</th><th>points</th></tr>\n";
    for (const auto& item : e.items)
      out << "<tr><td>" << esc(text::item_label(item)) << "</td><td class=\"" << outcome_word(item.outcome) << "\">"
          << outcome_word(item.outcome) << "</td><td>" << esc(text::format_score(item.points, item.max_points))
          << "</td></tr>\n";
    out << "</table>\n";
    for (const auto& item : e.items) {
      if (item.outcome == Outcome::passed || item.feedback.empty()) continue;
      out << "<h3 class=\"" << outcome_word(item.outcome) << "\">" << esc(text::item_label(item)) << "</h3>\n";
      const std::string label = text::exercise_path(e) + ", " + text::item_label(item);
      if (const auto first = said.emplace(item.feedback, label); !first.second)
        out << "<p>As for " << esc(first.first->second) << ", above.</p>\n";
      else
        out << "<pre>" << esc(item.feedback) << "</pre>\n";
    }
    if (text::has_failure(e) && !e.hint.empty()) out << "<p><strong>Hint:</strong> " << esc(e.hint) << "</p>\n";
    if (const auto* tree = shown_launch_tree(e, false)) {
      out << "<h3>Launch tree</h3>\n<figure>"
          << launch_tree_svg(tree->launches, e.lesson_launches, "launches of the check \"" + tree->name + "\"")
          << "</figure>\n";
    }
    for (const auto* check : checks_with_timelines(e)) {
      out << "<h3>Timeline</h3>\n<figure>"
          << timeline_svg(check->timeline, "when the grids of the check \"" + check->name + "\" ran") << "</figure>\n";
    }
    if (const std::string picture = picture_of(pictures, e); !picture.empty())
      out << "<p><img src=\"" << text::markup_escape(picture, true) << "\" alt=\"launch graph of "
          << text::markup_escape(text::exercise_path(e), true) << "\"></p>\n";
  }
  out << "</body>\n</html>\n";
  return out.str();
}

}  // namespace cdplab::report
