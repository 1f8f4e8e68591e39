// cdplab: check your CDP exercises, get hints, reset a file, grade a submission, inspect the
// launch graph of any .cu file. `cdplab --help` lists the commands.
#include "commands.h"
#include "help_formatter.h"

#include "process/process.h"
#include "remote/local_gpu.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <memory>

int main(int argc, char** argv) {
  using namespace cdplab::cli;
  // The GPU probe of `check` (remote/local_gpu.h): this program, run again to ask the driver.
  if (argc == 2 && std::string(argv[1]) == cdplab::remote::kGpuProbeArgument) return cdplab::remote::gpu_probe_main();
  // A program of a submission that detaches a process leaves it to cdplab, which ends it.
  cdplab::process::end_left_behind_processes();
  // Named "cdplab", as every message names it: CLI11 would take argv[0], the path of this binary
  // inside the build tree, for --help's usage line.
  CLI::App app{"cdplab: the CUDA Dynamic Parallelism workbook and its grader", "cdplab"};
  app.formatter(std::make_shared<WrappingFormatter>());  // before the commands: they take it from here
  // No command: the student's loop at the first exercise not done (run_next_exercise).
  app.require_subcommand(0, 1);
  int jobs = 0;
  app.add_option("-j,--jobs", jobs, "parallel build jobs (default: the build tool's choice)");

  GradeArgs grade_args;
  const auto add_report_options = [&](CLI::App* sub) {
    sub->add_option("--seed", grade_args.seed, "seed of the checks' inputs");
    sub->add_option("--format", grade_args.format, "terminal, json, gradescope or junit")
        ->check(CLI::IsMember({"terminal", "json", "gradescope", "junit"}));
    sub->add_option("-o,--output", grade_args.output, "write the report to this file");
    sub->add_flag("-q,--quiet", grade_args.quiet, "no progress lines");
    sub->add_flag("-v,--verbose", grade_args.verbose,
                  "list every passed item in the terminal report, with what it measured (default: failures and "
                  "skips in full, passes counted)");
    sub->add_flag("--sanitize", grade_args.sanitize,
                  "run each test suite again under compute-sanitizer (memcheck with leak checking; "
                  "needs a GPU; findings are feedback worth no points)");
    sub->add_option("--launch-trees", grade_args.launch_trees,
                    "write each exercise's launch tree, as its checks ran it on the GPU, into this folder "
                    "(CHAPTER-FILE.svg: the first failed check's, else the one that launched the most)");
    sub->add_option("--timelines", grade_args.timelines,
                    "write each exercise's timeline, when its grids ran as the grader recorded them on the GPU, "
                    "into this folder (CHAPTER-FILE.svg, then CHAPTER-FILE-2.svg ...: one per check that "
                    "judges the order of grids, else the one that ran the most grids)");
    sub->add_flag("--process-per-check", grade_args.process_per_check,
                  "run every check in a process of its own from the start (slower; by default a suite's "
                  "checks share a process, and those that do not pass there run again alone)");
  };

  auto* list = app.add_subcommand("list", "chapters and exercises, their status, and what to do next");

  auto* check = app.add_subcommand("check", "build and test your own work (all of it, a chapter, or an exercise)");
  check->add_option("names", grade_args.names, "chapters (01-fundamentals) or exercises (child-grids)");
  add_report_options(check);
  check->add_flag("--timeline", grade_args.timeline,
                  "draw when each grid of your kernels ran in every check, as the grader recorded it on the GPU "
                  "(otherwise only the checks that judge the order of grids record: docs/reports.md, "
                  "\"Timelines\")");
  // Where the GPU checks run when this machine has none (docs/remote-gpu.md).
  const auto add_remote_options = [&](CLI::App* sub) {
    auto* remote = sub->add_option("--remote", grade_args.remote,
                                   "where the GPU checks run when this machine has no usable GPU: slurm, ssh, "
                                   "ssh://[user@]host[:port] or none (default: CDPLAB_REMOTE, else course.toml)");
    auto* local = sub->add_flag("--local", grade_args.local, "check everything on this machine, whatever the course's remote");
    remote->excludes(local);
  };
  add_remote_options(check);

  std::string watched;
  auto* watch = app.add_subcommand(
      "watch", "check an exercise each time you save its file, then move on to the next one (Ctrl-C leaves)");
  watch->add_option("exercise", watched, "the exercise to start with (default: the first one not done)");
  watch->add_option("--seed", grade_args.seed, "seed of the checks' inputs");
  watch->add_flag("-q,--quiet", grade_args.quiet, "no progress lines");
  add_remote_options(watch);

  std::string folder;
  ClassArgs class_args;
  auto* grade = app.add_subcommand(
      "grade", "grade a submission folder laid out like chapters/, or a class: a folder of submission folders and "
               "archives (a fresh seed each time)");
  grade->add_option("folder", folder, "a submission folder, or a folder of submissions")->required();
  grade->add_option("--only", grade_args.names, "grade only these chapters or exercises");
  grade->add_option("--build-dir", grade_args.build_dir, "one submission: the build tree to use, emptied first (default: build/grade/<name>)");
  add_report_options(grade);
  grade->add_option("--out", class_args.out, "a class: the results folder (default: <folder>-grades)");
  grade->add_option("--parallel", class_args.parallel, "a class: submissions built at the same time (default 2)")
      ->check(CLI::Range(1, 256));
  grade->add_option("--gpus", class_args.gpus, "a class: GPUs to run checks on (default 1)")
      ->check(CLI::Range(1, 64));
  grade->add_option("--share-gpu", class_args.share_gpu,
                    "a class: submissions whose checks share one GPU; speed checks and the suites that time the GPU "
                    "still run alone on it (default 2; 1: one submission per GPU at a time)")
      ->check(CLI::Range(1, 16));
  grade->add_flag("--force", class_args.force, "a class: grade everyone again (default: keep finished results)");
  grade->add_option("--regrade", class_args.regrade, "a class: grade these students again");
  grade->add_option("--gradescope-visibility", grade_args.visibility,
                    "visibility of the Gradescope results: visible (default), hidden, after_due_date, after_published")
      ->check(CLI::IsMember({"visible", "hidden", "after_due_date", "after_published"}));
  const std::string gradebook_group = "Gradebook (a class; docs/grading-a-class.md, \"The gradebook\")";
  grade->add_option("--roster", class_args.roster,
                    "a class: a CSV of the students (columns student, id, name, login, email, section, submitted); "
                    "kept with the results, \"none\" forgets it")
      ->group(gradebook_group);
  grade->add_option("--due", class_args.due,
                    "a class: the due date, e.g. 2026-12-01T23:59 (local time) or 2026-12-01T22:59Z; kept, \"none\" "
                    "forgets it")
      ->group(gradebook_group);
  grade->add_option("--late-penalty", class_args.late_penalty,
                    "a class: percent of the total taken off per day late, a started day counting whole (default 0)")
      ->check(CLI::Range(0.0, 100.0))
      ->group(gradebook_group);
  grade->add_option("--late-limit", class_args.late_limit,
                    "a class: days late after which a submission gets no points (-1: no limit)")
      ->check(CLI::Range(-1, 3650))
      ->group(gradebook_group);
  grade->add_option("--assignment", class_args.assignment,
                    "a class: the assignment's name in the Canvas and Moodle exports (default cdp-lab)")
      ->group(gradebook_group);
  grade->add_flag("--keep-work", class_args.keep_work,
                  "a class: keep every student's build tree in <out>/work (default: only the copy of the "
                  "submission's files is kept once the student is graded)");
  grade->add_flag("--no-sandbox", grade_args.no_sandbox,
                  "build and run the submissions' code without the box (bubblewrap), with this account's rights: "
                  "for a machine given only to grading (docs/grading-a-class.md, \"The sandbox\")");

  // A class on a Slurm cluster: every option below needs --slurm.
  cdplab::batch::slurm::Request slurm;
  bool use_slurm = false;
  bool no_wait = false;
  const std::string slurm_group = "Slurm (a class as a job array; docs/grading-a-class.md)";
  grade->add_flag("--slurm", use_slurm, "a class: grade it on a Slurm cluster, one job array task per submission")
      ->group(slurm_group);
  std::vector<CLI::Option*> slurm_options = {
      grade->add_option("--partition", slurm.resources.partition, "the partition of the jobs"),
      grade->add_option("--gres", slurm.resources.gres, "generic resources of each grading task, e.g. gpu:1"),
      grade->add_option("--time", slurm.resources.time, "time limit of each grading task, e.g. 30:00"),
      grade->add_option("--cpus-per-task", slurm.resources.cpus_per_task, "CPUs of each grading task (its build jobs)")
          ->check(CLI::Range(1, 4096)),
      grade->add_option("--mem", slurm.resources.mem, "memory of each grading task, e.g. 16G"),
      grade->add_option("--account", slurm.resources.account, "the account the jobs are charged to"),
      grade->add_option("--sbatch-arg", slurm.resources.sbatch_args,
                        "one more sbatch option for the jobs, written with =: --sbatch-arg=--qos=normal"),
      grade->add_flag("--no-wait", no_wait, "submit the jobs and return (default: wait, then print the summary)"),
      grade->add_option("--slurm-timeout", slurm.timeout_seconds,
                        "seconds to wait for the jobs before giving up on them (default 3600)")
          ->check(CLI::PositiveNumber),
  };
  for (auto* option : slurm_options) option->group(slurm_group);
  // What the jobs run; not for people (an empty group hides them from --help).
  std::size_t slurm_task = 0;
  bool slurm_merge = false;
  auto* task_option = grade->add_option("--slurm-task", slurm_task, "grade one submission of OUT/slurm")->group("");
  auto* merge_option = grade->add_flag("--slurm-merge", slurm_merge, "write the gradebook of OUT")->group("");
  task_option->excludes(merge_option);
  const auto check_slurm_options = [&] {
    const bool job_part = task_option->count() > 0 || merge_option->count() > 0;
    if (!use_slurm) {
      for (const auto* option : slurm_options)
        if (option->count() > 0) throw UsageError(option->get_name() + " goes with --slurm");
    } else if (job_part) {
      throw UsageError("--slurm submits the jobs; --slurm-task and --slurm-merge are what they run");
    } else if (grade->get_option("--parallel")->count() > 0 || grade->get_option("--gpus")->count() > 0 ||
               grade->get_option("--share-gpu")->count() > 0) {
      throw UsageError("--parallel, --gpus and --share-gpu grade on this machine; with --slurm every submission is a job array "
                       "task of its own (ask for its resources with --gres, --cpus-per-task, ...)");
    }
    slurm.wait = !no_wait;
    if (task_option->count() > 0) slurm.mode = cdplab::batch::slurm::Mode::task;
    if (merge_option->count() > 0) slurm.mode = cdplab::batch::slurm::Mode::merge;
    slurm.task = slurm_task;
    return use_slurm || job_part;
  };

  // The course's GPU server: the one command a student's key runs there (docs/remote-gpu.md).
  ServeArgs serve_args;
  auto* serve = app.add_subcommand("serve", "the course's GPU server: grade one check sent over SSH (the forced command "
                                            "of a student's key in authorized_keys; docs/remote-gpu.md)");
  serve->add_option("--student", serve_args.student, "the student this key belongs to (letters, digits, . _ -)")->required();
  serve->add_flag("--fresh-seeds", serve_args.fresh_seeds, "a fresh seed for every check (a grading key, Gradescope's)");
  serve->add_option("--work", serve_args.work, "the folder of every student's checks (default: course.toml [serve] work, "
                                               "else build/serve)");
  serve->add_option("--time-limit", serve_args.time_limit, "seconds one check may take")->check(CLI::Range(10.0, 86400.0));
  serve->add_option("--per-student", serve_args.per_student, "checks of one student graded at once")
      ->check(CLI::Range(1, 64));
  serve->add_option("--queue-per-student", serve_args.queue_per_student, "checks of one student waiting at once")
      ->check(CLI::Range(1, 100000));
  serve->add_option("--gpus", serve_args.gpus, "GPUs the checks run on")->check(CLI::Range(1, 64));
  serve->add_option("--share-gpu", serve_args.share_gpu, "checks that share one GPU")->check(CLI::Range(1, 16));

  // What serve and a Slurm job run beside the GPU; not for people (hidden from --help).
  std::string remote_folder;
  RemoteCheckArgs remote_check_args;
  auto* remote_check = app.add_subcommand("remote-check", "grade a copy of a student's files as check does (run by serve "
                                                          "and by Slurm jobs)");
  remote_check->group("");
  remote_check->add_option("folder", remote_folder, "a folder laid out like chapters/")->required();
  remote_check->add_option("names", grade_args.names, "chapters or exercises");
  remote_check->add_option("--report", remote_check_args.report, "where the report goes")->required();
  remote_check->add_option("--build-dir", remote_check_args.build_dir, "the fresh build tree")->required();
  remote_check->add_option("--via", remote_check_args.via, "ssh or slurm");
  remote_check->add_option("--seed", grade_args.seed, "the checks' seed");
  remote_check->add_flag("--fresh-seed", remote_check_args.fresh_seed, "a fresh seed");
  remote_check->add_option("--gpu-turns", remote_check_args.gpu_turns, "the GPU's lock file shared with other checks");
  remote_check->add_flag("-q,--quiet", grade_args.quiet, "no progress lines");

  BundleArgs bundle_args;
  auto* gradescope = app.add_subcommand("gradescope", "write a Gradescope autograder that grades on the course's GPU "
                                                      "server (docs/remote-gpu.md)");
  gradescope->add_option("zip", bundle_args.zip, "the autograder to write (.zip)")->required();
  gradescope->add_option("--key", bundle_args.key, "the grading key's private half (its public half goes into the "
                                                   "server's authorized_keys)")->required();
  gradescope->add_option("--known-hosts", bundle_args.known_hosts, "the server's host key (default: read with ssh-keyscan)");
  gradescope->add_option("--remote", bundle_args.remote, "the server, ssh://[user@]host[:port] (default: course.toml)");
  gradescope->add_option("--only", bundle_args.only, "the assignment's chapters or exercises (default: all)");
  gradescope->add_flag("--with-project", bundle_args.with_project,
                       "carry the project: an autograder image with an NVIDIA GPU and the CUDA toolkit grades there");
  gradescope->add_option("--visibility", bundle_args.visibility,
                         "visibility of the results: visible, hidden, after_due_date, after_published")
      ->check(CLI::IsMember({"visible", "hidden", "after_due_date", "after_published"}));

  std::string name;
  bool all_hints = false;
  auto* hint = app.add_subcommand("hint", "the next hint of an exercise");
  hint->add_option("exercise", name, "an exercise id, e.g. child-grids")->required();
  hint->add_flag("--all", all_hints, "every hint at once");

  auto* reset = app.add_subcommand("reset", "restore an exercise's starter (your file is kept as a backup)");
  reset->add_option("exercise", name, "an exercise id")->required();

  std::string file;
  bool dot = false;
  std::string rules_exercise;
  auto* rules = app.add_subcommand("rules", "print the launch graph of a .cu file and its exercise's rule verdicts");
  rules->add_option("file", file, "a .cu file")->required()->check(CLI::ExistingFile);
  rules->add_flag("--dot", dot, "print the launch graph as Graphviz DOT instead");
  rules->add_option("--exercise", rules_exercise, "judge against this exercise's rules (default: from the file name)");

  std::vector<std::string> program_args;
  auto* run = app.add_subcommand("run", "build and run a chapter's demo on your code");
  run->add_option("chapter", name, "a chapter, e.g. 01-fundamentals")->required();
  run->add_option("args", program_args, "arguments for the demo");
  auto* bench = app.add_subcommand("bench", "build and run a chapter's benchmark (prints a table with the device name)");
  bench->add_option("chapter", name, "a chapter, e.g. 02-bezier")->required();
  bench->add_option("args", program_args, "arguments for the benchmark");

  auto* probe = app.add_subcommand("probe", "build and run the CDP probe: the CDP2 limits and launch costs of this GPU");
  std::string probe_timeout;
  probe->add_option("--timeout", probe_timeout, "seconds each measurement may run before it counts as stalled (default 10)")
      ->check(CLI::Range(0.1, 3600.0));

  auto* release = app.add_subcommand(
      "release", "write the student release into a new folder: the workbook without solutions/ and the project's tests");
  release->add_option("folder", folder, "the new folder (outside the project)")->required();

  bool write = false;
  auto* starters = app.add_subcommand("starters", "check (or --write) the starters in chapters/ against solutions/");
  starters->add_flag("--write", write, "regenerate the starters that differ");

  // A student copy offers the student's commands: the instructor's are left out of --help, and
  // refused at once, in one line, rather than building for a minute to fail every check.
  if (is_student_copy()) {
    for (auto* instructors : {grade, release, serve, gradescope}) instructors->group("");
    if (argc > 1 && (std::string(argv[1]) == "grade" || std::string(argv[1]) == "release" ||
                     std::string(argv[1]) == "serve" || std::string(argv[1]) == "gradescope")) {
      std::cerr << "cdplab: '" << argv[1] << "' is an instructor's command, for the project with its solutions/; "
                << "this student copy has none (your own work: cdplab check)\n";
      return kUsageError;
    }
  }

  // A first word that is no command: say so, with the command it is likely a slip of.
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> commands;
    for (const auto* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
    const std::string typed = argv[1];
    if (std::find(commands.begin(), commands.end(), typed) == commands.end()) {
      const std::string nearest = cdplab::cli::nearest_name(typed, commands);
      std::cerr << "cdplab: '" << typed << "' is not a command"
                << (nearest.empty() ? "" : "; did you mean '" + nearest + "'?") << " (cdplab --help lists them)\n";
      return kUsageError;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : kUsageError;
  }

  try {
    const bool on_slurm = *grade && check_slurm_options();
    Context ctx = make_context(jobs);
    if (*list) return run_list(ctx);
    if (*check) return run_check(ctx, grade_args);
    if (*watch) return run_watch(ctx, watched, grade_args);
    if (*remote_check) return run_remote_check(ctx, remote_folder, grade_args, remote_check_args);
    if (*serve) return run_serve(ctx, serve_args);
    if (*gradescope) return run_gradescope_bundle(ctx, bundle_args);
    if (*grade && on_slurm) return run_grade_slurm(ctx, folder, grade_args, class_args, slurm);
    if (*grade) return run_grade(ctx, folder, grade_args, class_args);
    if (*hint) return run_hint(ctx, name, all_hints);
    if (*reset) return run_reset(ctx, name);
    if (*rules) return run_rules(ctx, file, dot, rules_exercise);
    if (*run) return run_program(ctx, "drivers", name, program_args);
    if (*bench) return run_program(ctx, "benches", name, program_args);
    if (*starters) return run_starters(ctx, write);
    if (*release) return run_release(ctx, folder);
    if (*probe) {
      if (!probe_timeout.empty()) program_args = {"--timeout", probe_timeout};
      return run_probe(ctx, program_args);
    }
    return run_next_exercise(ctx, grade_args);
  } catch (const UsageError& error) {
    std::cerr << wrapped("cdplab: " + std::string(error.what()) + "\n", 2);
    return kUsageError;
  } catch (const std::exception& error) {
    std::cerr << wrapped("cdplab: " + std::string(error.what()) + "\n", 2);
    return kUsageError;
  }
  return kUsageError;
}
