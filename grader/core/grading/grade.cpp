#include "grading/grade.h"

#include "files/files.h"
#include "device_calls.h"
#include "grading/check_process.h"
#include "grading/launch_edges.h"
#include "grading/shared_process.h"
#include "process/process.h"
#include "quiz/quiz.h"
#include "rules/names.h"
#include "rules/rule.h"
#include "sandbox/submission.h"
#include "sanitizer/sanitizer.h"
#include "starters/given_code.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <set>
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

/// The exercise's PTX as taken, which a grading's check processes load (CDPLAB_DEVICE_PTX).
fs::path compiled_ptx_file(const BuildTree& tree, const manifest::Exercise& exercise) {
  return beside_tree(tree, "-compiled") / (exercise.chapter + "." + exercise.stem + ".ptx");
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
  std::ofstream(compiled_ptx_file(tree, exercise), std::ios::binary) << code.value("ptx", "");
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

/// Where the suites write their results: beside the tree, where no program of the submission
/// writes (a grading's check processes run in a box that shows this folder, and no student code).
fs::path results_dir(const BuildTree& tree) { return beside_tree(tree, "-results"); }

fs::path results_file_for(const manifest::Exercise& exercise, const BuildTree& tree) {
  const fs::path dir = results_dir(tree);
  fs::create_directories(dir);
  // The harness writes "{suite}.jsonl" with its suite, "<chapter>/<stem>", spelt with a dot.
  const fs::path file = dir / (exercise.chapter + "." + exercise.stem + ".jsonl");
  fs::remove(file);
  return file;
}

/// Lets every process of one exercise's checks share one linked cubin: a hook tag drawn for this
/// run (a submission cannot know it when it compiles) and a fresh folder, beside the tree, that
/// only the check processes write (harness/device_code/device_code.h). Linking the PTX for the GPU
/// is most of a check process's start-up.
void share_linked_code(CheckProcess& check, const BuildTree& tree, const manifest::Exercise& exercise) {
  const fs::path dir = beside_tree(tree, "-linked") / (exercise.chapter + "." + exercise.stem);
  std::error_code error;  // a folder that cannot be made only costs time: every process links then
  fs::remove_all(dir, error);
  fs::create_directories(dir, error);
  char digits[17];
  std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(fresh_seed() ^ (fresh_seed() << 1)));
  check.env["CDPLAB_HOOK_TAG"] = digits;
  check.env["CDPLAB_DEVICE_CODE_CACHE"] = dir.string();
  check.writable.push_back(dir.string());
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

std::string explain_build_failure(const std::string& output, const std::string& submission_dir) {
  std::ostringstream out;
  std::istringstream in(output);
  int kept = 0;
  // A diagnostic's first line: "file.cu(12): error: ..." (nvcc) or "file.cu:12:5: error: ..." (gcc).
  static const std::regex diagnostic(
      R"(^(\S[^(:]*)(\([0-9]+\)|:[0-9]+(:[0-9]+)?):\s*(catastrophic error|fatal error|error|warning|note|remark))");
  const std::string inside = submission_dir.empty() ? "" : fs::path(submission_dir).lexically_normal().string() + "/";
  bool quoting_outside = false;  // the lines after a diagnostic in a file outside the submission
  for (std::string line; std::getline(in, line);) {
    // The build tool echoes long command lines; the compiler's own words are what matter.
    if (line.rfind("FAILED:", 0) == 0 || line.rfind("ninja:", 0) == 0 || line.rfind("[", 0) == 0 ||
        line.find("/nvcc ") != std::string::npos || line.find("/c++ ") != std::string::npos ||
        line.find("/g++ ") != std::string::npos || line.rfind("gmake", 0) == 0 || line.rfind("make", 0) == 0)
      continue;
    // A file outside the submission is named, never quoted: the lines a compiler prints under its
    // diagnostic show that file's text (a solution, a file of the grading machine).
    std::smatch match;
    if (std::regex_search(line, match, diagnostic)) {
      const std::string file = match[1].str();
      quoting_outside = !inside.empty() && !file.empty() && file[0] == '/' && file.rfind(inside, 0) != 0;
    } else if (quoting_outside) {
      if (line.empty() || line.rfind("In file included from", 0) == 0) quoting_outside = false;
      else continue;
    }
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

namespace {

/// A string field of a harness record; empty where it is missing or not a string.
std::string text_field(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// A count field of a harness record; 0 where it is missing or not a non-negative integer.
std::uint64_t count_field(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

/// A check's launch tree as the harness writes it in its end record (mangled names), with the
/// names people read; entries that are not well formed are left out.
std::vector<LaunchTreeEdge> launch_tree_edges(const nlohmann::json& launches) {
  std::vector<LaunchTreeEdge> edges;
  if (!launches.is_array()) return edges;
  const auto& symbol_of = text_field;
  // Overloads (one name, several symbols) keep their parameter lists: a box each in the tree.
  std::map<std::string, std::set<std::string>> symbols_named;
  for (const auto& edge : launches)
    if (edge.is_object())
      for (const char* key : {"caller", "child"})
        if (const std::string symbol = symbol_of(edge, key); !symbol.empty())
          symbols_named[rules::short_name(symbol)].insert(symbol);
  const auto name = [&](const nlohmann::json& edge, const char* key) {
    const std::string symbol = symbol_of(edge, key);
    const std::string name = rules::short_name(symbol);
    if (symbol.empty() || symbols_named[name].size() < 2) return name;
    const std::string full = rules::demangle(symbol);
    const auto parameters = full.find('(');
    return parameters == std::string::npos ? name : name + full.substr(parameters);
  };
  const auto& count = count_field;
  for (const auto& edge : launches) {
    if (!edge.is_object()) continue;
    edges.push_back({name(edge, "caller"), name(edge, "child"), count(edge, "grids"), count(edge, "null"),
                     count(edge, "tail"), count(edge, "fire_and_forget"), count(edge, "named"), count(edge, "failed")});
    edges.back().caller_symbol = symbol_of(edge, "caller");  // what the lesson's rules judge it by
    edges.back().child_symbol = symbol_of(edge, "child");
  }
  return edges;
}

/// A check's timeline as the harness writes it in its end record (mangled names, times in
/// nanoseconds), with the names people read; grids that are not well formed are left out.
GridTimeline grid_timeline(const nlohmann::json& record) {
  GridTimeline timeline;
  if (!record.is_object()) return timeline;
  const auto& number = count_field;
  const auto& text = text_field;
  timeline.run = static_cast<int>(std::min<std::uint64_t>(number(record, "run"), 1u << 20));
  timeline.runs = static_cast<int>(std::min<std::uint64_t>(number(record, "runs"), 1u << 20));
  timeline.left_out = number(record, "left_out");
  timeline.failed_launches = number(record, "failed_launches");
  const auto grids = record.find("grids");
  if (grids == record.end() || !grids->is_array()) return timeline;
  for (const auto& g : *grids) {
    if (!g.is_object()) continue;
    GridSpan span;
    span.id = number(g, "id");
    span.kernel = rules::short_name(text(g, "kernel"));
    span.parent = number(g, "parent");
    span.parent_kernel = rules::short_name(text(g, "parent_kernel"));
    span.parent_block = number(g, "parent_block");
    span.stream = text(g, "stream");
    span.stream_id = number(g, "stream_id");
    span.blocks = number(g, "blocks");
    span.start_ns = number(g, "start");
    span.end_ns = number(g, "end");
    span.launched_seen = g.contains("launched");
    span.launched_ns = number(g, "launched");
    timeline.grids.push_back(span);
  }
  std::stable_sort(timeline.grids.begin(), timeline.grids.end(),
                   [](const GridSpan& a, const GridSpan& b) { return a.start_ns < b.start_ns; });
  // The GPU's grid ids and stream handles go past 2^53 (an H100 counts device-launched grids down
  // from 2^64 - 1), which JSON readers that keep numbers as doubles (JavaScript, jq 1.6) round, so
  // that two grids may read as one: the report numbers them 1, 2, ... instead (0 stays "none").
  std::map<std::uint64_t, std::uint64_t> grid_numbers, stream_numbers;
  const auto renumber = [](std::map<std::uint64_t, std::uint64_t>& numbers, std::uint64_t id) -> std::uint64_t {
    if (id == 0) return 0;
    return numbers.emplace(id, numbers.size() + 1).first->second;
  };
  for (const auto& g : timeline.grids) renumber(grid_numbers, g.id);  // by start
  for (auto& g : timeline.grids) {
    g.id = renumber(grid_numbers, g.id);
    g.parent = renumber(grid_numbers, g.parent);  // a parent left unrecorded gets a number after them
    g.stream_id = renumber(stream_numbers, g.stream_id);
  }
  return timeline;
}

}  // namespace

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
    if (record.contains("launches")) {
      e.launches = launch_tree_edges(record["launches"]);
      e.launches_observed = true;
    }
    if (record.contains("timeline")) e.timeline = grid_timeline(record["timeline"]);
    events.push_back(e);
  }
  return events;
}

std::string recorded_checks(const std::vector<const manifest::Exercise*>& exercises) {
  std::string lines;
  for (const auto* exercise : exercises)
    for (const auto& check : exercise->checks)
      if (check.timeline) lines += suite_label(*exercise) + "/" + check.name + "\n";
  return lines;
}

std::string skipped_without_gpu(const std::string& problem) {
  return "no usable CUDA GPU: " + problem + "; GPU checks were skipped, not passed";
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
      item.launches = last->launches;
      item.launches_observed = last->launches_observed;
      item.timeline = last->timeline;
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
      item.feedback = "the check did not run; the test run said:\n" + files::last_lines(run_output, 15);
    }
    items.push_back(item);
  }
  return items;
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

/// One check as the grader runs it: its name, and whether it needs the GPU to itself (a speed
/// check, or any check of a suite marked CDPLAB_SUITE_RUNS_ALONE: harness/harness.h).
struct CheckRun {
  std::string name;
  bool alone = false;
};

/// Whether the file still holds a CDPLAB_TODO(): worth no points, but an exercise with one left is
/// never reported finished, with or without a GPU to run it (without one, its checks are skipped
/// and nothing else would say so).
Item finished_item(const std::string& source_text) {
  Item item;
  item.kind = ItemKind::rule;
  item.name = "finished: no CDPLAB_TODO() left";
  item.max_points = 0;
  const auto lines = starters::todo_lines(source_text);
  if (lines.empty()) {
    item.outcome = Outcome::passed;
    return item;
  }
  std::string where;
  for (const int line : lines) where += (where.empty() ? "line " : ", ") + std::to_string(line);
  item.feedback = "not finished: the file still calls CDPLAB_TODO() at " + where +
                  "; replace each TODO with your code";
  return item;
}

/// An exercise on its way through grading: what was judged before its checks run.
struct Pending {
  const manifest::Exercise* exercise = nullptr;
  ExerciseResult result;
  CheckProcess check;  ///< how its checks run; no suite: none to run (a quiz, a problem, no checks)
  fs::path results_file;
  std::string last_output;  ///< the end of the last run of its suite, and how it ended
  std::string host_parts_output;  ///< what its host parts printed in its checks (the feedback's alone)
  std::vector<CheckRun> checks;  ///< its checks as they run (run_checks fills it)
  std::string ptx;  ///< its PTX as taken, which the checks load: their launch edges are judged on it
  bool gpu_used = false;  ///< some check of the suite ran on a GPU
  bool keep_timelines = false;  ///< GradeOptions::keep_timelines
};

/// Everything before the checks: the file, the refused-code scan, compiling, the rules, the
/// suite's build and what the compiled exercise links to.
Pending prepare_exercise(const manifest::Exercise& exercise, const BuildTree& tree, const GradeOptions& options,
                         bool prebuilt) {
  Pending pending;
  pending.exercise = &exercise;
  pending.keep_timelines = options.keep_timelines;
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
  for (const auto& rule : exercise.rules)
    if ((rule.kind == "launches" || rule.kind == "recursion" || rule.kind == "distinct_streams") && !rule.given)
      result.lesson_launches.push_back(rules::describe(rule));
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

  // build_all compiled the exercise and took its code before any program of the submission ran.
  // Code that did not compile there is not taken now (a program of the submission may have run
  // since): compiled again only for the compiler's words.
  const auto code = compiled_code(tree, exercise);
  if (!code) {
    report("compiling");
    const auto compiled = tree.build({entry->library_target}, options.build_seconds);
    result.problem = compiled.timed_out ? "compiling took too long (" + compiled.describe() + ")"
                                        : exercise.file + " does not compile";
    result.build_log = explain_build_failure(compiled.output, tree.exercise_dir());
    fail_all(result, exercise, "not graded: " + exercise.file + " does not compile");
    return pending;
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

  // Default deny: a device-runtime entry point or variable the hooks do not observe is refused
  // before any check runs (the check process's loader refuses it too).
  if (const std::string problem = harness::device_code::refused_device_names_problem(code->ptx); !problem.empty()) {
    result.problem = problem;
    fail_all(result, exercise, "not graded: " + problem);
    return pending;
  }

  report("rules");
  pending.ptx = code->ptx;
  const std::string source_text = files::read_text(entry->source);
  for (auto& item : evaluate_rules(exercise, code->ptx, source_text)) result.items.push_back(item);
  result.items.push_back(finished_item(source_text));

  if (exercise.checks.empty() || !options.gpu_absent.empty()) return pending;  // run_checks skips them
  if (!prebuilt) report("building");
  const fs::path results = results_file_for(exercise, tree);
  // The grading suite, the workbook's host code with the student's device code (and host
  // parts), in the check box where the tree has one. Of the submission's build only the host parts' program
  // is built here; the grading suite is the kit's (a tree without a kit builds its own).
  std::vector<std::string> targets;
  if (!entry->grading_suite_target.empty()) targets.push_back(entry->grading_suite_target);
  const auto suite_built = prebuilt || targets.empty() ? already_built() : tree.build(targets, options.build_seconds);
  if (entry->grading_suite.empty() || !suite_built.ok()) {
    result.problem = entry->grading_suite.empty()
                         ? "this copy of the workbook has no grading suite of " + suite_label(exercise) +
                               " (grading needs solutions/)"
                         : "the grading suite of " + suite_label(exercise) + " could not be built";
    result.build_log = explain_build_failure(suite_built.output);
    fail_all(result, exercise, "not graded: " + result.problem, /*checks_only=*/true);
    return pending;
  }
  CheckProcess& check = pending.check;
  check.suite = entry->grading_suite;
  check.box = tree.check_box();
  check.env["CDPLAB_DEVICE_PTX"] = compiled_ptx_file(tree, exercise).string();
  check.read_only.push_back(beside_tree(tree, "-compiled").string());
  check.writable.push_back(results_dir(tree).string());
  if (!options.baseline_cache.empty()) check.writable.push_back(options.baseline_cache);
  share_linked_code(check, tree, exercise);
  check.scratch = beside_tree(tree, "-scratch");
  check.budgeted = true;
  if (!entry->host_parts_target.empty()) {
    const auto host_parts = prebuilt ? already_built() : tree.build({entry->host_parts_target}, options.build_seconds);
    std::error_code error;
    if (host_parts.ok() && fs::is_regular_file(entry->host_parts, error)) {
      check.host_parts = entry->host_parts;
      check.host_parts_box = tree.host_parts_box();
    } else {
      check.host_parts_problem = "the host parts of " + exercise.file +
                                 " could not be built: keep their names and parameters as the starter gives them" +
                                 (host_parts.output.empty() ? "" : "\n" + explain_build_failure(host_parts.output, tree.exercise_dir()));
    }
  }
  pending.results_file = results;
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
void finish_exercise(Pending& pending, const std::string& token, DeviceSeen* seen) {
  const manifest::Exercise& exercise = *pending.exercise;
  ExerciseResult& result = pending.result;
  std::size_t forged = 0;
  const auto events = token_events(pending, token, &forged);
  if (forged > 0) {
    result.problem = std::to_string(forged) + " line(s) of the results file were not written by the test harness "
                     "(the code under test wrote them?) and were ignored";
  }
  const std::string said = pending.last_output.empty() ? "(the suite was never run)" : pending.last_output;
  for (auto& item : check_items(exercise, events, said)) {
    // A timeline is kept where it was asked for, or where the failed check judges the grids' order.
    const auto spec = std::find_if(exercise.checks.begin(), exercise.checks.end(),
                                   [&](const manifest::CheckSpec& c) { return c.name == item.name; });
    const bool order_failed = spec != exercise.checks.end() && spec->timeline && item.outcome == Outcome::failed;
    if (!pending.keep_timelines && !order_failed) item.timeline = GridTimeline{};
    result.items.push_back(item);
  }
  result.host_parts_output = pending.host_parts_output.size() > kHostPartsOutputBytes
                                 ? pending.host_parts_output.substr(pending.host_parts_output.size() - kHostPartsOutputBytes)
                                 : pending.host_parts_output;
  // Who launched whom, into which streams, as the checks' runs made it: against the lesson's rules.
  judge_launch_edges(exercise, pending.ptx, result.items);
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
                      const std::string& check, const std::string& suffix, const std::string& token,
                      const GradeOptions& options) {
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
  // compute-sanitizer runs the suite: the command line ends with the suite and its arguments.
  return sanitizer::run_check(program, tool, p.check.suite, check, env, limit,
                              [&p](const std::vector<std::string>& argv, const process::Options& o) {
                                const auto at = std::find(argv.begin(), argv.end(), p.check.suite);
                                return run_check_process(p.check, {argv.begin(), at}, {at + 1, argv.end()}, o);
                              });
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
                                ".sanitizer", token, options);
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
                                ".memcheck", token, options);
  });
  for (std::size_t i = 0; i < jobs.size(); ++i) sanitizer::require_clean(*jobs[i].item, found[i]);
}

/// Whether a check is a speed check, which always has a process of its own (a warm one times
/// differently).
bool is_speed(const CheckRun& check) { return is_speed_check(check.name); }

/// The checks of an exercise, from its manifest and its suite's source (which says whether the
/// suite runs alone: it is the grader's, in the project, never the submission's).
std::vector<CheckRun> check_runs(const manifest::Exercise& exercise, const fs::path& project_root) {
  const fs::path suite = project_root / "grader" / "suites" / exercise.chapter / (exercise.stem + "_test.cpp");
  std::istringstream source(files::read_text(suite));
  bool suite_alone = false;
  for (std::string line; std::getline(source, line);) suite_alone = suite_alone || line.rfind("CDPLAB_SUITE_RUNS_ALONE", 0) == 0;
  std::vector<CheckRun> runs;
  for (const auto& check : exercise.checks) runs.push_back({check.name, suite_alone || is_speed_check(check.name)});
  return runs;
}

/// Runs checks of `p`'s suite in one process of its own: with `shared`, the suite's shared-process
/// mode (shared_process.h). Keeps the end of what it printed for checks that leave no trace.
void run_checks_in_process(Pending& p, const std::vector<std::string>& checks, const std::map<std::string, std::string>& env,
                           const GradeOptions& options, bool shared, std::mutex& output_mutex,
                           const StartGate* gate = nullptr) {
  process::Options o;
  o.env = env;
  if (shared) o.env["CDPLAB_SHARED_PROCESS"] = "1";
  // The suite's watchdog ends a check at its limit; this one backs it up.
  o.timeout_seconds = (options.check_seconds + 15) * static_cast<double>(checks.size()) + 30;
  std::string printed;
  const auto ran = run_check_process(p.check, {}, {"--test-case=" + test_case_filter(checks)}, o, gate, &printed);
  std::lock_guard<std::mutex> lock(output_mutex);
  p.host_parts_output += printed;
  p.last_output = (ran.started ? files::last_lines(ran.output, 15) : "the suite could not be started\n") + "(" + ran.describe() + ")";
}

/// Runs the checks of each suite that `grouped` picks in one process per suite (shared_process.h),
/// `jobs` processes at a time: two checks or more. A shared process that ended after checks that
/// all passed (the last one changed the device's limits: most suites that end one so change them
/// in most checks) leaves the checks it never started to a process each, queued as soon as it
/// ends, beside the other suites' processes still running.
void run_shared_processes(const std::vector<Pending*>& runs, const std::map<std::string, std::string>& env,
                          const GradeOptions& options, const std::function<bool(const CheckRun&)>& grouped, int jobs,
                          std::mutex& output_mutex) {
  const std::string token = env.at("CDPLAB_RESULTS_TOKEN");
  // The checks of `p` that `grouped` picks, but for those named in `done`.
  const auto checks_of = [&](const Pending& p, const std::set<std::string>& done) {
    std::vector<std::string> checks;
    for (const auto& check : p.checks)
      if (grouped(check) && done.count(check.name) == 0) checks.push_back(check.name);
    return checks;
  };
  // After a suite's shared process: its unstarted checks, a process each, when it ended after
  // checks that all passed. One that failed, hung or crashed, or never started a check, leaves
  // them to the run alone: a broken suite is not run twice.
  const auto leftovers = [&](Pending& p) {
    std::vector<Job> singles;
    const auto events = token_events(p, token);
    const auto settled = settled_checks(*p.exercise, events);
    auto started = started_checks(events);
    const bool all_passed = std::all_of(started.begin(), started.end(), [&](const auto& c) { return settled.count(c) > 0; });
    if (started.empty() || !all_passed) return singles;
    started.insert(settled.begin(), settled.end());
    for (const auto& check : checks_of(p, started))
      singles.push_back({[&, check, pending = &p] {
        run_checks_in_process(*pending, {check}, env, options, /*shared=*/false, output_mutex);
        return std::vector<Job>{};
      }});
    return singles;
  };
  std::vector<Job> shared;
  for (auto* p : runs) {
    const auto checks = checks_of(*p, settled_checks(*p->exercise, token_events(*p, token)));
    if (checks.size() < 2) continue;
    shared.push_back({[&, p, checks] {
      run_checks_in_process(*p, checks, env, options, /*shared=*/true, output_mutex);
      return leftovers(*p);
    }});
  }
  run_work_list(std::move(shared), jobs);
}

/// Runs each check of `runs` that `selected` picks and no earlier process settled in a process of
/// its own, `jobs` at a time.
void run_single_processes(const std::vector<Pending*>& runs, const std::map<std::string, std::string>& env,
                          const GradeOptions& options, const std::function<bool(const CheckRun&)>& selected, int jobs,
                          std::mutex& output_mutex) {
  const std::string token = env.at("CDPLAB_RESULTS_TOKEN");
  std::vector<std::pair<Pending*, std::string>> singles;
  for (auto* p : runs) {
    const auto settled = settled_checks(*p->exercise, token_events(*p, token));
    for (const auto& check : p->checks)
      if (selected(check) && settled.count(check.name) == 0) singles.emplace_back(p, check.name);
  }
  parallel_for(singles.size(), jobs, [&](std::size_t i) {
    run_checks_in_process(*singles[i].first, {singles[i].second}, env, options, /*shared=*/false, output_mutex);
  });
}

/// The processes of the checks that need the GPU alone, started ahead of that turn: each starts
/// up (CUDA, the device code's link and load) beside the checks that share the GPU, and waits at
/// its gate (StartGate). In the turn alone their gates open one at a time, each once the process
/// before it has ended: a process per suite for the checks of suites that run alone, and one per
/// speed check. Gates never opened are closed at the end, and their processes run nothing.
class StartedAhead {
 public:
  /// `scratch`: where the gates' folders are made (the grader's, outside every box).
  StartedAhead(const std::vector<Pending*>& runs, const std::map<std::string, std::string>& env,
               const GradeOptions& options, std::mutex& output_mutex, const fs::path& scratch)
      : scratch_(scratch) {
    try {
      for (auto* p : runs) {
        std::vector<std::string> alone;
        for (const auto& check : p->checks)
          if (check.alone && !is_speed(check)) alone.push_back(check.name);
        if (!alone.empty()) start(*p, alone, /*shared=*/alone.size() > 1, env, options, output_mutex);
        for (const auto& check : p->checks)
          if (is_speed(check)) start(*p, {check.name}, /*shared=*/false, env, options, output_mutex);
      }
    } catch (...) {
      close_the_rest();
      throw;
    }
  }
  StartedAhead(const StartedAhead&) = delete;
  StartedAhead& operator=(const StartedAhead&) = delete;
  ~StartedAhead() { close_the_rest(); }

  /// Waits until every process has started up (it waits at its gate) or ended, for at most
  /// `seconds` in all: their start-ups (CUDA, the device code's load) stay out of every turn alone.
  void wait_until_started(double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (std::size_t i = 0; i < gates_.size(); ++i)
      while (!gates_[i]->ready() && !ended_[i]->load() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }

  /// Opens the gates one at a time, each once the process before it has ended. A gate that
  /// cannot be opened is closed: its process ends without a check, and its checks run again
  /// alone, each in a process of its own.
  void run_one_at_a_time() {
    for (std::size_t i = 0; i < waiting_.size(); ++i) {
      if (!gates_[i]->open()) gates_[i]->close();
      waiting_[i].join();
    }
  }

 private:
  void start(Pending& p, const std::vector<std::string>& checks, bool shared,
             const std::map<std::string, std::string>& env, const GradeOptions& options, std::mutex& output_mutex) {
    gates_.push_back(std::make_unique<StartGate>(scratch_));
    ended_.push_back(std::make_unique<std::atomic<bool>>(false));
    const StartGate* gate = gates_.back().get();
    std::atomic<bool>* ended = ended_.back().get();
    waiting_.emplace_back([&p, checks, shared, &env, &options, &output_mutex, gate, ended] {
      try {
        run_checks_in_process(p, checks, env, options, shared, output_mutex, gate);
      } catch (const std::exception& error) {  // its checks stay unsettled: they run again, alone
        std::lock_guard<std::mutex> lock(output_mutex);
        p.last_output = std::string("the suite could not be run: ") + error.what();
      }
      ended->store(true);
    });
  }
  /// Closes every gate not opened yet, then waits for their processes to end.
  void close_the_rest() {
    for (std::size_t i = 0; i < waiting_.size(); ++i)
      if (waiting_[i].joinable()) gates_[i]->close();
    for (auto& thread : waiting_)
      if (thread.joinable()) thread.join();
  }
  fs::path scratch_;
  std::vector<std::unique_ptr<StartGate>> gates_;
  std::vector<std::unique_ptr<std::atomic<bool>>> ended_;  // each process has ended
  std::vector<std::thread> waiting_;
};

/// Whether an exercise has a speed check: its suite times the check's baseline, which needs the
/// GPU alone unless the class's cache holds it already.
bool times_the_gpu(const manifest::Exercise& exercise) {
  for (const auto& check : exercise.checks)
    if (is_speed_check(check.name)) return true;
  return false;
}

/// Runs the checks of every pending exercise and finishes each. Checks that may run beside others
/// go first: a process per suite (run_shared_processes), several at a time, with a shared turn
/// of the GPU, while the processes of the checks that need the GPU alone start up beside them
/// (StartedAhead: a process per suite that runs alone, one per speed check); then, with the GPU
/// alone, those run one at a time, and every check still unsettled runs in a process of its own.
void run_checks(std::vector<Pending>& pendings, const BuildTree& tree, const GradeOptions& options,
                DeviceSeen* seen, Phases* phases) {
  PhaseClock clock(phases);
  if (!options.gpu_absent.empty()) {  // no suite was built (build_all): every check is skipped
    const std::string reason = skipped_without_gpu(options.gpu_absent);
    for (auto& p : pendings) {
      if (!p.result.problem.empty()) continue;
      std::vector<CheckEvent> events;
      for (const auto& check : p.exercise->checks) {
        CheckEvent skipped;
        skipped.event = "skipped";
        skipped.check = check.name;
        skipped.reason = reason;
        events.push_back(skipped);
      }
      for (auto& item : check_items(*p.exercise, events, "")) p.result.items.push_back(item);
    }
    if (seen != nullptr && seen->gpu_problem.empty()) seen->gpu_problem = reason;
    return;
  }
  std::vector<Pending*> runs;
  for (auto& p : pendings) {
    if (p.check.suite.empty()) continue;
    p.checks = check_runs(*p.exercise, tree.project_root());
    runs.push_back(&p);
    if (options.progress) options.progress(*p.exercise, "checks");
  }
  if (runs.empty()) return;
  const std::string token = std::to_string(fresh_seed());
  auto env = check_environment(options, (results_dir(tree) / "{suite}.jsonl").string(), token);
  if (!options.baseline_cache.empty()) env["CDPLAB_BASELINE_CACHE"] = options.baseline_cache;
  std::vector<const manifest::Exercise*> checked;
  for (const auto* p : runs) checked.push_back(p->exercise);
  if (const std::string recorded = recorded_checks(checked); !recorded.empty()) env["CDPLAB_RECORDED_CHECKS"] = recorded;
  std::mutex output_mutex;
  clock.lap("checks beside others");
  std::optional<StartedAhead> ahead;
  if (options.shared_processes) {
    SharedTurn turn(options.gpu_turns);
    clock.lap(kWaitingForTheGpu);
    ahead.emplace(runs, env, options, output_mutex, beside_tree(tree, "-scratch"));
    // A shared process ends after a check that fails or changes the device's limits: after the
    // latter, the checks it never started run here too, beside others, a process each.
    run_shared_processes(runs, env, options, [](const CheckRun& c) { return !c.alone; }, options.check_jobs,
                         output_mutex);
    // The shared turn lasts until they have started up: no start-up runs in anyone's turn alone.
    ahead->wait_until_started(options.check_seconds);
    clock.lap("checks beside others");
  }
  {
    AloneTurn turn(options.gpu_turns);
    clock.lap(kWaitingForTheGpu);
    if (ahead) ahead->run_one_at_a_time();
    // What no process before settled: a process each, those that may share the GPU several at a
    // time, the others one after another.
    run_single_processes(runs, env, options, [](const CheckRun& c) { return !c.alone; }, options.check_jobs,
                         output_mutex);
    run_single_processes(runs, env, options, [](const CheckRun& c) { return c.alone; }, 1, output_mutex);
    clock.lap("checks with the GPU alone");
  }
  for (auto* p : runs) finish_exercise(*p, token, seen);
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
  std::vector<std::string> suites;
  for (const auto* exercise : exercises) {
    if (exercise->is_quiz() || !times_the_gpu(*exercise)) continue;
    const auto entry = tree.find(exercise->chapter, exercise->stem);
    std::error_code error;
    // The kit's grading suite, built before any submission; one this tree builds is not there yet.
    if (entry && entry->grading_suite_target.empty() && fs::is_regular_file(entry->grading_suite, error))
      suites.push_back(entry->grading_suite);
  }
  // The baselines are the grader's own code: the suite runs them alone, outside any box.
  process::Options o;
  o.env = options.env;
  o.env["CDPLAB_BASELINE_CACHE"] = options.baseline_cache;
  o.env["CDPLAB_SEED"] = std::to_string(options.seed);
  o.env["CDPLAB_BASELINE_CACHE_ONLY"] = "1";
  o.timeout_seconds = 120;
  for (const auto& suite : suites) {
    // First without a turn: a cache that holds every baseline already answers at once.
    if (process::run({suite, "--time-baselines"}, o).exit_code != kBaselineNotCached) continue;
    AloneTurn turn(options.gpu_turns);
    process::Options timing = o;
    timing.env.erase("CDPLAB_BASELINE_CACHE_ONLY");
    process::run({suite, "--time-baselines"}, timing);
  }
  return static_cast<int>(suites.size());
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
  }
  if (compiled.empty()) return true;
  const std::string building =
      compiled.size() == 1 ? "building" : "building (" + std::to_string(compiled.size()) + " exercises in one build)";
  for (const auto& c : compiled)
    if (options.progress) options.progress(*c.exercise, building);
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
  for (std::size_t i = 0; i < compiled.size() && options.gpu_absent.empty(); ++i) {
    const auto& c = compiled[i];
    if (!built[i] || c.exercise->checks.empty()) continue;
    // The host parts' program from the student's file, and a grading suite this tree
    // builds itself (no grading kit; not part of ALL). Nothing else of the student's is built.
    if (!c.entry.host_parts_target.empty()) suite_targets.push_back(c.entry.host_parts_target);
    if (!c.entry.grading_suite_target.empty()) suite_targets.push_back(c.entry.grading_suite_target);
  }
  // Then the rest: building a suite runs it to list its checks.
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
      !options.built &&
      std::any_of(exercises.begin(), exercises.end(), [](const auto* e) { return times_the_gpu(*e); });
  files::RemovedAtEnd own_cache;  // the grading's own cache goes with it, whatever ends the grading
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
    baselines.wait();  // a baseline that failed to time is timed again by its speed check
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
