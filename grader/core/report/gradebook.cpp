// The files of a graded class: the gradebook, the learning-platform exports, the class summary
// and each exercise's score histogram.
#include "report/report.h"
#include "report/text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <sstream>

namespace cdplab::report {
namespace {

using grading::ExerciseResult;
using grading::Outcome;

std::string csv_field(const std::string& raw) {
  std::string value = text::plain(raw);
  // A field a spreadsheet would take for a formula (a student's folder named "=1+2") is text.
  if (!value.empty() && std::string("=+-@\t").find(value[0]) != std::string::npos) value = "'" + value;
  if (value.find_first_of(",\"\n\r") == std::string::npos) return value;
  std::string out = "\"";
  for (const char c : value) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (std::size_t i = 0; i < fields.size(); ++i) line += (i == 0 ? "" : ",") + csv_field(fields[i]);
  return line + "\r\n";
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/// The class's exercises in the order first seen, and each one's maximum.
struct Columns {
  std::vector<std::string> keys;
  std::map<std::string, double> max;
  double total_max() const {
    double sum = 0;
    for (const auto& [key, points] : max) sum += points;
    return sum;
  }
};

Columns class_columns(const std::vector<ClassRow>& rows) {
  Columns columns;
  for (const auto& row : rows) {
    for (const auto& e : row.report.exercises) {
      const std::string key = text::exercise_path(e);
      if (columns.max.count(key) == 0) columns.keys.push_back(key);
      columns.max[key] = std::max(columns.max[key], e.max_points());
    }
  }
  return columns;
}

/// The points a learning platform is given for a row: the final points of a final grade, else
/// nothing (an empty cell leaves the platform's grade as it is).
std::string platform_points(const ClassRow& row, std::size_t exercises) {
  return grade_status(row, exercises) == "final" ? text::format_points(row.final_points()) : "";
}

std::string svg_text(double x, double y, const std::string& anchor, const std::string& text, int size = 11) {
  char head[128];
  std::snprintf(head, sizeof head, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\">", x, y,
                anchor.c_str(), size);
  return head + text::markup_escape(text) + "</text>\n";
}

}  // namespace

std::string grade_status(const ClassRow& row, std::size_t exercises) {
  if (!row.submitted) return "no submission";
  if (row.report.exercises.size() < exercises) return "partial";
  if (!row.report.complete()) return "not final";
  return "final";
}

std::string to_gradebook_csv(const std::vector<ClassRow>& rows, const GradebookColumns& shown) {
  const Columns columns = class_columns(rows);
  std::vector<std::string> heading = {"student"};
  if (shown.roster) heading.insert(heading.end(), {"id", "name"});
  if (shown.due) heading.insert(heading.end(), {"submitted", "days late"});
  for (const auto& key : columns.keys) heading.push_back(key + " (max " + text::format_points(columns.max.at(key)) + ")");
  heading.insert(heading.end(), {"total", "max"});
  // "after penalty", not "final": "final" is a status (grade_status), and a grade that is not
  // final has points after its penalty too.
  if (shown.due) heading.insert(heading.end(), {"late penalty", "after penalty"});
  heading.push_back("status");
  std::string out = csv_line(heading);
  for (const auto& row : rows) {
    std::map<std::string, double> points;
    for (const auto& e : row.report.exercises) points[text::exercise_path(e)] = e.points();
    std::vector<std::string> fields = {row.student};
    if (shown.roster) fields.insert(fields.end(), {row.id, row.full_name});
    if (shown.due) {
      fields.push_back(row.submitted_at);
      fields.push_back(!row.submitted ? "" : row.lateness_unknown ? "unknown" : std::to_string(row.days_late));
    }
    for (const auto& key : columns.keys) fields.push_back(points.count(key) ? text::format_points(points[key]) : "");
    fields.push_back(row.submitted ? text::format_points(row.report.points()) : "");
    fields.push_back(text::format_points(row.submitted ? row.report.max_points() : columns.total_max()));
    if (shown.due) {
      fields.push_back(row.submitted ? text::format_points(row.late_penalty()) : "");
      fields.push_back(row.submitted ? text::format_points(row.final_points()) : "");
    }
    fields.push_back(grade_status(row, columns.keys.size()));
    out += csv_line(fields);
  }
  return out;
}

std::string to_canvas_csv(const std::vector<ClassRow>& rows, const std::string& assignment) {
  const Columns columns = class_columns(rows);
  std::string out = csv_line({"Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment});
  out += csv_line({"Points Possible", "", "", "", "", text::format_points(columns.total_max())});
  for (const auto& row : rows) {
    out += csv_line({row.full_name.empty() ? row.student : row.full_name, row.canvas_id, row.id, row.login,
                     row.section, platform_points(row, columns.keys.size())});
  }
  return out;
}

std::string to_moodle_csv(const std::vector<ClassRow>& rows, const std::string& assignment) {
  const Columns columns = class_columns(rows);
  std::string out = csv_line({"ID number", "Username", "Email address", "Full name", "Student", assignment});
  for (const auto& row : rows)
    out += csv_line({row.id, row.login, row.email, row.full_name, row.student, platform_points(row, columns.keys.size())});
  return out;
}

std::string histogram_file(const std::string& exercise_key) {
  std::string name = exercise_key;
  std::replace(name.begin(), name.end(), '/', '.');
  return "histograms/" + name + ".svg";
}

std::map<std::string, std::string> to_score_histograms(const std::vector<ClassRow>& rows) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<int>> bins;  // tenths of the decided points: 0-9 % .. 90-100 %
  std::map<std::string, double> most;
  std::map<std::string, int> undecided;  // students graded on it with nothing of it decided (every check skipped)
  for (const auto& row : rows) {
    for (const auto& e : row.report.exercises) {
      const std::string key = text::exercise_path(e);
      if (bins.count(key) == 0) {
        order.push_back(key);
        bins[key].assign(10, 0);
      }
      most[key] = std::max(most[key], e.max_points());
      const double decided = e.decided_max_points();
      if (decided <= 0) {
        ++undecided[key];
        continue;
      }
      ++bins[key][static_cast<std::size_t>(std::clamp(static_cast<int>(10.0 * e.points() / decided), 0, 9))];
    }
  }
  std::map<std::string, std::string> pictures;
  const double bar = 22, gap = 4, left = 30, top = 28, height = 80, plot_width = left + 10 * (bar + gap) + 10;
  for (const auto& key : order) {
    const auto& counts = bins[key];
    const int tallest = std::max(1, *std::max_element(counts.begin(), counts.end()));
    const int scored = std::accumulate(counts.begin(), counts.end(), 0);
    const int students = scored + undecided[key];
    std::string title = key + " (max " + text::format_points(most[key]) + "): " + std::to_string(students) +
                        (students == 1 ? " student" : " students");
    if (undecided[key] > 0)
      title += ", " + std::to_string(undecided[key]) + " not in the bars (every check skipped, nothing decided)";
    // Wide enough for the title: some 7 px a character at 12 px sans-serif, counted in UTF-8 characters.
    const auto characters = static_cast<double>(std::count_if(
        title.begin(), title.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
    const double width = std::max(plot_width, std::ceil(left + 7.0 * characters + 10));
    std::ostringstream svg;
    char head[256];
    std::snprintf(head, sizeof head,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                  "font-family=\"sans-serif\">\n",
                  width, top + height + 34, width, top + height + 34);
    svg << head << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    svg << svg_text(left, 14, "start", title, 12);
    for (std::size_t b = 0; b < counts.size(); ++b) {
      const double x = left + static_cast<double>(b) * (bar + gap);
      const double h = height * counts[b] / tallest;
      char rect[200];
      std::snprintf(rect, sizeof rect,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#4c78a8\"><title>%d-%d %%: %d</title></rect>\n",
                    x, top + height - h, bar, h, static_cast<int>(b) * 10, b == 9 ? 100 : static_cast<int>(b) * 10 + 9,
                    counts[b]);
      svg << rect;
      if (counts[b] > 0) svg << svg_text(x + bar / 2, top + height - h - 3, "middle", std::to_string(counts[b]), 10);
    }
    char axis[160];
    std::snprintf(axis, sizeof axis, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", left - 2,
                  top + height, left + 10 * (bar + gap), top + height);
    svg << axis << svg_text(left, top + height + 14, "start", "0 %")
        << svg_text(left + 10 * (bar + gap) - gap, top + height + 14, "end", "100 %")
        << svg_text(left + 5 * (bar + gap), top + height + 28, "middle", "share of the points decided", 10) << "</svg>\n";
    pictures[key] = svg.str();
  }
  return pictures;
}

std::string to_class_summary(const std::vector<ClassRow>& rows, bool histograms) {
  const Columns columns = class_columns(rows);
  std::ostringstream out;
  out << "# Class summary\n\n";
  std::vector<double> shares;
  std::vector<std::string> missing, not_final, partial, late, unknown_time;
  int skipped_items = 0;
  double skipped_points = 0;
  for (const auto& row : rows) {
    const std::string status = grade_status(row, columns.keys.size());
    if (status == "no submission") {
      missing.push_back(row.student);
      continue;
    }
    if (status == "partial") partial.push_back(row.student);
    if (!row.report.complete()) not_final.push_back(row.student);
    skipped_items += row.report.count(Outcome::skipped);
    skipped_points += row.report.max_points() - row.report.decided_max_points();
    if (row.days_late > 0) late.push_back(row.student);
    if (row.lateness_unknown) unknown_time.push_back(row.student);
    // A score is a share of the points decided: a skipped item is not a lost one.
    if (const auto share = text::score_share(row.report)) shares.push_back(*share);
  }
  const auto names = [](const std::vector<std::string>& list) {
    std::string joined;
    for (std::size_t i = 0; i < list.size() && i < 10; ++i) joined += (i ? ", " : "") + text::markdown_cell(list[i]);
    return joined + (list.size() > 10 ? ", ..." : "");
  };
  out << "- students graded: " << rows.size() - missing.size() << "\n";
  if (!missing.empty()) out << "- on the roster, no submission: " << missing.size() << " (" << names(missing) << ")\n";
  if (!not_final.empty())
    out << "- grades not final: " << not_final.size() << " (" << names(not_final) << "): " << skipped_items
        << " items skipped (e.g. no GPU), " << text::format_points(skipped_points)
        << " points not decided; the scores below are shares of the points decided\n";
  if (!partial.empty())
    out << "- graded on fewer exercises than the class (an earlier --only): " << partial.size() << " ("
        << names(partial) << "); grade them again with --regrade\n";
  if (!late.empty()) out << "- submitted after the due date: " << late.size() << " (" << names(late) << ")\n";
  if (!unknown_time.empty())
    out << "- submission time unknown, lateness not judged: " << unknown_time.size() << " (" << names(unknown_time) << ")\n";
  if (!shares.empty()) {
    const double mean = std::accumulate(shares.begin(), shares.end(), 0.0) / static_cast<double>(shares.size());
    char line[160];
    std::snprintf(line, sizeof line, "- total score: mean %.1f %%, median %.1f %%, lowest %.1f %%, highest %.1f %%\n",
                  mean, median(shares), *std::min_element(shares.begin(), shares.end()),
                  *std::max_element(shares.begin(), shares.end()));
    out << line << "\n## Spread of total scores\n\n| score | students |\n| --- | --- |\n";
    int buckets[10] = {};
    for (const double s : shares) ++buckets[std::clamp(static_cast<int>(s / 10), 0, 9)];
    for (int b = 9; b >= 0; --b)
      out << "| " << b * 10 << (b == 9 ? "-100" : "-" + std::to_string(b * 10 + 9)) << " % | " << buckets[b] << " "
          << std::string(static_cast<std::size_t>(buckets[b]), '#') << " |\n";
  }

  // Per exercise: the mean share of its decided points; per item: how often it failed.
  std::map<std::string, std::pair<double, double>> exercise_points;  // points, decided maximum over the class
  std::map<std::string, int> failed_items;
  for (const auto& row : rows) {
    for (const auto& e : row.report.exercises) {
      const std::string key = text::exercise_path(e);
      exercise_points[key].first += e.points();
      exercise_points[key].second += e.decided_max_points();
      for (const auto& item : e.items)
        if (item.outcome == Outcome::failed) ++failed_items[key + ": " + text::item_label(item)];
    }
  }
  if (!columns.keys.empty()) {
    out << "\n## Exercises\n\n| exercise | mean score |" << (histograms ? " spread |" : "") << "\n| --- | --- |"
        << (histograms ? " --- |" : "") << "\n";
    for (const auto& key : columns.keys) {
      out << "| " << text::markdown_cell(key) << " | "
          << text::percent(exercise_points[key].first, exercise_points[key].second) << " |";
      if (histograms) out << " ![spread of " << text::markdown_cell(key) << "](" << histogram_file(key) << ") |";
      out << "\n";
    }
  }
  std::vector<std::pair<std::string, int>> most(failed_items.begin(), failed_items.end());
  std::stable_sort(most.begin(), most.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (!most.empty()) {
    out << "\n## Items failed most often\n\n| item | students |\n| --- | --- |\n";
    for (std::size_t i = 0; i < most.size() && i < 15; ++i)
      out << "| " << text::markdown_cell(most[i].first) << " | " << most[i].second << " |\n";
  }
  std::ostringstream problems;
  for (const auto& row : rows)
    for (const auto& e : row.report.exercises)
      if (!e.problem.empty())
        problems << "| " << text::markdown_cell(row.student) << " | " << text::markdown_cell(text::exercise_path(e)) << " | "
                 << text::markdown_cell(text::first_line(e.problem, 160)) << " |\n";
  if (!problems.str().empty())
    out << "\n## Work that could not be graded in full\n\n| student | exercise | problem |\n| --- | --- | --- |\n"
        << problems.str();
  return out.str();
}

}  // namespace cdplab::report
