// `cdplab rules FILE.cu`: compiles one file to PTX with the build's own nvcc and prints its
// launch graph (or DOT), and the verdicts of its exercise's rules when it is an exercise file.
#include "build_config.h"
#include "commands.h"

#include "grading/launch_edges.h"
#include "process/process.h"
#include "rules/launch_graph.h"
#include "rules/rule.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>

namespace cdplab::cli {
namespace {

namespace fs = std::filesystem;

/// The exercise a file is, by its chapter folder and name ("…/01-fundamentals/child_grids.cu").
const manifest::Exercise* exercise_of(const manifest::Workbook& book, const fs::path& file) {
  const std::string chapter = file.parent_path().filename().string();
  return book.find_exercise(chapter + "/" + file.stem().string());
}

}  // namespace

int run_rules(Context& ctx, const std::string& file, bool dot, const std::string& exercise_name) {
  const fs::path source = fs::absolute(file);
  const fs::path ptx = fs::temp_directory_path() / ("cdplab-rules-" + std::to_string(getpid()) + ".ptx");
  std::vector<std::string> argv = {build_config::kNvcc, "-ptx", "-rdc=true", "-std=c++17", "-lineinfo",
                                   "-arch=compute_" + build_config::kPtxArchitecture,
                                   "-I" + (ctx.root / "starter" / "include").string()};
  // Grader-side kernels an exercise may call live beside its suite.
  const fs::path support = ctx.root / "grader" / "suites" / source.parent_path().filename() / "support";
  if (fs::is_directory(support)) argv.push_back("-I" + support.string());
  argv.insert(argv.end(), {"-o", ptx.string(), source.string()});
  process::Options options;
  options.timeout_seconds = 300;
  const auto compiled = process::run(argv, options);
  if (!compiled.ok()) {
    std::cerr << compiled.output << "cdplab: " << file << " does not compile to PTX (" << compiled.describe() << ")\n";
    fs::remove(ptx);
    return kSomeFailed;
  }
  const std::string text = read_text(ptx);
  fs::remove(ptx);
  auto graph = rules::analyze_ptx(text);
  graph.attach_source(source.filename().string(), read_text(source));
  if (dot) {
    std::cout << rules::to_dot(graph);
    return kAllPassed;
  }
  std::cout << wrapped(rules::describe(graph), 4);

  const manifest::Exercise* exercise =
      exercise_name.empty() ? exercise_of(ctx.book, source) : &find_exercise(ctx.book, exercise_name);
  if (exercise == nullptr || exercise->rules.empty()) {
    if (exercise == nullptr) std::cout << "\n(not an exercise file: no rules to judge; --exercise ID picks some)\n";
    return kAllPassed;
  }
  std::cout << "\nRules of " << exercise->id << ":\n";
  int failed = 0;
  for (const auto& rule : exercise->rules) {
    const auto verdict = rules::evaluate(rule, graph);
    std::cout << wrapped((verdict.passed ? "  [pass] " : "  [FAIL] ") + verdict.expected + "\n", 7);
    if (!verdict.passed) {
      ++failed;
      std::cout << wrapped("         found: " + verdict.found + "\n", 7);
      if (!rule.message.empty()) std::cout << wrapped("         " + rule.message + "\n");
    }
  }
  // Each launch site as the edge it would make on the GPU, judged as the checks judge the edges
  // their runs made (grading/launch_edges.h). Informative: the exit status is the rules'.
  const grading::LessonLaunches lesson(exercise->rules, graph);
  const auto edges = grading::static_launch_edges(graph);
  if (lesson.judges() && !edges.empty()) {
    std::cout << "\nLaunch sites as the checks judge the launches they see:\n";
    for (const auto& edge : edges) {
      const std::string fault = lesson.fault(edge);
      std::cout << wrapped((fault.empty() ? "  [ok] " : "  [against the lesson] ") + edge.caller + " -> " + edge.child +
                               "\n",
                           7);
      if (!fault.empty()) std::cout << wrapped("         " + fault + "\n", 7);
    }
  }
  return failed == 0 ? kAllPassed : kSomeFailed;
}

}  // namespace cdplab::cli
