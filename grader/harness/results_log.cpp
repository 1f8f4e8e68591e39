#include "results_log.h"

#include "device_code.h"
#include "device_limits.h"
#include "harness.h"
#include "launch_count.h"
#include "check_perturbations.h"
#include "lifetimes.h"
#include "poison.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cuda_runtime.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#ifndef CDPLAB_CHECK_TIMEOUT
#define CDPLAB_CHECK_TIMEOUT 30  // seconds; the build sets it from its cache variable
#endif

namespace cdplab::harness {
namespace {

using json = nlohmann::json;

struct State {
  int fd = -1;
  std::string suite;
  std::uint64_t seed = 0;
  std::string device;
  std::string skip_reason;
  CaseSelected selected = nullptr;
  double limit_seconds = CDPLAB_CHECK_TIMEOUT;
  int ran = 0;
  int skipped = 0;
  std::string skip_running;         // set by skip_running_check: the running check's reason
  std::vector<std::string> notes;   // the running check's notes
  // Written before a check starts, read by the signal handler: a ready-made line.
  char crash_line[2048] = {0};
  std::size_t crash_line_length = 0;
  // CDPLAB_SHARED_PROCESS=1: the grader runs several checks in this process (device_limits.h).
  bool shared = false;
  std::optional<DeviceLimits> start_limits;  // the limits every check of a shared process starts with
};

State& state() {
  static State s;
  return s;
}

void write_line(const json& record) {
  if (state().fd < 0) return;
  const std::string line = record.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  ssize_t ignored = ::write(state().fd, line.data(), line.size());
  (void)ignored;
}

/// The grader's token for this run (CDPLAB_RESULTS_TOKEN). It is taken out of the environment
/// before ordinary static initialisers run, so the code under test cannot simply read it: a
/// line it writes into the results file itself lacks the token, and the grader ignores it.
std::string& results_token() {
  static std::string token;
  return token;
}

__attribute__((constructor(101))) void take_results_token() {
  if (const char* token = std::getenv("CDPLAB_RESULTS_TOKEN")) {
    results_token() = token;
    unsetenv("CDPLAB_RESULTS_TOKEN");
  }
}

/// Drawn once per process: in the grader's box every process has a PID namespace of its own, so
/// PIDs repeat from one process to the next.
const std::string& process_id() {
  static const std::string id = [] {
    std::random_device device;
    char text[32];
    std::snprintf(text, sizeof text, "%08x%08x", device(), device());
    return std::string(text);
  }();
  return id;
}

json base_record(const char* event, const std::string& check) {
  // The process: checks that share one share it (the grader's shared suite processes).
  json record{{"event", event},
              {"suite", state().suite},
              {"check", check},
              {"pid", static_cast<long>(::getpid())},
              {"process", process_id()}};
  if (!results_token().empty()) record["token"] = results_token();
  return record;
}

/// In a process that several checks share, the next check must start as it would alone. Ends the
/// process after a check that did not pass (a failure may leave the GPU unusable, and the grader
/// runs that check again alone anyway) or one that left the device unlike a fresh process's
/// (device_limits.h).
/// The grader runs the checks this process did not reach one process per check.
void leave_shared_process_unless_clean(bool passed) {
  State& s = state();
  // Without a GPU there is no device state to spoil.
  if (passed && (s.start_limits ? restore_device_state(*s.start_limits) : s.device.empty())) return;
  if (s.fd >= 0) ::close(s.fd);
  std::fflush(stdout);
  std::fprintf(stderr, "cdplab: the checks left of this suite run one process each\n");
  std::_Exit(0);
}

/// Ends the process from the watchdog thread when a check overruns its time limit.
class Watchdog {
 public:
  void arm(const std::string& check, double seconds) {
    std::lock_guard<std::mutex> lock(mutex_);
    check_ = check;
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    armed_ = true;
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    wake_.notify_all();
  }
  void disarm() {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
    advice_.clear();
  }
  void advise(const std::string& advice) {
    std::lock_guard<std::mutex> lock(mutex_);
    advice_ = advice;
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  using Clock = std::chrono::steady_clock;
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!quit_) {
      if (!armed_) {
        wake_.wait(lock);
        continue;
      }
      if (wake_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ && Clock::now() >= deadline_) {
        std::ostringstream reason;
        reason << "stopped after " << state().limit_seconds
               << " s without finishing: a kernel that never ends (a loop whose condition never "
                  "changes, threads waiting at a __syncthreads() others never reach, a parent "
                  "spinning on a flag its child sets) hangs the GPU";
        if (!advice_.empty()) reason << ". " << advice_;
        json record = base_record("stopped", check_);
        record["reason"] = reason.str();
        write_line(record);
        std::fprintf(stderr, "cdplab: check \"%s\" %s\n", check_.c_str(), reason.str().c_str());
        std::_Exit(124);
      }
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
  std::string check_;
  std::string advice_;  // what the running check knows about its likely hangs
  Clock::time_point deadline_{};
  bool armed_ = false;
  bool quit_ = false;
};

Watchdog& watchdog() {
  static Watchdog w;
  return w;
}

extern "C" void on_crash(int signal_number) {
  const State& s = state();
  if (s.fd >= 0 && s.crash_line_length > 0) {
    ssize_t ignored = ::write(s.fd, s.crash_line, s.crash_line_length);
    (void)ignored;
  }
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

void prepare_crash_line(const std::string& check) {
  json record = base_record("stopped", check);
  record["reason"] =
      "the test program crashed (a host-side fault: an out-of-range index into a std::vector, "
      "a null or device pointer dereferenced on the host)";
  std::string line = record.dump() + "\n";
  State& s = state();
  s.crash_line_length = std::min(line.size(), sizeof s.crash_line - 1);
  std::memcpy(s.crash_line, line.data(), s.crash_line_length);
}

std::string current_contexts() {
  std::ostringstream out;
  const int n = doctest::IReporter::get_num_active_contexts();
  const doctest::IContextScope* const* contexts = doctest::IReporter::get_active_contexts();
  for (int i = 0; i < n; ++i) {
    contexts[i]->stringify(&out);
    out << "; ";
  }
  std::string text = out.str();
  if (text.size() >= 2) text.resize(text.size() - 2);
  return text;
}

/// The launch tree the check's runs made (device_code.h), as the end record carries it (an empty
/// one where the device code launched nothing); null where no device code is loaded.
json launch_tree_record() {
  json edges = json::array();
  try {
    for (const auto& edge : check_launch_edges()) {
      const auto& c = edge.counts;
      edges.push_back({{"caller", edge.caller}, {"child", edge.child}, {"grids", c.grids}, {"null", c.into[0]},
                       {"tail", c.into[1]}, {"fire_and_forget", c.into[2]}, {"named", c.into[3]},
                       {"failed", c.failed}});
    }
  } catch (...) {  // no device code loaded, or the counts could not be read: nothing observed
    (void)cudaGetLastError();
    return json();
  }
  return edges;
}

/// The grids the check's last recording run started (device_code.h), as the end record carries
/// them: times in nanoseconds since that run's first recorded moment, at most kTimelineGridsKept
/// grids (the first to start; the rest counted in left_out); null where nothing was recorded.
constexpr std::size_t kTimelineGridsKept = 512;

json timeline_record() {
  try {
    const auto timeline = check_grid_timeline();
    if (timeline.runs == 0) return json();
    unsigned long long origin = ~0ull;
    for (const auto& g : timeline.grids) origin = std::min({origin, g.start, g.from_device ? g.launched : ~0ull});
    static const char* streams[] = {"null", "tail", "fire-and-forget", "named"};
    json grids = json::array();
    const auto since = [origin](unsigned long long t) { return t >= origin ? t - origin : 0ull; };
    for (std::size_t i = 0; i < timeline.grids.size() && i < kTimelineGridsKept; ++i) {
      const auto& g = timeline.grids[i];
      json grid = {{"id", g.id}, {"kernel", g.kernel}, {"blocks", g.blocks}, {"start", since(g.start)},
                   {"end", g.end >= g.start ? since(g.end) : 0ull}};
      if (g.from_device) {
        grid["parent"] = g.parent;
        grid["parent_kernel"] = g.parent_kernel;
        grid["parent_block"] = g.parent_block;
        grid["stream"] = g.stream >= 0 && g.stream < 4 ? streams[g.stream] : "";
        grid["stream_id"] = g.stream_handle;
        grid["launched"] = since(g.launched);
      } else {
        grid["stream"] = timeline.every_launch_recorded ? "host" : "";
      }
      grids.push_back(std::move(grid));
    }
    const std::size_t cut = timeline.grids.size() > kTimelineGridsKept ? timeline.grids.size() - kTimelineGridsKept : 0;
    return {{"run", timeline.run}, {"runs", timeline.runs}, {"left_out", timeline.left_out + cut},
            {"failed_launches", timeline.failed_launches}, {"grids", grids}};
  } catch (...) {  // no device code loaded, or the records could not be read
    (void)cudaGetLastError();
    return json();
  }
}

/// doctest listener: turns doctest events into results-log records.
class ResultsListener : public doctest::IReporter {
 public:
  explicit ResultsListener(const doctest::ContextOptions&) {}

  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}

  void test_case_start(const doctest::TestCaseData& tc) override {
    failures_.clear();
    state().skip_running.clear();
    state().notes.clear();
    json record = base_record("start", tc.m_name);
    record["seed"] = state().seed;
    record["device"] = state().device;
    write_line(record);
    prepare_crash_line(tc.m_name);
    watchdog().arm(tc.m_name, state().limit_seconds);
    // Not under compute-sanitizer: that run looks for the tools' findings, not for results that
    // uninitialised shared memory would change, and the poisoning kernel would only slow it down.
    const bool gpu_run = std::strcmp(tc.m_test_suite, "gpu") == 0 && !state().device.empty();
    if (gpu_run && !under_sanitizer()) poison_shared_memory();
    if (gpu_run) clear_launch_count();  // counted launches start from zero (launch_count.h)
    gpu_run_ = gpu_run;
    set_lifetimes_judged(gpu_run);      // what the check's runs leave behind is judged at its end
    // Races a fast GPU hides show up; the grids are recorded where this check was asked to.
    if (gpu_run) set_check_perturbations(!under_sanitizer(), check_records_grids(state().suite, tc.m_name));
  }
  void test_case_reenter(const doctest::TestCaseData&) override {}

  void test_case_end(const doctest::CurrentTestCaseStats& stats) override {
    const auto* options = doctest::getContextOptions();
    const std::string name = options && options->currentTest ? options->currentTest->m_name : "";
    bool passed = stats.testCaseSuccess && stats.numAssertsFailedCurrentTest == 0 && failures_.empty();
    // A check that passed otherwise is judged on what its runs left behind (lifetimes.h).
    if (passed && state().skip_running.empty()) {
      for (auto& problem : lifetime_problems()) failures_.push_back(std::move(problem));
      passed = failures_.empty();
    }
    if (passed && !state().skip_running.empty()) {  // nothing failed before the check gave up
      json record = base_record("skipped", name);
      record["reason"] = state().skip_running;
      write_line(record);
      state().crash_line_length = 0;
      ++state().skipped;
      if (state().shared) leave_shared_process_unless_clean(true);
      watchdog().disarm();  // after the device is put back: that may wait on a kernel left running
      return;
    }
    json record = base_record("end", name);
    record["status"] = passed ? "passed" : "failed";
    record["seconds"] = stats.seconds;
    record["failures"] = failures_;
    if (!state().notes.empty()) record["notes"] = state().notes;
    // A failed check may have left a kernel running (its host code threw before waiting for it):
    // its tree is read only when the GPU has nothing left to do, never waited for.
    if (gpu_run_ && (passed || cudaStreamQuery(nullptr) == cudaSuccess)) {
      json tree = launch_tree_record();
      if (tree.is_array()) record["launches"] = std::move(tree);
      json timeline = timeline_record();
      if (timeline.is_object()) record["timeline"] = std::move(timeline);
    }
    write_line(record);
    state().crash_line_length = 0;
    ++state().ran;
    if (state().shared) leave_shared_process_unless_clean(passed);
    watchdog().disarm();
  }

  void test_case_exception(const doctest::TestCaseException& e) override {
    failures_.push_back(std::string(e.error_string.c_str()));
  }
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}

  void log_assert(const doctest::AssertData& ad) override {
    if (!ad.m_failed) return;
    std::ostringstream out;
    const std::string context = current_contexts();
    if (!context.empty()) {
      out << context;
    } else if (ad.m_threw) {
      out << ad.m_expr << " threw: " << ad.m_exception.c_str();
    } else {
      out << ad.m_expr << " is false (" << ad.m_decomp.c_str() << ")";
    }
    failures_.push_back(out.str());
  }
  void log_message(const doctest::MessageData& message) override {
    if (message.m_severity & doctest::assertType::is_warn) return;
    failures_.push_back(message.m_string.c_str());
  }

  void test_case_skipped(const doctest::TestCaseData& tc) override {
    // Cases outside a --test-case filter are not this process's business; only GPU checks
    // skipped for want of a GPU are recorded.
    if (state().skip_reason.empty() || std::strcmp(tc.m_test_suite, "gpu") != 0) return;
    if (state().selected && !state().selected(tc.m_name)) return;
    json record = base_record("skipped", tc.m_name);
    record["reason"] = state().skip_reason;
    write_line(record);
    ++state().skipped;
  }

 private:
  std::vector<std::string> failures_;
  bool gpu_run_ = false;  ///< the current check runs on the GPU: its end record carries the launch tree
};

}  // namespace

DOCTEST_REGISTER_LISTENER("cdplab-results", 1, ResultsListener);

void ResultsLog::open(const std::string& suite, std::uint64_t seed, const std::string& device,
                      const std::string& skip_reason, CaseSelected selected) {
  State& s = state();
  s.selected = selected;
  s.suite = suite;
  s.seed = seed;
  s.device = device;
  s.skip_reason = skip_reason;
  if (const char* limit = std::getenv("CDPLAB_CHECK_SECONDS")) {
    const double value = std::atof(limit);
    if (value > 0) s.limit_seconds = value;
  }
  if (const char* value = std::getenv("CDPLAB_RESULTS_FILE"); value != nullptr && *value != '\0') {
    // One file per suite when several suites run at once: "{suite}" stands for this suite's
    // name with its slashes written as dots ("01-fundamentals.child_grids").
    std::string path = value;
    if (const auto at = path.find("{suite}"); at != std::string::npos) {
      std::string name = suite;
      std::replace(name.begin(), name.end(), '/', '.');
      path.replace(at, 7, name);
    }
    s.fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (s.fd < 0) std::fprintf(stderr, "cdplab: cannot write results to %s: %s\n", path.c_str(), std::strerror(errno));
  }
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, on_crash);
  if (const char* value = std::getenv("CDPLAB_SHARED_PROCESS"); value != nullptr && std::string(value) == "1") {
    s.shared = true;
    if (!device.empty()) s.start_limits = read_device_limits();  // none read: it ends after one check
  }
}

void ResultsLog::advise_on_hang(const std::string& advice) { watchdog().advise(advice); }

void ResultsLog::skip_running_check(const std::string& reason) { state().skip_running = reason; }

void ResultsLog::note(const std::string& text) { state().notes.push_back(text); }

void ResultsLog::close() {
  if (state().fd >= 0) ::close(state().fd);
  state().fd = -1;
}

int ResultsLog::ran_count() { return state().ran; }
int ResultsLog::skipped_count() { return state().skipped; }

}  // namespace cdplab::harness
