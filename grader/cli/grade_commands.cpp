// `cdplab check` (the student's own work, in this build tree) and `cdplab grade DIR`
// (a submission folder, in a build tree of its own). Both grade with grading::grade_all.
// `cdplab grade CLASS` grades a folder of submissions with the class grader (batch/), here or,
// with --slurm, as a job array on a Slurm cluster (batch/slurm.h).
#include "build_config.h"
#include "commands.h"
#include "progress.h"
#include "report/grid_timeline.h"
#include "report/launch_tree.h"
#include "report/report.h"
#include "report/text.h"

#include "batch/batch.h"
#include "batch/class_policy.h"
#include "batch/slurm.h"
#include "files/file_lock.h"
#include "process/process.h"
#include "remote/local_gpu.h"
#include "grading/grade.h"
#include "sandbox/submission.h"
#include "starters/given_code.h"
#include "sanitizer/sanitizer.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <thread>

namespace cdplab::cli {
namespace {

namespace fs = std::filesystem;

std::string render(const grading::GradeReport& report, const std::string& format, bool color, bool verbose,
                   const std::string& visibility) {
  if (format == "terminal") return report::render_terminal(report, {color, verbose, report::terminal_width()});
  const auto text = [](const nlohmann::json& value) {
    return value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  };
  if (format == "json") return text(report::to_json(report));
  if (format == "gradescope") return text(report::to_gradescope(report, visibility));
  if (format == "junit") return report::to_junit_xml(report);
  throw UsageError("unknown report format '" + format + "' (terminal, json, gradescope, junit)");
}

/// The launch-tree pictures --launch-trees asks for, after the report: a folder that cannot be
/// written costs a warning, never the report.
void write_launch_trees(const grading::GradeReport& report, const std::string& folder) {
  try {
    const int written = report::write_launch_tree_pictures(report, folder);
    std::cerr << "cdplab: " << written << " launch-tree picture" << (written == 1 ? "" : "s") << " written to "
              << folder << (written == 0 ? " (no check's launches were counted: they need a GPU)" : "") << "\n";
  } catch (const std::exception& error) {
    std::cerr << "cdplab: warning: no launch-tree pictures: " << error.what() << "\n";
  }
}

/// The timeline pictures --timelines asks for, after the report: as write_launch_trees.
void write_timelines(const grading::GradeReport& report, const std::string& folder, const Context& ctx) {
  try {
    const auto ordered = [&ctx](const grading::ExerciseResult& e) {
      std::vector<std::string> names;
      for (const auto& chapter : ctx.book.chapters)
        for (const auto& exercise : chapter.exercises)
          if (exercise.id == e.id && exercise.chapter == e.chapter)
            for (const auto& check : exercise.checks)
              if (check.timeline) names.push_back(check.name);
      return names;
    };
    const int written = report::write_timeline_pictures(report, ordered, folder);
    std::cerr << "cdplab: " << written << " timeline picture" << (written == 1 ? "" : "s") << " written to " << folder
              << (written == 0 ? " (no check's grids were recorded: they need a GPU)" : "") << "\n";
  } catch (const std::exception& error) {
    std::cerr << "cdplab: warning: no timeline pictures: " << error.what() << "\n";
  }
}

/// Terminal feedback on stdout, unless another format goes to stdout; that format to --output.
void emit(const grading::GradeReport& report, const GradeArgs& args, const Context& ctx) {
  const std::string text = render(report, args.format, ctx.color && args.output.empty(), args.verbose, args.visibility);
  if (args.output.empty()) {
    std::cout << text << std::flush;
  } else {
    std::ofstream out(args.output, std::ios::binary);
    if (!out) throw UsageError("cannot write " + args.output);
    out << text;
    std::cout << report::render_terminal(report, {ctx.color, args.verbose, report::terminal_width()}) << std::flush;
    std::cerr << "cdplab: " << args.format << " report written to " << args.output << "\n";
  }
  if (!args.launch_trees.empty()) write_launch_trees(report, args.launch_trees);
  if (!args.timelines.empty()) write_timelines(report, args.timelines, ctx);
}

/// Whether the tree's index still matches the files present (a file added or deleted since).
bool index_is_stale(const grading::BuildTree& tree, const std::vector<const manifest::Exercise*>& exercises) {
  for (const auto* e : exercises) {
    if (e->is_quiz()) continue;  // read straight from the folder; not part of the build
    const auto entry = tree.find(e->chapter, e->stem);
    const fs::path source = fs::path(tree.exercise_dir()) / e->chapter / e->file;
    if (!entry || entry->present() != fs::exists(source)) return true;
  }
  return false;
}

/// The time limit of one check: CDPLAB_CHECK_SECONDS where set (a slower GPU than the build
/// assumed, or a test that expects hangs), else the build's. A value that is not a number of
/// seconds from 1 to 3600 stops the command with a message.
double check_seconds_limit() {
  const char* value = std::getenv("CDPLAB_CHECK_SECONDS");
  if (value == nullptr) return build_config::kCheckSeconds;
  char* end = nullptr;
  const double seconds = std::strtod(value, &end);
  if (end == value || *end != '\0' || !(seconds >= 1 && seconds <= 3600)) {
    throw UsageError(std::string("CDPLAB_CHECK_SECONDS is '") + value +
                     "': a check's time limit is a number of seconds from 1 to 3600 (unset it for the build's " +
                     std::to_string(static_cast<int>(build_config::kCheckSeconds)) + ")");
  }
  return seconds;
}

}  // namespace

grading::GradeOptions options_for(const GradeArgs& args, std::uint64_t default_seed) {
  grading::GradeOptions options;
  options.seed = args.seed.value_or(default_seed);
  options.check_seconds = check_seconds_limit();
  // Checks side by side: process start-up and CUDA context creation dominate most of them. Not
  // more than 8: on an H100 with 16 cores, the 19 suite processes of one submission took 4.8 s
  // 8 at a time, while 16 at once took 5.3 s for the first 16 alone (the driver serialises much
  // of their start-up: each took about twice as long).
  options.check_jobs = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  if (args.sanitize) options.sanitizer = sanitizer::find_sanitizer(build_config::kNvcc);
  options.memcheck_program = sanitizer::find_sanitizer(build_config::kNvcc);
  options.shared_processes = !args.process_per_check;
  options.keep_timelines = args.timeline || !args.timelines.empty();
  if (options.keep_timelines) options.env["CDPLAB_GRID_RECORDING"] = "on";  // the check processes record
  if (!args.quiet) options.progress = print_progress;
  return options;
}

/// Builds the grading kit of this cdplab's own tree, so that each submission's tree compiles
/// only its exercise files (cmake/CdplabGradingKit.cmake), and hands it to the trees grade
/// configures. Without a kit, grading still works outside the box: each tree compiles the grader
/// itself. In the box it cannot: such a tree would compile the reference twins from solutions/,
/// which the box does not show, so `boxed` makes a missing kit a UsageError.
void use_grading_kit(Context& ctx, bool quiet, bool boxed) {
  if (!quiet) std::cerr << "cdplab: building the grader once for every submission (target cdplab_grading_kit)\n";
  const grading::BuildTree own(ctx.root, ctx.own_build, ctx.toolchain);
  std::string problem;
  ctx.toolchain.cache_args.push_back(own.prepare_grading_kit(problem));  // one process at a time (a lock in the tree)
  if (!problem.empty() && boxed)
    throw UsageError("grading in the sandbox needs the grading kit, and " + problem +
                     "\nfix the kit's build, or grade with --no-sandbox on a machine given only to grading");
  if (!problem.empty()) std::cerr << "cdplab: warning: " << problem << "\ncdplab: each submission's build compiles the grader itself\n";
}

/// The box every submission of `cdplab grade` is built and run in (sandbox/submission.h), or
/// std::nullopt with --no-sandbox, or when only quizzes are graded (no code runs). A box that
/// cannot start here stops grade before anything is built: a UsageError (exit status 2) naming
/// the cause and the two ways on.
std::optional<sandbox::Kit> grading_sandbox(const Context& ctx, const GradeArgs& args,
                                            const std::vector<const manifest::Exercise*>& exercises) {
  if (args.no_sandbox) {
    if (!args.quiet)
      std::cerr << "cdplab: --no-sandbox: the submissions' code is built and run with this account's rights\n";
    return std::nullopt;
  }
  if (std::all_of(exercises.begin(), exercises.end(), [](const auto* e) { return e->is_quiz(); })) return std::nullopt;
  const auto& probe = sandbox::probe(sandbox::bwrap_program());
  if (!probe.ok) {
    throw UsageError(
        "cannot grade: the submissions' code is built and run in a sandbox (bubblewrap), and it cannot start "
        "here: " + probe.problem +
        ".\nEither grade with --no-sandbox, on a machine given only to grading (the code then runs with this "
        "account's rights), or run cdplab grade --no-sandbox inside the cluster's container runtime "
        "(Apptainer/Singularity, Podman), which then is the box (docs/grading-a-class.md, \"The sandbox\")");
  }
  return sandbox::Kit{ctx.root, ctx.own_build};
}

grading::BuildTree open_own_tree(const Context& ctx, const std::vector<const manifest::Exercise*>& exercises,
                                 bool show_build_progress) {
  // A missing or half-configured build folder fails every build: say so, never blaming an exercise.
  if (const auto problem = grading::build_tree_problem(ctx.own_build); !problem.empty())
    throw UsageError(problem + "; nothing was checked. Run ./cdplab again: it configures the folder anew");
  grading::BuildTree tree(ctx.root, ctx.own_build, ctx.toolchain);
  // A first build takes minutes: say how far it is.
  if (show_build_progress)
    tree.set_build_progress([](const std::string& line) { std::cerr << "cdplab: building: " << line << "\n"; });
  try {
    tree.load_index();
  } catch (const std::exception& error) {
    throw UsageError(error.what());
  }
  if (index_is_stale(tree, exercises)) {
    std::cerr << "cdplab: exercise files were added or removed; configuring again\n";
    const auto configured = tree.configure(tree.exercise_dir(), {});
    if (!configured.ok()) throw UsageError("configuring the build failed:\n" + configured.output);
  }
  return tree;
}

namespace {

/// `file` locked, once whoever holds it lets go: `waiting` is said (unless empty) when it has to
/// wait; Ctrl-C or a cancelled job stops the wait with UsageError(`stopped`).
files::HeldLock wait_for_lock(const fs::path& file, const std::string& waiting, const std::string& stopped) {
  files::HeldLock lock = files::wait_for_any({file}, process::cancelled, [&] {
    if (!waiting.empty()) std::cerr << "cdplab: " << waiting << "\n";
  });
  if (!lock.held()) throw UsageError(stopped);
  return lock;
}

}  // namespace

files::HeldLock one_check_at_a_time(const Context& ctx) {
  // A missing build folder is open_own_tree's to report (it says how to configure it again).
  if (!fs::is_directory(ctx.own_build)) return {};
  try {
    return wait_for_lock(ctx.own_build / "cdplab-check.lock",
                         "another cdplab check or watch is running in this project; this one waits for it",
                         "stopped while waiting for the other check");
  } catch (const UsageError&) {
    throw;
  } catch (const std::runtime_error& error) {  // a file system that cannot lock
    std::cerr << "cdplab: " << error.what() << "; checking without making sure no other check runs here\n";
    return {};
  }
}

int run_check(Context& ctx, const GradeArgs& args) {
  const auto exercises = select_exercises(ctx.book, args.names);
  const files::HeldLock checking = one_check_at_a_time(ctx);  // before the tree: two would configure it
  const grading::BuildTree tree = open_own_tree(ctx, exercises, !args.quiet);
  if (!args.quiet) std::cerr << "cdplab: checking " << tree.exercise_dir() << "\n";
  const std::string missing = missing_chapters_note(ctx.book);
  std::cerr << missing;
  const int code = exit_code_for(check_exercises(ctx, tree, exercises, args));
  // A whole check with a chapter missing has not graded the whole workbook: never "all passed".
  if (!missing.empty() && args.names.empty() && code == kAllPassed) {
    std::cerr << missing;
    return kSomeFailed;
  }
  return code;
}

grading::GradeReport check_exercises(Context& ctx, const grading::BuildTree& tree,
                                     const std::vector<const manifest::Exercise*>& exercises, const GradeArgs& args) {
  // One way to run a check: on the trusted host (the workbook's host code, the student's device
  // code and host parts), here or on the course's GPUs, as `cdplab grade` runs it.
  grading::GradeReport report;
  const auto remote = remote_for_check(ctx, exercises, args);
  if (remote) {
    report = check_remotely(ctx, *remote, tree, exercises, args);
  } else {
    grading::GradeOptions options = options_for(args, kPracticeSeed);
    // No GPU here: the suites are neither built nor run (GradeOptions::gpu_absent).
    if (std::any_of(exercises.begin(), exercises.end(), [](const auto* e) { return !e->checks.empty(); }))
      options.gpu_absent = remote::local_gpu_problem(batch::slurm::this_executable().string());
    report = grading::grade_all(exercises, tree, options, tree.exercise_dir());
    report.tool_version = build_config::kVersion;
    // The build folder deleted while the checks ran: every build failed for that, not for the
    // exercises; nothing of this run is recorded.
    if (const auto problem = grading::build_tree_problem(ctx.own_build); !problem.empty())
      throw UsageError(problem + " (it went away during the check): these results say nothing of your code. Run "
                       "./cdplab again: it configures the folder anew");
  }

  // Matched by id: a remote's workbook lists the same exercises, but need not in this order.
  Progress progress(ctx.own_build);
  for (const auto* e : exercises)
    for (const auto& result : report.exercises)
      if (result.id == e->id && result.chapter == e->chapter)
        progress.record(result, read_text(fs::path(tree.exercise_dir()) / e->path()));
  progress.save();

  emit(report, args, ctx);
  if (args.format == "terminal" && args.output.empty()) {
    // Host code a grading runs as the workbook gives it: a change there is not graded.
    for (const auto* e : exercises) {
      const std::string starter = starter_text(ctx, *e);
      const fs::path file = fs::path(tree.exercise_dir()) / e->path();
      if (starter.empty() || !fs::exists(file)) continue;
      const auto changed = starters::given_host_changes(starter, read_text(file));
      if (changed.empty()) continue;
      std::cout << "\nnote: " << e->path() << " changes given host code:\n";
      for (const auto& header : changed) std::cout << "  " << header << "\n";
      std::cout << "  check and grade run the workbook's host code, not your copy; `cdplab run " << e->chapter
                << "` runs your whole file. What is graded as yours: kernels, device functions and host parts "
                   "(CDPLAB_HOST_PART, cdplab/host_part.h).\n";
    }
    bool failed_any = false;
    for (const auto& e : report.exercises) {
      bool failed = !e.problem.empty();
      for (const auto& item : e.items) failed = failed || item.outcome == grading::Outcome::failed;
      if (!failed) continue;
      failed_any = true;
      std::cout << "\n"
                << wrapped("next: fix " + e.file + ", then run `cdplab check " + e.id + "` again (a hint: `cdplab hint " +
                               e.id + "`)\n",
                           2);
      break;
    }
    if (!failed_any && !remote && !report.complete()) std::cout << "\n" << no_gpu_advice(ctx, report);
  }
  return report;
}

namespace {

/// The class folder as given, absolute, without a trailing separator ("class/" is "class").
fs::path class_folder(const std::string& folder) {
  fs::path dir = fs::absolute(folder).lexically_normal();
  if (!dir.has_filename() && dir.has_parent_path() && dir != dir.root_path()) dir = dir.parent_path();
  if (!fs::is_directory(dir)) throw UsageError("no folder " + dir.string() + " to grade");
  return dir;
}

/// A class's submissions; none is a usage error, and so is a name given to --regrade that is no
/// student's (a typo would otherwise regrade no one, silently).
std::vector<batch::Submission> class_submissions(const fs::path& dir, const std::vector<std::string>& regrade = {}) {
  auto submissions = batch::find_submissions(dir);
  if (submissions.empty()) {
    throw UsageError(dir.string() + " holds no chapter folder (one submission is laid out like chapters/, e.g. " +
                     (dir / "01-fundamentals" / "child_grids.cu").string() +
                     ") and no submissions (a class: folders or .zip/.tar.gz archives, one per student)");
  }
  std::vector<std::string> names;
  for (const auto& submission : submissions) names.push_back(submission.name);
  for (const auto& name : regrade) {
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    const std::string nearest = nearest_name(name, names);
    throw UsageError("--regrade " + name + ": no student of " + dir.string() + " is named so" +
                     (nearest.empty() ? "" : "; did you mean '" + nearest + "'?"));
  }
  return submissions;
}

/// The GPUs this machine shows as device files (/dev/nvidia0, /dev/nvidia1, ...); 0 where the
/// driver has none (another platform, or no GPU).
int gpu_device_files() {
  int count = 0;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/dev", error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
        std::all_of(name.begin() + 6, name.end(), [](unsigned char c) { return std::isdigit(c); }))
      ++count;
  }
  return count;
}

/// One CUDA_VISIBLE_DEVICES value per GPU slot; refuses more GPUs than the machine or the
/// inherited CUDA_VISIBLE_DEVICES has, which would leave those submissions' checks without one.
std::vector<std::string> class_gpu_devices(int gpus) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible == nullptr && gpus > 1) {
    const int present = gpu_device_files();
    if (present > 0 && present < gpus)
      throw UsageError("--gpus " + std::to_string(gpus) + " asks for more GPUs than this machine has (" +
                       std::to_string(present) + ")");
  }
  try {
    return batch::gpu_devices(gpus, visible);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
}

/// The options of the class grader, from the command line; refuses the one-submission options.
batch::BatchOptions class_options(const fs::path& dir, const GradeArgs& args, const ClassArgs& class_args) {
  if (args.format != "terminal" || !args.output.empty() || !args.build_dir.empty() || args.seed ||
      !args.launch_trees.empty() || !args.timelines.empty())
    throw UsageError("--format, --output, --build-dir, --seed, --launch-trees and --timelines grade one submission; a class gets "
                     "every format in its results folder (--out), each run with fresh seeds, and each student's "
                     "launch trees in their feedback page");
  batch::BatchOptions options;
  options.out_dir = class_args.out.empty() ? fs::path(dir.string() + "-grades")
                                           : fs::absolute(class_args.out).lexically_normal();
  // Inside the class folder, the results would be taken for a student's submission next time.
  const auto [end, ignored] = std::mismatch(dir.begin(), dir.end(), options.out_dir.begin(), options.out_dir.end());
  if (end == dir.end())
    throw UsageError("the results folder " + options.out_dir.string() + " lies inside the class folder " +
                     dir.string() + ": choose another --out");
  options.parallel = class_args.parallel;
  options.gpus = class_args.gpus;
  options.share_gpu = class_args.share_gpu;
  options.devices = class_gpu_devices(class_args.gpus);
  options.force = class_args.force;
  options.keep_work = class_args.keep_work;
  options.regrade = class_args.regrade;
  options.only = !args.names.empty();
  options.visibility = args.visibility;
  options.grade.check_seconds = check_seconds_limit();
  if (args.sanitize) options.grade.sanitizer = sanitizer::find_sanitizer(build_config::kNvcc);
  options.grade.memcheck_program = sanitizer::find_sanitizer(build_config::kNvcc);
  options.grade.shared_processes = !args.process_per_check;
  options.tool_version = build_config::kVersion;
  options.log = [](const std::string& line) { std::cerr << "cdplab: " << line << "\n"; };
  return options;
}

bool gradebook_options_given(const ClassArgs& class_args) {
  return !class_args.roster.empty() || !class_args.due.empty() || class_args.late_penalty || class_args.late_limit ||
         !class_args.assignment.empty();
}

/// Keeps the gradebook options given (the roster, the due date, the late policy) in the results
/// folder, beside what earlier runs kept (batch/class_policy.h). Each is checked first: a roster
/// that cannot be read or a date that is not one stops grade before anything is built.
void keep_class_policy(const fs::path& out_dir, const ClassArgs& class_args) {
  if (!gradebook_options_given(class_args)) return;
  batch::ClassPolicy policy;
  try {
    policy = batch::read_policy(out_dir);
  } catch (const std::exception& error) {
    std::cerr << "cdplab: " << error.what() << "; starting from the defaults\n";
  }
  if (class_args.due == "none") {
    policy.late.due.reset();
  } else if (!class_args.due.empty()) {
    policy.late.due = batch::parse_time(class_args.due, true);
    if (!policy.late.due)
      throw UsageError("--due " + class_args.due + ": not a date; write 2026-12-01 (its end), 2026-12-01T23:59 (local "
                       "time), or with a zone 2026-12-01T22:59Z or 2026-12-01T23:59+01:00");
  }
  if (class_args.late_penalty) policy.late.percent_per_day = *class_args.late_penalty;
  if (class_args.late_limit) {
    if (*class_args.late_limit < 0) policy.late.limit_days.reset();
    else policy.late.limit_days = *class_args.late_limit;
  }
  if (!class_args.assignment.empty()) policy.assignment = class_args.assignment;
  std::string roster_text;
  if (!class_args.roster.empty() && class_args.roster != "none") {
    if (!fs::is_regular_file(class_args.roster)) throw UsageError("--roster " + class_args.roster + ": no such file");
    roster_text = read_text(class_args.roster);
    try {
      const auto roster = batch::read_roster(roster_text);
      std::cerr << "cdplab: roster of " << roster.entries.size() << " students kept in "
                << batch::roster_file(out_dir).string() << "\n";
    } catch (const std::exception& error) {
      throw UsageError("--roster " + class_args.roster + ": " + error.what());
    }
  }
  fs::create_directories(out_dir);
  batch::write_policy(out_dir, policy);
  if (class_args.roster == "none") fs::remove(batch::roster_file(out_dir));
  else if (!class_args.roster.empty()) files::write_whole(batch::roster_file(out_dir), roster_text);
  if (policy.late.due)
    std::cerr << "cdplab: due " << batch::utc_stamp(*policy.late.due) << ", late penalty "
              << report::text::format_points(policy.late.percent_per_day) << " % a day"
              << (policy.late.limit_days ? ", nothing after " + std::to_string(*policy.late.limit_days) + " days" : "")
              << "\n";
}

/// What the local and the Slurm runs print at the end: the summary and where the files are.
void print_class_summary(const std::vector<report::ClassRow>& rows, const fs::path& out_dir) {
  std::cout << report::to_class_summary(rows) << "\ngradebook: " << (out_dir / "gradebook.csv").string();
  if (fs::exists(out_dir / "gradebook-canvas.csv"))
    std::cout << "\nfor Canvas and Moodle: " << (out_dir / "gradebook-canvas.csv").string() << ", "
              << (out_dir / "gradebook-moodle.csv").string();
  std::cout << "\nsummary with each exercise's spread: " << (out_dir / "summary.md").string()
            << "\nfeedback: " << (out_dir / "students").string() << "/<student>/feedback.html\n";
}

/// The exit status of a class: 1 when someone could not be graded (the grader's trouble, logged),
/// 3 when a grade is not final, 0 otherwise (the students' own failures are in their grades).
int class_exit_code(int not_graded, const std::vector<grading::GradeReport>& reports) {
  if (not_graded > 0) return kSomeFailed;
  for (const auto& r : reports)
    if (!r.complete()) return kIncomplete;
  return kAllPassed;
}

/// Whether `file` holds `report`: the result of this run, not one an earlier run left there
/// (a student whose files could not be written has a report but no result).
bool holds_report(const fs::path& file, const grading::GradeReport& report) {
  try {
    return report::to_json(report::from_json(nlohmann::json::parse(read_text(file)))) == report::to_json(report);
  } catch (const std::exception&) {
    return false;  // missing or unreadable
  }
}

/// A whole class: every submission of `dir`, then the gradebook and the summary.
int grade_class(Context& ctx, const fs::path& dir, const GradeArgs& args, const ClassArgs& class_args,
                const std::optional<sandbox::Kit>& box) {
  const auto submissions = class_submissions(dir, class_args.regrade);
  batch::BatchOptions options = class_options(dir, args, class_args);
  options.sandbox = box;
  fs::create_directories(options.out_dir);
  keep_class_policy(options.out_dir, class_args);
  std::cerr << "cdplab: grading " << submissions.size() << " submissions of " << dir.string() << " into "
            << options.out_dir.string() << "\n";
  const auto exercises = select_exercises(ctx.book, args.names);
  const auto results = batch::grade_class(submissions, exercises, ctx.book, ctx.root, ctx.toolchain, options);
  print_class_summary(batch::write_class_reports(options.out_dir, options.log), options.out_dir);
  int not_graded = 0;
  std::vector<grading::GradeReport> reports;
  for (const auto& r : results) {
    if (!r.reused && !holds_report(options.out_dir / "students" / batch::student_folder(r.name) / "result.json", r.report)) ++not_graded;
    reports.push_back(r.report);
  }
  return class_exit_code(not_graded, reports);
}

// ---- Slurm: a job array with one task per submission, then a merge job ----------------------

namespace slurm = batch::slurm;

/// One array task: grades submission `index` of OUT/slurm/submissions.txt, then marks it done.
int grade_slurm_task(Context& ctx, const fs::path& dir, const GradeArgs& args, const ClassArgs& class_args,
                     std::size_t index) {
  batch::BatchOptions options = class_options(dir, args, class_args);
  options.parallel = 1;
  options.gpus = 1;  // the GPU Slurm gave the task (CUDA_VISIBLE_DEVICES is Slurm's to set)
  const slurm::Layout layout(options.out_dir);
  if (!fs::exists(layout.listing))
    throw UsageError("no " + layout.listing.string() + ": --slurm-task runs in a job that cdplab grade --slurm submitted");
  const auto listed = slurm::read_listing(read_text(layout.listing));
  if (index >= listed.size())
    throw UsageError("task " + std::to_string(index) + " has no submission: " + layout.listing.string() + " lists " +
                     std::to_string(listed.size()));
  const batch::Submission& submission = listed[index];
  std::cerr << "cdplab: task " << index << ": grading " << submission.name << " (" << submission.source.string()
            << ")\n";
  const auto exercises = select_exercises(ctx.book, args.names);
  options.sandbox = grading_sandbox(ctx, args, exercises);  // before anything is built
  use_grading_kit(ctx, false, options.sandbox.has_value());
  const auto results = batch::grade_class({submission}, exercises, ctx.book, ctx.root, ctx.toolchain, options);
  const auto& report = results.front().report;
  if (!results.front().reused && !holds_report(options.out_dir / "students" / batch::student_folder(submission.name) / "result.json", report))
    return kSomeFailed;  // its files could not be written (logged by grade_class): no done marker
  std::string summary = results.front().reused ? "graded before (kept)" : "graded";
  summary += " " + report::text::format_score(report.points(), report.max_points());
  if (!report.complete()) summary += ", incomplete";
  slurm::mark_done(layout, index, summary);
  std::cerr << "cdplab: task " << index << ": " << submission.name << ": " << summary << "\n";
  return kAllPassed;  // the grade itself is in the results; the task did its work
}

/// The merge job: the gradebook and the summary from every result written so far.
int merge_slurm_results(const fs::path& dir, const GradeArgs& args, const ClassArgs& class_args) {
  const batch::BatchOptions options = class_options(dir, args, class_args);
  print_class_summary(batch::write_class_reports(options.out_dir, options.log), options.out_dir);
  return kAllPassed;
}

/// Prints a line per task that has finished since the last call, and the jobs still queued
/// when that changes (at most every few seconds).
class SlurmProgress {
 public:
  SlurmProgress(const slurm::Layout& layout, const std::vector<batch::Submission>& submissions,
                std::vector<std::size_t> tasks)
      : layout_(layout), submissions_(submissions), waiting_(std::move(tasks)) {}

  void operator()(const std::vector<std::string>& queued) {
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (const auto summary = slurm::done_summary(layout_, *it)) {
        std::cerr << "cdplab: " << submissions_[*it].name << ": " << *summary << " (task " << *it << ")\n";
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (!queued.empty() && queued != last_queued_ && now - last_print_ > std::chrono::seconds(5)) {
      std::string jobs;
      for (const auto& job : queued) jobs += " " + job;
      std::cerr << "cdplab: in the queue:" << jobs << "\n";
      last_queued_ = queued;
      last_print_ = now;
    }
  }

 private:
  const slurm::Layout& layout_;
  const std::vector<batch::Submission>& submissions_;
  std::vector<std::size_t> waiting_;
  std::vector<std::string> last_queued_;
  std::chrono::steady_clock::time_point last_print_{};
};

/// `cdplab grade CLASS --slurm`: writes the scripts, submits them, and (unless --no-wait) waits
/// for the jobs and prints the class summary.
int submit_class_to_slurm(Context& ctx, const fs::path& dir, const GradeArgs& args, const ClassArgs& class_args,
                          const slurm::Request& request) {
  const auto submissions = class_submissions(dir, class_args.regrade);
  const batch::BatchOptions options = class_options(dir, args, class_args);
  const auto exercises = select_exercises(ctx.book, args.names);  // unknown names fail here, not in every task
  slurm::check_resources(request.resources);
  fs::create_directories(options.out_dir);
  keep_class_policy(options.out_dir, class_args);
  const slurm::Layout layout(options.out_dir);

  const auto tasks = slurm::tasks_to_grade(submissions, options.out_dir, options.force, options.only, options.regrade,
                                           exercises);
  if (tasks.empty()) {
    std::cerr << "cdplab: every submission of " << dir.string() << " was graded before; nothing to submit "
              << "(--force grades everyone again, --regrade NAME one student)\n";
    print_class_summary(batch::write_class_reports(options.out_dir, options.log), options.out_dir);
    return kAllPassed;
  }

  slurm::Command command;
  command.cdplab = slurm::this_executable();
  command.class_dir = dir;
  command.out_dir = options.out_dir;
  command.only = args.names;
  command.sanitize = args.sanitize;
  command.process_per_check = args.process_per_check;
  command.no_sandbox = args.no_sandbox;
  command.force = options.force;
  command.keep_work = options.keep_work;
  command.visibility = options.visibility;
  command.regrade = options.regrade;
  command.build_jobs = ctx.toolchain.jobs;
  const slurm::Tools tools;
  const auto submitted = slurm::write_and_submit(submissions, tasks, command, request.resources, tools);

  std::cerr << "cdplab: job " << submitted.array_id << " grades " << tasks.size() << " of " << submissions.size()
            << " submissions of " << dir.string() << " (one array task each); job " << submitted.merge_id
            << " writes the gradebook once they have ended\n";
  for (const auto& file : submitted.files) std::cerr << "cdplab: wrote " << file.string() << "\n";
  const std::string follow = "squeue --jobs=" + submitted.array_id + "," + submitted.merge_id;
  if (!request.wait) {
    std::cout << "submitted: job array " << submitted.array_id << ", merge job " << submitted.merge_id
              << "\nfollow them: " << follow << "\nlogs: " << layout.logs.string()
              << "\ngradebook, once the merge job has run: " << (options.out_dir / "gradebook.csv").string() << "\n";
    return kAllPassed;
  }

  SlurmProgress progress(layout, submissions, tasks);
  const bool ended = slurm::wait_for_jobs(tools, {submitted.array_id, submitted.merge_id}, request.timeout_seconds,
                                          request.poll_seconds, std::ref(progress));
  if (!ended) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", request.timeout_seconds);
    throw UsageError(std::string("the Slurm jobs are still queued or running after ") + seconds +
                     " s (--slurm-timeout); they go on without cdplab: follow them with `" + follow +
                     "`; each student's results appear in " + (options.out_dir / "students").string() +
                     " and the merge job writes the gradebook");
  }

  // The merge job wrote them already; writing them here again costs little and covers a
  // merge job that could not run.
  const auto rows = batch::write_class_reports(options.out_dir, options.log);
  std::vector<std::string> failed;
  for (const std::size_t task : tasks) {
    const auto& name = submissions[task].name;
    if (!slurm::done_summary(layout, task) || !fs::exists(options.out_dir / "students" / batch::student_folder(name) / "result.json"))
      failed.push_back(name + " (task " + std::to_string(task) + "): its log is " + layout.task_log(task).string());
  }
  print_class_summary(rows, options.out_dir);
  if (!failed.empty()) {
    std::cout << "\nnot graded: these tasks ended without a result:\n";
    for (const auto& line : failed) std::cout << "- " << line << "\n";
    std::cout << "grade them again with the same command (finished students are kept)\n";
  }
  std::vector<grading::GradeReport> reports;
  for (const auto& row : rows)
    for (const auto& s : submissions)
      if (s.name == row.student) reports.push_back(row.report);
  return class_exit_code(static_cast<int>(failed.size()), reports);
}

}  // namespace

int run_grade(Context& ctx, const std::string& folder, const GradeArgs& args, const ClassArgs& class_args) {
  const fs::path dir = class_folder(folder);
  const bool one_submission = batch::is_submission_folder(dir, ctx.book);
  if (one_submission && gradebook_options_given(class_args))
    throw UsageError("--roster, --due, --late-penalty, --late-limit and --assignment write a class's gradebook; " +
                     dir.string() + " is one submission");
  const auto exercises = select_exercises(ctx.book, args.names);  // a wrong name stops here, before any build
  const auto box = grading_sandbox(ctx, args, exercises);         // and a box that cannot start
  use_grading_kit(ctx, args.quiet, box.has_value());
  if (!one_submission) return grade_class(ctx, dir, args, class_args, box);

  fs::path build_dir = args.build_dir;
  if (build_dir.empty()) {
    std::string name = dir.filename().string();
    if (name.empty()) name = "submission";
    build_dir = ctx.root / "build" / "grade" / (name + "-" + fingerprint(dir.string()).substr(0, 8));
  }
  auto report = grade_submission(ctx, dir, build_dir, exercises, args, box, options_for(args, grading::fresh_seed()));
  emit(report, args, ctx);
  return exit_code_for(report);
}

grading::GradeReport grade_submission(Context& ctx, const fs::path& dir, const fs::path& build_dir_given,
                                      const std::vector<const manifest::Exercise*>& exercises, const GradeArgs& args,
                                      const std::optional<sandbox::Kit>& box, grading::GradeOptions options) {
  fs::path build_dir = fs::absolute(build_dir_given).lexically_normal();  // the box shows it at this path
  if (!build_dir.has_filename()) build_dir = build_dir.parent_path();    // "out/": its lock beside it, not in it
  // A fresh tree every time: grading must not configure or read a tree that a submission's programs
  // have written to before (a regrade, a reproduction with --seed).
  std::error_code ignored;
  // Two gradings of one submission at once (the same folder, the same tree) would each remove the
  // other's build: the second waits.
  fs::create_directories(build_dir.parent_path(), ignored);
  const files::HeldLock grading_here =
      wait_for_lock(build_dir.string() + ".lock",
                    args.quiet ? "" : "another grading uses " + build_dir.string() + "; this one waits for it",
                    "stopped while waiting for the other grading of " + build_dir.string());
  fs::remove_all(build_dir, ignored);
  grading::BuildTree tree(ctx.root, build_dir, ctx.toolchain);
  if (!args.quiet) std::cerr << "cdplab: grading " << dir.string() << " (build tree " << build_dir.string() << ")\n";
  const auto configured =
      tree.configure(dir, {"-DCDPLAB_BUILD_TOOLS=OFF", "-DCDPLAB_BUILD_TESTS=OFF", "-DCDPLAB_BUILD_DOCS=OFF"});
  if (!configured.ok()) throw UsageError("configuring a build for " + dir.string() + " failed:\n" + configured.output);

  // Configured outside (CMake reads no file of the student's); built and run inside.
  tree.set_budgeted(true);
  if (box) {
    tree.set_sandbox(sandbox::submission_box(*box, ctx.toolchain, dir, build_dir));
    tree.set_check_boxes(sandbox::check_box(*box, ctx.toolchain), sandbox::host_parts_box(ctx.toolchain, build_dir));
  }
  auto report = grading::grade_all(exercises, tree, options, dir.string());
  report.tool_version = build_config::kVersion;
  return report;
}

int run_grade_slurm(Context& ctx, const std::string& folder, const GradeArgs& args, const ClassArgs& class_args,
                    const batch::slurm::Request& request) {
  const fs::path dir = class_folder(folder);
  if (batch::is_submission_folder(dir, ctx.book))
    throw UsageError(dir.string() + " is one submission (it holds a chapter folder); Slurm grades a class, a folder "
                     "of submissions: grade this one without --slurm");
  try {
    switch (request.mode) {
      case slurm::Mode::task: return grade_slurm_task(ctx, dir, args, class_args, request.task);
      case slurm::Mode::merge: return merge_slurm_results(dir, args, class_args);
      case slurm::Mode::submit: break;
    }
    return submit_class_to_slurm(ctx, dir, args, class_args, request);
  } catch (const slurm::Error& error) {
    throw UsageError(error.what());
  }
}

}  // namespace cdplab::cli
