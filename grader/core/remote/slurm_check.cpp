#include "remote/slurm_check.h"

#include "remote/ssh_client.h"

#include "files/files.h"
#include "report/report.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

namespace cdplab::remote {
namespace {

namespace fs = std::filesystem;
namespace slurm = batch::slurm;

std::atomic<bool> g_interrupted{false};

extern "C" void on_interrupt(int /*signal*/) { g_interrupted.store(true); }

/// Ctrl-C and SIGTERM set g_interrupted while it lives; the handlers before are put back after.
class InterruptCatcher {
 public:
  InterruptCatcher() {
    g_interrupted.store(false);
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~InterruptCatcher() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  InterruptCatcher(const InterruptCatcher&) = delete;
  InterruptCatcher& operator=(const InterruptCatcher&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

/// The new bytes of a growing file, from where the last call stopped.
class FileTail {
 public:
  explicit FileTail(fs::path file) : file_(std::move(file)) {}
  std::string read_new() {
    std::ifstream in(file_, std::ios::binary);
    if (!in) return "";
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    if (size <= offset_) return "";
    in.seekg(offset_);
    std::string piece(static_cast<std::size_t>(size - offset_), '\0');
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    offset_ += in.gcount();
    piece.resize(static_cast<std::size_t>(in.gcount()));
    return piece;
  }

 private:
  fs::path file_;
  std::streamoff offset_ = 0;
};

/// "pending (Priority), 2nd in the queue of partition gpu" or "running on node gpu07".
std::string describe_state(const slurm::JobState& job, int position) {
  std::string text = job.state;
  for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (job.state == "PENDING") {
    if (!job.reason.empty() && job.reason != "None") text += " (" + job.reason + ")";
    if (position > 0)
      text += ", " + ordinal(position) + " in the queue" + (job.partition.empty() ? "" : " of partition " + job.partition);
  } else if (!job.node.empty()) {
    text += " on node " + job.node;
  }
  return text;
}

}  // namespace

std::string ordinal(int n) {
  const int tens = n % 100;
  const char* suffix = "th";
  if (tens < 11 || tens > 13) {
    if (n % 10 == 1) suffix = "st";
    else if (n % 10 == 2) suffix = "nd";
    else if (n % 10 == 3) suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

std::string check_script(const SlurmCheck& check) {
  const auto& resources = check.target.resources;
  std::string out = "#!/bin/bash\n";
  out += "# One `cdplab check` on a GPU node: grades the copy of the exercise files in submission/ and\n";
  out += "# writes report.json beside it. Written and submitted by cdplab check (remote/slurm_check.h).\n";
  out += slurm::directive("job-name", "cdplab-check");
  out += slurm::directive("output", slurm::output_pattern(check.log()));
  out += slurm::directive("chdir", check.job_dir.string());
  if (!resources.partition.empty()) out += slurm::directive("partition", resources.partition);
  if (!resources.account.empty()) out += slurm::directive("account", resources.account);
  out += slurm::resource_directives(resources);
  out += "\n";
  for (const auto& line : check.target.setup) out += line + "\n";
  out += "exec " + slurm::shell_quote(check.cdplab.string()) + " remote-check " +
         slurm::shell_quote(check.submission().string());
  for (const auto& arg : check.worker_args) out += " " + slurm::shell_quote(arg);
  return out + "\n";
}

std::string explain_job_end(const std::string& id, const std::string& state, const fs::path& log) {
  const std::string job = "Slurm job " + id;
  const std::string see = "; its output: " + log.string() + "; nothing of yours was changed";
  if (state.rfind("CANCELLED", 0) == 0) return job + " was cancelled before it wrote a report" + see;
  if (state == "TIMEOUT" || state == "DEADLINE")
    return job + " reached its time limit before it wrote a report (remote.slurm.time in course.toml)" + see;
  if (state == "OUT_OF_MEMORY") return job + " ran out of memory (remote.slurm.mem in course.toml)" + see;
  if (state == "NODE_FAIL" || state == "BOOT_FAIL") return job + "'s node failed (" + state + "): check again" + see;
  if (state == "PREEMPTED") return job + " was preempted: check again" + see;
  return job + " ended (" + (state.empty() ? "Slurm no longer knows how" : state) + ") without a report" + see;
}

grading::GradeReport check_on_slurm(const SlurmCheck& check, const std::function<void(const std::string&)>& progress) {
  const auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  {
    std::ofstream script(check.script(), std::ios::binary);
    script << check_script(check);
    if (!script) throw RemoteError("cannot write " + check.script().string() + "; nothing of yours was changed");
  }
  std::error_code ignored;
  fs::remove(check.report(), ignored);
  InterruptCatcher interrupts;
  std::string id;
  try {
    id = slurm::submit(check.tools, check.script(), {}, "the check job");
  } catch (const slurm::Error& error) {
    throw RemoteError(std::string(error.what()) + "; nothing of yours was changed");
  }
  say("Slurm job " + id + " submitted (cancel: Ctrl-C, or scancel " + id + ")");

  FileTail log(check.log());
  LineSplitter lines([&](const std::string& line) { say(line); });
  std::string last_described;
  int failed_asks = 0;
  for (;;) {
    if (g_interrupted.load()) {
      const bool cancelled = slurm::cancel(check.tools, id);
      throw RemoteError(cancelled ? "cancelled Slurm job " + id + " (Ctrl-C); nothing of yours was changed"
                                  : "Ctrl-C: scancel " + id + " failed; cancel it yourself (scancel " + id + ")");
    }
    lines(log.read_new());
    std::optional<slurm::JobState> job;
    try {
      job = slurm::job_state(check.tools, id);
      failed_asks = 0;
    } catch (const slurm::Error& error) {
      // slurmctld may be busy for a moment: ask again, a while.
      if (++failed_asks * check.poll_seconds > 120)
        throw RemoteError("cannot follow Slurm job " + id + ": " + error.what() + " (it may still run: squeue -j " + id + ")");
    }
    if (!job && failed_asks == 0) break;
    if (job) {
      const int position = job->state == "PENDING" ? slurm::queue_position(check.tools, id, job->partition) : 0;
      const std::string described = describe_state(*job, position);
      if (described != last_described) say("Slurm job " + id + ": " + described);
      last_described = described;
    }
    // Sleep in short steps: Ctrl-C answers at once.
    for (double slept = 0; slept < check.poll_seconds && !g_interrupted.load(); slept += 0.05)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  lines(log.read_new());
  lines.flush();
  // On a network file system the report a node wrote may show here a few seconds late.
  const std::string ended = slurm::final_state(check.tools, id);
  for (int wait = 0; wait < 100 && ended == "COMPLETED" && !fs::exists(check.report()); ++wait)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (fs::exists(check.report())) {
    try {
      auto report = report::from_json(nlohmann::json::parse(files::read_text(check.report())));
      return report;
    } catch (const std::exception& error) {
      throw RemoteError("Slurm job " + id + " wrote a report that cannot be read (" + error.what() + "); its output: " +
                        check.log().string());
    }
  }
  throw RemoteError(explain_job_end(id, ended, check.log()));
}

}  // namespace cdplab::remote
