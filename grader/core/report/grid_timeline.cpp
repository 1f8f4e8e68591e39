#include "report/grid_timeline.h"

#include "report/launch_tree.h"
#include "report/text.h"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace cdplab::report {

using grading::GridSpan;
using grading::GridTimeline;

namespace {

constexpr int kLabelColumns = 30;

/// The kernels in the order their first grid started (grids are kept by start time).
std::vector<std::string> kernels_by_first_start(const GridTimeline& timeline) {
  std::vector<std::string> kernels;
  for (const auto& g : timeline.grids)
    if (std::find(kernels.begin(), kernels.end(), g.kernel) == kernels.end()) kernels.push_back(g.kernel);
  return kernels;
}

char kernel_letter(const std::vector<std::string>& kernels, const std::string& kernel) {
  const auto at = static_cast<std::size_t>(std::find(kernels.begin(), kernels.end(), kernel) - kernels.begin());
  return at < 26 ? static_cast<char>('A' + at) : '?';
}

/// The end drawn for a grid: its recorded end, or the timeline's last moment where none was seen.
std::uint64_t drawn_end(const GridSpan& g, std::uint64_t last) { return g.ended() ? g.end_ns : std::max(last, g.start_ns); }

std::uint64_t last_moment(const GridTimeline& timeline) {
  std::uint64_t last = 0;
  for (const auto& g : timeline.grids) last = std::max({last, g.start_ns, g.ended() ? g.end_ns : 0});
  return std::max<std::uint64_t>(last, 1);
}

std::string where_launched(const GridSpan& g) {
  if (g.stream == "null") return "null stream, block " + std::to_string(g.parent_block);
  if (g.stream == "tail") return "tail launch";
  if (g.stream == "fire-and-forget") return "fire-and-forget";
  if (g.stream == "named") return "named streams";
  return "stream not told";
}

/// "2.5 us", "1.25 ms".
std::string duration(double ns) {
  char text[32];
  if (ns >= 1e6) std::snprintf(text, sizeof text, "%.3g ms", ns / 1e6);
  else std::snprintf(text, sizeof text, "%.3g us", ns / 1e3);
  return text;
}

/// Grids of one row onto lines: each on the first line whose grids have all ended before it starts.
void pack(const GridTimeline& timeline, const std::vector<std::size_t>& grids, const std::string& label,
          const std::string& stream, int depth, std::uint64_t last, std::vector<TimelineLine>& out) {
  std::vector<TimelineLine> lines;
  std::vector<std::uint64_t> free_from;
  for (const std::size_t i : grids) {
    const auto& g = timeline.grids[i];
    std::size_t line = 0;
    while (line < lines.size() && free_from[line] > g.start_ns) ++line;
    if (line == lines.size()) {
      lines.push_back({lines.empty() ? label : "", stream, depth, {}});
      free_from.push_back(0);
    }
    lines[line].grids.push_back(i);
    free_from[line] = drawn_end(g, last);
  }
  out.insert(out.end(), lines.begin(), lines.end());
}

std::string fit(std::string text, std::size_t columns) {
  if (text.size() > columns) text = text.substr(0, columns - 1) + "~";
  return text + std::string(columns - text.size(), ' ');
}

}  // namespace

std::string grid_name(const GridTimeline& timeline, std::size_t index) {
  const auto kernels = kernels_by_first_start(timeline);
  const auto& kernel = timeline.grids.at(index).kernel;
  int ordinal = 0;
  for (std::size_t i = 0; i <= index; ++i) ordinal += timeline.grids[i].kernel == kernel ? 1 : 0;
  return std::string(1, kernel_letter(kernels, kernel)) + std::to_string(ordinal);
}

std::vector<TimelineLine> timeline_lines(const GridTimeline& timeline) {
  const std::uint64_t last = last_moment(timeline);
  std::map<std::uint64_t, std::size_t> by_id;
  for (std::size_t i = 0; i < timeline.grids.size(); ++i) by_id[timeline.grids[i].id] = i;
  std::vector<std::size_t> from_host, orphans;
  std::map<std::size_t, std::vector<std::size_t>> children;  // parent index -> its grids, by start
  for (std::size_t i = 0; i < timeline.grids.size(); ++i) {
    const auto& g = timeline.grids[i];
    const auto parent = by_id.find(g.parent);
    if (g.parent == 0 || g.stream == "host") from_host.push_back(i);
    else if (parent != by_id.end() && parent->second != i) children[parent->second].push_back(i);
    else orphans.push_back(i);
  }
  std::vector<TimelineLine> lines;
  std::set<std::size_t> visited;
  // The rows of one grid's children, then theirs, depth first in start order.
  std::function<void(std::size_t, int)> visit = [&](std::size_t parent, int depth) {
    if (!visited.insert(parent).second) return;
    const auto found = children.find(parent);
    if (found == children.end()) return;
    // One row per place launched into, in the order each place first started a grid.
    std::vector<std::tuple<std::string, std::uint64_t>> places;
    std::map<std::tuple<std::string, std::uint64_t>, std::vector<std::size_t>> rows;
    for (const std::size_t i : found->second) {
      const auto& g = timeline.grids[i];
      const std::tuple<std::string, std::uint64_t> place{g.stream, g.stream == "null" ? g.parent_block : 0};
      if (rows.find(place) == rows.end()) places.push_back(place);
      rows[place].push_back(i);
    }
    // Each row, then right under it the rows of the grids on it.
    for (const auto& place : places) {
      const auto& row = rows[place];
      pack(timeline, row, grid_name(timeline, parent) + " > " + where_launched(timeline.grids[row.front()]),
           std::get<0>(place), depth, last, lines);
      for (const std::size_t i : row) visit(i, depth + 1);
    }
  };
  if (!from_host.empty()) pack(timeline, from_host, "host", "host", 0, last, lines);
  for (const std::size_t i : from_host) visit(i, 1);
  if (!orphans.empty()) pack(timeline, orphans, "launched by a grid not recorded", "", 1, last, lines);
  for (const std::size_t i : orphans) visit(i, 2);
  return lines;
}

std::string timeline_text(const GridTimeline& timeline, int width, int max_lines) {
  width = std::max(width, 60);
  std::ostringstream out;
  const std::uint64_t last = last_moment(timeline);
  out << "grids of run " << timeline.run << " of " << timeline.runs << ": " << timeline.grids.size()
      << (timeline.grids.size() == 1 ? " grid" : " grids") << " in " << duration(static_cast<double>(last));
  if (timeline.left_out > 0) out << " (" << timeline.left_out << " more not recorded)";
  if (timeline.failed_launches > 0) out << ", " << timeline.failed_launches << " launches failed";
  out << "\n";
  if (timeline.grids.empty()) return out.str();

  // The kernels' letters, as many to a line as fit.
  const auto kernels = kernels_by_first_start(timeline);
  std::string legend;
  for (const auto& kernel : kernels) {
    const auto count = std::count_if(timeline.grids.begin(), timeline.grids.end(),
                                     [&](const GridSpan& g) { return g.kernel == kernel; });
    std::string entry = std::string(1, kernel_letter(kernels, kernel)) + " = " + kernel + " (" +
                        std::to_string(count) + (count == 1 ? " grid)" : " grids)");
    if (static_cast<int>(entry.size()) > width - 2) entry = entry.substr(0, static_cast<std::size_t>(width - 3)) + "~";
    if (!legend.empty() && static_cast<int>(legend.size() + 2 + entry.size()) > width) {
      out << legend << "\n";
      legend.clear();
    }
    legend += (legend.empty() ? "" : ", ") + entry;
  }
  out << legend << "\n";

  const int columns = width - kLabelColumns - 2;  // "|" on both sides of the bars
  const auto column = [&](std::uint64_t ns) {
    return std::min(columns - 1, static_cast<int>(static_cast<double>(ns) * columns / static_cast<double>(last)));
  };
  const auto lines = timeline_lines(timeline);
  const int shown = std::min(static_cast<int>(lines.size()), max_lines);
  for (int l = 0; l < shown; ++l) {
    const auto& line = lines[static_cast<std::size_t>(l)];
    std::string bars(static_cast<std::size_t>(columns), ' ');
    for (std::size_t k = 0; k < line.grids.size(); ++k) {
      const auto& g = timeline.grids[line.grids[k]];
      const int from = column(g.start_ns);
      const int to = std::max(from, column(drawn_end(g, last)));
      const char letter = kernel_letter(kernels, g.kernel);
      const char drawn = k % 2 == 0 ? letter : static_cast<char>(std::tolower(static_cast<unsigned char>(letter)));
      if (g.launched_seen && g.launched_ns < g.start_ns)
        for (int c = column(g.launched_ns); c < from; ++c)
          if (bars[static_cast<std::size_t>(c)] == ' ') bars[static_cast<std::size_t>(c)] = '.';
      for (int c = from; c <= to; ++c) bars[static_cast<std::size_t>(c)] = drawn;
    }
    const std::string indent(static_cast<std::size_t>(std::min(line.depth, 4)), ' ');
    out << fit(indent + line.label, kLabelColumns - 1) << " |" << bars << "|\n";
  }
  if (shown < static_cast<int>(lines.size())) {
    std::size_t hidden = 0;
    for (std::size_t l = static_cast<std::size_t>(shown); l < lines.size(); ++l) hidden += lines[l].grids.size();
    std::string more = "... " + std::to_string(lines.size() - static_cast<std::size_t>(shown)) + " more lines (" +
                       std::to_string(hidden) + " grids), all in the feedback page";
    if (static_cast<int>(kLabelColumns + 1 + more.size()) <= width) more = fit("", kLabelColumns + 1) + more;
    out << more.substr(0, static_cast<std::size_t>(width)) << "\n";
  }
  // The axis: 0 at the left, the end at the right.
  const std::string end = duration(static_cast<double>(last));
  std::string axis = "0";
  axis += std::string(static_cast<std::size_t>(std::max(1, columns + 1 - 1 - static_cast<int>(end.size()))), ' ');
  out << fit("", kLabelColumns + 1) << axis << end << "\n";
  return out.str();
}

namespace {

const char* stream_colour(const std::string& stream) {
  if (stream == "host") return "#4c72b0";
  if (stream == "null") return "#dd8452";
  if (stream == "tail") return "#55a868";
  if (stream == "fire-and-forget") return "#8172b3";
  if (stream == "named") return "#c44e52";
  return "#999999";
}

const char* stream_words(const std::string& stream) {
  if (stream == "host") return "launched by the host";
  if (stream == "null") return "the launching block's NULL stream";
  if (stream == "tail") return "tail launch";
  if (stream == "fire-and-forget") return "fire-and-forget";
  if (stream == "named") return "a named stream";
  return "stream not told";
}

}  // namespace

std::string timeline_svg(const GridTimeline& timeline, const std::string& title) {
  constexpr int kMargin = 10, kLabel = 230, kPlot = 720, kRow = 18, kBar = 12, kTop = 52;
  const auto lines = timeline_lines(timeline);
  const std::uint64_t last = last_moment(timeline);
  const int rows = std::max<int>(1, static_cast<int>(lines.size()));
  const int axis_y = kTop + rows * kRow + 6;
  const int legend_y = axis_y + 40;
  const int width = kMargin * 2 + kLabel + kPlot;
  const int height = legend_y + 30;
  const auto x_of = [&](std::uint64_t ns) {
    return kMargin + kLabel + static_cast<double>(ns) * kPlot / static_cast<double>(last);
  };
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << kMargin << "\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" << text::markup_escape(title)
      << "</text>\n";
  std::ostringstream heading;
  heading << "run " << timeline.run << " of " << timeline.runs << ": " << timeline.grids.size()
          << (timeline.grids.size() == 1 ? " grid" : " grids") << " in " << duration(static_cast<double>(last));
  if (timeline.left_out > 0) heading << " (" << timeline.left_out << " more not recorded)";
  if (timeline.failed_launches > 0) heading << ", " << timeline.failed_launches << " launches failed";
  svg << "<text x=\"" << kMargin << "\" y=\"38\">" << text::markup_escape(heading.str()) << "</text>\n";
  if (lines.empty()) svg << "<text x=\"" << kMargin << "\" y=\"" << kTop + 12 << "\">(no grid recorded)</text>\n";
  const auto kernels = kernels_by_first_start(timeline);
  std::map<std::uint64_t, std::string> names;  // grid id -> "B3", for the tooltips
  for (std::size_t i = 0; i < timeline.grids.size(); ++i) names[timeline.grids[i].id] = grid_name(timeline, i);
  for (std::size_t l = 0; l < lines.size(); ++l) {
    const auto& line = lines[l];
    const int y = kTop + static_cast<int>(l) * kRow;
    if (!line.label.empty())
      svg << "<text x=\"" << kMargin + 8 * std::min(line.depth, 4) << "\" y=\"" << y + kBar - 2 << "\">"
          << text::markup_escape(line.label) << "</text>\n";
    for (const std::size_t i : line.grids) {
      const auto& g = timeline.grids[i];
      const double x0 = x_of(g.start_ns);
      const double x1 = std::max(x0 + 1.5, x_of(drawn_end(g, last)));
      if (g.launched_seen && g.launched_ns < g.start_ns)
        svg << "<line x1=\"" << x_of(g.launched_ns) << "\" y1=\"" << y + kBar / 2 << "\" x2=\"" << x0 << "\" y2=\""
            << y + kBar / 2 << "\" stroke=\"#777777\" stroke-dasharray=\"2,2\"/>\n";
      std::ostringstream tip;
      tip << names[g.id] << " " << g.kernel << ": " << duration(static_cast<double>(g.start_ns)) << " to "
          << (g.ended() ? duration(static_cast<double>(g.end_ns)) : std::string("(no end recorded)")) << ", "
          << g.blocks << (g.blocks == 1 ? " block" : " blocks") << ", " << stream_words(g.stream);
      if (g.parent != 0 && names.count(g.parent) > 0) tip << ", launched by " << names[g.parent];
      if (g.launched_seen && g.launched_ns < g.start_ns)
        tip << ", waited " << duration(static_cast<double>(g.start_ns - g.launched_ns)) << " to start";
      svg << "<rect x=\"" << x0 << "\" y=\"" << y << "\" width=\"" << x1 - x0 << "\" height=\"" << kBar
          << "\" fill=\"" << stream_colour(g.stream) << "\" stroke=\"white\" stroke-width=\"0.5\"><title>"
          << text::markup_escape(tip.str()) << "</title></rect>\n";
      if (x1 - x0 > 24)
        svg << "<text x=\"" << x0 + 2 << "\" y=\"" << y + kBar - 2 << "\" font-size=\"10\" fill=\"white\">"
            << text::markup_escape(names[g.id]) << "</text>\n";
    }
  }
  // The axis, five ticks.
  svg << "<line x1=\"" << x_of(0) << "\" y1=\"" << axis_y << "\" x2=\"" << x_of(last) << "\" y2=\"" << axis_y
      << "\" stroke=\"black\"/>\n";
  for (int t = 0; t <= 4; ++t) {
    const std::uint64_t at = last * static_cast<std::uint64_t>(t) / 4;
    svg << "<line x1=\"" << x_of(at) << "\" y1=\"" << axis_y << "\" x2=\"" << x_of(at) << "\" y2=\"" << axis_y + 5
        << "\" stroke=\"black\"/>\n<text x=\"" << x_of(at) << "\" y=\"" << axis_y + 18
        << "\" text-anchor=\"middle\">" << duration(static_cast<double>(at)) << "</text>\n";
  }
  // The legend: where the grids were launched, and what the thin line means.
  int x = kMargin;
  for (const char* stream : {"host", "null", "tail", "fire-and-forget", "named"}) {
    svg << "<rect x=\"" << x << "\" y=\"" << legend_y - 10 << "\" width=\"12\" height=\"12\" fill=\""
        << stream_colour(stream) << "\"/>\n<text x=\"" << x + 16 << "\" y=\"" << legend_y << "\">"
        << stream_words(stream) << "</text>\n";
    x += 16 + 7 * static_cast<int>(std::string(stream_words(stream)).size()) + 14;
  }
  svg << "<line x1=\"" << x << "\" y1=\"" << legend_y - 4 << "\" x2=\"" << x + 20 << "\" y2=\"" << legend_y - 4
      << "\" stroke=\"#777777\" stroke-dasharray=\"2,2\"/>\n<text x=\"" << x + 24 << "\" y=\"" << legend_y
      << "\">launched, waiting to start</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

std::vector<const grading::Item*> checks_with_timelines(const grading::ExerciseResult& exercise) {
  std::vector<const grading::Item*> checks;
  for (const auto& item : exercise.items)
    if (item.kind == grading::ItemKind::check && item.timeline.recorded()) checks.push_back(&item);
  return checks;
}

std::vector<const grading::Item*> shown_timelines(const grading::ExerciseResult& exercise,
                                                  const std::vector<std::string>& ordered) {
  const auto recorded = checks_with_timelines(exercise);
  std::vector<const grading::Item*> shown;
  for (const std::string& name : ordered)
    for (const auto* check : recorded)
      if (check->name == name) shown.push_back(check);
  if (!shown.empty()) return shown;
  const auto most = std::max_element(recorded.begin(), recorded.end(), [](const auto* a, const auto* b) {
    return a->timeline.grids.size() < b->timeline.grids.size();
  });
  if (most != recorded.end()) shown.push_back(*most);
  return shown;
}

const grading::Item* shown_timeline(const grading::ExerciseResult& exercise, const std::vector<std::string>& ordered) {
  const auto shown = shown_timelines(exercise, ordered);
  return shown.empty() ? nullptr : shown.front();
}

int write_timeline_pictures(const grading::GradeReport& report,
                            const std::function<std::vector<std::string>(const grading::ExerciseResult&)>& ordered_checks,
                            const std::string& folder) {
  return write_exercise_pictures(report, folder, [&](const grading::ExerciseResult& e) {
    std::vector<std::string> pictures;
    for (const auto* check : shown_timelines(e, ordered_checks(e)))
      pictures.push_back(timeline_svg(check->timeline, std::filesystem::path(e.file).filename().string() +
                                                           ": the check \"" + check->name + "\"" +
                                                           (report.device.empty() ? "" : " on " + report.device)));
    return pictures;
  });
}

}  // namespace cdplab::report
