// Spans of GPU time: how many overlapped, and two pictures of them (declared in cdplab/timeline.h).
#include "cdplab/timeline.h"

#include "cdplab/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace cdplab::timeline {
namespace {

/// The first start and the last end of the spans that ran; {0, 0} when none ran.
std::pair<unsigned long long, unsigned long long> time_range(const std::vector<Span>& spans) {
  bool any = false;
  unsigned long long first = 0;
  unsigned long long last = 0;
  for (const Span& s : spans) {
    if (!s.ran()) continue;
    first = any ? std::min(first, s.start_ns) : s.start_ns;
    last = any ? std::max(last, s.end_ns) : s.end_ns;
    any = true;
  }
  return {first, last};
}

std::string row_label(const Span& s) {
  char label[48];
  std::snprintf(label, sizeof label, "block %u thread %2u", s.group, s.lane);
  return label;
}

/// A step of 1, 2 or 5 times a power of ten that cuts `range` into at most about `ticks` parts.
double tick_step(double range, int ticks) {
  const double rough = range / ticks;
  double step = std::pow(10.0, std::floor(std::log10(rough)));
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (step * factor >= rough) return step * factor;
  }
  return step * 10.0;
}

std::string format_us(double us) {
  char text[32];
  std::snprintf(text, sizeof text, us >= 100.0 || us == std::floor(us) ? "%.0f" : "%.1f", us);
  return text;
}

}  // namespace

int max_overlap(const std::vector<Span>& spans) {
  // A sweep over the start (+1) and end (-1) events in time order. At equal times ends come
  // first, so spans that only touch never count as overlapping. A span too short for the
  // timer to tick (end == start) lasts one nanosecond: it ran, so it counts.
  std::vector<std::pair<unsigned long long, int>> events;
  events.reserve(2 * spans.size());
  for (const Span& s : spans) {
    if (!s.ran()) continue;
    events.emplace_back(s.start_ns, +1);
    events.emplace_back(std::max(s.end_ns, s.start_ns + 1), -1);
  }
  std::sort(events.begin(), events.end());  // (t, -1) sorts before (t, +1)
  int running = 0;
  int most = 0;
  for (const auto& event : events) {
    running += event.second;
    most = std::max(most, running);
  }
  return most;
}

int max_overlap_within_group(const std::vector<Span>& spans) {
  std::map<unsigned, std::vector<Span>> groups;
  for (const Span& s : spans) groups[s.group].push_back(s);
  int most = 0;
  for (const auto& group : groups) most = std::max(most, max_overlap(group.second));
  return most;
}

std::string render_text(const std::vector<Span>& spans, int width, int max_rows) {
  width = std::max(width, 1);
  max_rows = std::max(max_rows, 0);
  const auto [first, last] = time_range(spans);
  const double length = static_cast<double>(last - first);
  std::string out;
  std::size_t label_width = 0;
  for (const Span& s : spans) label_width = std::max(label_width, row_label(s).size());

  if (length > 0.0 || first != 0) {
    char header[96];
    std::snprintf(header, sizeof header, "%*s  0 us .. %s us\n", static_cast<int>(label_width), "time",
                  format_us(length / 1000.0).c_str());
    out += header;
  }
  const std::size_t shown = std::min(spans.size(), static_cast<std::size_t>(max_rows));
  for (std::size_t i = 0; i < shown; ++i) {
    const Span& s = spans[i];
    std::string label = row_label(s);
    label.insert(0, label_width - label.size(), ' ');
    std::string bar(static_cast<std::size_t>(width), ' ');
    if (s.ran()) {
      // Ends are rounded to the nearest column boundary, so that spans that only touch do not
      // share a column; a span gets at least one column, so that a short one stays visible.
      const auto column = [&](unsigned long long t) {
        return length > 0.0 ? static_cast<double>(t - first) / length * width : 0.0;
      };
      int from = static_cast<int>(std::lround(column(s.start_ns)));
      int to = static_cast<int>(std::lround(column(s.end_ns)));
      from = std::clamp(from, 0, width - 1);
      to = std::clamp(std::max(to, from + 1), from + 1, width);
      std::fill(bar.begin() + from, bar.begin() + to, '#');
      out += label + " |" + bar + "|\n";
    } else {
      out += label + " |" + bar + "| never ran\n";
    }
  }
  if (shown < spans.size()) {
    const std::size_t rest = spans.size() - shown;
    std::size_t rest_ran = 0;
    for (std::size_t i = shown; i < spans.size(); ++i) rest_ran += spans[i].ran() ? 1 : 0;
    out += "... " + std::to_string(rest) + " more span" + (rest == 1 ? "" : "s") + " not shown (" +
           std::to_string(rest_ran) + " of them ran)\n";
  }
  if (spans.empty()) out += "(no spans)\n";
  return out;
}

std::string render_svg(const std::vector<Span>& spans, const std::string& title) {
  // Picture units are pixels: a label column, then the chart, one row per span.
  constexpr double kLabel = 130.0;
  constexpr double kChart = 640.0;
  constexpr double kRow = 12.0;
  constexpr double kTop = 44.0;   // title and axis labels
  constexpr double kBottom = 10.0;
  static const char* const kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                         "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  const auto [first, last] = time_range(spans);
  const double length_us = static_cast<double>(last - first) / 1000.0;
  const double width = kLabel + kChart + 20.0;
  const double height = kTop + kRow * static_cast<double>(std::max<std::size_t>(spans.size(), 1)) + kBottom;

  Svg svg(SvgBox{0, 0, width, height}, static_cast<int>(width), static_cast<int>(height));
  svg.rect({0, 0, width, height}, SvgStyle::filled("#ffffff"));
  svg.text({8, 16}, title, 13);
  const auto x_of = [&](unsigned long long t) {
    return kLabel + (length_us > 0.0 ? static_cast<double>(t - first) / 1000.0 / length_us * kChart : 0.0);
  };

  // The time axis: a gridline and a label at every tick, in microseconds from the first start.
  const double chart_bottom = kTop + kRow * static_cast<double>(spans.size());
  if (length_us > 0.0) {
    const double step = tick_step(length_us, 8);
    for (double tick = 0.0; tick <= length_us * (1.0 + 1e-9); tick += step) {
      const double x = kLabel + tick / length_us * kChart;
      svg.polyline({{x, kTop - 4}, {x, chart_bottom}}, SvgStyle::stroked("#e0e0e0", 1.0));
      svg.text({x - 6, kTop - 8}, format_us(tick), 9, "#555555");
    }
    svg.text({kLabel - 60, kTop - 8}, "time (us)", 9, "#555555");
  } else {
    svg.text({kLabel, kTop - 8}, spans.empty() ? "no spans" : "no span ran", 10, "#d62728");
  }

  for (std::size_t i = 0; i < spans.size(); ++i) {
    const Span& s = spans[i];
    const double y = kTop + kRow * static_cast<double>(i);
    std::string tooltip = row_label(s);
    if (s.ran()) {
      tooltip += ": " + format_us(static_cast<double>(s.start_ns - first) / 1000.0) + " us to " +
                 format_us(static_cast<double>(s.end_ns - first) / 1000.0) + " us";
    } else {
      tooltip += ": never ran";
    }
    svg.begin_group(tooltip);
    svg.text({4, y + kRow - 3}, row_label(s), 9, s.ran() ? "#333333" : "#d62728");
    if (s.ran()) {
      const double x0 = x_of(s.start_ns);
      const double bar = std::max(x_of(s.end_ns) - x0, 1.0);  // a short span stays visible
      svg.rect({x0, y + 1, bar, kRow - 2}, SvgStyle::filled(kColours[s.group % 10]));
    } else {
      svg.text({kLabel + 4, y + kRow - 3}, "never ran", 9, "#d62728");
    }
    svg.end_group();
  }
  return svg.str();
}

}  // namespace cdplab::timeline
