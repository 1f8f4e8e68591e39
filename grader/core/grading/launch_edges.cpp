// The launch edges a check's runs made, judged against the lesson's rules (launch_edges.h).
#include "grading/launch_edges.h"

#include "rules/names.h"

#include <algorithm>
#include <map>
#include <utility>

namespace cdplab::grading {
namespace {

using rules::StreamKind;

constexpr std::size_t kNone = static_cast<std::size_t>(-1);
constexpr StreamKind kKinds[] = {StreamKind::null_stream, StreamKind::tail, StreamKind::fire_and_forget,
                                 StreamKind::named};

/// "a", "a or b", "a, b or c" (with `last` for "or").
std::string listed(const std::vector<std::string>& parts, const std::string& last) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += i + 1 == parts.size() ? " " + last + " " : ", ";
    out += parts[i];
  }
  return out;
}

/// The kinds of stream an edge's grids went into.
std::vector<StreamKind> kinds_of(const LaunchTreeEdge& edge) {
  std::vector<StreamKind> kinds;
  if (edge.null_stream > 0) kinds.push_back(StreamKind::null_stream);
  if (edge.tail > 0) kinds.push_back(StreamKind::tail);
  if (edge.fire_and_forget > 0) kinds.push_back(StreamKind::fire_and_forget);
  if (edge.named > 0) kinds.push_back(StreamKind::named);
  return kinds;
}

bool allows(const std::vector<StreamKind>& streams, StreamKind kind) {
  return streams.empty() || std::find(streams.begin(), streams.end(), kind) != streams.end();
}

/// "into the NULL stream", "into the NULL stream and cudaStreamTailLaunch"; empty for none.
std::string into_phrase(const std::vector<StreamKind>& kinds, const std::string& last = "and") {
  if (kinds.empty()) return "";
  std::vector<std::string> phrases;
  for (const StreamKind kind : kinds) phrases.push_back(rules::stream_phrase(kind));
  return "into " + listed(phrases, last);
}

}  // namespace

LessonLaunches::LessonLaunches(const std::vector<rules::RuleSpec>& rules, const rules::LaunchGraph& graph)
    : graph_(graph) {
  const auto add_parent = [&](std::size_t kernel) {
    if (parents_.insert(kernel).second) parent_names_.push_back(graph_.label(kernel));
  };
  for (const auto& rule : rules) {
    if (rule.kind != "launches" || rule.child.empty()) continue;
    const auto callers = graph_.find_all(rule.kernel);
    for (const std::size_t child : graph_.find_all(rule.child)) {
      auto& allowed = children_[child];
      if (callers.empty()) allowed.push_back({kNone, rule.kernel, rule.streams});
      for (const std::size_t caller : callers) allowed.push_back({caller, graph_.label(caller), rule.streams});
    }
  }
  for (const auto& rule : rules) {
    if (rule.kind == "launches" || rule.kind == "recursion")
      for (const std::size_t kernel : graph_.find_all(rule.kernel)) add_parent(kernel);
  }
  // A recursion that no `launches` rule details: the kernel is launched by itself, or by a kernel
  // it launches (directly or not) on the way back to itself, into any stream.
  for (const auto& rule : rules) {
    if (rule.kind != "recursion") continue;
    for (const std::size_t kernel : graph_.find_all(rule.kernel)) {
      if (children_.count(kernel) > 0) continue;
      auto& allowed = children_[kernel];
      for (std::size_t other = 0; other < graph_.kernels.size(); ++other)
        if (other == kernel || !graph_.chain(kernel, other).empty())
          allowed.push_back({other, graph_.label(other), {}});
    }
  }
}

std::string LessonLaunches::callers_phrase(const std::vector<Allowed>& allowed) const {
  // Each caller once, with every stream kind a rule allows it.
  std::vector<std::pair<std::string, std::vector<StreamKind>>> callers;
  for (const auto& a : allowed) {
    auto it = std::find_if(callers.begin(), callers.end(), [&](const auto& c) { return c.first == a.name; });
    if (it == callers.end()) {
      callers.push_back({a.name, a.streams});
    } else if (!it->second.empty()) {
      if (a.streams.empty()) it->second.clear();
      for (const StreamKind kind : a.streams)
        if (!allows(it->second, kind)) it->second.push_back(kind);
    }
  }
  const auto in_order = [](std::vector<StreamKind> streams) {
    std::vector<StreamKind> ordered;
    for (const StreamKind kind : kKinds)
      if (std::find(streams.begin(), streams.end(), kind) != streams.end()) ordered.push_back(kind);
    return ordered;
  };
  const bool same_streams = std::all_of(callers.begin(), callers.end(), [&](const auto& c) {
    return in_order(c.second) == in_order(callers.front().second);
  });
  std::vector<std::string> names;
  for (const auto& [name, streams] : callers) {
    const std::string into = into_phrase(in_order(streams), "or");
    names.push_back(name + (same_streams || into.empty() ? "" : " (" + into + ")"));
  }
  const std::string into = same_streams && !callers.empty() ? into_phrase(in_order(callers.front().second), "or") : "";
  return "the lesson has " + listed(names, "or") + " launch it" + (into.empty() ? "" : " " + into);
}

std::string LessonLaunches::unlisted_child_fault(const LaunchTreeEdge& edge, const std::vector<std::size_t>& kernels,
                                                 const std::string& caller, const std::string& into) const {
  const bool all_parents = !kernels.empty() && std::all_of(kernels.begin(), kernels.end(), [&](std::size_t k) {
    return parents_.count(k) > 0;
  });
  if (all_parents) return "";
  return rules::short_name(edge.child_symbol) + " was launched by " + caller + (into.empty() ? "" : " " + into) +
         "; the lesson launches from device code only in " + listed(parent_names_, "and");
}

std::string LessonLaunches::fault(const LaunchTreeEdge& edge) const {
  if (!judges() || edge.child_symbol.empty()) return "";  // no child named, or one the hooks could not name
  std::size_t child = kNone;
  for (std::size_t i = 0; i < graph_.kernels.size(); ++i)
    if (graph_.kernels[i].mangled == edge.child_symbol) child = i;
  if (child == kNone) return "";
  const auto kinds = kinds_of(edge);
  const auto lesson = children_.find(child);
  const std::string child_name = graph_.label(child);

  // A launch the hooks could not attribute: held against the student only when no caller the
  // lesson allows could have made it.
  if (edge.caller_symbol.empty()) {
    if (lesson == children_.end()) return "";
    std::vector<StreamKind> unexplained;
    for (const StreamKind kind : kinds) {
      const bool some = std::any_of(lesson->second.begin(), lesson->second.end(),
                                    [&](const Allowed& a) { return allows(a.streams, kind); });
      if (!some) unexplained.push_back(kind);
    }
    if (unexplained.empty()) return "";
    return child_name + " was launched " + into_phrase(unexplained) +
           " by code the grader could not attribute to a function; " + callers_phrase(lesson->second);
  }

  // The kernels the caller launches for: itself, or every kernel that reaches the device function.
  std::vector<std::size_t> kernels;
  bool device_function = true;
  for (std::size_t i = 0; i < graph_.kernels.size(); ++i) {
    if (graph_.kernels[i].mangled == edge.caller_symbol) {
      kernels = {i};
      device_function = false;
    }
  }
  if (device_function) {
    const auto reaching = graph_.kernels_reaching.find(edge.caller_symbol);
    if (reaching != graph_.kernels_reaching.end()) kernels = reaching->second;
  }
  std::string caller = device_function ? rules::short_name(edge.caller_symbol) : graph_.label(kernels.front());
  if (device_function) {
    std::vector<std::string> names;
    for (const std::size_t k : kernels) names.push_back(graph_.label(k));
    caller += names.empty() ? " (a __device__ function that no kernel calls directly)"
                            : " (a __device__ function that " + listed(names, "and") + (names.size() == 1 ? " calls)" : " call)");
  }
  if (lesson == children_.end()) return unlisted_child_fault(edge, kernels, caller, into_phrase(kinds));

  // Every kernel the launch is made for must be one the lesson has launch the child ...
  std::vector<std::string> not_allowed;
  for (const std::size_t k : kernels) {
    const bool named = std::any_of(lesson->second.begin(), lesson->second.end(),
                                   [&](const Allowed& a) { return a.caller == k; });
    if (!named) not_allowed.push_back(graph_.label(k));
  }
  if (kernels.empty() || !not_allowed.empty()) {
    return child_name + " was launched by " + caller + (kinds.empty() ? "" : " " + into_phrase(kinds)) + "; " +
           callers_phrase(lesson->second) + (device_function && !not_allowed.empty() ? ", not " + listed(not_allowed, "or") : "");
  }
  // ... into a kind of stream some rule for that kernel lists.
  std::vector<StreamKind> wrong;
  for (const StreamKind kind : kinds) {
    for (const std::size_t k : kernels) {
      const bool listed_for_k = std::any_of(lesson->second.begin(), lesson->second.end(),
                                            [&](const Allowed& a) { return a.caller == k && allows(a.streams, kind); });
      if (!listed_for_k) {
        wrong.push_back(kind);
        break;
      }
    }
  }
  if (wrong.empty()) return "";
  std::vector<Allowed> for_these;
  for (const auto& a : lesson->second)
    if (std::find(kernels.begin(), kernels.end(), a.caller) != kernels.end()) for_these.push_back(a);
  return child_name + " was launched by " + caller + " " + into_phrase(wrong) + "; " + callers_phrase(for_these);
}

int judge_launch_edges(const std::vector<rules::RuleSpec>& rules, const rules::LaunchGraph& graph,
                       std::vector<Item>& items) {
  const LessonLaunches lesson(rules, graph);
  if (!lesson.judges()) return 0;
  int judged = 0;
  for (auto& item : items) {
    if (item.kind != ItemKind::check || !item.launches_observed) continue;
    std::string faults;
    for (auto& edge : item.launches) {
      edge.fault = lesson.fault(edge);
      if (!edge.fault.empty()) faults += (faults.empty() ? "" : "\n") + edge.fault;
    }
    if (faults.empty()) continue;
    ++judged;
    const std::string said = "launched against the lesson: " + faults;
    if (item.outcome == Outcome::passed) {
      item.outcome = Outcome::failed;
      item.points = 0;
      item.feedback = said + (item.feedback.empty() ? "" : "\n" + item.feedback);
    } else {
      item.feedback += (item.feedback.empty() ? "" : "\n") + said;
    }
  }
  return judged;
}

int judge_launch_edges(const manifest::Exercise& exercise, const std::string& ptx, std::vector<Item>& items) {
  if (ptx.empty()) return 0;
  rules::LaunchGraph graph;
  try {
    graph = rules::analyze_ptx(ptx);
  } catch (const std::exception&) {  // the rule items say why
    return 0;
  }
  return judge_launch_edges(exercise.rules, graph, items);
}

std::vector<LaunchTreeEdge> static_launch_edges(const rules::LaunchGraph& graph) {
  std::vector<LaunchTreeEdge> edges;
  std::map<std::pair<std::string, std::size_t>, std::size_t> at;
  for (const auto& launch : graph.launches) {
    if (launch.child == rules::Launch::unknown || launch.function.empty()) continue;
    const auto [it, added] = at.emplace(std::make_pair(launch.function, launch.child), edges.size());
    if (added) {
      LaunchTreeEdge edge;
      edge.caller = rules::short_name(launch.function);
      edge.child = graph.label(launch.child);
      edge.caller_symbol = launch.function;
      edge.child_symbol = graph.kernels[launch.child].mangled;
      edges.push_back(edge);
    }
    LaunchTreeEdge& edge = edges[it->second];
    ++edge.grids;
    switch (launch.stream) {
      case StreamKind::null_stream: ++edge.null_stream; break;
      case StreamKind::tail: ++edge.tail; break;
      case StreamKind::fire_and_forget: ++edge.fire_and_forget; break;
      case StreamKind::named: ++edge.named; break;
    }
  }
  return edges;
}

}  // namespace cdplab::grading
