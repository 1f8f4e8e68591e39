/// @file grade.h
/// @brief Grades exercises in a build tree: compile, CDP rules on the PTX, the test suite's
///        checks, points from the manifest. One exercise's failure never stops the others.
///
/// The grader's process is the host, for `cdplab check` and `cdplab grade` alike: every check runs
/// in the grading suite (the checks linked against the workbook's host code), in the check box
/// where the tree has one, with the student's device code loaded into it
/// (harness/device_code/device_code.h) and the student's host parts called in a process of their
/// own (harness/host_parts/host_parts.h): nothing the student's host code does or writes reaches a
/// verdict. The exercise's own suite (the whole file) is left to the project's CTest tests.
#pragma once

#include "grading/build_tree.h"
#include "grading/gpu_turns.h"
#include "manifest/manifest.h"
#include "results/results.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cdplab::grading {

struct GradeOptions {
  std::uint64_t seed = 0;            ///< passed to the suites as CDPLAB_SEED
  double check_seconds = 30;         ///< time limit of one check
  double build_seconds = 600;        ///< time limit of one exercise's build
  /// Checks run side by side (CTest -j); those that need the GPU alone (speed checks, timing
  /// suites) are marked RUN_SERIAL by the build and always run alone.
  int check_jobs = 4;
  /// Runs each suite's checks in one process first, then what did not pass there one process per
  /// check (shared_process.h); false: one process per check from the start.
  bool shared_processes = true;
  std::map<std::string, std::string> env;  ///< extra environment of the checks (CUDA_VISIBLE_DEVICES)
  /// What build_all said when the caller ran it already for this grading (a class builds before it
  /// takes a GPU): grade_all then builds nothing again. Building again would take the exercises'
  /// compiled code after the submission's programs ran, which may have rewritten the tree.
  std::optional<bool> built;
  /// compute-sanitizer to run each suite under again (memcheck); empty: no such stage.
  std::string sanitizer;
  /// compute-sanitizer for the checks a manifest marks `memcheck = true`, which are graded under
  /// it whether or not the stage above runs.
  std::string memcheck_program = "compute-sanitizer";
  /// The turns on a GPU that other gradings share (a class graded several submissions at a time
  /// per GPU, gpu_turns.h); null: this grading has the GPU to itself.
  GpuTurns* gpu_turns = nullptr;
  /// A folder the suites keep the speed checks' baseline times in (CDPLAB_BASELINE_CACHE,
  /// harness/speed.h), so that a class times each baseline once per GPU; empty: timed for every
  /// grading.
  std::string baseline_cache;
  /// Called before each stage of each exercise ("building", "rules", "checks").
  std::function<void(const manifest::Exercise&, const std::string& stage)> progress;
  /// Why this machine has no GPU the checks could use (remote::local_gpu_problem), known before the
  /// build; empty: unknown, or a GPU is here. Then the test suites are neither built nor run: every
  /// GPU check is skipped with this reason, and a student without a GPU reads the rules' verdict on
  /// their code half a minute sooner.
  std::string gpu_absent;
  /// Keep every check's timeline in the report (`check --timeline`, `--timelines`: the runs that
  /// record them); otherwise only those of the failed checks whose manifest entry says
  /// `timeline = true`, where a check process recorded one.
  bool keep_timelines = false;
};

/// What the suites said about the GPU they ran on (or why they could not use one).
struct DeviceSeen {
  std::string device;       ///< the GPU name the checks reported
  std::string gpu_problem;  ///< why GPU checks were skipped
};

/// Grades one exercise of a configured build tree; `seen` collects what the suites said about the GPU.
/// With `prebuilt`, its targets are known to be built (build_all succeeded) and are not built again.
ExerciseResult grade_exercise(const manifest::Exercise& exercise, const BuildTree& tree, const GradeOptions& options,
                              DeviceSeen* seen = nullptr, bool prebuilt = false);

/// Builds the PTX and the test suite of every exercise in one call of the build tool, so that
/// every core compiles (one exercise at a time leaves most of them idle), going on past a
/// failure; grade_exercise then reports each exercise's own build problems. Exercises whose
/// source is refused before it is compiled are left out. Returns whether everything built.
bool build_all(const std::vector<const manifest::Exercise*>& exercises, const BuildTree& tree,
               const GradeOptions& options);

/// The PTX of an exercise as build_all took it, before any program of the submission ran (the
/// launch graph a report draws); empty when it did not compile there.
std::string compiled_ptx(const BuildTree& tree, const manifest::Exercise& exercise);

/// Times the baselines of the speed checks of `exercises` into `options.baseline_cache`, on the
/// GPU that `options.env` names, with the GPU alone (`options.gpu_turns`) where the cache lacks
/// one: the grading kit's suites in their `--time-baselines` mode (harness/speed.h). The baselines
/// do not depend on any submission, so this runs while submissions build and the GPU is idle.
/// Suites the kit does not hold (a tree that builds its own) are left out; a baseline that fails
/// here is timed again by its speed check, which says why. Returns how many of the kit's suites
/// it asked (those whose baselines were all kept already answer at once).
int time_baselines(const std::vector<const manifest::Exercise*>& exercises, const BuildTree& tree,
                   const GradeOptions& options);

/// A folder beside the build tree, outside the submission's box (which shows the tree alone):
/// where the grader keeps what it must not read back from the tree ("-compiled", "-results").
std::filesystem::path beside_tree(const BuildTree& tree, const std::string& suffix);

/// The result of an exercise that could not be graded at all: every item failed with `problem`.
ExerciseResult not_graded(const manifest::Exercise& exercise, const std::string& problem);

/// Grades exercises in order into a report (source, seed, times, device filled in).
GradeReport grade_all(const std::vector<const manifest::Exercise*>& exercises, const BuildTree& tree,
                      const GradeOptions& options, const std::string& source);

/// The rule items of an exercise from the PTX of its source (rules that cannot be evaluated
/// fail with the reason). With the source's text, findings quote the line they are at (the PTX
/// has line information: nvcc -lineinfo).
std::vector<Item> evaluate_rules(const manifest::Exercise& exercise, const std::string& ptx,
                                 const std::string& source_text = {});

/// One suite-log event: a line of the results file the suites write.
struct CheckEvent {
  std::string event, check, status, reason, device;
  std::string token;  ///< the run's token; lines without it were not written by the harness
  std::vector<std::string> failures;
  std::vector<std::string> notes;  ///< what a check reports whatever its outcome (a speed check's times)
  std::vector<LaunchTreeEdge> launches;  ///< the launch tree of the check's runs (an end record's)
  bool launches_observed = false;        ///< the record carries one (an empty one: nothing launched)
  GridTimeline timeline;                 ///< when the check's grids ran (an end record's; not recorded: empty)
  double seconds = 0;
};

/// A speed check ("speed ...") times a workload and only makes sure that what it timed is right,
/// so it counts only beside correct results: when another check of the exercise did not pass, a
/// passed speed check becomes failed, with the reason (fast code that is wrong earns nothing).
void speed_counts_only_when_correct(std::vector<Item>& items);

/// The checks of `exercises` whose verdict is the order of grids (chapter.toml's `timeline = true`),
/// as the check processes read CDPLAB_RECORDED_CHECKS: "<chapter>/<stem>/<check name>", one a line.
/// Those checks record their grids in every grading, so that a failed one shows its timeline.
std::string recorded_checks(const std::vector<const manifest::Exercise*>& exercises);

/// Reads the suites' JSON-lines results file; broken lines are ignored.
std::vector<CheckEvent> read_check_events(const std::string& path);

/// Why a GPU check was skipped, as the suites say it: "no usable CUDA GPU: PROBLEM; GPU checks
/// were skipped, not passed".
std::string skipped_without_gpu(const std::string& problem);

/// The check items of an exercise from its suite's events; `run_output` explains checks that
/// left no trace (the suite could not start, crashed before logging).
std::vector<Item> check_items(const manifest::Exercise& exercise, const std::vector<CheckEvent>& events,
                              const std::string& run_output);

/// Why a source may not be graded: it refers to the grader's own code (its oracles, its
/// harness, the reference solutions). Empty when nothing was found.
std::string reference_code_problem(const std::string& source);

/// The same rule on the compiled exercise, which no macro or namespace alias can hide: the
/// problem if `nm_output` (undefined symbols, demangled) names a function of the oracles or the
/// harness; empty otherwise.
std::string linked_reference_problem(const std::string& nm_output);

/// A build's output as feedback: the compiler's own words (not the build tool's command lines), at
/// most 60 lines, with advice for the CDP2 errors students meet most. A diagnostic in a file
/// outside `submission_dir` (when given) names the file but the source lines the compiler quotes
/// under it are left out: they would show a file the student may not read.
std::string explain_build_failure(const std::string& output, const std::string& submission_dir = "");

/// The exit status of a suite told to read its baselines from the class's cache only
/// (CDPLAB_BASELINE_CACHE_ONLY=1) that found one missing: the grader runs it again with the GPU
/// alone. The harness ends with the same value (grader/harness/speed.h).
inline constexpr int kBaselineNotCached = 75;

/// A fresh seed for a grading run.
std::uint64_t fresh_seed();

}  // namespace cdplab::grading
