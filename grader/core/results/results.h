/// @file results.h
/// @brief The outcome of a grading run: exercises, their checks and rules, points.
///        Every report format (terminal, JSON, Gradescope, JUnit) is rendered from this.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cdplab::grading {

enum class Outcome { passed, failed, skipped };
enum class ItemKind { check, rule, question };

const char* to_string(Outcome outcome);
const char* to_string(ItemKind kind);

/// One edge of the launch tree a check's runs made on the GPU, as the grader's device-runtime
/// hooks counted it: which kernel launched which, how many grids, into which streams.
struct LaunchTreeEdge {
  std::string caller;  ///< the launching kernel (or device function), unqualified; empty: not known
  std::string child;   ///< the launched kernel, unqualified; empty: not known
  std::uint64_t grids = 0;  ///< launches asked for, failed ones included
  std::uint64_t null_stream = 0, tail = 0, fire_and_forget = 0, named = 0;  ///< grids by stream
  std::uint64_t failed = 0;  ///< launches that returned an error
  /// Why the lesson does not allow this edge (grading/launch_edges.h: the wrong caller, or a
  /// stream kind its rule does not list), for the student; empty where it does or cannot tell.
  std::string fault;
  /// The caller's and the child's PTX symbols as the hooks named them (mangled), which the
  /// edge is judged by; empty where not known. Not kept in reports.
  std::string caller_symbol, child_symbol;
};

/// One graded item: a check of the exercise's test suite, a CDP rule of its manifest, or a
/// question of a quiz.
struct Item {
  ItemKind kind = ItemKind::check;
  std::string name;         ///< check name (suite), rule description or question text
  Outcome outcome = Outcome::failed;
  double points = 0;        ///< awarded
  double max_points = 0;    ///< possible
  std::string feedback;     ///< why it failed or was skipped: expected against found
  double seconds = 0;       ///< run time of a check (0 for rules)
  std::vector<LaunchTreeEdge> launches;  ///< a GPU check's launch tree, over all its runs
  bool launches_observed = false;        ///< the grader counted the check's launches (none is a finding)
};

/// One exercise of one chapter.
struct ExerciseResult {
  std::string chapter;      ///< "01-fundamentals"
  std::string id;           ///< "child-grids"
  std::string title;        ///< "One child grid per parent thread"
  std::string file;         ///< "01-fundamentals/child_grids.cu"
  std::string problem;      ///< empty, or why nothing could run: missing file, compile error
  std::string build_log;    ///< the compiler's own words when it failed to compile
  std::string hint;         ///< the first hint, offered when something failed
  /// What the student's host parts printed during the checks (the end of it): their only reader is
  /// the student, in the feedback.
  std::string host_parts_output;
  /// The launches the lesson asks for, as its rules say them ("expand_parent launches
  /// expand_child into the NULL stream"): the expected tree shown beside the one the checks saw.
  std::vector<std::string> lesson_launches;
  std::vector<Item> items;

  double points() const;
  double max_points() const;
  double decided_max_points() const;  ///< the maximum of the items not skipped
  bool all_passed() const;  ///< every item passed
};

/// A whole run of the grader over a folder.
struct GradeReport {
  std::string source;        ///< the folder graded (chapters/, solutions/ or a submission)
  std::string device;        ///< the GPU the checks ran on; empty without one
  std::string gpu_problem;   ///< why GPU checks were skipped; empty when a GPU was used
  /// Where the grading ran when not on the machine that shows the report: "gpulab, over SSH",
  /// "Slurm job 1234 on gpu07" (remote/); empty: here.
  std::string ran_on;
  std::uint64_t seed = 0;    ///< the seed the checks used
  std::string started_at;    ///< ISO 8601, UTC
  /// When the work was handed in (ISO 8601, UTC), as the class grader found it
  /// (batch::submission_time); empty when not known, and for one submission graded alone.
  std::string submitted_at;
  double seconds = 0;        ///< wall time of the whole run
  /// Where that time went, phase by phase in the order they first ran ("building", "rules",
  /// "checks beside others", "waiting for the GPU", ...), in seconds.
  std::vector<std::pair<std::string, double>> phases;
  std::string tool_version;  ///< cdp-lab version
  std::vector<std::string> notes;  ///< remarks on the whole run (files left out of a submission)
  std::vector<ExerciseResult> exercises;

  double points() const;
  double max_points() const;
  double decided_max_points() const;  ///< the maximum of the items not skipped
  int count(Outcome outcome) const;  ///< items with that outcome
  bool complete() const;             ///< nothing skipped: the grade is final
  bool has_failure() const;          ///< an item failed for certain (skipped ones aside)
};

}  // namespace cdplab::grading
