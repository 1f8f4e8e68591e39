#include "grading/grade.h"

#include "files/files.h"
#include "grading/shared_process.h"
#include "process/process.h"
#include "quiz/quiz.h"
#include "sandbox/submission.h"
#include "sanitizer/sanitizer.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

namespace cdplab::grading {
namespace {

namespace fs = std::filesystem;

using Phases = std::vector<std::pair<std::string, double>>;  ///< GradeReport::phases

/// Every manifest item of the exercise, failed with the same reason (nothing could be judged).
void fail_all(ExerciseResult& result, const manifest::Exercise& exercise, const std::string& reason,
              bool checks_only = false) {
  if (!checks_only) {
    for (const auto& rule : exercise.rules) {
      Item item;
      item.kind = ItemKind::rule;
      item.name = rules::describe(rule);
      item.max_points = rules::deducts(rule) ? 0 : rule.points;
      item.feedback = reason;
      result.items.push_back(item);
    }
  }
  for (const auto& check : exercise.checks) {
    Item item;
    item.name = check.name;
    item.max_points = check.points;
    item.feedback = reason;
    result.items.push_back(item);
  }
  if (checks_only) return;
  for (const auto& question : exercise.questions) {
    Item item;
    item.kind = ItemKind::question;
    item.name = question.id;
    item.max_points = question.points;
    item.feedback = reason;
    result.items.push_back(item);
  }
}

/// The result of a build that build_all has done already.
process::Result already_built() {
  process::Result result;
  result.started = true;
  result.exit_code = 0;
  return result;
}

std::string last_lines(const std::string& text, int count) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  for (std::size_t i = lines.size() > static_cast<std::size_t>(count) ? lines.size() - count : 0; i < lines.size(); ++i)
    out += lines[i] + "\n";
  return out;
}

/// What the grader reads of an exercise's compiled code: its PTX (the rules), the symbols of its
/// library (what it calls or defines of the grader) and what its compiler opened. Taken right after
/// the code compiles, before any program of the submission has run (building a suite runs it to
/// list its checks), and kept outside the box: a program of the submission can rewrite its build
/// tree, never this.
struct CompiledCode {
  std::string ptx;
  std::string symbols;         ///< `nm -C` of the library, defined and undefined; empty without nm
  std::string opened_problem;  ///< sandbox::opened_outside_problem
};

fs::path compiled_file(const BuildTree& tree, const manifest::Exercise& exercise) {
  return beside_tree(tree, "-compiled") / (exercise.chapter + "." + exercise.stem + ".json");
}

/// Keeps what the grader reads of an exercise's freshly compiled code, before any program of the
/// submission runs: its PTX, its symbols, and what its compiler opened outside the allowed folders
/// (judged from `record`, sandbox::build_tool_dependencies() of the tree).
void take_compiled_code(const BuildTree& tree, const manifest::Exercise& exercise, const IndexEntry& entry,
                        const sandbox::BuildToolRecord& record) {
  process::Options nm_options;
  nm_options.timeout_seconds = 60;
  nm_options.output_limit = std::size_t{64} << 20;
  const auto symbols = entry.library.empty() ? process::Result{} : process::run({"nm", "-C", entry.library}, nm_options);
  const nlohmann::json code{{"ptx", files::read_text(entry.kept_ptx())},
                            {"symbols", symbols.ok() ? symbols.output : ""},
                            {"opened_problem", sandbox::opened_outside_problem(tree, entry, record)}};
  fs::create_directories(compiled_file(tree, exercise).parent_path());
  std::ofstream(compiled_file(tree, exercise), std::ios::binary) << code.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<CompiledCode> compiled_code(const BuildTree& tree, const manifest::Exercise& exercise) {
  std::ifstream in(compiled_file(tree, exercise), std::ios::binary);
  if (!in) return std::nullopt;
  const auto code = nlohmann::json::parse(in, nullptr, false);
  if (!code.is_object()) return std::nullopt;
  return CompiledCode{code.value("ptx", ""), code.value("symbols", ""), code.value("opened_problem", "")};
}

/// Adds the time from one lap() to the next to a named phase of GradeReport::phases: where a
/// grading's time goes (the class log and grading-speed.sh print it).
class PhaseClock {
 public:
  explicit PhaseClock(Phases* phases) : phases_(phases), last_(std::chrono::steady_clock::now()) {}
  /// The time since the last lap, or since the clock started, counts for `phase`.
  void lap(const std::string& phase) {
    const auto now = std::chrono::steady_clock::now();
    if (phases_ != nullptr) {
      const double seconds = std::chrono::duration<double>(now - last_).count();
      const auto it = std::find_if(phases_->begin(), phases_->end(), [&](const auto& p) { return p.first == phase; });
      if (it == phases_->end()) phases_->emplace_back(phase, seconds);
      else it->second += seconds;
    }
    last_ = now;
  }

 private:
  Phases* phases_;
  std::chrono::steady_clock::time_point last_;
};

constexpr const char* kWaitingForTheGpu = "waiting for the GPU";

/// Makes `dir` an empty directory of its own, whatever is there: a program of the submission may
/// have put a link to somewhere else in its place, and nothing is followed through one.
void fresh_directory(const fs::path& dir) {
  std::error_code ignored;
  if (fs::is_symlink(fs::symlink_status(dir, ignored))) fs::remove(dir, ignored);
  fs::remove_all(dir, ignored);
  fs::create_directories(dir);
}

/// The suite's name, which is also its CTest label and the prefix of its tests' names.
std::string suite_label(const manifest::Exercise& exercise) { return exercise.chapter + "/" + exercise.stem; }

fs::path results_file_for(const manifest::Exercise& exercise, const BuildTree& tree) {
  const fs::path dir = tree.dir() / "cdplab-results";
  std::error_code ignored;
  if (fs::is_symlink(fs::symlink_status(dir, ignored))) fs::remove(dir, ignored);  // never followed
  fs::create_directories(dir);
  // The harness writes "{suite}.jsonl" with its suite, "<chapter>/<stem>", spelt with a dot.
  const fs::path file = dir / (exercise.chapter + "." + exercise.stem + ".jsonl");
  fs::remove(file);
  return file;
}

}  // namespace

fs::path beside_tree(const BuildTree& tree, const std::string& suffix) {
  return tree.dir().parent_path() / (tree.dir().filename().string() + suffix);
}

std::uint64_t fresh_seed() {
  std::random_device device;
  const auto now = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  return ((static_cast<std::uint64_t>(device()) << 32) ^ device() ^ now ^ static_cast<std::uint64_t>(getpid())) & 0x7fffffffffffffffull;
}

std::string reference_code_problem(const std::string& source) {
  // The grader's namespaces, and includes that reach into its folders or the solutions.
  static const std::regex reference(R"((\boracle\s*::)|(\bharness\s*::)|(#\s*include\s*[<"][^>"]*(solutions|oracles|grader|harness)[/.][^>"]*[>"]))");
  std::istringstream in(source);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    std::smatch found;
    if (std::regex_search(line, found, reference)) {
      return "line " + std::to_string(number) + " refers to the grader's own code (" + found.str() +
             "); a submission may not use the reference solutions, the oracles or the test harness";
    }
  }
  return "";
}

std::string linked_reference_problem(const std::string& nm_output) {
  std::istringstream in(nm_output);
  for (std::string line; std::getline(in, line);) {
    for (const char* grader_namespace : {"cdplab::oracle::", "cdplab::harness::"}) {
      const auto at = line.find(grader_namespace);
      if (at == std::string::npos) continue;
      return "the compiled exercise calls the grader's own code (" + line.substr(at) +
             "); a submission may not use the reference solutions, the oracles or the test harness";
    }
  }
  return "";
}

std::string explain_build_failure(const std::string& output) {
  std::ostringstream out;
  std::istringstream in(output);
  int kept = 0;
  for (std::string line; std::getline(in, line);) {
    // The build tool echoes long command lines; the compiler's own words are what matter.
    if (line.rfind("FAILED:", 0) == 0 || line.rfind("ninja:", 0) == 0 || line.rfind("[", 0) == 0 ||
        line.find("/nvcc ") != std::string::npos || line.find("/c++ ") != std::string::npos ||
        line.find("/g++ ") != std::string::npos || line.rfind("gmake", 0) == 0 || line.rfind("make", 0) == 0)
      continue;
    if (line.empty() && kept == 0) continue;
    if (++kept > 60) {
      out << "... (more compiler output cut)\n";
      break;
    }
    out << line << "\n";
  }
  std::string text = out.str();
  if (output.find("\"cudaDeviceSynchronize\"") != std::string::npos && output.find("__global__") != std::string::npos) {
    text +=
        "\nadvice: cudaDeviceSynchronize() cannot be called in device code any more (CUDA 12 and later, "
        "CDP2). A parent cannot wait for its children: put the work that needs their results in a kernel "
        "launched into cudaStreamTailLaunch, which runs after the parent grid and all its children.\n";
  }
  if (output.find("undefined reference") != std::string::npos || output.find("nvlink error") != std::string::npos) {
    text += "\nadvice: a function the tests call is missing or has a different signature: keep the "
            "entry points exactly as the chapter header declares them.\n";
  }
  return text;
}

std::vector<CheckEvent> read_check_events(const std::string& path) {
  std::vector<CheckEvent> events;
  // The file lies where the submission's programs write: only a regular file is read (a link to
  // /dev/zero or a FIFO is not), and only so much of it.
  constexpr std::size_t kMostBytes = std::size_t{64} << 20;
  std::error_code error;
  if (!fs::is_regular_file(fs::symlink_status(path, error))) return events;
  std::ifstream in(path);
  std::size_t read = 0;
  for (std::string line; read < kMostBytes && std::getline(in, line);) {
    read += line.size() + 1;
    const auto record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_discarded() || !record.is_object()) continue;
    CheckEvent e;
    e.event = record.value("event", "");
    e.check = record.value("check", "");
    e.status = record.value("status", "");
    e.reason = record.value("reason", "");
    e.device = record.value("device", "");
    e.token = record.value("token", "");
    e.seconds = record.value("seconds", 0.0);
    if (record.contains("failures") && record["failures"].is_array())
      for (const auto& f : record["failures"]) e.failures.push_back(f.is_string() ? f.get<std::string>() : f.dump());
    if (record.contains("notes") && record["notes"].is_array())
      for (const auto& n : record["notes"]) e.notes.push_back(n.is_string() ? n.get<std::string>() : n.dump());
    events.push_back(e);
  }
  return events;
}

std::vector<Item> check_items(const manifest::Exercise& exercise, const std::vector<CheckEvent>& events,
                              const std::string& run_output) {
  std::vector<Item> items;
  for (const auto& check : exercise.checks) {
    Item item;
    item.name = check.name;
    item.max_points = check.points;
    const CheckEvent* start = nullptr;
    const CheckEvent* last = nullptr;  // the final word on this check: end, skipped or stopped
    for (const auto& e : events) {
      if (e.check != check.name) continue;
      if (e.event == "start") {  // a later run of the check (alone, after a shared process) decides it
        start = &e;
        last = nullptr;
      } else {
        last = &e;
      }
    }
    if (last != nullptr && last->event == "end") {
      item.seconds = last->seconds;
      if (last->status == "passed") {
        item.outcome = Outcome::passed;
        item.points = check.points;
        for (const auto& n : last->notes) item.feedback += (item.feedback.empty() ? "" : "\n") + n;
      } else {
        std::string feedback;
        for (const auto& f : last->failures) feedback += (feedback.empty() ? "" : "\n") + f;
        item.feedback = feedback.empty() ? "the check failed without a message" : feedback;
      }
    } else if (last != nullptr && last->event == "skipped") {
      item.outcome = Outcome::skipped;
      item.feedback = last->reason;
    } else if (last != nullptr) {  // stopped: watchdog or crash handler
      item.feedback = last->reason;
    } else if (start != nullptr) {
      item.feedback = "the check started but never finished: the test program was killed (time limit) "
                      "or crashed without a trace";
    } else {
      item.feedback = "the check did not run; the test run said:\n" + last_lines(run_output, 15);
    }
    items.push_back(item);
  }
  return items;
}

std::vector<CheckEvent> judged_events(const manifest::Exercise& exercise, const std::vector<CheckEvent>& judge_events,
                                      const std::vector<CheckEvent>& runner_events) {
  std::vector<CheckEvent> events;
  for (const auto& check : exercise.checks) {
    const CheckEvent* last_judged = nullptr;
    for (const auto& e : judge_events) {
      if (e.check != check.name) continue;
      events.push_back(e);
      last_judged = &e;
    }
    if (last_judged == nullptr || last_judged->event != "unobserved") continue;
    // The student's process's last word on the check, after its last start.
    const CheckEvent* said = nullptr;
    for (const auto& e : runner_events)
      if (e.check == check.name) said = e.event == "start" ? nullptr : &e;
    CheckEvent stand_in = *last_judged;
    if (said != nullptr && said->event == "skipped") {
      stand_in.event = "skipped";
      stand_in.reason = said->reason;
    } else if (said != nullptr && said->event == "stopped") {
      stand_in.event = "stopped";
      stand_in.reason = said->reason;
    } else {
      stand_in.event = "stopped";
      stand_in.reason = "the test program left no record of this check's results (" + last_judged->reason +
                        "): it was killed (time limit) or crashed before the check finished";
    }
    events.push_back(stand_in);
  }
  return events;
}

namespace {
/// Whether a check is a speed check: named "speed ...", as the build's RUN_SERIAL pattern says.
bool is_speed_check(const std::string& name) { return name.rfind("speed", 0) == 0; }
}  // namespace

void speed_counts_only_when_correct(std::vector<Item>& items) {
  const auto is_speed = [](const Item& item) { return is_speed_check(item.name); };
  std::string not_passed;
  for (const auto& item : items)
    if (item.kind == ItemKind::check && !is_speed(item) && item.outcome != Outcome::passed)
      not_passed += (not_passed.empty() ? "\"" : ", \"") + item.name + "\"";
  if (not_passed.empty()) return;
  for (auto& item : items) {
    if (item.kind != ItemKind::check || !is_speed(item) || item.outcome != Outcome::passed) continue;
    item.outcome = Outcome::failed;
    item.points = 0;
    item.feedback = "not counted: a speed check counts only when the exercise's other checks pass (not passed: " +
                    not_passed + ")" + (item.feedback.empty() ? "" : "\n" + item.feedback);
  }
}

namespace {

/// An exercise on its way through grading: what was judged before its checks run.
struct Pending {
  const manifest::Exercise* exercise = nullptr;
  ExerciseResult result;
  std::string suite_executable;  ///< empty: no checks to run (a quiz, a problem, no checks)
  fs::path results_file;
  std::string judge_executable;  ///< the suite linked against the reference: decides the checks (judge_outside)
  fs::path verdicts_file;        ///< what the judge wrote, outside the student's box
  std::string judge_output;      ///< the judge's own output, when it left a check undecided
  bool gpu_used = false;  ///< some check of the suite ran on a GPU
};

/// Everything before the checks: the file, the refused-code scan, compiling, the rules, the
/// suite's build and what the compiled exercise links to.
Pending prepare_exercise(const manifest::Exercise& exercise, const BuildTree& tree, const GradeOptions& options,
                         bool prebuilt) {
  Pending pending;
  pending.exercise = &exercise;
  ExerciseResult& result = pending.result;
  if (exercise.is_quiz()) {  // answers in a file: nothing to build or run
    if (options.progress) options.progress(exercise, "answers");
    result = quiz::grade(exercise, tree.exercise_dir());
    return pending;
  }
  result.chapter = exercise.chapter;
  result.id = exercise.id;
  result.title = exercise.title;
  result.file = exercise.path();
  if (!exercise.hints.empty()) result.hint = exercise.hints.front();
  const auto report = [&](const char* stage) {
    if (options.progress) options.progress(exercise, stage);
  };

  const auto entry = tree.find(exercise.chapter, exercise.stem);
  if (!entry || !entry->present()) {
    // The path inside the submission, never where the grader keeps its copy (feedback goes to students).
    result.problem = "file missing: " + exercise.path() + " (expected at that path in the submission)";
    fail_all(result, exercise, "not graded: " + exercise.path() + " is missing");
    return pending;
  }

  if (const std::string problem = reference_code_problem(files::read_text(entry->source)); !problem.empty()) {
    result.problem = problem;
    fail_all(result, exercise, "not graded: " + problem);
    return pending;
  }

  // build_all compiled the exercise and took its code before any program of the submission ran;
  // without that (it did not compile there, or grade_exercise alone), compile it now.
  auto code = compiled_code(tree, exercise);
  if (!code) {
    report("compiling");
    const auto compiled = tree.build({entry->library_target}, options.build_seconds);
    if (!compiled.ok() || options.judge_outside) {
      // Graded: code that did not compile before the submission's programs ran is not taken now.
      result.problem = compiled.timed_out ? "compiling took too long (" + compiled.describe() + ")"
                                          : exercise.file + " does not compile";
      result.build_log = explain_build_failure(compiled.output);
      fail_all(result, exercise, "not graded: " + exercise.file + " does not compile");
      return pending;
    }
    take_compiled_code(tree, exercise, *entry, sandbox::build_tool_dependencies(tree));
    code = compiled_code(tree, exercise);
    if (!code) throw std::runtime_error("cannot keep the compiled code of " + exercise.file + " beside " + tree.dir().string());
  }

  // What the compiler opened: a file outside the submission, the starter kit and the toolchain
  // (a grader header or a solution reached through a macro) refuses the exercise.
  if (!code->opened_problem.empty()) {
    result.problem = code->opened_problem;
    fail_all(result, exercise, "not graded: " + code->opened_problem);
    return pending;
  }
  // What the compiled exercise calls or defines of the grader: the source scan reads text, which a
  // macro can hide (a call through an alias, an oracle's source included and compiled in).
  if (const std::string problem = linked_reference_problem(code->symbols); !problem.empty()) {
    result.problem = problem;
    fail_all(result, exercise, "not graded: " + problem);
    return pending;
  }

  report("rules");
  for (auto& item : evaluate_rules(exercise, code->ptx, files::read_text(entry->source))) result.items.push_back(item);

  if (exercise.checks.empty()) return pending;
  if (!prebuilt) report("building");
  std::vector<std::string> suite_targets{entry->suite_target};
  if (options.judge_outside && !entry->judge_target.empty()) suite_targets.push_back(entry->judge_target);
  const auto built = prebuilt ? already_built() : tree.build(suite_targets, options.build_seconds);
  if (!built.ok()) {
    result.problem = built.timed_out ? "building the tests took too long (" + built.describe() + ")"
                                     : "the tests cannot be built against " + exercise.file;
    result.build_log = explain_build_failure(built.output);
    fail_all(result, exercise, "not graded: the tests could not be built", /*checks_only=*/true);
    return pending;
  }
  if (options.judge_outside && entry->judge.empty()) {
    result.problem = "this copy of the workbook has no reference build of " + suite_label(exercise) +
                     " to judge the checks with (grading needs solutions/)";
    fail_all(result, exercise, "not graded: " + result.problem, /*checks_only=*/true);
    return pending;
  }
  pending.suite_executable = entry->suite_executable;
  pending.judge_executable = entry->judge;
  pending.results_file = results_file_for(exercise, tree);
  return pending;
}

/// The environment of a check run: the results file (a template: the harness puts its suite in
/// for {suite}), the run's token, seed and time limit.
std::map<std::string, std::string> check_environment(const GradeOptions& options, const std::string& results_file,
                                                     const std::string& token) {
  std::map<std::string, std::string> env = options.env;
  env.insert({
      {"CDPLAB_RESULTS_TOKEN", token},
      {"CDPLAB_RESULTS_FILE", results_file},
      {"CDPLAB_SEED", std::to_string(options.seed)},
      {"CDPLAB_CHECK_SECONDS", std::to_string(options.check_seconds)},
  });
  return env;
}

/// The time a run of these checks may take: each check's own limit and CTest's margin, one
/// after the other (the worst case, as if nothing ran side by side).
double checks_limit(const std::vector<Pending*>& runs, const GradeOptions& options) {
  double seconds = 60;
  for (const auto* p : runs) seconds += (options.check_seconds + 30) * static_cast<double>(p->exercise->checks.size());
  return seconds;
}

/// The events of the exercise's results file that carry the run's token (the harness wrote them);
/// `forged` counts the others.
std::vector<CheckEvent> token_events(const Pending& pending, const std::string& token, std::size_t* forged = nullptr) {
  std::vector<CheckEvent> events;
  for (auto& e : read_check_events(pending.results_file.string())) {
    if (e.token == token) events.push_back(e);
    else if (forged != nullptr) ++*forged;
  }
  return events;
}

/// Everything after the checks ran: their items from the results file.
void finish_exercise(Pending& pending, const std::string& token, const std::string& run_output,
                     const GradeOptions& options, DeviceSeen* seen) {
  const manifest::Exercise& exercise = *pending.exercise;
  ExerciseResult& result = pending.result;
  std::size_t forged = 0;
  const auto events = token_events(pending, token, &forged);
  if (forged > 0) {
    result.problem = std::to_string(forged) + " line(s) of the results file were not written by the test harness "
                     "(the code under test wrote them?) and were ignored";
  }
  if (options.judge_outside) {
    const auto verdicts = judged_events(exercise, read_check_events(pending.verdicts_file.string()), events);
    const std::string said = pending.judge_output.empty() ? run_output : "the grader's judge said:\n" + pending.judge_output;
    for (auto& item : check_items(exercise, verdicts, said)) result.items.push_back(item);
  } else {
    for (auto& item : check_items(exercise, events, run_output)) result.items.push_back(item);
  }
  speed_counts_only_when_correct(result.items);
  for (const auto& e : events) pending.gpu_used = pending.gpu_used || (e.event == "start" && !e.device.empty());
  if (seen != nullptr) {
    for (const auto& e : events) {
      if (e.event == "start" && !e.device.empty()) seen->device = e.device;
      if (e.event == "skipped" && seen->gpu_problem.empty()) seen->gpu_problem = e.reason;
    }
  }
}

/// Runs one check of `p`'s suite again, alone, under `tool` of compute-sanitizer `program`, in the
/// submission's box, and returns the tool's item (sanitizer::run_check). Its results go to the
/// exercise's results file with `suffix`, never read as the check's own.
Item check_under_tool(const std::string& program, const sanitizer::Tool& tool, const Pending& p,
                      const std::string& check, const std::string& suffix, const BuildTree& tree,
                      const std::string& token, const GradeOptions& options) {
  // Kernels run many times slower under the tools: a check's own time limit grows with them.
  // Measured on an H100 (CUDA 13.0, eight tool runs at a time): the slowest reference check took
  // 43 s under memcheck, most take one to four seconds. A run past the limit is run again
  // without what the tool may spend minutes on (sanitizer::Tool::fallback_args), if it has any.
  constexpr double kSlowdown = 4;
  const double limit = options.check_seconds * kSlowdown + 60;
  auto env = check_environment(options, p.results_file.string() + suffix, token);
  // The suite's own watchdog comes after this limit: a check stopped by it from inside would
  // leave its memory unfreed, and the leak check would count that as a finding.
  env["CDPLAB_CHECK_SECONDS"] = std::to_string(limit + 60);
  env["CDPLAB_UNDER_SANITIZER"] = "1";  // the speed checks skip themselves: timings mean nothing here
  return sanitizer::run_check(program, tool, p.suite_executable, check, env, limit,
                              [&tree](std::vector<std::string> argv) { return tree.in_box(std::move(argv)); });
}

/// The sanitizer stage: every check of a suite whose checks used the GPU runs again under the
/// tools, `options.check_jobs` processes at a time (the tools slow kernels down many times, and
/// much of their cost is on the CPU); the other suites get skipped items.
void run_sanitizer(const std::vector<Pending*>& runs, const BuildTree& tree, const std::string& token,
                   const GradeOptions& options) {
  std::vector<Pending*> on_gpu;
  for (auto* p : runs) {
    if (options.progress) options.progress(*p->exercise, "compute-sanitizer");
    if (p->gpu_used) {
      on_gpu.push_back(p);
      continue;
    }
    for (const auto& tool : sanitizer::tools())
      p->result.items.push_back(sanitizer::skipped_item(tool, "not run: the checks ran on no GPU"));
  }
  // One process per check and tool, as in the graded run; several at a time.
  struct Job {
    std::size_t exercise;  // index into on_gpu
    std::size_t tool;      // index into sanitizer::tools()
    std::string check;
  };
  const auto& tools = sanitizer::tools();
  std::vector<Job> jobs;
  for (std::size_t e = 0; e < on_gpu.size(); ++e)
    for (std::size_t t = 0; t < tools.size(); ++t)
      for (const auto& check : on_gpu[e]->exercise->checks) jobs.push_back({e, t, check.name});
  std::vector<Item> found(jobs.size());
  parallel_for(jobs.size(), options.check_jobs, [&](std::size_t i) {
    found[i] = check_under_tool(options.sanitizer, tools[jobs[i].tool], *on_gpu[jobs[i].exercise], jobs[i].check,
                                ".sanitizer", tree, token, options);
  });
  for (std::size_t e = 0; e < on_gpu.size(); ++e) {
    for (std::size_t t = 0; t < tools.size(); ++t) {
      std::vector<std::pair<std::string, Item>> per_check;
      for (std::size_t i = 0; i < jobs.size(); ++i)
        if (jobs[i].exercise == e && jobs[i].tool == t) per_check.emplace_back(jobs[i].check, found[i]);
      on_gpu[e]->result.items.push_back(sanitizer::merge(tools[t], per_check));
    }
  }
}

/// The checks a manifest marks `memcheck = true` that passed run once more, each alone under
/// compute-sanitizer memcheck in the submission's box, and keep their points only if it finds
/// nothing (sanitizer::require_clean). Small by design: the device heap checked, no second run.
void run_memcheck_checks(const std::vector<Pending*>& runs, const BuildTree& tree, const std::string& token,
                         const GradeOptions& options) {
  struct Job {
    Item* item;
    const Pending* pending;
  };
  std::vector<Job> jobs;
  for (auto* p : runs)
    for (const auto& check : p->exercise->checks) {
      if (!check.memcheck) continue;
      for (auto& item : p->result.items)
        if (item.kind == ItemKind::check && item.name == check.name && item.outcome == Outcome::passed)
          jobs.push_back({&item, p});
    }
  if (jobs.empty()) return;
  std::vector<Item> found(jobs.size());
  parallel_for(jobs.size(), options.check_jobs, [&](std::size_t i) {
    const Pending& p = *jobs[i].pending;
    if (options.progress) options.progress(*p.exercise, "compute-sanitizer memcheck");
    found[i] = check_under_tool(options.memcheck_program, sanitizer::graded_memcheck(), p, jobs[i].item->name,
                                ".memcheck", tree, token, options);
  });
  for (std::size_t i = 0; i < jobs.size(); ++i) sanitizer::require_clean(*jobs[i].item, found[i]);
}

/// Runs the checks of each suite that `grouped` picks in one process per suite (shared_process.h),
/// `jobs` processes at a time: two checks or more. With `leftovers_beside`, a shared process that
/// ended after checks that all passed (the last one changed the device's limits: most suites that
/// end one so change them in most checks) leaves the checks it never started to a process each,
/// queued as soon as it ends, beside the other suites' processes still running.
/// Returns the names of the CTest tests still to run: every test of these suites whose check did
/// not pass or skip in a shared process (this call's or an earlier one's).
std::vector<std::string> run_shared_processes(const std::vector<Pending*>& runs, const std::vector<TestInfo>& tests,
                                              const std::map<std::string, std::string>& env,
                                              const GradeOptions& options, const BuildTree& tree,
                                              const std::function<bool(const TestInfo&)>& grouped, int jobs,
                                              bool leftovers_beside) {
  const std::string token = env.at("CDPLAB_RESULTS_TOKEN");
  struct Check {
    std::string name;
    std::string working_directory;
  };
  // The checks of `p` that `grouped` picks, but for those named in `done`.
  const auto checks_of = [&](const Pending& p, const std::set<std::string>& done) {
    const std::string prefix = suite_label(*p.exercise) + "/";
    std::vector<Check> checks;
    for (const auto& test : tests) {
      if (test.name.rfind(prefix, 0) != 0 || !grouped(test)) continue;
      const std::string check = test.name.substr(prefix.size());
      if (done.count(check) == 0) checks.push_back({check, test.working_directory});
    }
    return checks;
  };
  const auto run_process = [&](const Pending& p, const std::vector<Check>& checks) {
    std::vector<std::string> names;
    for (const auto& c : checks) names.push_back(c.name);
    process::Options o;
    o.env = env;
    o.env["CDPLAB_SHARED_PROCESS"] = "1";
    o.working_directory = checks.back().working_directory;
    // The suite's watchdog ends a check at its limit; this one backs it up.
    o.timeout_seconds = (options.check_seconds + 15) * static_cast<double>(checks.size()) + 30;
    process::run(tree.in_box({p.suite_executable, "--test-case=" + test_case_filter(names)}), o);
  };
  // After a suite's shared process: its unstarted checks, a process each, when it ended after
  // checks that all passed. One that failed, hung or crashed, or never started a check, leaves
  // them to the run alone: a broken suite is not run twice.
  const auto leftovers = [&](const Pending& p) {
    std::vector<Job> singles;
    const auto events = token_events(p, token);
    const auto settled = settled_checks(*p.exercise, events);
    auto started = started_checks(events);
    const bool all_passed = std::all_of(started.begin(), started.end(), [&](const auto& c) { return settled.count(c) > 0; });
    if (started.empty() || !all_passed) return singles;
    started.insert(settled.begin(), settled.end());
    for (const auto& check : checks_of(p, started))
      singles.push_back({[&run_process, &p, check] {
        run_process(p, {check});
        return std::vector<Job>{};
      }});
    return singles;
  };
  std::vector<Job> shared;
  for (const auto* p : runs) {
    const auto checks = checks_of(*p, settled_checks(*p->exercise, token_events(*p, token)));
    if (checks.size() < 2) continue;
    shared.push_back({[&, p, checks] {
      run_process(*p, checks);
      return leftovers_beside ? leftovers(*p) : std::vector<Job>{};
    }});
  }
  run_work_list(std::move(shared), jobs);

  std::vector<std::string> left;
  for (const auto* p : runs) {
    const std::string prefix = suite_label(*p->exercise) + "/";
    const auto settled = settled_checks(*p->exercise, token_events(*p, token));
    for (const auto& test : tests)
      if (test.name.rfind(prefix, 0) == 0 && settled.count(test.name.substr(prefix.size())) == 0)
        left.push_back(test.name);
  }
  return left;
}

/// The check a CTest test runs: "<chapter>/<stem>/<check>" -> "<check>".
std::string check_of(const TestInfo& test) {
  const auto slash = test.name.find('/', test.name.find('/') + 1);
  return slash == std::string::npos ? test.name : test.name.substr(slash + 1);
}

/// Whether an exercise has a speed check: its judge times the check's baseline and needs the
/// GPU to itself.
bool times_the_gpu(const manifest::Exercise& exercise) {
  for (const auto& check : exercise.checks)
    if (is_speed_check(check.name)) return true;
  return false;
}

/// The environment of a judge: no GPU for itself, the grading's GPU for the baselines it times,
/// the records in `observations`, the grading's seed, time limit and baseline cache.
std::map<std::string, std::string> judge_environment(const GradeOptions& options, const fs::path& observations) {
  std::map<std::string, std::string> env = options.env;
  const char* inherited = std::getenv("CUDA_VISIBLE_DEVICES");
  if (const auto it = options.env.find("CUDA_VISIBLE_DEVICES"); it != options.env.end()) env["CDPLAB_JUDGE_GPUS"] = it->second;
  else if (inherited != nullptr) env["CDPLAB_JUDGE_GPUS"] = inherited;
  env["CUDA_VISIBLE_DEVICES"] = "";  // the judge runs no kernel: a stray CUDA call fails, never passes
  env["CDPLAB_JUDGE_DIR"] = observations.string();
  env["CDPLAB_SEED"] = std::to_string(options.seed);
  env["CDPLAB_CHECK_SECONDS"] = std::to_string(options.check_seconds);
  if (!options.baseline_cache.empty()) env["CDPLAB_BASELINE_CACHE"] = options.baseline_cache;
  return env;
}

/// The judges (GradeOptions::judge_outside): for each suite, its checks linked against the
/// reference solutions, run without the GPU on what the student's processes recorded in
/// `observations`; each writes its verdicts into a folder the student's box cannot see. A judge
/// that times the baseline for a speed check gets the GPU back for that child alone
/// (CDPLAB_JUDGE_GPUS) and runs with nothing else on the GPU; the others run side by side, and so
/// does a speed check's judge that finds its baselines in the class's cache (harness/speed.h).
void run_judges(const std::vector<Pending*>& runs, const BuildTree& tree, const fs::path& observations,
                const GradeOptions& options, PhaseClock& clock) {
  const fs::path verdicts = beside_tree(tree, "-verdicts");
  std::error_code ignored;
  fs::remove_all(verdicts, ignored);
  fs::create_directories(verdicts);
  const auto env = judge_environment(options, observations);
  // `cache_only`: the judge runs beside other work on the GPU and reads its baselines from the
  // class's cache; one missing makes it end with kBaselineNotCached before it times anything.
  const auto judge = [&](Pending& p, bool cache_only) {
    std::error_code not_there;
    p.verdicts_file = verdicts / (p.exercise->chapter + "." + p.exercise->stem + ".jsonl");
    fs::remove(p.verdicts_file, not_there);  // a judge run again starts its verdicts afresh
    std::vector<std::string> checks;
    for (const auto& check : p.exercise->checks) checks.push_back(check.name);
    process::Options o;
    o.env = env;
    o.env["CDPLAB_RESULTS_FILE"] = p.verdicts_file.string();
    if (cache_only) o.env["CDPLAB_BASELINE_CACHE_ONLY"] = "1";
    o.timeout_seconds = (options.check_seconds + 15) * static_cast<double>(checks.size()) + 30;
    const auto ran = process::run({p.judge_executable, "--test-case=" + test_case_filter(checks)}, o);
    if (cache_only && ran.started && !ran.timed_out && ran.exit_code == kBaselineNotCached) return false;
    if (!ran.started || ran.timed_out || ran.signal != 0)
      p.judge_output = (ran.started ? last_lines(ran.output, 15) : "") + "(" + ran.describe() + ")";
    // The records have served: a full run of the references leaves about a gigabyte of them.
    fs::remove_all(observations / (p.exercise->chapter + "." + p.exercise->stem), not_there);
    return true;
  };
  // A judge that times a baseline needs the GPU alone. In a class whose cache already holds the
  // baselines (timed by an earlier submission on this GPU), it runs beside the others instead.
  std::vector<Pending*> alone, side_by_side;
  const bool cached = !options.baseline_cache.empty();
  for (auto* p : runs) (times_the_gpu(*p->exercise) && !cached ? alone : side_by_side).push_back(p);
  std::mutex alone_mutex;
  parallel_for(side_by_side.size(), options.check_jobs, [&](std::size_t i) {
    Pending& p = *side_by_side[i];
    if (judge(p, cached && times_the_gpu(*p.exercise))) return;
    std::lock_guard<std::mutex> lock(alone_mutex);
    alone.push_back(&p);
  });
  if (!alone.empty()) {
    clock.lap("judges");
    AloneTurn turn(options.gpu_turns);
    clock.lap(kWaitingForTheGpu);
    for (auto* p : alone) judge(*p, false);
  }
  clock.lap("judges");
}

/// Runs the checks of every pending exercise, `options.check_jobs` at a time (checks that must
/// have the GPU alone are marked RUN_SERIAL by the build), and finishes each: first in shared
/// processes (run_shared_processes), then what those did not settle in one CTest run, one
/// process per check.
void run_checks(std::vector<Pending>& pendings, const BuildTree& tree, const GradeOptions& options,
                DeviceSeen* seen, Phases* phases) {
  PhaseClock clock(phases);
  std::vector<Pending*> runs;
  std::vector<std::string> labels;
  for (auto& p : pendings) {
    if (p.suite_executable.empty()) continue;
    runs.push_back(&p);
    labels.push_back(suite_label(*p.exercise));
    if (options.progress) options.progress(*p.exercise, "checks");
  }
  if (runs.empty()) return;
  const std::string token = std::to_string(fresh_seed());
  const std::string results = (tree.dir() / "cdplab-results" / "{suite}.jsonl").string();
  auto env = check_environment(options, results, token);
  // Judged outside: the student's processes record their GPU steps here, in their own build tree.
  const fs::path observations = tree.dir() / "cdplab-observations";
  if (options.judge_outside) {
    fresh_directory(observations);
    env["CDPLAB_OBSERVATIONS_DIR"] = observations.string();
  }
  // Without the list of tests (one process per check asked for, or CTest could not list them),
  // CTest runs every test of the labels; with it, only those the shared processes left.
  const auto tests = options.shared_processes ? tree.list_tests(labels) : std::vector<TestInfo>{};
  std::vector<std::string> left;
  clock.lap("checks beside others");
  if (!tests.empty()) {  // checks that may run beside others: a process per suite, several at a time
    SharedTurn turn(options.gpu_turns);
    clock.lap(kWaitingForTheGpu);
    const auto beside_others = [](const TestInfo& test) { return !test.run_serial; };
    // A shared process ends after a check that fails or changes the device's limits: after the
    // latter, the checks it never started run here too, beside others, a process each, and not
    // in a turn alone.
    left = run_shared_processes(runs, tests, env, options, tree, beside_others, options.check_jobs,
                                /*leftovers_beside=*/true);
    clock.lap("checks beside others");
  }
  std::string run_output = "every check of the suite ran in a shared process, and CTest has no other test of it";
  {
    AloneTurn turn(options.gpu_turns);
    clock.lap(kWaitingForTheGpu);
    // The checks of a suite that needs the GPU to itself (CDPLAB_SUITE_RUNS_ALONE): a process per
    // suite too, one suite at a time. A speed check keeps a process of its own: a warm process
    // would change its timings.
    if (!tests.empty())
      left = run_shared_processes(
          runs, tests, env, options, tree,
          [](const TestInfo& test) { return test.run_serial && !is_speed_check(check_of(test)); }, 1,
          /*leftovers_beside=*/false);
    if (tests.empty() || !left.empty()) {  // speed checks, and what the shared processes did not settle
      const auto ran = tree.test(labels, env, checks_limit(runs, options), options.check_jobs, left);
      run_output = ran.output;
      if (!ran.started) run_output = "ctest could not be started";
      else if (ran.timed_out) run_output += "\n(the test run was stopped: " + ran.describe() + ")";
    }
    clock.lap("checks with the GPU alone");
  }
  // The runners' results lie in the submission's tree too: a link put in place of their folder is
  // not followed (what the runners wrote there explains a check at most; the judges decide).
  {
    std::error_code ignored;
    const fs::path results_dir = tree.dir() / "cdplab-results";
    if (fs::is_symlink(fs::symlink_status(results_dir, ignored))) fresh_directory(results_dir);
  }
  if (options.judge_outside) {
    // The records lie in the submission's tree: a link put there in place of the folder, or of a
    // suite's folder in it, leads nowhere. The checks it would have led to are left unobserved.
    std::error_code ignored;
    if (fs::is_symlink(fs::symlink_status(observations, ignored)) || !fs::is_directory(observations, ignored))
      fresh_directory(observations);
    for (const auto* p : runs) {
      const fs::path suite = observations / (p->exercise->chapter + "." + p->exercise->stem);
      if (fs::is_symlink(fs::symlink_status(suite, ignored))) fresh_directory(suite);
    }
    run_judges(runs, tree, observations, options, clock);
  }
  for (auto* p : runs) finish_exercise(*p, token, run_output, options, seen);
  clock.lap("judges");
  // The tools' runs share the GPU; a grading with none to run does not wait for a turn.
  const bool graded_under_memcheck = std::any_of(runs.begin(), runs.end(), [](const Pending* p) {
    return std::any_of(p->exercise->checks.begin(), p->exercise->checks.end(), [](const auto& c) { return c.memcheck; });
  });
  if (!graded_under_memcheck && options.sanitizer.empty()) return;
  SharedTurn turn(options.gpu_turns);
  clock.lap(kWaitingForTheGpu);
  run_memcheck_checks(runs, tree, token, options);
  clock.lap("checks under memcheck");
  if (!options.sanitizer.empty()) {
    run_sanitizer(runs, tree, token, options);
    clock.lap("compute-sanitizer stage");
  }
}

}  // namespace

int time_baselines(const std::vector<const manifest::Exercise*>& exercises, const BuildTree& tree,
                   const GradeOptions& options) {
  if (options.baseline_cache.empty()) return 0;
  std::vector<std::string> judges;
  for (const auto* exercise : exercises) {
    if (exercise->is_quiz() || !times_the_gpu(*exercise)) continue;
    const auto entry = tree.find(exercise->chapter, exercise->stem);
    std::error_code error;
    // The kit's judge, built before any submission; one this tree builds is not there yet.
    if (entry && entry->judge_target.empty() && fs::is_regular_file(entry->judge, error)) judges.push_back(entry->judge);
  }
  process::Options o;
  o.env = judge_environment(options, tree.dir() / "cdplab-observations");  // judge mode; no record is read
  o.timeout_seconds = 120;
  o.env["CDPLAB_BASELINE_CACHE_ONLY"] = "1";
  for (const auto& judge : judges) {
    // First without a turn: a cache that holds every baseline already answers at once.
    if (process::run({judge, "--time-baselines"}, o).exit_code != kBaselineNotCached) continue;
    AloneTurn turn(options.gpu_turns);
    process::Options timing = o;
    timing.env.erase("CDPLAB_BASELINE_CACHE_ONLY");
    process::run({judge, "--time-baselines"}, timing);
  }
  return static_cast<int>(judges.size());
}

ExerciseResult grade_exercise(const manifest::Exercise& exercise, const BuildTree& tree, const GradeOptions& options,
                              DeviceSeen* seen, bool prebuilt) {
  std::vector<Pending> pending{prepare_exercise(exercise, tree, options, prebuilt)};
  run_checks(pending, tree, options, seen, nullptr);
  return pending.front().result;
}

ExerciseResult not_graded(const manifest::Exercise& exercise, const std::string& problem) {
  ExerciseResult result;
  result.chapter = exercise.chapter;
  result.id = exercise.id;
  result.title = exercise.title;
  result.file = exercise.path();
  result.problem = problem;
  fail_all(result, exercise, "not graded: " + problem);
  return result;
}

bool build_all(const std::vector<const manifest::Exercise*>& exercises, const BuildTree& tree,
               const GradeOptions& options) {
  std::error_code ignored;
  fs::remove_all(beside_tree(tree, "-compiled"), ignored);
  struct Compiled {
    const manifest::Exercise* exercise;
    IndexEntry entry;
  };
  std::vector<Compiled> compiled;
  std::vector<std::string> code_targets;
  for (const auto* exercise : exercises) {
    const auto entry = exercise->is_quiz() ? std::nullopt : tree.find(exercise->chapter, exercise->stem);
    if (!entry || !entry->present()) continue;
    if (!reference_code_problem(files::read_text(entry->source)).empty()) continue;
    compiled.push_back({exercise, *entry});
    code_targets.push_back(entry->library_target);
    if (options.progress) options.progress(*exercise, "building (every exercise in one build)");
  }
  if (compiled.empty()) return true;
  const double seconds = options.build_seconds * static_cast<double>(exercises.size());
  // First the exercises' own code, which runs nothing: what the grader reads of it is taken now.
  // Each exercise is one nvcc run, and the build tool starts them in the order the build file
  // lists them, chapter by chapter: with as many jobs as cores, the last few (in the workbook, the
  // fast quicksort, whose CUB headers make it take three to four times longer than most) start
  // only when the first end: on an H100 machine's 16 cores it started 1.9 s after the others and
  // ended the build. Given every core (-j), a few jobs more start every one at once; a smaller -j
  // (a Slurm task's CPUs) is kept as it is.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int jobs = tree.toolchain().jobs;
  const int code_jobs =
      jobs < cores ? jobs : std::max(jobs, std::min(static_cast<int>(code_targets.size()), cores + cores / 4));
  const bool code_built = tree.build(code_targets, seconds, /*keep_going=*/true, code_jobs).ok();
  std::vector<char> built(compiled.size(), code_built ? 1 : 0);
  for (std::size_t i = 0; i < compiled.size() && !code_built; ++i)  // one at a time: the build tool owns the tree
    built[i] = tree.build({compiled[i].entry.library_target}, options.build_seconds).ok() ? 1 : 0;
  // What the grader reads of the code: the build tool's record once, then each exercise's symbols
  // and PTX, all at once (a few dozen milliseconds each, one exercise after the other before).
  const auto record = sandbox::build_tool_dependencies(tree);
  fs::create_directories(beside_tree(tree, "-compiled"));
  parallel_for(compiled.size(), code_jobs > 0 ? std::min(code_jobs, cores) : cores, [&](std::size_t i) {
    if (built[i]) take_compiled_code(tree, *compiled[i].exercise, compiled[i].entry, record);
  });
  std::vector<std::string> suite_targets;
  for (std::size_t i = 0; i < compiled.size(); ++i) {
    const auto& c = compiled[i];
    if (!built[i] || c.exercise->checks.empty()) continue;
    suite_targets.push_back(c.entry.suite_target);
    // A judge this tree builds itself (no grading kit) is not part of ALL.
    if (options.judge_outside && !c.entry.judge_target.empty()) suite_targets.push_back(c.entry.judge_target);
  }
  // Then the suites: building one runs it to list its checks, the submission's code with it.
  const bool suites_built = suite_targets.empty() || tree.build(suite_targets, seconds, /*keep_going=*/true).ok();
  return code_built && suites_built;
}

GradeReport grade_all(const std::vector<const manifest::Exercise*>& exercises, const BuildTree& tree,
                      const GradeOptions& options, const std::string& source) {
  GradeReport report;
  report.source = source;
  report.seed = options.seed;
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  report.started_at = stamp;
  const auto start = std::chrono::steady_clock::now();
  DeviceSeen seen;
  PhaseClock clock(&report.phases);
  // Building here, the GPU is idle: the speed checks' baselines are timed meanwhile, into the
  // class's cache or, for one submission alone, a cache of this grading's own.
  GradeOptions graded = options;
  const bool times_baselines =
      !options.built && options.judge_outside &&
      std::any_of(exercises.begin(), exercises.end(), [](const auto* e) { return times_the_gpu(*e); });
  struct RemovedAtEnd {  // the grading's own cache goes with it, whatever ends the grading
    fs::path dir;
    ~RemovedAtEnd() {
      std::error_code ignored;
      if (!dir.empty()) fs::remove_all(dir, ignored);
    }
  } own_cache;
  if (times_baselines && options.baseline_cache.empty()) {
    own_cache.dir = beside_tree(tree, "-baselines");
    graded.baseline_cache = own_cache.dir.string();
    fresh_directory(own_cache.dir);
  }
  std::future<int> baselines;  // its destructor waits, whatever happens to the build
  if (times_baselines)
    baselines = std::async(std::launch::async, [&] { return time_baselines(exercises, tree, graded); });
  const bool prebuilt = options.built ? *options.built : build_all(exercises, tree, graded);
  if (!options.built) clock.lap("building");
  if (baselines.valid()) {
    baselines.wait();  // a baseline that failed to time is timed again by its judge
    clock.lap("timing baselines after the build");
  }
  std::vector<Pending> pendings;
  for (const auto* exercise : exercises) pendings.push_back(prepare_exercise(*exercise, tree, graded, prebuilt));
  clock.lap("rules");
  run_checks(pendings, tree, graded, &seen, &report.phases);
  // Feedback names no path of the grading machine.
  const auto names = sandbox::path_names(tree);
  for (auto& p : pendings) {
    auto& e = p.result;
    e.problem = sandbox::scrub_paths(e.problem, names);
    e.build_log = sandbox::scrub_paths(e.build_log, names);
    for (auto& item : e.items) item.feedback = sandbox::scrub_paths(item.feedback, names);
    report.exercises.push_back(std::move(e));
  }
  report.device = seen.device;
  report.gpu_problem = report.device.empty() ? seen.gpu_problem : "";
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

std::string compiled_ptx(const BuildTree& tree, const manifest::Exercise& exercise) {
  const auto code = compiled_code(tree, exercise);
  return code ? code->ptx : "";
}

}  // namespace cdplab::grading
