#include "grading/check_process.h"

#include "sandbox/submission.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <chrono>
#include <fstream>
#include <memory>
#include <future>
#include <random>
#include <thread>

namespace cdplab::grading {
namespace fs = std::filesystem;
namespace {

/// Seconds on the steady clock.
double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// A fresh folder of its own under `scratch`, its name starting with `what`.
fs::path fresh_folder(const fs::path& scratch, const std::string& what) {
  static std::atomic<unsigned> counter{0};
  std::random_device device;
  fs::create_directories(scratch);
  for (;;) {
    const fs::path dir = scratch / (what + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
                                    std::to_string(device() % 100000));
    std::error_code exists;
    if (fs::create_directory(dir, exists)) return dir;
  }
}

/// Why a host parts' process ended on its own, for its check: a signal (also as a box reports it,
/// exit status 128 + the signal), else its exit status.
std::string ended_by(const process::Result& result) {
  const int signal = result.signal != 0                                   ? result.signal
                     : result.exit_code > 128 && result.exit_code < 160 ? result.exit_code - 128
                                                                         : 0;
  if (signal == SIGXFSZ)
    return "it wrote a file past the size a host part may write (" +
           std::to_string(sandbox::host_parts_budget().file_bytes >> 20) + " MiB; signal SIGXFSZ)";
  if (signal != 0) return "it was ended by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return result.timed_out ? "it ran past its time limit" : "it ended with exit status " + std::to_string(result.exit_code);
}

/// The host parts' process, for the life of one check process. Its end: it reads the requests
/// FIFO until every writer has closed it, so once the suite has ended, opening and closing that
/// FIFO once more (it may still wait for its first writer) lets it end; one still busy a second
/// later (a host part that never returns) is ended by its watch.
class HostPartsProcess {
 public:
  HostPartsProcess(const CheckProcess& check, double seconds) : dir_(fresh_folder(check.scratch, "host-parts")) {
    if (!check.host_parts_problem.empty()) {
      std::ofstream(dir_ / "problem") << check.host_parts_problem;
      return;
    }
    if (::mkfifo((dir_ / "requests").c_str(), 0600) != 0 || ::mkfifo((dir_ / "replies").c_str(), 0600) != 0) {
      std::ofstream(dir_ / "problem") << "the grader could not make the pipes to their process";
      return;
    }
    std::vector<std::string> argv{check.host_parts, dir_.string()};
    if (check.host_parts_box) {
      sandbox::Box box = *check.host_parts_box;
      // Read-only: the two FIFOs open for writing all the same, and the student's code gets no
      // folder of the grading machine's disk to fill (its /tmp is the box's, in memory and bounded).
      box.read_only_at.emplace_back(dir_.string(), "/parts");
      argv = sandbox::wrap(box, {sandbox::path_in(box, check.host_parts), "/parts"});
    }
    process::Options options;
    options.timeout_seconds = seconds;
    options.output_limit = 64 << 10;  // what the student's code prints goes to its feedback alone
    options = sandbox::budgeted(options, sandbox::host_parts_budget());
    const auto budget_watch = options.watch;
    const auto ended = suite_ended_;
    // Why it ended, for the check that waits for its answer ("ended" in the folder of its pipes).
    const fs::path why_ended = dir_ / "ended";
    options.watch = [budget_watch, ended, why_ended](int pid) -> std::string {
      const double since = ended->load();
      if (since > 0 && seconds_now() - since > 1) return "its check process had ended";
      std::string over = budget_watch ? budget_watch(pid) : std::string();
      // Written before the process is ended, so that the check finds it as soon as it notices.
      if (!over.empty()) std::ofstream(why_ended) << "the grader ended it: " << over;
      return over;
    };
    running_ = std::async(std::launch::async, [argv, options, ended, why_ended] {
      auto result = process::run(argv, options);
      if (result.stopped_by.empty() && ended->load() == 0 && !result.ok()) std::ofstream(why_ended) << ended_by(result);
      return result;
    });
  }
  ~HostPartsProcess() {
    (void)finish();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  /// Waits for the process to end (the check process has) and returns what it printed.
  std::string finish() {
    suite_ended_->store(seconds_now());
    if (!running_.valid()) return "";
    const std::string requests = (dir_ / "requests").string();
    while (running_.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready) {
      const int fd = ::open(requests.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) ::close(fd);
    }
    return running_.get().output;
  }
  HostPartsProcess(const HostPartsProcess&) = delete;
  HostPartsProcess& operator=(const HostPartsProcess&) = delete;
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
  std::shared_ptr<std::atomic<double>> suite_ended_ = std::make_shared<std::atomic<double>>(0.0);
  std::future<process::Result> running_;
};

}  // namespace

StartGate::StartGate(const fs::path& scratch) : dir_(fresh_folder(scratch, "start-gate")) {}

StartGate::~StartGate() {
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
}

bool StartGate::open() {
  opened_at_.store(seconds_now());
  std::ofstream(dir_ / "open.part") << "open\n";
  std::error_code ignored;
  fs::rename(dir_ / "open.part", dir_ / "open", ignored);
  return fs::exists(dir_ / "open", ignored);
}

void StartGate::close() {
  std::ofstream(dir_ / "closed") << "closed\n";
  // A gate that cannot say so still ends its process: the suite takes a missing folder as closed.
  std::error_code ignored;
  if (!fs::exists(dir_ / "closed", ignored)) fs::remove_all(dir_, ignored);
}

bool StartGate::ready() const {
  std::error_code ignored;
  return fs::exists(dir_ / "ready", ignored);
}

double StartGate::seconds_open() const {
  const double at = opened_at_.load();
  return at > 0 ? seconds_now() - at : 0;
}

process::Result run_check_process(const CheckProcess& check, const std::vector<std::string>& prefix,
                                  const std::vector<std::string>& arguments, process::Options options,
                                  const StartGate* gate, std::string* host_parts_output) {
  // Behind a gate, the time limit counts from its opening (the watch below); the process's own
  // limit only backs that up, as long as a turn may keep it waiting.
  constexpr double kLongestWaitAtGate = 3600;
  const double limit = options.timeout_seconds;
  if (gate != nullptr) {
    options.env["CDPLAB_START_GATE"] = gate->dir().string();
    if (limit > 0) options.timeout_seconds = limit + kLongestWaitAtGate;
  }
  std::vector<std::string> argv = prefix;
  argv.push_back(check.suite);
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  for (const auto& [name, value] : check.env) options.env.insert({name, value});
  std::optional<sandbox::Box> box = check.box;
  if (box) {
    box->read_only.insert(box->read_only.end(), check.read_only.begin(), check.read_only.end());
    box->writable.insert(box->writable.end(), check.writable.begin(), check.writable.end());
    if (gate != nullptr) box->writable.push_back(gate->dir().string());  // the suite says "ready" there
    if (!options.working_directory.empty()) box->working_directory = options.working_directory;
  }
  std::optional<HostPartsProcess> host_parts;
  if (check.calls_host_parts()) {
    host_parts.emplace(check, options.timeout_seconds > 0 ? options.timeout_seconds + 10 : 0);
    options.env["CDPLAB_HOST_PARTS"] = host_parts->dir().string();
    if (box) box->writable.push_back(host_parts->dir().string());
  }
  if (check.budgeted) options = sandbox::budgeted(options, sandbox::check_budget());
  if (gate != nullptr && limit > 0) {
    const auto watch = options.watch;
    options.watch = [watch, gate, limit](int pid) -> std::string {
      if (gate->seconds_open() > limit) return "it ran past its time limit of " + std::to_string(static_cast<int>(limit)) + " s";
      return watch ? watch(pid) : std::string();
    };
  }
  auto result = process::run(box ? sandbox::wrap(*box, argv) : argv, options);
  if (host_parts) {
    const std::string printed = host_parts->finish();
    if (host_parts_output != nullptr && !printed.empty()) {
      *host_parts_output += printed;
      if (host_parts_output->size() > kHostPartsOutputBytes)
        host_parts_output->erase(0, host_parts_output->size() - kHostPartsOutputBytes);
    }
  }
  return result;
}

}  // namespace cdplab::grading
