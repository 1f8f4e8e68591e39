// cdplab_mutation_sweep: the mechanical mutation sweep of the reference solutions
// (grader/tests/mutants/README.md, "The mechanical sweep").
//
//   cdplab_mutation_sweep list [--only NAME...] [--ids] [--diff]
//   cdplab_mutation_sweep sweep --out DIR [--only NAME...] [--sample N] [--seconds S] [--no-grade] ...
//   cdplab_mutation_sweep report --out DIR [--only NAME...]
#include "sweep.h"

#include <CLI/CLI.hpp>

#include <iomanip>
#include <iostream>
#include <map>

namespace fs = std::filesystem;
using namespace cdplab::sweep;

namespace {

int list(const fs::path& root, const std::vector<std::string>& only, std::size_t sample, bool ids, bool diff) {
  const auto xs = generate_exercises(root, only);
  std::size_t total = 0, unique = 0, sampled = 0;
  std::map<std::string, std::size_t> per_op;
  std::cout << std::left << std::setw(44) << "exercise" << std::right << std::setw(10) << "mutants" << std::setw(12)
            << "duplicates" << std::setw(10) << "sample" << "\n";
  for (const auto& x : xs) {
    std::size_t duplicates = 0;
    for (const int d : x.duplicate) duplicates += d != -1;
    const std::size_t taken = sample == 0 ? x.mutants.size() - duplicates : std::min(sample, x.mutants.size() - duplicates);
    std::cout << std::left << std::setw(44) << x.key() << std::right << std::setw(10) << x.mutants.size() << std::setw(12)
              << duplicates << std::setw(10) << taken << "\n";
    total += x.mutants.size();
    unique += x.mutants.size() - duplicates;
    sampled += taken;
    for (std::size_t i = 0; i < x.mutants.size(); ++i) {
      const Mutant& m = x.mutants[i];
      ++per_op[m.op];
      if (!ids && !diff) continue;
      std::cout << "  " << m.id() << "  line " << m.line << (x.duplicate[i] != -1 ? "  (duplicate)" : "") << "\n";
      if (diff) {
        const auto [before, after] = changed_lines(x.source, m);
        std::cout << "    - " << before << "\n    + " << after << "\n";
      }
    }
  }
  std::cout << std::left << std::setw(44) << "all" << std::right << std::setw(10) << total << std::setw(12)
            << total - unique << std::setw(10) << sampled << "\n\nper operator:\n";
  for (const auto& op : operators())
    if (per_op.count(op.name)) std::cout << "  " << std::left << std::setw(26) << op.name << std::right << std::setw(5) << per_op[op.name] << "\n";
  std::cout << "\nThe sample column: the mutants a sweep with --sample " << sample
            << " grades at most (those that compile, taken in a fixed operator-stratified order).\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cdplab_mutation_sweep: mutants of every reference solution, generated at every site of every "
               "operator, graded by the class grader (grader/tests/mutants/README.md)"};
  app.require_subcommand(1);
  Settings settings;
  settings.root = CDPLAB_SOURCE_DIR;
  settings.cdplab = CDPLAB_CLI;
  settings.log = &std::cout;
  std::string root = settings.root.string(), out;
  std::vector<std::string> only;
  std::size_t sample = kDefaultSample;
  bool ids = false, diff = false, no_grade = false;

  const auto common = [&](CLI::App* sub) {
    sub->add_option("--root", root, "the project (default: the one this tool was built from)");
    sub->add_option("--only", only, "chapters (01-fundamentals) or exercises (child-grids, 01-fundamentals/child_grids)");
  };
  auto* list_cmd = app.add_subcommand("list", "how many mutants each exercise has (no compiler, no GPU)");
  common(list_cmd);
  list_cmd->add_option("--sample", sample, "mutants per exercise a sweep takes (0: all)");
  list_cmd->add_flag("--ids", ids, "list every mutant's id");
  list_cmd->add_flag("--diff", diff, "list every mutant's id and the line it changes, before and after");

  auto* sweep_cmd = app.add_subcommand(
      "sweep", "compile the mutants to PTX, judge their rules, grade the rest on the GPU exercise by exercise, and "
               "write the report; run it again to go on where it stopped");
  common(sweep_cmd);
  sweep_cmd->add_option("--out", out, "the sweep's folder (kept between runs)")->required();
  sweep_cmd->add_option("--sample", sample,
                        "mutants that compile, per exercise, taken in a fixed operator-stratified order (0: all; default " +
                            std::to_string(kDefaultSample) + ")");
  sweep_cmd->add_option("--seconds", settings.seconds, "stop after this long (0: no limit); the next run goes on");
  sweep_cmd->add_option("--parallel", settings.parallel, "submissions the class grader builds at a time (default 6)");
  sweep_cmd->add_option("--compile-jobs", settings.compile_jobs, "`cdplab rules` at a time (default: the cores, at most 8)");
  sweep_cmd->add_option("-j,--build-jobs", settings.build_jobs, "cdplab -j: parallel build jobs of each submission");
  sweep_cmd->add_option("--cdplab", settings.cdplab, "the cdplab command line (default: the one built beside this tool)");
  sweep_cmd->add_flag("--no-grade", no_grade, "compile and judge the rules only (no GPU needed)");
  sweep_cmd->add_flag("--grade-rule-kills", settings.grade_rule_kills,
                      "grade on the GPU also the mutants a rule already kills (by default they count as killed)");
  sweep_cmd->add_flag("--keep-work", settings.keep_work, "keep the class grader's build trees (grades/<exercise>/work)");

  auto* report_cmd = app.add_subcommand("report", "write the report of what the sweep's folder holds (no compiling, no grading)");
  common(report_cmd);
  report_cmd->add_option("--out", out, "the sweep's folder")->required();

  CLI11_PARSE(app, argc, argv);
  try {
    settings.root = fs::absolute(root);
    settings.only = only;
    settings.sample = sample;
    settings.grade = !no_grade;
    if (!out.empty()) settings.out = fs::absolute(out);
    if (list_cmd->parsed()) return list(settings.root, only, sample, ids, diff);
    if (report_cmd->parsed()) {
      report_sweep(settings);
      return 0;
    }
    const auto sweep = run_sweep(settings);
    // 0: done; 3: not done yet (the budget ran out, or no GPU graded what is left).
    bool pending = sweep.stopped;
    for (const auto& o : sweep.outcomes) pending = pending || !o.complete();
    return pending ? 3 : 0;
  } catch (const std::exception& error) {
    std::cerr << "cdplab_mutation_sweep: " << error.what() << "\n";
    return 2;
  }
}
