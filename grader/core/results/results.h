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

/// One grid of the exercise's kernels that a check's run started, as the grader's device hooks
/// recorded it (the global timer at the first block's start and the last warp's end).
struct GridSpan {
  /// The grid's number in this timeline: 1, 2, ... in order of start, then the unrecorded
  /// parents (the GPU's %gridid, past 2^53, would not survive JSON readers that use doubles).
  std::uint64_t id = 0;
  std::string kernel;        ///< the kernel, unqualified
  std::uint64_t parent = 0;  ///< the id of the grid that launched it; 0: the host, or not told
  std::string parent_kernel; ///< that grid's kernel, unqualified; empty: the host, or not told
  std::uint64_t parent_block = 0;  ///< the launching thread's block in its grid (linear index)
  /// Where it was launched: "host", "null" (the launching block's NULL stream), "tail",
  /// "fire-and-forget", "named" (a stream the code created), or "" where not told.
  std::string stream;
  std::uint64_t stream_id = 0;  ///< which named stream, numbered 1, 2, ... in the timeline: grids of one share it
  std::uint64_t blocks = 0;     ///< blocks that started
  /// Nanoseconds since the run's first recorded moment: launched (device launches only), first
  /// block started, last warp ended (0 and below start: not seen).
  std::uint64_t launched_ns = 0, start_ns = 0, end_ns = 0;
  bool launched_seen = false;
  bool ended() const { return end_ns >= start_ns && end_ns != 0; }
};

/// The grids of one run of a check (its last), for the timeline (report/grid_timeline.h).
struct GridTimeline {
  std::vector<GridSpan> grids;        ///< by start time
  std::uint64_t left_out = 0;         ///< grids the recording had no room for
  std::uint64_t failed_launches = 0;  ///< device-side launches that returned an error (no grid)
  int run = 0, runs = 0;              ///< which run of the check this is (1-based), of how many
  bool recorded() const { return runs > 0; }
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
  GridTimeline timeline;                 ///< when the check's grids ran (its last run)
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
