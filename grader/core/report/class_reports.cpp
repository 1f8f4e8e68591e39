// The reports of a graded class: per-student feedback pages (Markdown, HTML), the CSV
// gradebook, and the class summary.
#include "report/report.h"
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

std::string percent(double points, double max_points) {
  if (max_points <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.0f %%", 100.0 * points / max_points);
  return text;
}

const char* outcome_word(Outcome outcome) {
  switch (outcome) {
    case Outcome::passed: return "passed";
    case Outcome::failed: return "failed";
    case Outcome::skipped: return "skipped";
  }
  return "failed";
}

/// A Markdown table cell: no line breaks, no column separators.
std::string md_cell(const std::string& raw) {
  std::string out;
  for (const char c : text::plain(raw)) {
    if (c == '\n') out += ' ';
    else if (c == '|') out += "\\|";
    else out += c;
  }
  return out;
}

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

std::string exercise_key(const ExerciseResult& e) { return text::exercise_path(e); }

std::string picture_of(const Pictures& pictures, const ExerciseResult& e) {
  const auto found = pictures.find(exercise_key(e));
  return found == pictures.end() ? "" : found->second;
}

std::string csv_field(const std::string& raw) {
  std::string value = text::plain(raw);
  // A field a spreadsheet would take for a formula (a student's folder named "=1+2") is text.
  if (!value.empty() && std::string("=+-@\t").find(value[0]) != std::string::npos) value = "'" + value;
  if (value.find_first_of(",\"\n\r") == std::string::npos) return value;
  std::string out = "\"";
  for (const char c : value) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

std::string to_feedback_markdown(const GradeReport& report, const std::string& student, const Pictures& pictures) {
  std::ostringstream out;
  out << "# Feedback for " << md_text(student) << "\n\n";
  out << "**Score: " << text::format_score(report.points(), report.max_points()) << "** ("
      << percent(report.points(), report.max_points()) << ")";
  if (!report.complete()) out << ", not final: some items were skipped";
  out << "\n\n";
  for (const auto& line : text::summary_lines(report)) out << "- " << text::plain(line) << "\n";
  for (const auto& note : report.notes) out << "- note: " << text::plain(note) << "\n";
  // A feedback text given before (the same skip reason for every GPU check, say) is named, not repeated.
  std::map<std::string, std::string> said;  // feedback -> the item that gave it first
  for (const auto& e : report.exercises) {
    out << "\n## " << exercise_key(e) << ": " << text::plain(e.title) << " ("
        << text::format_score(e.points(), e.max_points()) << ")\n\n";
    if (!e.problem.empty()) {
      out << "**Problem:** " << md_cell(e.problem) << "\n\n";
      if (!e.build_log.empty()) out << md_block(e.build_log) << "\n";
    }
    out << "| item | outcome | points |\n| --- | --- | --- |\n";
    for (const auto& item : e.items)
      out << "| " << md_cell(text::item_label(item)) << " | " << outcome_word(item.outcome) << " | "
          << text::format_score(item.points, item.max_points) << " |\n";
    for (const auto& item : e.items) {
      if (item.outcome == Outcome::passed || item.feedback.empty()) continue;
      out << "\n**" << md_cell(text::item_label(item)) << "** (" << outcome_word(item.outcome) << ")";
      const std::string label = exercise_key(e) + ", " + text::item_label(item);
      if (const auto first = said.emplace(item.feedback, label); !first.second)
        out << ": as for " << md_cell(first.first->second) << ", above\n";
      else
        out << "\n\n" << md_block(item.feedback);
    }
    if (text::has_failure(e) && !e.hint.empty()) out << "\nHint: " << md_cell(e.hint) << "\n";
    if (const std::string picture = picture_of(pictures, e); !picture.empty())
      out << "\n![launch graph of " << exercise_key(e) << "](" << picture << ")\n";
  }
  return out.str();
}

std::string to_feedback_html(const GradeReport& report, const std::string& student, const Pictures& pictures) {
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
      << esc(percent(report.points(), report.max_points())) << ")"
      << (report.complete() ? "" : ", not final: some items were skipped") << "</p>\n<ul>\n";
  for (const auto& line : text::summary_lines(report)) out << "<li>" << esc(line) << "</li>\n";
  for (const auto& note : report.notes) out << "<li>note: " << esc(note) << "</li>\n";
  out << "</ul>\n";
  std::map<std::string, std::string> said;  // feedback -> the item that gave it first
  for (const auto& e : report.exercises) {
    out << "<h2>" << esc(exercise_key(e)) << ": " << esc(e.title) << " ("
        << esc(text::format_score(e.points(), e.max_points())) << ")</h2>\n";
    if (!e.problem.empty()) {
      out << "<p class=\"failed\"><strong>Problem:</strong> " << esc(e.problem) << "</p>\n";
      if (!e.build_log.empty()) out << "<pre>" << esc(e.build_log) << "</pre>\n";
    }
    out << "<table>\n<tr><th>item</th><th>outcome</th><th>points</th></tr>\n";
    for (const auto& item : e.items)
      out << "<tr><td>" << esc(text::item_label(item)) << "</td><td class=\"" << outcome_word(item.outcome) << "\">"
          << outcome_word(item.outcome) << "</td><td>" << esc(text::format_score(item.points, item.max_points))
          << "</td></tr>\n";
    out << "</table>\n";
    for (const auto& item : e.items) {
      if (item.outcome == Outcome::passed || item.feedback.empty()) continue;
      out << "<h3 class=\"" << outcome_word(item.outcome) << "\">" << esc(text::item_label(item)) << "</h3>\n";
      const std::string label = exercise_key(e) + ", " + text::item_label(item);
      if (const auto first = said.emplace(item.feedback, label); !first.second)
        out << "<p>As for " << esc(first.first->second) << ", above.</p>\n";
      else
        out << "<pre>" << esc(item.feedback) << "</pre>\n";
    }
    if (text::has_failure(e) && !e.hint.empty()) out << "<p><strong>Hint:</strong> " << esc(e.hint) << "</p>\n";
    if (const std::string picture = picture_of(pictures, e); !picture.empty())
      out << "<p><img src=\"" << text::markup_escape(picture, true) << "\" alt=\"launch graph of "
          << text::markup_escape(exercise_key(e), true) << "\"></p>\n";
  }
  out << "</body>\n</html>\n";
  return out.str();
}

std::string to_gradebook_csv(const std::vector<ClassRow>& rows) {
  std::vector<std::string> columns;
  std::map<std::string, double> column_max;
  for (const auto& row : rows) {
    for (const auto& e : row.report.exercises) {
      const std::string key = exercise_key(e);
      if (column_max.count(key) == 0) columns.push_back(key);
      column_max[key] = std::max(column_max[key], e.max_points());
    }
  }
  // One row per student and nothing else: each column's maximum is in its heading.
  std::ostringstream out;
  out << "student";
  for (const auto& c : columns) out << "," << csv_field(c + " (max " + text::format_points(column_max[c]) + ")");
  out << ",total,max,complete\r\n";
  for (const auto& row : rows) {
    std::map<std::string, double> points;
    for (const auto& e : row.report.exercises) points[exercise_key(e)] = e.points();
    out << csv_field(row.student);
    for (const auto& c : columns) out << "," << (points.count(c) ? text::format_points(points[c]) : "");
    out << "," << text::format_points(row.report.points()) << "," << text::format_points(row.report.max_points())
        << "," << (row.report.complete() ? "yes" : "no") << "\r\n";
  }
  return out.str();
}

std::string to_class_summary(const std::vector<ClassRow>& rows) {
  std::ostringstream out;
  out << "# Class summary\n\n";
  std::vector<double> shares;
  int incomplete = 0;
  for (const auto& row : rows) {
    if (row.report.max_points() > 0) shares.push_back(100.0 * row.report.points() / row.report.max_points());
    if (!row.report.complete()) ++incomplete;
  }
  out << "- students graded: " << rows.size() << "\n";
  if (incomplete > 0) out << "- grades not final (items skipped, e.g. no GPU): " << incomplete << "\n";
  if (!shares.empty()) {
    const double mean = std::accumulate(shares.begin(), shares.end(), 0.0) / static_cast<double>(shares.size());
    char line[160];
    std::snprintf(line, sizeof line, "- total score: mean %.1f %%, median %.1f %%, lowest %.1f %%, highest %.1f %%\n",
                  mean, median(shares), *std::min_element(shares.begin(), shares.end()),
                  *std::max_element(shares.begin(), shares.end()));
    out << line << "\n## Spread of total scores\n\n| score | students |\n| --- | --- |\n";
    int buckets[10] = {};
    for (const double s : shares) ++buckets[std::min(9, static_cast<int>(s / 10))];
    for (int b = 9; b >= 0; --b)
      out << "| " << b * 10 << (b == 9 ? "-100" : "-" + std::to_string(b * 10 + 9)) << " % | " << buckets[b] << " "
          << std::string(static_cast<std::size_t>(buckets[b]), '#') << " |\n";
  }

  // Per exercise: the mean share of its points; per item: how often it failed.
  std::vector<std::string> order;
  std::map<std::string, std::pair<double, double>> exercise_points;  // points, max over the class
  std::map<std::string, int> failed_items;
  for (const auto& row : rows) {
    for (const auto& e : row.report.exercises) {
      const std::string key = exercise_key(e);
      if (exercise_points.count(key) == 0) order.push_back(key);
      exercise_points[key].first += e.points();
      exercise_points[key].second += e.max_points();
      for (const auto& item : e.items)
        if (item.outcome == Outcome::failed) ++failed_items[key + ": " + text::item_label(item)];
    }
  }
  if (!order.empty()) {
    out << "\n## Exercises\n\n| exercise | mean score |\n| --- | --- |\n";
    for (const auto& key : order)
      out << "| " << md_cell(key) << " | " << percent(exercise_points[key].first, exercise_points[key].second)
          << " |\n";
  }
  std::vector<std::pair<std::string, int>> most(failed_items.begin(), failed_items.end());
  std::stable_sort(most.begin(), most.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (!most.empty()) {
    out << "\n## Items failed most often\n\n| item | students |\n| --- | --- |\n";
    for (std::size_t i = 0; i < most.size() && i < 15; ++i)
      out << "| " << md_cell(most[i].first) << " | " << most[i].second << " |\n";
  }
  std::ostringstream problems;
  for (const auto& row : rows)
    for (const auto& e : row.report.exercises)
      if (!e.problem.empty())
        problems << "| " << md_cell(row.student) << " | " << md_cell(exercise_key(e)) << " | "
                 << md_cell(text::first_line(e.problem, 160)) << " |\n";
  if (!problems.str().empty())
    out << "\n## Work that could not be graded in full\n\n| student | exercise | problem |\n| --- | --- | --- |\n"
        << problems.str();
  return out.str();
}

}  // namespace cdplab::report
