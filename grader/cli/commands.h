/// @file commands.h
/// @brief The subcommands of cdplab, one function each; main.cpp parses the arguments.
#pragma once

#include "context.h"

#include "batch/slurm.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cdplab::cli {

/// Options shared by `check` and `grade`.
struct GradeArgs {
  std::vector<std::string> names;       ///< chapters or exercises; all when empty
  std::optional<std::uint64_t> seed;    ///< the seed the checks use
  std::string format = "terminal";      ///< terminal, json, gradescope, junit
  std::string output;                   ///< where the format goes; stdout when empty
  std::string build_dir;                ///< grade: the build tree to use
  bool quiet = false;                   ///< no progress lines
  bool sanitize = false;                ///< run the suites again under compute-sanitizer
  bool process_per_check = false;       ///< no shared suite processes (grading/shared_process.h)
  bool no_sandbox = false;              ///< grade: build and run submissions outside the box (sandbox/)
  bool verbose = false;                 ///< terminal report: list passed items too (default: a count)
  std::string visibility = "visible";   ///< Gradescope's visibility of the results (report::kGradescopeVisibilities)
  std::string launch_trees;             ///< a folder for each exercise's launch-tree picture; none when empty
};

/// Options of `cdplab grade` over a class folder (a folder of submission folders and archives).
struct ClassArgs {
  std::string out;                      ///< results folder (default: <folder>-grades beside it)
  int parallel = 2;                     ///< submissions built at the same time
  int gpus = 1;                         ///< GPUs the checks run on
  int share_gpu = 2;                    ///< submissions whose checks share one GPU
  bool force = false;                   ///< grade everyone again
  std::vector<std::string> regrade;     ///< grade these students again
  bool keep_work = false;               ///< keep every student's build tree in work/
  // The gradebook's policy (batch/class_policy.h), kept in the results folder; unset: as kept.
  std::string roster;                   ///< a roster CSV to keep; "none" forgets the kept one
  std::string due;                      ///< the due date (ISO 8601); "none" forgets it
  std::optional<double> late_penalty;   ///< percent of the total per day late
  std::optional<int> late_limit;        ///< days late after which nothing counts; -1 forgets it
  std::string assignment;               ///< the grade column of the Canvas and Moodle exports
};

int run_list(Context& ctx);
int run_check(Context& ctx, const GradeArgs& args);
/// `cdplab watch [EXERCISE]`: checks an exercise each time its file is saved, moving on to the
/// next one when it passes, until Ctrl-C.
int run_watch(Context& ctx, const std::string& exercise, const GradeArgs& args);

/// This cdplab's own build tree, its index read (and configured again when exercise files were
/// added or removed since); UsageError when it cannot be used. Its builds say how far they are
/// on stderr unless `show_build_progress` is false.
grading::BuildTree open_own_tree(const Context& ctx, const std::vector<const manifest::Exercise*>& exercises,
                                 bool show_build_progress = true);
/// Grades `exercises` in `tree` as `cdplab check` does: records the progress, prints the report
/// and, in the terminal, what to fix next.
grading::GradeReport check_exercises(Context& ctx, const grading::BuildTree& tree,
                                     const std::vector<const manifest::Exercise*>& exercises, const GradeArgs& args);
/// The first exercise in workbook order whose last check did not pass (or whose file changed
/// since); nullptr when every exercise passed.
const manifest::Exercise* next_unfinished(const Context& ctx);
/// `cdplab` with no command: the first exercise not done, checked (it builds what that exercise
/// needs first), then, in a terminal, checked again each time its file is saved and on to the next
/// (`cdplab watch`). Without a terminal it checks that exercise once and says what comes next.
int run_next_exercise(Context& ctx, const GradeArgs& args);
/// Grades one submission folder, or (when `folder` holds submissions) a whole class.
int run_grade(Context& ctx, const std::string& folder, const GradeArgs& args, const ClassArgs& class_args);
/// `cdplab grade CLASS --slurm` and the two parts its jobs run (--slurm-task, --slurm-merge).
int run_grade_slurm(Context& ctx, const std::string& folder, const GradeArgs& args, const ClassArgs& class_args,
                    const batch::slurm::Request& request);
int run_hint(Context& ctx, const std::string& name, bool all);
int run_reset(Context& ctx, const std::string& name);
int run_rules(Context& ctx, const std::string& file, bool dot, const std::string& exercise);
/// Builds and runs a chapter's program: kind "drivers" (`cdplab run`) or "benches" (`cdplab bench`).
int run_program(Context& ctx, const std::string& kind, const std::string& chapter, const std::vector<std::string>& args);
int run_starters(Context& ctx, bool write);
/// Writes the student release (no solutions, no project tests) into a new folder.
int run_release(Context& ctx, const std::string& folder);
/// Builds the CDP probe in this cdplab's build tree and runs it with `args` (`cdplab probe`):
/// it prints the CDP2 facts measured on the GPU present. Replaces this process on success.
int run_probe(Context& ctx, const std::vector<std::string>& args);

/// The starter text of an exercise: generated from its solution, or in a student release (no
/// solutions) the starter as it was released; empty when there is neither.
std::string starter_text(const Context& ctx, const manifest::Exercise& e);

}  // namespace cdplab::cli
