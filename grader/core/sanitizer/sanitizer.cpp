#include "sanitizer/sanitizer.h"

#include "process/process.h"

#include <filesystem>
#include <sstream>

namespace cdplab::sanitizer {
namespace {

constexpr int kErrorExit = 86;  // what compute-sanitizer returns when it found something

// The item of `tool`, worth no points, with no outcome yet.
grading::Item item_of(const Tool& tool) {
  grading::Item item;
  item.kind = grading::ItemKind::check;
  item.name = "compute-sanitizer " + tool.name;
  item.max_points = 0;
  return item;
}

}  // namespace

const std::vector<Tool>& tools() {
  // No racecheck: compute-sanitizer (CUDA 13.0) refuses programs that launch from device code
  // ("CUDA Dynamic Parallelism is not supported by the selected tool", seen on an H100), and
  // every suite of this workbook does. It would only ever report that it could not check.
  // No API-error reports: every runtime call's result is the checks' business already (each is
  // checked and judged by the suites), and some checks provoke errors on purpose (the host's
  // cudaFree of a device-heap pointer, raising the heap after it was used), which memcheck would
  // count against a correct submission. Faulty memory accesses and leaks are still reported.
  // The fallback: memcheck's checking of the device heap (cudaMalloc in device code) can take
  // minutes where the check alone takes a second. Measured on an H100 (CUDA 13.0): 10,000 device
  // allocations of seed-dependent sizes did not finish in 200 s with it, and took 4 s with
  // --check-device-heap no; with other seeds they took 2 s either way.
  static const std::vector<Tool> list = {
      {"memcheck",
       {"--tool", "memcheck", "--leak-check", "full", "--report-api-errors", "no"},
       {"--check-device-heap", "no"},
       "accesses to and leaks of memory allocated in device code were not checked"},
  };
  return list;
}

const Tool& graded_memcheck() {
  static const Tool tool{"memcheck", tools().front().args, {}, ""};
  return tool;
}

void require_clean(grading::Item& check, const grading::Item& found) {
  if (found.outcome == grading::Outcome::passed) {
    check.feedback += std::string(check.feedback.empty() ? "" : "\n") +
                      "compute-sanitizer memcheck found no invalid memory access in its run";
    return;
  }
  check.points = 0;
  if (found.outcome == grading::Outcome::skipped) {
    check.outcome = grading::Outcome::skipped;
    check.feedback = "its results were right, but this check also runs under compute-sanitizer memcheck, which "
                     "could not tell: " + found.feedback;
    return;
  }
  check.outcome = grading::Outcome::failed;
  // item_from_output's findings: every line after its first, which says they earn no points.
  const auto first_line_end = found.feedback.find('\n');
  const std::string findings = first_line_end == std::string::npos ? found.feedback : found.feedback.substr(first_line_end + 1);
  check.feedback = "its results were right, but compute-sanitizer memcheck found invalid memory accesses (or "
                   "memory never freed) in its run: a write past the end of a buffer lands in memory that no "
                   "output shows, until it overwrites something that matters.\n" + findings;
}

grading::Item skipped_item(const Tool& tool, const std::string& why) {
  grading::Item item = item_of(tool);
  item.outcome = grading::Outcome::skipped;
  item.feedback = why;
  return item;
}

grading::Item item_from_output(const Tool& tool, const std::string& output, int exit_code, bool timed_out,
                               std::size_t max_lines) {
  grading::Item item = item_of(tool);
  if (timed_out) {
    item.feedback = "compute-sanitizer " + tool.name + " did not finish in time (it slows kernels down many times), "
                    "so it reported nothing";
    item.outcome = grading::Outcome::skipped;
    return item;
  }
  // The tool's own lines start with "========="; the summary line says how many errors:
  // "ERROR SUMMARY: 0 errors" (memcheck) or "RACECHECK SUMMARY: 0 hazards displayed (0 errors,
  // 0 warnings)" (racecheck).
  std::vector<std::string> findings;
  bool clean_summary = false;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("=========", 0) != 0) continue;
    if (line.find("is not supported by the selected tool") != std::string::npos) {
      item.outcome = grading::Outcome::skipped;
      item.feedback = "compute-sanitizer " + tool.name + " cannot check this program:" + line.substr(9);
      return item;
    }
    if (line.find("ERROR SUMMARY: 0 errors") != std::string::npos ||
        (line.find("RACECHECK SUMMARY:") != std::string::npos && line.find("(0 errors") != std::string::npos)) {
      clean_summary = true;
      continue;
    }
    if (line.find("COMPUTE-SANITIZER") != std::string::npos) continue;  // the banner
    findings.push_back(line);
  }
  // A clean summary passes even when the program itself failed (exit status 1): its checks are
  // graded in the run without the tools, and this item is about the tools' findings only.
  if (clean_summary && exit_code != kErrorExit) {
    item.outcome = grading::Outcome::passed;
    return item;
  }
  item.outcome = grading::Outcome::failed;
  std::string text;
  for (std::size_t i = 0; i < findings.size() && i < max_lines; ++i) text += findings[i] + "\n";
  if (findings.size() > max_lines)
    text += "... (" + std::to_string(findings.size() - max_lines) + " more lines)\n";
  if (text.empty()) {
    text = "compute-sanitizer " + tool.name + " ended with exit status " + std::to_string(exit_code) +
           " and printed no findings";
  }
  item.feedback = "compute-sanitizer " + tool.name + " found problems (worth no points, but worth fixing):\n" + text;
  return item;
}

grading::Item run_check(const std::string& sanitizer, const Tool& tool, const std::string& suite,
                        const std::string& check, const std::map<std::string, std::string>& env, double seconds,
                        const CommandRunner& run) {
  auto run_with = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {sanitizer};
    argv.insert(argv.end(), tool.args.begin(), tool.args.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {"--error-exitcode", std::to_string(kErrorExit), "--print-limit", "20", suite,
                             "--test-case=" + check});
    process::Options options;
    options.env = env;
    options.timeout_seconds = seconds;
    return run ? run(argv, options) : process::run(argv, options);
  };
  const auto ran = run_with({});
  const bool box_could_not_start_it =  // bwrap's own words when the program is missing in the box
      ran.output.find("bwrap: execvp") != std::string::npos && ran.output.find("=========") == std::string::npos;
  if (!ran.started || box_could_not_start_it ||
      (ran.exit_code == 127 && ran.output.find("=========") == std::string::npos))
    return skipped_item(tool, "compute-sanitizer could not be started (" + sanitizer + ")");
  if (!ran.timed_out || tool.fallback_args.empty()) return item_from_output(tool, ran.output, ran.exit_code, ran.timed_out);

  const auto again = run_with(tool.fallback_args);
  std::string options;
  for (const auto& arg : tool.fallback_args) options += (options.empty() ? "" : " ") + arg;
  const std::string limit = std::to_string(static_cast<long>(seconds)) + " s";
  grading::Item item = item_from_output(tool, again.output, again.exit_code, again.timed_out);
  const std::string note = "compute-sanitizer " + tool.name + " did not finish in " + limit + "; run again with " +
                           options + ", " + (again.timed_out ? "it did not finish either" : "it finished") + " (" +
                           tool.fallback_leaves_out + ")";
  item.feedback = item.feedback.empty() ? note : note + ":\n" + item.feedback;
  return item;
}

grading::Item merge(const Tool& tool, const std::vector<std::pair<std::string, grading::Item>>& per_check) {
  grading::Item item = skipped_item(tool, "");
  std::string failures;
  std::string notes;  // why checks were skipped, and what passed ones say about their run
  std::string skip_reason;
  // Adds "check "<name>": <text>" as a line of `to`.
  auto add_line = [](std::string& to, const std::string& check, const std::string& text) {
    to += (to.empty() ? "" : "\n") + std::string("check \"") + check + "\": " + text;
  };
  for (const auto& [check, one] : per_check) {
    if (one.outcome == grading::Outcome::failed) {
      item.outcome = grading::Outcome::failed;
      add_line(failures, check, one.feedback);
      continue;
    }
    if (one.outcome == grading::Outcome::passed && item.outcome == grading::Outcome::skipped)
      item.outcome = grading::Outcome::passed;
    if (one.outcome == grading::Outcome::skipped && skip_reason.empty()) skip_reason = one.feedback;
    if (!one.feedback.empty()) add_line(notes, check, one.feedback);
  }
  if (item.outcome == grading::Outcome::failed) item.feedback = failures;
  else if (item.outcome == grading::Outcome::passed) item.feedback = notes;
  else item.feedback = skip_reason.empty() ? "no check ran" : skip_reason;
  return item;
}

std::string find_sanitizer(const std::string& nvcc) {
  if (!nvcc.empty()) {
    const auto beside = std::filesystem::path(nvcc).parent_path() / "compute-sanitizer";
    if (std::filesystem::exists(beside)) return beside.string();
  }
  return "compute-sanitizer";
}

}  // namespace cdplab::sanitizer
