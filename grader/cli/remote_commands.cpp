// A student without a GPU gets the GPU's verdict: `cdplab check` sends the work to the course's
// GPUs (remote/), a Slurm job of the student's own or the course's GPU server over SSH, and shows
// the report it gets back as a local one. Also the two ends of that: `cdplab remote-check` (what
// runs beside the GPU) and `cdplab serve` (the forced command of a student's key), and the
// Gradescope autograder that reaches the same server.
#include "build_config.h"
#include "commands.h"
#include "progress.h"

#include "batch/archive.h"
#include "batch/slurm.h"
#include "files/files.h"
#include "process/process.h"
#include "remote/gradescope_bundle.h"
#include "remote/local_gpu.h"
#include "remote/protocol.h"
#include "remote/serve.h"
#include "remote/slurm_check.h"
#include "remote/ssh_client.h"
#include "report/report.h"
#include "sandbox/sandbox.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>

namespace cdplab::cli {
namespace {

namespace fs = std::filesystem;

remote::Course course_of(const Context& ctx) {
  try {
    return remote::read_course(ctx.root / "course.toml");
  } catch (const remote::ConfigError& error) {
    throw UsageError(error.what());
  }
}

/// A folder of its own for one remote check, below the student's build tree.
fs::path fresh_job_folder(const Context& ctx) {
  const fs::path dir = ctx.own_build / "remote" / (local_timestamp() + "-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

/// The ids of the exercises checked, in the order given: what the remote is asked to grade.
std::vector<std::string> exercise_ids(const std::vector<const manifest::Exercise*>& exercises) {
  std::vector<std::string> ids;
  for (const auto* e : exercises) ids.push_back(e->id);
  return ids;
}

/// This machine's name, as the report's "ran on" says it.
std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "the GPU server";
  return name;
}

extern "C" void on_worker_stop(int /*signal*/) { process::cancel_all(); }

/// The project as an autograder with a GPU of its own builds and grades it: everything but build
/// trees, the project's own tests, version control and backups.
std::vector<batch::PackedFile> project_files(const fs::path& root) {
  const char* const kParts[] = {"CMakeLists.txt", "CMakePresets.json", "README.md", "cdplab", "course.toml", "cmake",
                                "chapters",       "docs",              "starter",   "grader", "solutions"};
  const auto left_out = [&](const fs::path& path) {
    const fs::path relative = fs::relative(path, root);
    if (relative.generic_string().rfind("grader/tests", 0) == 0) return true;
    for (const auto& part : relative)
      if (part == "build" || part == ".git" || part.string().find(".backup-") != std::string::npos) return true;
    return false;
  };
  std::vector<batch::PackedFile> files;
  const auto add = [&](const fs::path& file) {
    const bool executable = (fs::status(file).permissions() & fs::perms::owner_exec) != fs::perms::none;
    files.push_back({fs::relative(file, root).generic_string(), read_text(file), executable});
  };
  for (const char* part : kParts) {
    const fs::path path = root / part;
    if (fs::is_regular_file(path)) add(path);
    if (!fs::is_directory(path)) continue;
    for (auto it = fs::recursive_directory_iterator(path); it != fs::recursive_directory_iterator(); ++it) {
      if (left_out(it->path())) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file()) add(it->path());
    }
  }
  return files;
}

}  // namespace

std::optional<remote::Remote> remote_for_check(const Context& ctx, const std::vector<const manifest::Exercise*>& exercises,
                                               const GradeArgs& args) {
  if (args.local) return std::nullopt;
  const remote::Course course = course_of(ctx);
  remote::Remote chosen;
  try {
    chosen = remote::choose_remote(course, args.remote, std::getenv("CDPLAB_REMOTE"));
  } catch (const remote::ConfigError& error) {
    throw UsageError(error.what());
  }
  if (chosen.kind == remote::Kind::none) return std::nullopt;
  if (std::none_of(exercises.begin(), exercises.end(), [](const auto* e) { return !e->checks.empty(); }))
    return std::nullopt;  // rules and quizzes only: nothing needs a GPU
  if (args.remote.empty()) {
    const std::string problem = remote::local_gpu_problem(batch::slurm::this_executable().string());
    if (problem.empty()) return std::nullopt;  // a GPU here: the check stays here
    std::cerr << "cdplab: no usable GPU here (" << problem << "); checking on " << remote::describe(chosen)
              << " (--local keeps it here)\n";
  } else {
    std::cerr << "cdplab: checking on " << remote::describe(chosen) << "\n";
  }
  return chosen;
}

grading::GradeReport check_remotely(Context& ctx, const remote::Remote& target, const grading::BuildTree& tree,
                                    const std::vector<const manifest::Exercise*>& exercises, const GradeArgs& args) {
  const std::uint64_t seed = args.seed.value_or(kPracticeSeed);
  const fs::path exercise_dir = tree.exercise_dir();
  const auto progress = [&](const std::string& line) {
    if (!args.quiet) std::cerr << "  " << line << "\n";
  };
  files::RemovedAtEnd job;
  job.dir = fresh_job_folder(ctx);
  grading::GradeReport report;
  try {
    if (target.kind == remote::Kind::ssh) {
      std::vector<batch::PackedFile> files;
      for (const auto* e : exercises) {
        const fs::path file = exercise_dir / e->path();
        if (fs::is_regular_file(file)) files.push_back({e->path(), read_text(file)});
      }
      const fs::path archive = job.dir / "submission.tar";
      batch::pack_archive(files, archive);
      remote::Request request;
      request.seed = seed;
      request.names = exercise_ids(exercises);  // what this check grades, in its order (watch: one exercise)
      remote::SshTarget ssh = target.ssh;
      // Another ssh client, or ssh with options of one's own, as GIT_SSH does it for git.
      if (const char* program = std::getenv("CDPLAB_SSH"); program != nullptr && *program != '\0') ssh.program = program;
      report = remote::check_over_ssh(ssh, request, archive, progress);
    } else {
      remote::SlurmCheck check;
      check.target = target.slurm;
      check.job_dir = job.dir;
      check.cdplab = batch::slurm::this_executable();
      for (const auto* e : exercises) {
        const fs::path file = exercise_dir / e->path();
        fs::create_directories(check.submission() / e->chapter);
        if (fs::is_regular_file(file)) fs::copy_file(file, check.submission() / e->path());
      }
      // The kit is built here, on the login node, once: the job only compiles the exercise files.
      use_grading_kit(ctx, args.quiet);
      check.worker_args = {"--report", check.report().string(), "--build-dir", (job.dir / "tree").string(),
                           "--via", "slurm", "--seed", std::to_string(seed), "--"};
      const auto ids = exercise_ids(exercises);
      check.worker_args.insert(check.worker_args.end(), ids.begin(), ids.end());
      report = remote::check_on_slurm(check, progress);
    }
  } catch (const remote::RemoteError& error) {
    job.keep = target.kind == remote::Kind::slurm;  // its log is named in the message
    throw UsageError(error.what());
  } catch (const batch::slurm::Error& error) {
    throw UsageError(error.what());
  }
  report.source = exercise_dir;  // the report names the student's folder, not the remote's copy
  if (report.device.empty() && report.count(grading::Outcome::skipped) > 0)
    report.notes.push_back(target.kind == remote::Kind::slurm
                               ? "the job's node had no usable GPU: does course.toml ask for one (remote.slurm.gres = "
                                 "\"gpu:1\", or the course's GPU partition)?"
                               : "the server had no usable GPU for this check: tell your instructor");
  return report;
}

std::string no_gpu_advice(const Context& ctx, const grading::GradeReport& report) {
  const int skipped = report.count(grading::Outcome::skipped);
  std::string text = "no GPU here";
  if (!report.gpu_problem.empty()) text += " (" + report.gpu_problem + ")";
  text += ": " + std::to_string(skipped) + " GPU check" + (skipped == 1 ? " was" : "s were") +
          " skipped, so this is not the grade yet; the rules above were checked.\n";
  std::string help;
  try {
    help = remote::read_course(ctx.root / "course.toml").gpu_help;
  } catch (const std::exception&) {
  }
  if (!help.empty()) text += help + "\n";
  text += "To run them on your course's GPUs: `cdplab check --remote slurm` on a Slurm cluster's login node, or "
          "`--remote ssh://you@gpu-server` for a lab server that runs cdplab serve (or CDPLAB_REMOTE, or [remote] in "
          "course.toml; docs/remote-gpu.md).\n";
  return wrapped(text);
}

int run_remote_check(Context& ctx, const std::string& folder, const GradeArgs& args, const RemoteCheckArgs& remote) {
  // Stopped from outside (the server's time limit, scancel): every program it started ends too.
  struct sigaction action {};
  action.sa_handler = on_worker_stop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  if (remote.report.empty() || remote.build_dir.empty()) throw UsageError("remote-check needs --report and --build-dir");
  if (remote.via != "ssh" && remote.via != "slurm") throw UsageError("--via is ssh or slurm");
  const fs::path dir = fs::absolute(folder).lexically_normal();
  if (!fs::is_directory(dir)) throw UsageError("no folder " + dir.string() + " to check");
  const auto exercises = select_exercises(ctx.book, args.names);

  // The box as `grade` has it; a Slurm job of the student's own account may go without one where
  // the node cannot start it (its verdict is the student's own practice, not a grade).
  std::optional<sandbox::Kit> box;
  std::string note;
  const auto& box_probe = sandbox::probe(sandbox::bwrap_program());  // asked once per process
  if (remote.via == "slurm" && !args.no_sandbox && !box_probe.ok) {
    note = "graded without the sandbox: " + box_probe.problem + " on " + host_name();
  } else {
    box = grading_sandbox(ctx, args, exercises);
  }
  // The student sees each exercise's progress lines, nothing of this machine's folders.
  GradeArgs quiet = args;
  quiet.quiet = true;
  use_grading_kit(ctx, true, box.has_value());

  grading::GradeOptions options = options_for(args, kPracticeSeed);
  if (remote.fresh_seed) options.seed = grading::fresh_seed();
  grading::GpuTurns turns;
  if (!remote.gpu_turns.empty()) {
    turns.set_lock_file(remote.gpu_turns);
    options.gpu_turns = &turns;
  }
  auto report = grade_submission(ctx, dir, remote.build_dir, exercises, quiet, box, options);
  if (process::cancelled()) return kUsageError;  // stopped: no report is the answer
  const char* job = std::getenv("SLURM_JOB_ID");
  report.ran_on = remote.via == "slurm" ? "Slurm job " + std::string(job ? job : "?") + " on " + host_name()
                                        : host_name() + ", over SSH";
  if (!note.empty()) report.notes.push_back(note);

  // Whole or not at all: the client reads it once it is there.
  files::write_whole(fs::absolute(remote.report),
                     report::to_json(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  std::error_code ignored;
  fs::remove_all(remote.build_dir, ignored);
  return kAllPassed;
}

int run_serve(Context& ctx, const ServeArgs& args) {
  remote::ServeOptions options;
  options.student = args.student;
  options.fresh_seeds = args.fresh_seeds;
  options.cdplab = batch::slurm::this_executable();
  try {
    options.settings = remote::read_course(ctx.root / "course.toml").serve;
  } catch (const remote::ConfigError& error) {
    std::cerr << "cdplab serve: " << error.what() << "\n";
    return remote::kMisconfigured;
  }
  remote::ServeSettings& s = options.settings;
  if (!args.work.empty()) s.work = args.work;
  if (s.work.empty()) s.work = ctx.root / "build" / "serve";
  if (s.work.is_relative()) s.work = ctx.root / s.work;  // not sshd's working folder
  s.work = s.work.lexically_normal();
  if (args.time_limit) s.time_limit_seconds = *args.time_limit;
  if (args.per_student) s.per_student = *args.per_student;
  if (args.queue_per_student) s.queue_per_student = *args.queue_per_student;
  if (args.gpus) s.gpus = *args.gpus;
  if (args.share_gpu) s.share_gpu = *args.share_gpu;
  return remote::serve(options, ctx.book, std::getenv("SSH_ORIGINAL_COMMAND"), STDIN_FILENO, STDOUT_FILENO,
                       STDERR_FILENO);
}

int run_gradescope_bundle(Context& ctx, const BundleArgs& args) {
  const remote::Course course = course_of(ctx);
  remote::Remote server;
  try {
    server = args.remote.empty() ? course.remote : remote::parse_remote_spec(args.remote, course, "--remote");
  } catch (const remote::ConfigError& error) {
    throw UsageError(error.what());
  }
  if (server.kind != remote::Kind::ssh || server.ssh.host.empty())
    throw UsageError("the autograder sends each submission to the course's GPU server over SSH: name it with --remote "
                     "ssh://user@host[:port], or [remote.ssh] in course.toml");
  remote::BundleSettings settings;
  settings.ssh = server.ssh;
  settings.visibility = args.visibility;
  for (const auto* e : select_exercises(ctx.book, args.only)) {
    settings.exercises.push_back({e->chapter, e->file});
    if (!args.only.empty()) settings.names.push_back(e->id);
  }
  if (args.key.empty() || !fs::is_regular_file(args.key))
    throw UsageError("--key names the grading key's private half (made with ssh-keygen; its public half goes into the "
                     "server's authorized_keys: docs/remote-gpu.md)");
  settings.private_key = read_text(args.key);
  if (!args.known_hosts.empty()) {
    if (!fs::is_regular_file(args.known_hosts)) throw UsageError("no file " + args.known_hosts + " (--known-hosts)");
    settings.known_hosts = read_text(args.known_hosts);
  } else {
    settings.known_hosts = remote::scan_host_key(server.ssh);
    if (settings.known_hosts.empty())
      throw UsageError("cannot read " + server.ssh.host + "'s host key (ssh-keyscan found none): give it with "
                       "--known-hosts FILE (a line of ~/.ssh/known_hosts)");
  }
  if (args.with_project) settings.project = project_files(ctx.root);
  const fs::path zip = fs::absolute(args.zip);
  try {
    batch::pack_archive(remote::bundle_files(settings), zip, /*zip=*/true);
  } catch (const std::exception& error) {
    throw UsageError(error.what());
  }
  std::cout << "wrote the Gradescope autograder " << zip.string() << ": it sends each submission to "
            << server.ssh.host << (args.with_project ? " (or grades it with the project it carries, where the autograder has a GPU)" : "")
            << " and writes results.json from the report (docs/remote-gpu.md, \"Gradescope\")\n";
  return kAllPassed;
}

}  // namespace cdplab::cli
