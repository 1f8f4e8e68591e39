// Graded speed checks: the workload registry, the timed runs, and the reference twin run as a
// child process (see speed.h).
#include "speed.h"
#include "suite_identity.h"

#include "harness.h"
#include "launch_delay.h"
#include "observe.h"
#include "results_log.h"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <sstream>
#include <stdexcept>

namespace cdplab::harness {

namespace {

/// Timed runs of each side, after one warm-up; fewer when the runs of one side take longer than
/// kSideBudgetSeconds together (a slow exercise fails the ratio by far anyway).
constexpr int kWarmups = 1;
constexpr int kRuns = 5;
constexpr double kSideBudgetSeconds = 6.0;
/// The reference twin is stopped after this long (its own time, all runs).
constexpr double kReferenceLimitSeconds = 15.0;

std::map<std::string, TimedRun>& workloads() {
  static std::map<std::string, TimedRun> registry;
  return registry;
}

TimedRun find_workload(const std::string& name) {
  const auto it = workloads().find(name);
  if (it == workloads().end()) throw std::invalid_argument("no speed workload named \"" + name + "\" in this suite");
  return it->second;
}

/// The best (shortest) time: other work on the GPU or the host only ever adds time, so the
/// shortest run is the one nearest the code's own speed, on either side.
double best(const std::vector<double>& values) {
  return values.empty() ? 0.0 : *std::min_element(values.begin(), values.end());
}

std::string ms_text(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", ms);
  return text;
}

/// What the reference twin printed: its times, or why it gave none.
struct TwinResult {
  std::vector<double> ms;
  std::string problem;  ///< empty when the twin ran every run
};

extern "C" char** environ;

/// The environment of the reference's process: this one's, without the results file (the twin's
/// lines are read here, never graded) and without the observation folders (it times in direct
/// mode). A judge, which runs with the GPU hidden (CUDA_VISIBLE_DEVICES empty), gives the twin
/// the devices CDPLAB_JUDGE_GPUS names, or all of them when it is not set.
std::vector<std::string> reference_environment() {
  const bool judging = observe_mode() == ObserveMode::judge;
  const char* judge_gpus = std::getenv("CDPLAB_JUDGE_GPUS");
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string name = text.substr(0, text.find('='));
    if (name == "CDPLAB_RESULTS_FILE" || name == "CDPLAB_OBSERVATIONS_DIR" || name == "CDPLAB_JUDGE_DIR" ||
        name == "CDPLAB_JUDGE_GPUS")
      continue;
    if (judging && name == "CUDA_VISIBLE_DEVICES") continue;
    env.push_back(text);
  }
  if (judging && judge_gpus != nullptr) env.push_back(std::string("CUDA_VISIBLE_DEVICES=") + judge_gpus);
  return env;
}

/// This process's executable: a judge is the reference build, and times itself.
std::string own_executable() {
  char path[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) return "/proc/self/exe";
  path[length] = '\0';
  return path;
}

/// Runs the reference twin on workload `name` and reads its "speed-ms" lines. The child dies
/// with this process (PR_SET_PDEATHSIG), so a check stopped by the watchdog leaves nothing behind.
TwinResult run_reference_twin(const std::string& path, const std::string& name) {
  TwinResult result;
  // Made before the fork: the child only calls what is safe between fork and exec.
  const std::vector<std::string> env = reference_environment();
  std::vector<char*> envp;
  for (const std::string& entry : env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    result.problem = std::string("cannot make a pipe: ") + std::strerror(errno);
    return result;
  }
  const std::string runs = std::to_string(kRuns);
  const std::string warmups = std::to_string(kWarmups);
  const pid_t pid = fork();
  if (pid < 0) {
    result.problem = std::string("cannot start the reference: ") + std::strerror(errno);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return result;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    const char* argv[] = {path.c_str(), "--speed-workload", name.c_str(), "--runs", runs.c_str(),
                          "--warmups", warmups.c_str(), nullptr};
    execve(path.c_str(), const_cast<char* const*>(argv), envp.data());
    std::fprintf(stderr, "speed-error cannot run %s: %s\n", path.c_str(), std::strerror(errno));
    _exit(127);
  }
  close(pipe_fds[1]);

  std::string output;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kReferenceLimitSeconds);
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fd{pipe_fds[0], POLLIN, 0};
    if (poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;
    char buffer[4096];
    const ssize_t got = read(pipe_fds[0], buffer, sizeof buffer);
    if (got <= 0) break;
    if (output.size() < (1u << 16)) output.append(buffer, static_cast<std::size_t>(got));
  }
  close(pipe_fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);

  std::istringstream lines(output);
  std::string errors;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("speed-ms ", 0) == 0) result.ms.push_back(std::atof(line.c_str() + 9));
    if (line.rfind("speed-error ", 0) == 0) errors += (errors.empty() ? "" : "; ") + line.substr(12);
  }
  if (timed_out) {
    result.problem = "the reference did not finish within " + std::to_string(static_cast<int>(kReferenceLimitSeconds)) + " s";
  } else if (!errors.empty()) {
    result.problem = errors;
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || result.ms.empty()) {
    result.problem = "the reference ended without its times (exit status " +
                     std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")";
  }
  return result;
}

}  // namespace

SpeedWorkload::SpeedWorkload(const char* name, TimedRun run) { workloads()[name] = run; }

Random speed_rng(const std::string& name) { return Random(run_seed() ^ hash_name(name.c_str())).derive(1); }

std::vector<double> time_workload(const std::string& name, int warmups, int runs) {
  const TimedRun timed_run = find_workload(name);
  set_check_launch_delay(false);  // timed as it runs, not as a check perturbs it
  for (int run = 0; run < warmups; ++run) {
    Random rng = speed_rng(name);
    timed_run(rng, /*judge=*/false);
  }
  std::vector<double> times;
  const auto start = std::chrono::steady_clock::now();
  for (int run = 0; run < runs; ++run) {
    Random rng = speed_rng(name);
    times.push_back(timed_run(rng, /*judge=*/run == 0));
    const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
    if (spent.count() > kSideBudgetSeconds) break;
  }
  return times;
}

namespace {

/// The verdict of a speed check: this build's times (`mine`) against the reference's.
void compare_with_reference(const char* name, const std::vector<double>& mine, const TwinResult& twin,
                            double max_ratio) {
  const double mine_ms = best(mine);
  const double reference_ms = best(twin.ms);
  const double ratio = reference_ms > 0.0 ? mine_ms / reference_ms : 0.0;
  char ratio_text[32];
  std::snprintf(ratio_text, sizeof ratio_text, "%.2f", ratio);
  char limit_text[32];
  std::snprintf(limit_text, sizeof limit_text, "%.1f", max_ratio);
  const std::string figures = std::string("\"") + name + "\": your code " + ms_text(mine_ms) + " (best of " +
                              std::to_string(mine.size()) + " runs), the reference solution " +
                              ms_text(reference_ms) + " (best of " + std::to_string(twin.ms.size()) +
                              " runs), device time of the call, same GPU and inputs; ratio " + ratio_text +
                              " (at most " + limit_text + " passes)";
  ResultsLog::note(figures);
  CHECK_MESSAGE(ratio <= max_ratio, figures);
}

void fail_reference(const char* name, const TwinResult& twin) {
  FAIL("the grader could not time the reference solution on \"" << std::string(name) << "\": " << twin.problem
                                                                 << " (a problem of the grader, not of your code)");
}

}  // namespace

void expect_speed(const char* name, double max_ratio) {
  find_workload(name);  // a misspelt name is the suite's error, not the student's
  if (skip_under_sanitizer("its tools slow kernels down many times, so timings mean nothing there")) return;
  const ObserveMode mode = observe_mode();
  if (mode != ObserveMode::direct) {
    // Record: the student's process times its own code only, and records the times. Judge: the
    // recorded times, then the reference timed by this process's own executable (a judge is the
    // reference build) with the GPU, compared as in direct mode.
    const std::vector<double> mine =
        observed(std::string("speed ") + name, [&] { return time_workload(name, kWarmups, kRuns); });
    if (mode == ObserveMode::record) {
      ResultsLog::note(std::string("\"") + name + "\": your code " + ms_text(best(mine)) + " (best of " +
                       std::to_string(mine.size()) +
                       " runs), device time of the call; the grader times the reference solution and compares");
      return;
    }
    const bool valid = !mine.empty() && std::all_of(mine.begin(), mine.end(), [](double ms) {
      return std::isfinite(ms) && ms >= 0.0;
    });
    REQUIRE_MESSAGE(valid, "the run's record of this check does not match its steps: it holds no valid times for \""
                               << std::string(name) << "\"");
    const TwinResult twin = run_reference_twin(own_executable(), name);
    if (!twin.problem.empty()) fail_reference(name, twin);
    compare_with_reference(name, mine, twin, max_ratio);
    return;
  }
  const std::string reference = reference_suite_path();
  if (reference.empty()) {
    ResultsLog::skip_running_check(
        "a speed check compares this exercise with the reference solution, and this copy of the workbook has "
        "no reference build (no solutions/ folder): the check runs when the course grades your work");
    return;
  }
  // The reference first: nothing of the exercise under test has run on the GPU yet.
  const TwinResult twin = run_reference_twin(reference, name);
  if (!twin.problem.empty()) fail_reference(name, twin);
  compare_with_reference(name, time_workload(name, kWarmups, kRuns), twin, max_ratio);
}

int run_speed_workload_mode(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::string name;
  int runs = kRuns;
  int warmups = kWarmups;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string option = argv[i];
    if (option == "--speed-workload") name = argv[i + 1];
    else if (option == "--runs") runs = std::max(1, std::atoi(argv[i + 1]));
    else if (option == "--warmups") warmups = std::max(0, std::atoi(argv[i + 1]));
  }
  try {
    for (const double ms : time_workload(name, warmups, runs)) std::printf("speed-ms %.6f\n", ms);
    return 0;
  } catch (const std::exception& e) {
    std::string message = e.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    std::printf("speed-error %s\n", message.c_str());
    return 1;
  }
}

}  // namespace cdplab::harness
