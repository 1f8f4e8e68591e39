// The launch tree of a check, in words and drawn (launch_tree.h).
#include "report/launch_tree.h"

#include "report/text.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

namespace cdplab::report {
namespace {

using grading::LaunchTreeEdge;

std::string kernel_name(const std::string& name, bool child) {
  if (!name.empty()) return name;
  return child ? "(a kernel not known)" : "(code not known)";
}

std::string grids(std::uint64_t n) { return std::to_string(n) + (n == 1 ? " grid" : " grids"); }

/// The kernels in the order the tree visits them, each with its depth (0: launched from the host),
/// and the edges out of each.
struct Layout {
  std::vector<std::string> order;
  std::map<std::string, int> depth;
  std::map<std::string, std::vector<const LaunchTreeEdge*>> out;
};

Layout layout(const std::vector<LaunchTreeEdge>& edges) {
  Layout l;
  std::set<std::string> launched;  // kernels some other kernel launches
  std::vector<std::string> callers;
  for (const auto& e : edges) {
    const std::string caller = kernel_name(e.caller, false);
    const std::string child = kernel_name(e.child, true);
    l.out[caller].push_back(&e);
    if (child != caller) launched.insert(child);
    if (std::find(callers.begin(), callers.end(), caller) == callers.end()) callers.push_back(caller);
  }
  const auto visit = [&](const std::string& root) {
    std::vector<std::pair<std::string, int>> stack{{root, 0}};
    while (!stack.empty()) {
      auto [name, depth] = stack.back();
      stack.pop_back();
      if (l.depth.count(name) > 0) continue;
      l.depth[name] = depth;
      l.order.push_back(name);
      const auto& children = l.out[name];
      for (auto it = children.rbegin(); it != children.rend(); ++it) stack.push_back({kernel_name((*it)->child, true), depth + 1});
    }
  };
  for (const auto& caller : callers)
    if (launched.count(caller) == 0) visit(caller);
  for (const auto& caller : callers) visit(caller);  // kernels that launch each other, none from the host
  return l;
}

/// An edge's label in the picture: its grids, and whether the lesson allows it.
std::string edge_label(const LaunchTreeEdge& edge);

std::string stream_phrase(int kind) {
  static const char* const phrases[] = {"into the NULL stream", "tail-launched", "fire-and-forget",
                                        "into created streams"};
  return phrases[kind];
}

}  // namespace

const grading::Item* shown_launch_tree(const grading::ExerciseResult& exercise, bool failed_only) {
  const grading::Item* most = nullptr;
  for (const auto& item : exercise.items) {
    if (item.kind != grading::ItemKind::check || !item.launches_observed) continue;
    if (item.launches.empty() && exercise.lesson_launches.empty()) continue;  // no tree to show, none asked for
    if (item.outcome == grading::Outcome::failed) return &item;
    const auto total = [](const grading::Item& i) {
      std::uint64_t n = 0;
      for (const auto& e : i.launches) n += e.grids;
      return n;
    };
    if (most == nullptr || total(item) > total(*most)) most = &item;
  }
  return failed_only ? nullptr : most;
}

std::string describe_launches(const LaunchTreeEdge& edge) {
  const std::uint64_t by_stream[] = {edge.null_stream, edge.tail, edge.fire_and_forget, edge.named};
  std::vector<std::string> parts;
  for (int kind = 0; kind < 4; ++kind)
    if (by_stream[kind] > 0) parts.push_back(std::to_string(by_stream[kind]) + " " + stream_phrase(kind));
  std::string text = grids(edge.grids);
  if (parts.size() == 1) text += " " + stream_phrase(std::find_if(std::begin(by_stream), std::end(by_stream),
                                                                  [](std::uint64_t n) { return n > 0; }) -
                                                     std::begin(by_stream));
  if (parts.size() > 1) {
    text += ":";
    for (std::size_t i = 0; i < parts.size(); ++i) text += (i == 0 ? " " : ", ") + parts[i];
  }
  if (edge.failed > 0) text += " (" + std::to_string(edge.failed) + " failed)";
  return text;
}

namespace {
std::string edge_label(const LaunchTreeEdge& edge) {
  return describe_launches(edge) + (edge.fault.empty() ? "" : " (against the lesson)");
}
}  // namespace

std::vector<std::string> launch_tree_lines(const std::vector<LaunchTreeEdge>& edges) {
  if (edges.empty()) return {"(nothing launched from device code)"};
  const Layout l = layout(edges);
  std::vector<std::string> lines;
  for (const auto& name : l.order) {
    const auto it = l.out.find(name);
    if (it == l.out.end() || it->second.empty()) continue;
    lines.push_back(name);
    for (const auto* e : it->second) {
      const std::string child = kernel_name(e->child, true);
      lines.push_back("  -> " + child + (child == name ? " (itself)" : "") + ": " + describe_launches(*e) +
                      (e->fault.empty() ? "" : "  [against the lesson]"));
    }
  }
  return lines;
}

std::string launch_tree_svg(const std::vector<LaunchTreeEdge>& edges, const std::vector<std::string>& lesson,
                            const std::string& caption) {
  constexpr int kChar = 8, kBoxHeight = 26, kRow = 64, kMargin = 16, kTop = 72;  // room above for a loop
  const Layout l = layout(edges);
  int gap = 120;  // room for the longest label (11 px monospace: about 7 px a character)
  for (const auto& e : edges) gap = std::max(gap, static_cast<int>(edge_label(e).size()) * 7 + 40);
  std::map<int, int> rows;  // kernels placed so far at each depth
  std::map<std::string, std::pair<int, int>> at;  // box's left x and top y
  int widest = 0;
  for (const auto& name : l.order) widest = std::max(widest, static_cast<int>(name.size()) * kChar + 16);
  int right = 0, bottom = kTop;
  for (const auto& name : l.order) {
    const int depth = l.depth.at(name);
    const int x = kMargin + depth * (widest + gap);
    const int y = kTop + rows[depth]++ * kRow;
    at[name] = {x, y};
    right = std::max(right, x + widest);
    bottom = std::max(bottom, y + kBoxHeight);
  }
  // A kernel launching itself has its loop and label above its box; a launch back to a kernel
  // placed before curves below the boxes, its label under the curve.
  bool back_edges = false;
  for (const auto& e : edges) {
    const auto [x, y] = at.at(kernel_name(e.caller, false));
    const auto [cx, cy] = at.at(kernel_name(e.child, true));
    if (cx == x && cy == y) right = std::max(right, x + 2 * widest / 3 + 12 + static_cast<int>(edge_label(e).size()) * 7);
    else if (cx <= x) back_edges = true;
  }
  if (back_edges) bottom += 48;
  int longest_note = static_cast<int>(caption.size());
  for (const auto& line : lesson) longest_note = std::max(longest_note, static_cast<int>(line.size()) + 2);
  const int notes_top = bottom + 36;
  const int height = notes_top + 20 * static_cast<int>(lesson.size() + 1) + kMargin;
  const int width = std::max(right + kMargin, longest_note * kChar + 2 * kMargin);

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"monospace\" font-size=\"13\">\n"
      << "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"8\" markerHeight=\"8\" "
         "orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#333\"/></marker>"
         "<marker id=\"arrow-fault\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"8\" markerHeight=\"8\" "
         "orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#c00\"/></marker></defs>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << kMargin << "\" y=\"22\" font-weight=\"bold\">" << text::markup_escape(caption) << "</text>\n";
  if (edges.empty()) {
    svg << "<text x=\"" << kMargin << "\" y=\"" << kTop + 16 << "\">(nothing launched from device code)</text>\n";
  }
  for (const auto& name : l.order) {
    const auto it = l.out.find(name);
    if (it == l.out.end()) continue;
    const auto [x, y] = at.at(name);
    for (const auto* e : it->second) {
      const auto [cx, cy] = at.at(kernel_name(e->child, true));
      // An edge the lesson's rules do not allow (grading/launch_edges.h) is drawn red.
      const std::string label = text::markup_escape(edge_label(*e));
      const std::string ink = e->fault.empty() ? "#333" : "#c00";
      const std::string marker = e->fault.empty() ? "url(#arrow)" : "url(#arrow-fault)";
      const std::string label_ink = e->fault.empty() ? "" : " fill=\"#c00\"";
      const int mid = y + kBoxHeight / 2;
      if (cx == x && cy == y) {  // launches itself: a loop over the box
        svg << "<path d=\"M" << x + widest / 3 << "," << y << " C" << x + widest / 3 << "," << y - 30 << " "
            << x + 2 * widest / 3 << "," << y - 30 << " " << x + 2 * widest / 3 << "," << y
            << "\" fill=\"none\" stroke=\"" << ink << "\" marker-end=\"" << marker << "\"/>\n"
            << "<text x=\"" << x + 2 * widest / 3 + 8 << "\" y=\"" << y - 20 << "\" font-size=\"11\"" << label_ink << ">" << label
            << "</text>\n";
      } else if (cx > x) {  // deeper: left to right
        const int to = cy + kBoxHeight / 2;
        svg << "<line x1=\"" << x + widest << "\" y1=\"" << mid << "\" x2=\"" << cx << "\" y2=\"" << to
            << "\" stroke=\"" << ink << "\" marker-end=\"" << marker << "\"/>\n"
            << "<text x=\"" << cx - 6 << "\" y=\"" << to - 8 << "\" font-size=\"11\"" << label_ink << " text-anchor=\"end\">" << label
            << "</text>\n";
      } else {  // back to a kernel launched before: a curve below
        const int low = std::max(y, cy) + kBoxHeight + 24;
        svg << "<path d=\"M" << x + widest / 2 << "," << y + kBoxHeight << " C" << x + widest / 2 << "," << low << " "
            << cx + widest / 2 << "," << low << " " << cx + widest / 2 << "," << cy + kBoxHeight
            << "\" fill=\"none\" stroke=\"" << ink << "\" marker-end=\"" << marker << "\"/>\n"
            << "<text x=\"" << std::min(x, cx) + widest / 2 + 6 << "\" y=\"" << low + 6 << "\" font-size=\"11\"" << label_ink << ">"
            << label << "</text>\n";
      }
    }
  }
  for (const auto& name : l.order) {
    const auto [x, y] = at.at(name);
    svg << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << widest << "\" height=\"" << kBoxHeight
        << "\" rx=\"5\" fill=\"#eef3fb\" stroke=\"#335\"/>\n"
        << "<text x=\"" << x + 8 << "\" y=\"" << y + 17 << "\">" << text::markup_escape(name) << "</text>\n";
  }
  if (!lesson.empty()) {
    svg << "<text x=\"" << kMargin << "\" y=\"" << notes_top << "\" font-weight=\"bold\">The lesson asks for:</text>\n";
    for (std::size_t i = 0; i < lesson.size(); ++i)
      svg << "<text x=\"" << kMargin << "\" y=\"" << notes_top + 20 * static_cast<int>(i + 1) << "\">- "
          << text::markup_escape(lesson[i]) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

int write_exercise_pictures(const grading::GradeReport& report, const std::string& folder,
                            const std::function<std::vector<std::string>(const grading::ExerciseResult&)>& draw) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) throw std::runtime_error("cannot create " + folder + ": " + error.message());
  int written = 0;
  for (const auto& e : report.exercises) {
    int of_exercise = 0;
    for (const std::string& picture : draw(e)) {
      if (picture.empty()) continue;
      const std::string suffix = of_exercise++ == 0 ? "" : "-" + std::to_string(of_exercise);
      const fs::path file = fs::path(folder) / (e.chapter + "-" + fs::path(e.file).stem().string() + suffix + ".svg");
      std::ofstream out(file, std::ios::binary);
      out << picture;
      if (!out) throw std::runtime_error("cannot write " + file.string());
      ++written;
    }
  }
  return written;
}

int write_launch_tree_pictures(const grading::GradeReport& report, const std::string& folder) {
  return write_exercise_pictures(report, folder, [](const grading::ExerciseResult& e) {
    const auto* check = shown_launch_tree(e, false);
    if (check == nullptr) return std::vector<std::string>{};
    return std::vector<std::string>{launch_tree_svg(check->launches, e.lesson_launches,
                                                    std::filesystem::path(e.file).filename().string() +
                                                        ": launches of the check \"" + check->name + "\"")};
  });
}

}  // namespace cdplab::report
