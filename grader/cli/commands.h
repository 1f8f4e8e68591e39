/// @file commands.h
/// @brief The subcommands of cdplab, one function each; main.cpp parses the arguments.
#pragma once

#include "context.h"

#include "batch/slurm.h"
#include "files/file_lock.h"
#include "grading/grade.h"
#include "remote/course.h"
#include "sandbox/submission.h"

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
  bool timeline = false;                ///< keep and draw every check's timeline of grids (check --timeline)
  bool process_per_check = false;       ///< no shared suite processes (grading/shared_process.h)
  bool no_sandbox = false;              ///< grade: build and run submissions outside the box (sandbox/)
  bool verbose = false;                 ///< terminal report: list passed items too (default: a count)
  std::string visibility = "visible";   ///< Gradescope's visibility of the results (report::kGradescopeVisibilities)
  std::string launch_trees;             ///< a folder for each exercise's launch-tree picture; none when empty
  std::string timelines;                ///< a folder for each exercise's timeline picture; none when empty
  std::string remote;                   ///< check: the remote to use (remote/course.h); empty: the course's
  bool local = false;                   ///< check: everything on this machine, whatever the course's remote
};

/// The seed of `cdplab check`'s inputs (the suites' own default, harness.h): a practice run and its
/// rerun see the same inputs, here and on a remote.
inline constexpr std::uint64_t kPracticeSeed = 20260101;

/// What `cdplab remote-check` (the part of a remote check that grades, on the GPU's machine) is told.
struct RemoteCheckArgs {
  std::string report;      ///< where the report goes (JSON)
  std::string build_dir;   ///< the fresh build tree
  std::string via = "ssh"; ///< ssh or slurm: how it was reached (the report's "ran on")
  bool fresh_seed = false; ///< a fresh seed (a grading) instead of --seed or the practice seed
  std::string gpu_turns;   ///< the lock file of the GPU's turns shared with other checks (remote/serve.h)
};

/// The options of `cdplab serve`, as a key's line in authorized_keys gives them; each one given
/// overrides course.toml's [serve].
struct ServeArgs {
  std::string student;
  bool fresh_seeds = false;
  std::string work;
  std::optional<double> time_limit;
  std::optional<int> per_student, queue_per_student, gpus, share_gpu;
};

/// What `cdplab gradescope` writes into the autograder bundle.
struct BundleArgs {
  std::string zip;                  ///< the bundle (.zip)
  std::string key;                  ///< the grading key's private half
  std::string known_hosts;          ///< the server's host key, as ssh's known_hosts lists it
  std::string remote;               ///< the server: ssh://[user@]host[:port]; default: course.toml's
  std::vector<std::string> only;    ///< the assignment's chapters or exercises; default: all
  std::string visibility = "visible";
  bool with_project = false;        ///< carry the project, to grade on the autograder's own GPU where it has one
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
/// `cdplab check [NAMES]`: the student's work graded on the trusted host, here or, where this
/// machine has no usable GPU and a remote is set, on the course's GPUs (remote_commands.cpp).

int run_check(Context& ctx, const GradeArgs& args);
/// `cdplab watch [EXERCISE]`: checks an exercise each time its file is saved, moving on to the
/// next one when it passes, until Ctrl-C.
int run_watch(Context& ctx, const std::string& exercise, const GradeArgs& args);

/// This cdplab's own build tree, its index read (and configured again when exercise files were
/// added or removed since); UsageError when it cannot be used. Its builds say how far they are
/// on stderr unless `show_build_progress` is false.
grading::BuildTree open_own_tree(const Context& ctx, const std::vector<const manifest::Exercise*>& exercises,
                                 bool show_build_progress = true);
/// One check at a time in a project: two (a `watch` in one terminal, a `check` in another) would
/// build in one tree and write one results file, and each would read the other's lines as forged.
/// The second waits for the first, and says so; Ctrl-C stops the wait (UsageError). Held until
/// the lock is destroyed; not held where the build folder is missing or cannot be locked.
files::HeldLock one_check_at_a_time(const Context& ctx);
/// Grades `exercises` in `tree` as `cdplab check` does (the caller holds one_check_at_a_time):
/// records the progress, prints the report and, in the terminal, what to fix next.
grading::GradeReport check_exercises(Context& ctx, const grading::BuildTree& tree,
                                     const std::vector<const manifest::Exercise*>& exercises, const GradeArgs& args);
/// The first exercise in workbook order whose last check did not pass (or whose file changed
/// since); nullptr when every exercise passed.
const manifest::Exercise* next_unfinished(const Context& ctx);
/// The remote a check of `exercises` goes to: none with --local, when the course gives none, when
/// no exercise has GPU checks, or when this machine has a usable GPU (unless --remote named one).
/// Says on stderr why the check goes there. Throws UsageError for a course.toml or spec that
/// cannot be read.
std::optional<remote::Remote> remote_for_check(const Context& ctx, const std::vector<const manifest::Exercise*>& exercises,
                                               const GradeArgs& args);
/// Grades `exercises` of `tree`'s folder on `remote` and returns its report (source: the local
/// folder). Throws UsageError with one line when no report came back; nothing of the student's
/// changes either way.
grading::GradeReport check_remotely(Context& ctx, const remote::Remote& remote, const grading::BuildTree& tree,
                                    const std::vector<const manifest::Exercise*>& exercises, const GradeArgs& args);
/// What a check that skipped its GPU checks, here and with no remote, tells the student: how to
/// reach a GPU (the course's words in course.toml, then the ways the workbook knows).
std::string no_gpu_advice(const Context& ctx, const grading::GradeReport& report);
/// Exercises the student loop treats as done for now: their rules and everything that ran passed,
/// and only their GPU checks are pending (no GPU, no remote).
int gpu_pending_count(const Context& ctx);

/// `cdplab` with no command: the first exercise not done, checked (it builds what that exercise
/// needs first), then, in a terminal, checked again each time its file is saved and on to the next
/// (`cdplab watch`). Without a terminal it checks that exercise once and says what comes next.
int run_next_exercise(Context& ctx, const GradeArgs& args);
/// Grades one submission folder, or (when `folder` holds submissions) a whole class.
int run_grade(Context& ctx, const std::string& folder, const GradeArgs& args, const ClassArgs& class_args);
/// `cdplab grade CLASS --slurm` and the two parts its jobs run (--slurm-task, --slurm-merge).
int run_grade_slurm(Context& ctx, const std::string& folder, const GradeArgs& args, const ClassArgs& class_args,
                    const batch::slurm::Request& request);
/// Grades one submission folder in a fresh build tree (emptied first) on the trusted host, in
/// `box` when given: what `cdplab grade DIR` and a remote check run. `options.seed` is kept.
grading::GradeReport grade_submission(Context& ctx, const std::filesystem::path& dir,
                                      const std::filesystem::path& build_dir,
                                      const std::vector<const manifest::Exercise*>& exercises, const GradeArgs& args,
                                      const std::optional<sandbox::Kit>& box, grading::GradeOptions options);
/// Builds the grading kit once for every tree graded from this cdplab (one process at a time: a lock
/// in the build tree, grading::BuildTree::prepare_grading_kit) and hands it to the trees it configures. `boxed`: a missing kit is a
/// UsageError, since the box shows no reference twin.
void use_grading_kit(Context& ctx, bool quiet, bool boxed = false);
/// The box every submission of `cdplab grade` is built and run in (sandbox/submission.h), or
/// std::nullopt with --no-sandbox or when only quizzes are graded. Throws UsageError, naming the
/// cause and the ways on, when the box cannot start here.
std::optional<sandbox::Kit> grading_sandbox(const Context& ctx, const GradeArgs& args,
                                            const std::vector<const manifest::Exercise*>& exercises);
/// The options of a grading of `cdplab check` or `grade`: the seed, time limits, check jobs,
/// sanitizer and progress lines.
grading::GradeOptions options_for(const GradeArgs& args, std::uint64_t default_seed);
/// `cdplab remote-check FOLDER`: the part of a remote check that runs beside the GPU (a Slurm job,
/// or the worker of `cdplab serve`): grades FOLDER as check does and writes the report.
int run_remote_check(Context& ctx, const std::string& folder, const GradeArgs& args, const RemoteCheckArgs& remote);
/// `cdplab serve --student NAME`: one request of the course's GPU server (remote/serve.h).
int run_serve(Context& ctx, const ServeArgs& args);
/// `cdplab gradescope BUNDLE.zip`: Gradescope's autograder for the course's GPU server.
int run_gradescope_bundle(Context& ctx, const BundleArgs& args);
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
