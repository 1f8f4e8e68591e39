/// @file launch_edges.h
/// @brief The launch edges a check's runs made on the GPU, judged against the lesson.
///
/// The grader's device-runtime hooks count every device-side launch into an edge caller -> child
/// with the kinds of stream it went into (harness/device_code/device_code.h, check_launch_edges);
/// each check's end record carries its edges (grading::Item::launches). The lesson's launch
/// structure is the exercise's rules: a `launches` rule (`kernel`, `child`, optional `stream`)
/// says that `kernel` launches `child`, into those kinds of stream, and a `recursion` rule that
/// `kernel` launches itself. The rules judge the PTX statically; here the same rules judge what
/// ran, so that a grid launched by the wrong kernel, or into the wrong kind of stream by one
/// caller, costs the checks whose runs made it even where the totals add up.
///
/// What is judged, on the launch graph of the very PTX that ran (rules/launch_graph.h):
///  - A child that some `launches` rule names (or the kernel of a `recursion` rule that no
///    `launches` rule names as a child: its callers are the kernels it reaches, itself included):
///    every launch of it must come from a caller a rule names for it, into a stream kind that rule
///    lists (any, where it lists none). A caller that is a __device__ function counts as every
///    kernel that reaches it through direct calls (LaunchGraph::kernels_reaching): it is allowed
///    only if each of them is; one that no kernel reaches directly (a call through a pointer) is
///    not.
///  - A kernel that no rule names as a child, where the rules do name children: it may be launched
///    only by the kernels the rules have launch from device code (a rule's `kernel`). The
///    references launch such helpers only from there (constant-params' fill_segment, fast-quicksort's
///    fill_kernel); a kernel of the lesson's children launching one is not the lesson.
///  - A launch the hooks could not attribute (no caller: kUnknownCaller, or a caller index past
///    what the instrumentation numbers) is not held against the student, unless nothing could
///    explain it: its child is one the rules name, and no rule allows any caller to launch it into
///    a stream kind it went into. A launch of a kernel the hooks could not name is not judged.
///  - An exercise whose rules name no child judges no edge.
#pragma once

#include "manifest/manifest.h"
#include "results/results.h"
#include "rules/launch_graph.h"
#include "rules/rule.h"

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace cdplab::grading {

/// Who the lesson has launch which kernel from device code, and into which kinds of stream: the
/// rules of an exercise resolved on the launch graph of its code. Keeps a reference to `graph`.
class LessonLaunches {
 public:
  LessonLaunches(const std::vector<rules::RuleSpec>& rules, const rules::LaunchGraph& graph);

  /// Whether the rules name any child (or recursion): without one, no edge is judged.
  bool judges() const { return !children_.empty(); }

  /// Why the lesson does not allow `edge` (judged by its symbols), a sentence for the student:
  /// "step_y was launched by step_x into the NULL stream; the lesson has pipeline_parent launch
  /// it". Empty when it allows it, or when the edge cannot be judged.
  std::string fault(const LaunchTreeEdge& edge) const;

 private:
  /// One caller the lesson has launch a child: a kernel (npos: a rule's kernel that the code does
  /// not have, named by `name`), into `streams` (empty: any kind).
  struct Allowed {
    std::size_t caller;
    std::string name;
    std::vector<rules::StreamKind> streams;
  };
  std::string callers_phrase(const std::vector<Allowed>& allowed) const;
  std::string unlisted_child_fault(const LaunchTreeEdge& edge, const std::vector<std::size_t>& kernels,
                                   const std::string& caller, const std::string& into) const;

  const rules::LaunchGraph& graph_;
  std::map<std::size_t, std::vector<Allowed>> children_;  ///< by the child's index in the graph
  std::set<std::size_t> parents_;                         ///< kernels the rules have launch
  std::vector<std::string> parent_names_;                 ///< their names, in the rules' order
};

/// Judges the edges of every check item that carries a launch tree: an edge against the lesson
/// gets its LaunchTreeEdge::fault, and a check whose runs made one fails (no points), its
/// feedback saying each fault; a check that failed already keeps its message and gains them.
/// Returns how many checks it failed or added faults to.
int judge_launch_edges(const std::vector<rules::RuleSpec>& rules, const rules::LaunchGraph& graph,
                       std::vector<Item>& items);

/// The same on the exercise's PTX as the check processes loaded it; nothing is judged where the
/// PTX cannot be read (the rule items say so).
int judge_launch_edges(const manifest::Exercise& exercise, const std::string& ptx, std::vector<Item>& items);

/// The launch sites of a launch graph as the edges they can make: one per function and child,
/// a grid per site into the stream kind the rules read for it (a stream held in a variable
/// counts as named). What the hooks can observe of the code, as far as the PTX tells.
std::vector<LaunchTreeEdge> static_launch_edges(const rules::LaunchGraph& graph);

}  // namespace cdplab::grading
