// Graded speed checks: the workload and baseline registries, the timed runs, and the baseline
// run in a child process (see speed.h).
#include "speed.h"

#include "harness.h"
#include "check_perturbations.h"
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
#include <cctype>
#include <climits>
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
/// The baseline's child process is stopped after this long (its own time, all runs).
constexpr double kBaselineLimitSeconds = 15.0;

std::map<std::string, TimedRun>& workloads() {
  static std::map<std::string, TimedRun> registry;
  return registry;
}

struct Baseline {
  TimedRun run = nullptr;
  std::string what;
};

std::map<std::string, Baseline>& baselines() {
  static std::map<std::string, Baseline> registry;
  return registry;
}

TimedRun find_workload(const std::string& name) {
  const auto it = workloads().find(name);
  if (it == workloads().end()) throw std::invalid_argument("no speed workload named \"" + name + "\" in this suite");
  return it->second;
}

const Baseline& find_baseline(const std::string& name) {
  const auto it = baselines().find(name);
  if (it == baselines().end()) throw std::invalid_argument("no speed baseline for the workload \"" + name + "\" in this suite");
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

/// What the baseline's process printed: its times, or why it gave none.
struct BaselineResult {
  std::vector<double> ms;
  std::string problem;  ///< empty when it ran every run
};

extern "C" char** environ;

/// The environment of the baseline's process: this one's (the same GPUs), without the results
/// file, whose lines it must not write: its times are read here, never graded.
std::vector<std::string> baseline_environment() {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (text.substr(0, text.find('=')) == "CDPLAB_RESULTS_FILE") continue;
    env.push_back(text);
  }
  return env;
}

/// This process's executable, which holds the baselines of its suite.
std::string own_executable() {
  char path[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) return "/proc/self/exe";
  path[length] = '\0';
  return path;
}

/// Runs the baseline of workload `name` in a child process of this executable and reads its
/// "speed-ms" lines: a process of its own, so that nothing the exercise left on the GPU or in the
/// process slows it down. The child dies with this process (PR_SET_PDEATHSIG), so a check
/// stopped by the watchdog leaves nothing behind.
BaselineResult run_baseline(const std::string& name) {
  BaselineResult result;
  const std::string path = own_executable();
  // Made before the fork: the child only calls what is safe between fork and exec.
  const std::vector<std::string> env = baseline_environment();
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
    result.problem = std::string("cannot start the baseline: ") + std::strerror(errno);
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
    const char* argv[] = {path.c_str(), "--speed-workload", name.c_str(), "--baseline", "--runs", runs.c_str(),
                          "--warmups", warmups.c_str(), nullptr};
    execve(path.c_str(), const_cast<char* const*>(argv), envp.data());
    std::fprintf(stderr, "speed-error cannot run %s: %s\n", path.c_str(), std::strerror(errno));
    _exit(127);
  }
  close(pipe_fds[1]);

  std::string output;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kBaselineLimitSeconds);
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
    result.problem = "the baseline did not finish within " + std::to_string(static_cast<int>(kBaselineLimitSeconds)) + " s";
  } else if (!errors.empty()) {
    result.problem = errors;
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || result.ms.empty()) {
    result.problem = "the baseline ended without its times (exit status " +
                     std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")";
  }
  return result;
}

/// The folder of the baseline cache (CDPLAB_BASELINE_CACHE), or nullptr when there is none.
const char* baseline_cache() {
  const char* folder = std::getenv("CDPLAB_BASELINE_CACHE");
  return folder != nullptr && *folder != '\0' ? folder : nullptr;
}

/// The baseline's times, from the cache when there is one (CDPLAB_BASELINE_CACHE: a folder the
/// grader makes for one grading): timed once per GPU (CUDA_VISIBLE_DEVICES, "all" when it is not
/// set) and workload, then reused by every submission graded on that GPU in the same grading. With
/// CDPLAB_BASELINE_CACHE_ONLY=1 a baseline missing from it ends the process (kBaselineNotCached)
/// before anything is timed. Without a cache the baseline is timed now.
BaselineResult cached_baseline(const std::string& name) {
  const char* folder = baseline_cache();
  if (folder == nullptr) return run_baseline(name);
  const char* gpus = std::getenv("CUDA_VISIBLE_DEVICES");
  std::string key = name + ".gpu-" + (gpus != nullptr ? gpus : "all");
  for (char& c : key)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
  const std::string file = std::string(folder) + "/" + key + ".ms";
  BaselineResult cached;
  if (std::FILE* in = std::fopen(file.c_str(), "r")) {
    for (double ms = 0; std::fscanf(in, "%lf", &ms) == 1;) cached.ms.push_back(ms);
    std::fclose(in);
    if (!cached.ms.empty()) return cached;
  }
  if (const char* only = std::getenv("CDPLAB_BASELINE_CACHE_ONLY"); only != nullptr && std::string(only) == "1") {
    // Beside other work on the GPU nothing is timed: the grader runs this process again alone.
    std::fflush(nullptr);
    std::_Exit(kBaselineNotCached);
  }
  BaselineResult fresh = run_baseline(name);
  if (!fresh.problem.empty()) return fresh;
  const std::string temporary = file + "." + std::to_string(getpid());
  if (std::FILE* out = std::fopen(temporary.c_str(), "w")) {
    for (const double ms : fresh.ms) std::fprintf(out, "%.17g\n", ms);
    const bool written = std::fclose(out) == 0;
    if (!written || std::rename(temporary.c_str(), file.c_str()) != 0) std::remove(temporary.c_str());
  }
  return fresh;
}

}  // namespace

SpeedWorkload::SpeedWorkload(const char* name, TimedRun run) { workloads()[name] = run; }

SpeedBaseline::SpeedBaseline(const char* name, TimedRun run, const char* what) { baselines()[name] = {run, what}; }

Random speed_rng(const std::string& name) { return Random(run_seed() ^ hash_name(name.c_str())).derive(1); }

std::vector<double> time_workload(const std::string& name, int warmups, int runs, bool baseline) {
  const TimedRun timed_run = baseline ? find_baseline(name).run : find_workload(name);
  set_check_perturbations(false);  // timed as it runs, not as a check perturbs it
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

/// The verdict of a speed check: this build's times (`mine`) against the baseline's.
void compare_with_baseline(const char* name, const std::vector<double>& mine, const BaselineResult& base,
                           double max_ratio) {
  const double mine_ms = best(mine);
  const double baseline_ms = best(base.ms);
  const double ratio = baseline_ms > 0.0 ? mine_ms / baseline_ms : 0.0;
  char ratio_text[32];
  std::snprintf(ratio_text, sizeof ratio_text, "%.2f", ratio);
  char limit_text[32];
  std::snprintf(limit_text, sizeof limit_text, "%.1f", max_ratio);
  const std::string figures = std::string("\"") + name + "\": your code " + ms_text(mine_ms) + " (best of " +
                              std::to_string(mine.size()) + " runs), " + find_baseline(name).what + " " +
                              ms_text(baseline_ms) + " (best of " + std::to_string(base.ms.size()) +
                              " runs), device time of the call, same GPU and inputs; ratio " + ratio_text +
                              " (at most " + limit_text + " passes)";
  ResultsLog::note(figures);
  CHECK_MESSAGE(ratio <= max_ratio, figures);
}

void fail_baseline(const char* name, const BaselineResult& base) {
  FAIL("the grader could not time its baseline (" << find_baseline(name).what << ") on \"" << std::string(name)
                                                  << "\": " << base.problem
                                                  << " (a problem of the grader, not of your code)");
}

}  // namespace

void expect_speed(const char* name, double max_ratio) {
  find_workload(name);  // a misspelt name is the suite's error, not the student's
  find_baseline(name);
  if (skip_under_sanitizer("its tools slow kernels down many times, so timings mean nothing there")) return;
  // The baseline first, in a process of its own with the GPU (or from the cache).
  const BaselineResult base = cached_baseline(name);
  if (!base.problem.empty()) fail_baseline(name, base);
  compare_with_baseline(name, time_workload(name, kWarmups, kRuns), base, max_ratio);
}

int run_speed_workload_mode(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::string name;
  int runs = kRuns;
  int warmups = kWarmups;
  bool baseline = false;
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    if (option == "--baseline") {
      baseline = true;
      continue;
    }
    if (i + 1 >= argc) break;
    if (option == "--speed-workload") name = argv[++i];
    else if (option == "--runs") runs = std::max(1, std::atoi(argv[++i]));
    else if (option == "--warmups") warmups = std::max(0, std::atoi(argv[++i]));
  }
  try {
    for (const double ms : time_workload(name, warmups, runs, baseline)) std::printf("speed-ms %.6f\n", ms);
    return 0;
  } catch (const std::exception& e) {
    std::string message = e.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    std::printf("speed-error %s\n", message.c_str());
    return 1;
  }
}

int run_time_baselines_mode() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  if (baseline_cache() == nullptr) {
    std::printf("speed-error --time-baselines needs a baseline cache (CDPLAB_BASELINE_CACHE)\n");
    return 2;
  }
  int failed = 0;
  for (const auto& entry : baselines()) {
    const BaselineResult result = cached_baseline(entry.first);
    if (result.problem.empty()) {
      std::printf("baseline-ready %s\n", entry.first.c_str());
    } else {
      std::printf("speed-error %s: %s\n", entry.first.c_str(), result.problem.c_str());
      ++failed;
    }
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace cdplab::harness
