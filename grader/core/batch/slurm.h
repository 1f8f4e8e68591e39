/// @file slurm.h
/// @brief Grading a class on a Slurm cluster: a job array with one task per submission, and a
///        job that merges their results into the gradebook once every task has ended.
///
/// `cdplab grade CLASS --slurm` writes into OUT/slurm/:
/// - `submissions.txt`: one line per submission, `index<TAB>student<TAB>source`; task `index`
///   of the array grades that submission;
/// - `grade.sbatch`: the job array; each task runs this cdplab as
///   `cdplab grade CLASS --out OUT --slurm-task INDEX`, which grades that one submission with
///   the class grader (grade_class()) and writes its files below OUT/students/;
/// - `merge.sbatch`: submitted with `--dependency=afterany:<array>`; runs
///   `cdplab grade CLASS --out OUT --slurm-merge`, which rewrites gradebook.csv and summary.md;
/// - `logs/<index>.out` and `logs/merge.out`: what each job printed;
/// - `done/<index>`: written by a task that graded its submission (a task without one failed).
///
/// The tasks read and write these paths on the compute nodes: the class folder, the results
/// folder, the project and this cdplab build must be on a file system that every node shares.
#pragma once

#include "batch/submissions.h"

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cdplab::batch::slurm {

/// A problem with Slurm itself (sbatch missing or refusing a job, squeue failing); the
/// message says what happened and what was kept.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What each grading task asks Slurm for; every field that is set becomes an #SBATCH line.
struct Resources {
  std::string partition;                 ///< --partition
  std::string gres;                      ///< --gres, e.g. "gpu:1"
  std::string time;                      ///< --time, e.g. "30:00"
  int cpus_per_task = 0;                 ///< --cpus-per-task; 0: the cluster's default
  std::string mem;                       ///< --mem, e.g. "8G"
  std::string account;                   ///< --account
  std::vector<std::string> sbatch_args;  ///< more options, each "--name=value" or "--flag"
};

/// Which part of a Slurm run a cdplab invocation is.
enum class Mode {
  submit,  ///< write the scripts, submit them, (optionally) wait and print the summary
  task,    ///< one array task: grade the submission with this index
  merge,   ///< the merge job: rewrite the gradebook and the summary
};

/// The Slurm part of `cdplab grade CLASS`.
struct Request {
  Mode mode = Mode::submit;
  std::size_t task = 0;           ///< Mode::task: the index in submissions.txt
  Resources resources;
  bool wait = true;               ///< wait for the jobs and print the class summary
  double timeout_seconds = 3600;  ///< how long to wait before giving up (the jobs go on)
  double poll_seconds = 0.5;      ///< how often squeue is asked
};

/// What every task runs: this cdplab, on this class, into this results folder.
struct Command {
  std::filesystem::path cdplab;     ///< this cdplab executable, absolute
  std::filesystem::path class_dir;  ///< absolute
  std::filesystem::path out_dir;    ///< absolute
  std::vector<std::string> only;    ///< --only names
  bool force = false;               ///< --force
  std::vector<std::string> regrade; ///< --regrade names
  bool sanitize = false;            ///< --sanitize
  bool process_per_check = false;   ///< --process-per-check
  bool no_sandbox = false;          ///< --no-sandbox
  bool keep_work = false;           ///< --keep-work
  std::string visibility = "visible";  ///< --gradescope-visibility
  int build_jobs = 0;               ///< cdplab -j; 0: the CPUs Slurm gave the task
};

/// The files of a Slurm run below OUT/slurm.
struct Layout {
  explicit Layout(const std::filesystem::path& out_dir);
  std::filesystem::path dir;           ///< OUT/slurm
  std::filesystem::path listing;       ///< submissions.txt
  std::filesystem::path array_script;  ///< grade.sbatch
  std::filesystem::path merge_script;  ///< merge.sbatch
  std::filesystem::path logs;          ///< logs/
  std::filesystem::path done;          ///< done/
  std::filesystem::path task_log(std::size_t index) const;
  std::filesystem::path merge_log() const;
  std::filesystem::path done_marker(std::size_t index) const;
};

/// The path of the running executable (/proc/self/exe), absolute.
std::filesystem::path this_executable();

/// `text` as one word for a POSIX shell: single-quoted, each single quote written as '\''.
std::string shell_quote(const std::string& text);

/// An #SBATCH line for `--option=value`, the value in double quotes (sbatch reads them, with
/// backslash escapes, so paths with blanks are safe). Throws Error for a line break in it.
std::string directive(const std::string& option, const std::string& value);

/// An #SBATCH line for a free-form sbatch option ("--qos=normal", "--exclusive"). Throws Error
/// when it is not an option or holds a line break.
std::string extra_directive(const std::string& arg);

/// A path as sbatch reads an --output file name: `%` is written `%%` (its patterns are
/// expanded). Throws Error for a backslash (it turns the patterns off) or a line break.
std::string output_pattern(const std::filesystem::path& path);

/// Throws Error, naming the option, when a resource cannot be written as an #SBATCH line.
void check_resources(const Resources& resources);

/// Array indices in sbatch's form: "0-2,5,7-8" (`indices` sorted, without repeats).
std::string index_ranges(const std::vector<std::size_t>& indices);

/// The contents of submissions.txt. Throws Error for a name holding a tab or a line break.
std::string listing(const std::vector<Submission>& submissions);

/// Reads submissions.txt back (the order and indices as written). Throws Error when a line is
/// not `index<TAB>student<TAB>source` or the indices are not 0, 1, 2, ...
std::vector<Submission> read_listing(const std::string& text);

/// The job array script: one task for each of `tasks` (indices into the listing).
std::string array_script(const Command& command, const Resources& resources, const std::vector<std::size_t>& tasks,
                         const Layout& layout);

/// The merge job's script.
std::string merge_script(const Command& command, const Resources& resources, const Layout& layout);

/// The job id in `sbatch --parsable` output ("123" or "123;cluster"); nothing when absent.
std::optional<std::string> parse_job_id(const std::string& output);

/// The Slurm programs cdplab runs (tests put stand-ins here).
struct Tools {
  std::string sbatch = "sbatch";
  std::string squeue = "squeue";
  std::string scontrol = "scontrol";
  std::string scancel = "scancel";
};

/// The #SBATCH lines of what each task of a job uses: gres, time, CPUs, memory, then the more
/// sbatch options (last: a later #SBATCH line overrides an earlier one). Partition and account
/// are written with the job's name.
std::string resource_directives(const Resources& resources);

/// A job in the queue, as squeue lists it.
struct JobState {
  std::string state;      ///< PENDING, RUNNING, COMPLETING, ...
  std::string reason;     ///< why it waits ("Priority", "Resources"); "None" when it runs
  std::string node;       ///< where it runs; empty while it waits
  std::string partition;
};

/// The job `id` as squeue sees it; nothing when it has left the queue. Throws Error when squeue
/// cannot be asked.
std::optional<JobState> job_state(const Tools& tools, const std::string& id);

/// Where a waiting job stands among the waiting jobs of its partition, by priority (1: it starts
/// next); 0 when squeue does not say.
int queue_position(const Tools& tools, const std::string& id, const std::string& partition);

/// How a job that left the queue ended, as scontrol remembers it (COMPLETED, CANCELLED, TIMEOUT,
/// FAILED, NODE_FAIL, OUT_OF_MEMORY, ...); empty when Slurm no longer knows the job.
std::string final_state(const Tools& tools, const std::string& id);

/// Cancels job `id` (scancel); true when scancel took it.
bool cancel(const Tools& tools, const std::string& id);

/// Submits `script` with `sbatch --parsable` and the extra arguments; returns the job id.
/// Throws Error naming `what` when sbatch is missing, fails, or prints no job id.
std::string submit(const Tools& tools, const std::filesystem::path& script, const std::vector<std::string>& args,
                   const std::string& what);

/// The jobs of `ids` that are still in the queue (pending, running or completing), as squeue
/// lists them ("12_[3-5]", "13"); empty when all have left it. Throws Error when squeue fails
/// for another reason than jobs it no longer knows.
std::vector<std::string> queued_jobs(const Tools& tools, const std::vector<std::string>& ids);

/// Polls queued_jobs() every `poll_seconds` until the jobs have left the queue (true) or
/// `timeout_seconds` have passed (false). `on_poll` gets what is still queued after every poll.
/// A failing squeue is asked again until the deadline, then its message is thrown (Error).
bool wait_for_jobs(const Tools& tools, const std::vector<std::string>& ids, double timeout_seconds,
                   double poll_seconds,
                   const std::function<void(const std::vector<std::string>& queued)>& on_poll = {});

/// The indices of the submissions that need grading: those without a result the grader kept
/// below `out_dir` of every one of `exercises` (kept_result, grades_all_of), and all of those asked
/// for (`force`, or named in `regrade`). With `only` (exercises chosen by --only) everyone is
/// graded again on them, as a local run does: each task keeps the rest of its earlier grade.
std::vector<std::size_t> tasks_to_grade(const std::vector<Submission>& submissions,
                                        const std::filesystem::path& out_dir, bool force, bool only,
                                        const std::vector<std::string>& regrade,
                                        const std::vector<const manifest::Exercise*>& exercises);

/// Two jobs in the queue: the array and the merge job that waits for it.
struct Submitted {
  std::string array_id;
  std::string merge_id;
  std::vector<std::filesystem::path> files;  ///< what was written below OUT/slurm
};

/// Writes submissions.txt and the two scripts, clears the done markers of `tasks` (not empty),
/// then submits the array and the merge job. Throws Error when a script cannot
/// be written or sbatch refuses a job; the message says what was submitted and how to go on.
Submitted write_and_submit(const std::vector<Submission>& submissions, const std::vector<std::size_t>& tasks,
                           const Command& command, const Resources& resources, const Tools& tools);

/// Marks task `index` finished: its submission was graded and its files were written.
/// `summary` is one line ("graded 8/8").
void mark_done(const Layout& layout, std::size_t index, const std::string& summary);

/// What a task's done marker says; nothing when the task has not (or not successfully) ended.
std::optional<std::string> done_summary(const Layout& layout, std::size_t index);

}  // namespace cdplab::batch::slurm
