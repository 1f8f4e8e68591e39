// cdplab: check your CDP exercises, get hints, reset a file, grade a submission, inspect the
// launch graph of any .cu file. `cdplab --help` lists the commands.
#include "commands.h"

#include <CLI/CLI.hpp>

#include <iostream>

int main(int argc, char** argv) {
  using namespace cdplab::cli;
  CLI::App app{"cdplab: the CUDA Dynamic Parallelism workbook and its grader"};
  app.require_subcommand(1);
  int jobs = 0;
  app.add_option("-j,--jobs", jobs, "parallel build jobs (default: the build tool's choice)");

  GradeArgs grade_args;
  const auto add_report_options = [&](CLI::App* sub) {
    sub->add_option("--seed", grade_args.seed, "seed of the checks' inputs");
    sub->add_option("--format", grade_args.format, "terminal, json, gradescope or junit")
        ->check(CLI::IsMember({"terminal", "json", "gradescope", "junit"}));
    sub->add_option("-o,--output", grade_args.output, "write the report to this file");
    sub->add_flag("-q,--quiet", grade_args.quiet, "no progress lines");
  };

  auto* list = app.add_subcommand("list", "chapters and exercises, their status, and what to do next");

  auto* check = app.add_subcommand("check", "build and test your own work (all of it, a chapter, or an exercise)");
  check->add_option("names", grade_args.names, "chapters (01-fundamentals) or exercises (child-grids)");
  add_report_options(check);

  std::string folder;
  ClassArgs class_args;
  auto* grade = app.add_subcommand(
      "grade", "grade a submission folder laid out like chapters/, or a class: a folder of submission folders and "
               "archives (a fresh seed each time)");
  grade->add_option("folder", folder, "a submission folder, or a folder of submissions")->required();
  grade->add_option("--only", grade_args.names, "grade only these chapters or exercises");
  grade->add_option("--build-dir", grade_args.build_dir, "one submission: the build tree to use (default: build/grade/<name>)");
  add_report_options(grade);
  grade->add_option("--out", class_args.out, "a class: the results folder (default: <folder>-grades)");
  grade->add_option("--parallel", class_args.parallel, "a class: submissions built at the same time (default 2)")
      ->check(CLI::Range(1, 256));
  grade->add_option("--gpus", class_args.gpus, "a class: GPUs to run checks on, one submission each (default 1)")
      ->check(CLI::Range(1, 64));
  grade->add_flag("--force", class_args.force, "a class: grade everyone again (default: keep finished results)");
  grade->add_option("--regrade", class_args.regrade, "a class: grade these students again");

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

  bool write = false;
  auto* starters = app.add_subcommand("starters", "check (or --write) the starters in chapters/ against solutions/");
  starters->add_flag("--write", write, "regenerate the starters that differ");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : kUsageError;
  }

  try {
    Context ctx = make_context(jobs);
    if (*list) return run_list(ctx);
    if (*check) return run_check(ctx, grade_args);
    if (*grade) return run_grade(ctx, folder, grade_args, class_args);
    if (*hint) return run_hint(ctx, name, all_hints);
    if (*reset) return run_reset(ctx, name);
    if (*rules) return run_rules(ctx, file, dot, rules_exercise);
    if (*run) return run_program(ctx, "drivers", name, program_args);
    if (*bench) return run_program(ctx, "benches", name, program_args);
    if (*starters) return run_starters(ctx, write);
    if (*probe) {
      if (!probe_timeout.empty()) program_args = {"--timeout", probe_timeout};
      return run_probe(ctx, program_args);
    }
  } catch (const UsageError& error) {
    std::cerr << "cdplab: " << error.what() << "\n";
    return kUsageError;
  } catch (const std::exception& error) {
    std::cerr << "cdplab: " << error.what() << "\n";
    return kUsageError;
  }
  return kUsageError;
}
