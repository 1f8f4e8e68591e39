// `cdplab check` (the student's own work, in this build tree) and `cdplab grade DIR`
// (a submission folder, in a build tree of its own). Both grade with grading::grade_all.
#include "build_config.h"
#include "commands.h"
#include "progress.h"
#include "report/report.h"

#include "batch/batch.h"
#include "grading/grade.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace cdplab::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kPracticeSeed = 20260101;  // the suites' own default (harness.h)

std::string render(const grading::GradeReport& report, const std::string& format, bool color) {
  if (format == "terminal") return report::render_terminal(report, {color, true});
  if (format == "json") return report::to_json(report).dump(2) + "\n";
  if (format == "gradescope") return report::to_gradescope(report).dump(2) + "\n";
  if (format == "junit") return report::to_junit_xml(report);
  throw UsageError("unknown report format '" + format + "' (terminal, json, gradescope, junit)");
}

/// Terminal feedback on stdout, unless another format goes to stdout; that format to --output.
void emit(const grading::GradeReport& report, const GradeArgs& args, const Context& ctx) {
  const std::string text = render(report, args.format, ctx.color && args.output.empty());
  if (args.output.empty()) {
    std::cout << text << std::flush;
    return;
  }
  std::ofstream out(args.output, std::ios::binary);
  if (!out) throw UsageError("cannot write " + args.output);
  out << text;
  std::cout << report::render_terminal(report, {ctx.color, true}) << std::flush;
  std::cerr << "cdplab: " << args.format << " report written to " << args.output << "\n";
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

grading::GradeOptions options_for(const GradeArgs& args, std::uint64_t default_seed) {
  grading::GradeOptions options;
  options.seed = args.seed.value_or(default_seed);
  options.check_seconds = build_config::kCheckSeconds;
  if (!args.quiet) options.progress = print_progress;
  return options;
}

}  // namespace

int run_check(Context& ctx, const GradeArgs& args) {
  const auto exercises = select_exercises(ctx.book, args.names);
  grading::BuildTree tree(ctx.root, ctx.own_build, ctx.toolchain);
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
  if (!args.quiet) std::cerr << "cdplab: checking " << tree.exercise_dir() << "\n";
  auto report = grading::grade_all(exercises, tree, options_for(args, kPracticeSeed), tree.exercise_dir());
  report.tool_version = build_config::kVersion;

  Progress progress(ctx.own_build);
  for (std::size_t i = 0; i < exercises.size(); ++i)
    progress.record(report.exercises[i], read_text(fs::path(tree.exercise_dir()) / exercises[i]->path()));
  progress.save();

  emit(report, args, ctx);
  if (args.format == "terminal" && args.output.empty()) {
    for (std::size_t i = 0; i < exercises.size(); ++i) {
      const auto& e = report.exercises[i];
      bool failed = !e.problem.empty();
      for (const auto& item : e.items) failed = failed || item.outcome == grading::Outcome::failed;
      if (!failed) continue;
      std::cout << "\nnext: fix " << exercises[i]->path() << ", then run `cdplab check " << exercises[i]->id
                << "` again (a hint: `cdplab hint " << exercises[i]->id << "`)\n";
      break;
    }
  }
  return exit_code_for(report);
}

namespace {

/// A whole class: every submission of `dir`, then the gradebook and the summary.
int grade_class(Context& ctx, const fs::path& dir, const GradeArgs& args, const ClassArgs& class_args) {
  const auto submissions = batch::find_submissions(dir);
  if (submissions.empty()) {
    throw UsageError(dir.string() + " holds neither a chapter folder (one submission, laid out like chapters/, e.g. " +
                     (dir / "01-fundamentals" / "child_grids.cu").string() +
                     ") nor submissions (folders or .zip/.tar.gz archives, one per student)");
  }
  if (args.format != "terminal" || !args.output.empty() || !args.build_dir.empty() || args.seed)
    throw UsageError("--format, --output, --build-dir and --seed grade one submission; a class gets every format "
                     "in its results folder (--out), each run with fresh seeds");
  batch::BatchOptions options;
  options.out_dir = class_args.out.empty() ? fs::path(dir.string() + "-grades") : fs::absolute(class_args.out);
  options.parallel = class_args.parallel;
  options.gpus = class_args.gpus;
  options.force = class_args.force;
  options.regrade = class_args.regrade;
  options.grade.check_seconds = build_config::kCheckSeconds;
  options.tool_version = build_config::kVersion;
  options.log = [](const std::string& line) { std::cerr << "cdplab: " << line << "\n"; };
  fs::create_directories(options.out_dir);
  std::cerr << "cdplab: grading " << submissions.size() << " submissions of " << dir.string() << " into "
            << options.out_dir.string() << "\n";
  const auto exercises = select_exercises(ctx.book, args.names);
  const auto results = batch::grade_class(submissions, exercises, ctx.book, ctx.root, ctx.toolchain, options);
  const auto rows = batch::write_class_reports(options.out_dir, options.log);
  std::cout << report::to_class_summary(rows) << "\ngradebook: " << (options.out_dir / "gradebook.csv").string()
            << "\nfeedback: " << (options.out_dir / "students").string() << "/<student>/feedback.html\n";
  int graded = 0;
  for (const auto& r : results) graded += r.report.exercises.empty() ? 0 : 1;
  if (graded < static_cast<int>(submissions.size())) return kSomeFailed;  // the grader's own trouble, logged
  for (const auto& r : results)
    if (!r.report.complete()) return kIncomplete;
  return kAllPassed;
}

}  // namespace

int run_grade(Context& ctx, const std::string& folder, const GradeArgs& args, const ClassArgs& class_args) {
  const fs::path dir = fs::absolute(folder).lexically_normal();
  if (!fs::is_directory(dir)) throw UsageError("no folder " + dir.string() + " to grade");
  if (!batch::is_submission_folder(dir, ctx.book)) return grade_class(ctx, dir, args, class_args);
  const auto exercises = select_exercises(ctx.book, args.names);

  fs::path build_dir = args.build_dir;
  if (build_dir.empty()) {
    std::string name = dir.filename().string();
    if (name.empty()) name = "submission";
    build_dir = ctx.root / "build" / "grade" / (name + "-" + fingerprint(dir.string()).substr(0, 8));
  }
  grading::BuildTree tree(ctx.root, build_dir, ctx.toolchain);
  if (!args.quiet) std::cerr << "cdplab: grading " << dir.string() << " (build tree " << build_dir.string() << ")\n";
  const auto configured =
      tree.configure(dir, {"-DCDPLAB_BUILD_TOOLS=OFF", "-DCDPLAB_BUILD_TESTS=OFF", "-DCDPLAB_BUILD_DOCS=OFF"});
  if (!configured.ok()) throw UsageError("configuring a build for " + dir.string() + " failed:\n" + configured.output);

  auto report = grading::grade_all(exercises, tree, options_for(args, grading::fresh_seed()), dir.string());
  report.tool_version = build_config::kVersion;
  emit(report, args, ctx);
  return exit_code_for(report);
}

}  // namespace cdplab::cli
