#include "remote/serve.h"

#include "remote/protocol.h"

#include "batch/batch.h"
#include "batch/submissions.h"
#include "files/file_lock.h"
#include "files/files.h"
#include "process/process.h"
#include "report/report.h"
#include "report/text.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <thread>

namespace cdplab::remote {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string seconds_text(double seconds, const char* format = "%.1f") {
  char text[32];
  std::snprintf(text, sizeof text, format, seconds);
  return text;
}

void write_all(int fd, const std::string& text) {
  std::size_t at = 0;
  while (at < text.size()) {
    const ssize_t wrote = write(fd, text.data() + at, text.size() - at);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return;  // the client is gone: nobody to tell
    at += static_cast<std::size_t>(wrote);
  }
}

std::string utc_stamp(const char* format) {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, format, std::gmtime(&now));
  return stamp;
}

bool alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

/// Whether the client is gone: its end of our standard output was closed (a pipe's reader, a
/// socket's peer), which is what sshd does when the connection drops.
bool client_gone(int out_fd) {
  pollfd p{out_fd, 0, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP)) != 0;
}

using files::HeldLock;
using files::wait_for_any;

/// The slot files of a count: `stem`-0.lock, `stem`-1.lock, ...
std::vector<fs::path> slot_files(const fs::path& dir, const std::string& stem, int count) {
  std::vector<fs::path> out;
  for (int i = 0; i < count; ++i) out.push_back(dir / (stem + "-" + std::to_string(i) + ".lock"));
  return out;
}

/// A request's place among its student's waiting ones: waiting/<pid> while it lives.
class WaitingTicket {
 public:
  /// Takes a ticket unless `most` wait already; `waiting` then holds how many do.
  static std::optional<WaitingTicket> take(const fs::path& student_dir, int most, int& waiting) {
    const fs::path dir = student_dir / "waiting";
    fs::create_directories(dir);
    const HeldLock queue = wait_for_any({student_dir / "queue.lock"}, [] { return false; }, {});
    waiting = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const pid_t pid = static_cast<pid_t>(std::atol(entry.path().filename().c_str()));
      std::error_code ignored;
      if (alive(pid)) ++waiting;
      else fs::remove(entry.path(), ignored);  // a request that died waiting
    }
    if (waiting >= most) return std::nullopt;
    WaitingTicket ticket;
    ticket.file_ = dir / std::to_string(getpid());
    std::ofstream(ticket.file_) << "\n";
    return ticket;
  }
  WaitingTicket(WaitingTicket&& other) noexcept : file_(std::exchange(other.file_, {})) {}
  ~WaitingTicket() { leave(); }
  void leave() {
    std::error_code ignored;
    if (!file_.empty()) fs::remove(file_, ignored);
    file_.clear();
  }

 private:
  WaitingTicket() = default;
  fs::path file_;
};

/// Removes the folders of requests whose server process is gone (a server killed outright).
void remove_dead_requests(const fs::path& requests) {
  std::error_code error;
  if (!fs::is_directory(requests, error)) return;
  for (const auto& entry : fs::directory_iterator(requests, error)) {
    const std::string name = entry.path().filename().string();
    const pid_t pid = static_cast<pid_t>(std::atol(name.substr(name.rfind('-') + 1).c_str()));
    std::error_code ignored;
    if (!alive(pid)) fs::remove_all(entry.path(), ignored);
  }
}

/// Reads standard input into `file`, at most `limit` bytes, within `seconds`; returns why not.
std::string receive_upload(int in_fd, const fs::path& file, std::uint64_t limit, double seconds) {
  const int out = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) return "the server cannot store your files (" + std::string(std::strerror(errno)) + ")";
  const auto start = Clock::now();
  std::uint64_t total = 0;
  std::vector<char> buffer(1 << 16);
  std::string problem;
  for (;;) {
    const double left = seconds - since(start);
    pollfd p{in_fd, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(left * 1000) + 1) == 0) {
      problem = "the submission took longer than " + seconds_text(seconds, "%.0f") + " s to arrive";
      break;
    }
    const ssize_t got = read(in_fd, buffer.data(), buffer.size());
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got < 0) {
      problem = "the submission could not be read (" + std::string(std::strerror(errno)) + ")";
      break;
    }
    if (got == 0) break;
    total += static_cast<std::uint64_t>(got);
    if (total > limit) {
      problem = "the submission is larger than " + std::to_string(limit >> 20) + " MiB (send your exercise files only)";
      break;
    }
    if (::write(out, buffer.data(), static_cast<std::size_t>(got)) != got) {
      problem = "the server cannot store your files (its disk may be full)";
      break;
    }
  }
  close(out);
  if (problem.empty() && total == 0) problem = "no submission arrived (`cdplab check` sends your exercise files)";
  return problem;
}

/// Writes a progress piece only if the client takes it at once: one that stops reading its
/// standard error must not hold up the grading (or its time limit).
void write_progress(int fd, const std::string& piece) {
  pollfd p{fd, POLLOUT, 0};
  if (poll(&p, 1, 0) <= 0 || (p.revents & POLLOUT) == 0) return;
  const ssize_t ignored = write(fd, piece.data(), piece.size());
  (void)ignored;
}

/// What an archive sent to the server may unpack to: exercise files of a workbook, no more.
constexpr batch::UnpackLimits kUploadUnpackLimits{1000, std::uint64_t{2} << 20, std::uint64_t{64} << 20};
/// How long the submission may take to arrive.
constexpr double kUploadSeconds = 300;

}  // namespace

bool plain_student_name(const std::string& name) { return !name.empty() && batch::student_folder(name) == name; }

int serve(const ServeOptions& options, const manifest::Workbook& book, const char* request_line, int in_fd, int out_fd,
          int err_fd) {
  const auto start = Clock::now();
  const ServeSettings& settings = options.settings;
  const auto tell = [&](const std::string& line) { write_progress(err_fd, "cdplab serve: " + line + "\n"); };
  if (!plain_student_name(options.student)) {
    tell("this key's line names no student (--student NAME: letters, digits, '.', '_', '-')");
    return kMisconfigured;
  }
  // A client gone mid-reply must not end this process before it has cleaned up.
  signal(SIGPIPE, SIG_IGN);

  const fs::path student_dir = settings.work / "students" / options.student;
  const std::string request_id = utc_stamp("%Y%m%d-%H%M%S") + "-" + std::to_string(getpid());
  const fs::path request_dir = student_dir / "requests" / request_id;
  const auto log = [&](const std::string& outcome) {
    const std::string line = utc_stamp("%Y-%m-%dT%H:%M:%SZ") + "\t" + options.student + "\t" + request_id + "\t" +
                             outcome + "\t" + seconds_text(since(start)) + " s\n";
    const int fd = open((settings.work / "serve.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
      write_all(fd, line);  // one write: the lines of requests at once never interleave
      close(fd);
    }
  };
  std::vector<std::string> devices;
  try {
    fs::create_directories(request_dir);
    fs::create_directories(settings.work / "gpus");
    remove_dead_requests(student_dir / "requests");
    // One GPU: the environment as it is (batch::gpu_devices gives no value then).
    devices = batch::gpu_devices(settings.gpus, std::getenv("CUDA_VISIBLE_DEVICES"));
  } catch (const std::exception& error) {
    tell(std::string("the server is set up wrong: ") + error.what());
    return kMisconfigured;
  }
  const files::RemovedAtEnd request_folder{request_dir};

  Request request;
  const auto refuse = [&](const std::string& message) {
    write_all(out_fd, error_reply(message, request));
    tell(message);
    log("refused: " + message);
    return kRefused;
  };
  try {
    std::vector<const manifest::Exercise*> exercises;
    try {
      request = parse_request(request_line == nullptr ? "" : request_line);
      std::string unknown;
      exercises = book.select(request.names, unknown);
      if (!unknown.empty()) throw RequestError("this server's workbook has no chapter or exercise named " + unknown);
    } catch (const RequestError& error) {
      return refuse(error.what());
    }

    // Its place among the student's checks first: one student's many connections, uploading or
    // waiting, are bounded before any of them is read.
    int waiting = 0;
    auto ticket = WaitingTicket::take(student_dir, settings.queue_per_student, waiting);
    if (!ticket)
      return refuse("you have " + std::to_string(waiting) + " checks waiting on this server already; this one was "
                    "refused: wait for them to end, then check again");
    const fs::path upload = request_dir / "submission.tar";
    if (const std::string problem = receive_upload(in_fd, upload, settings.upload_bytes, kUploadSeconds); !problem.empty())
      return refuse(problem);

    // Its turn: one of the student's own slots, then a GPU's.
    const auto stop_waiting = [&] { return client_gone(out_fd); };
    HeldLock own = wait_for_any(slot_files(student_dir, "slot", settings.per_student), stop_waiting,
                                [&] { tell("waiting for your check that runs already"); });
    if (!own.held()) {
      log("client gone while waiting");
      return kRefused;
    }
    HeldLock gpu = wait_for_any(slot_files(settings.work / "gpus", "gpu", settings.gpus * settings.share_gpu),
                                stop_waiting, [&] { tell("every GPU of this server is busy: waiting for a turn"); });
    ticket->leave();
    if (!gpu.held()) {
      log("client gone while waiting");
      return kRefused;
    }
    const int gpu_index = static_cast<int>(gpu.index()) / settings.share_gpu;
    const auto grading_start = Clock::now();  // the time limit counts from here: waiting is not grading

    const auto copy =
        batch::make_clean_copy({options.student, upload, true}, exercises, book, request_dir, kUploadUnpackLimits);
    if (!copy.problem.empty()) return refuse("your submission was refused: " + copy.problem);

    const fs::path report_file = request_dir / "report.json";
    std::vector<std::string> argv = {options.cdplab.string(), "remote-check", copy.dir.string(),
                                     "--report", report_file.string(), "--build-dir", (request_dir / "tree").string(),
                                     "--via", "ssh"};
    if (options.fresh_seeds) argv.push_back("--fresh-seed");
    else if (request.seed) argv.insert(argv.end(), {"--seed", std::to_string(*request.seed)});
    if (settings.share_gpu > 1)
      argv.insert(argv.end(), {"--gpu-turns", (settings.work / "gpus" / ("gpu-" + std::to_string(gpu_index) + ".turns")).string()});
    argv.push_back("--");
    argv.insert(argv.end(), request.names.begin(), request.names.end());

    process::Options run_options;
    const double left = settings.time_limit_seconds - since(grading_start);
    run_options.timeout_seconds = left > 1 ? left : 1;
    run_options.grace_seconds = 10;
    run_options.output_limit = 1 << 16;
    if (!devices.empty()) run_options.env["CUDA_VISIBLE_DEVICES"] = devices[static_cast<std::size_t>(gpu_index)];
    run_options.on_output = [&](const std::string& piece) { write_progress(err_fd, piece); };
    run_options.watch = [&](int) { return client_gone(out_fd) ? std::string("the client went away") : std::string(); };
    run_options.watch_seconds = 0.5;
    const auto worker = process::run(argv, run_options);
    // The turns are free before the reply: a client slow to read it holds no slot.
    own = HeldLock();
    gpu = HeldLock();

    if (!worker.stopped_by.empty()) {
      log("stopped: " + worker.stopped_by);
      return kRefused;
    }
    if (worker.timed_out) {
      const std::string limit = seconds_text(settings.time_limit_seconds, "%.0f");
      return refuse("stopped after " + limit + " s: a check may take at most " + limit +
                    " s on this server (its time limit); nothing of yours was kept");
    }
    std::optional<grading::GradeReport> report;
    try {
      if (worker.ok()) report = report::from_json(nlohmann::json::parse(files::read_text(report_file)));
    } catch (const std::exception&) {
    }
    if (!report) {
      std::string said = files::last_lines(worker.output, 1);
      if (!said.empty()) said.pop_back();
      return refuse("the server could not grade this check (" + worker.describe() + (said.empty() ? "" : ": " + said) + ")");
    }
    // What the clean copy left out (a file too large, a link) is the student's to know.
    report->notes.insert(report->notes.end(), copy.notes.begin(), copy.notes.end());
    files::write_whole(student_dir / "last-report.json", report::to_json(*report).dump(2) + "\n");
    if (request.format == "gradescope") {
      write_all(out_fd, report::to_gradescope(*report, request.visibility).dump(2, ' ', false,
                                                                                  nlohmann::json::error_handler_t::replace) + "\n");
    } else {
      write_all(out_fd, report_reply(*report));
    }
    log("graded " + report::text::format_score(report->points(), report->max_points()) +
        (report->complete() ? "" : ", incomplete") + (report->device.empty() ? "" : " on " + report->device));
    return kServed;
  } catch (const std::exception& error) {
    // The server's own trouble (a full disk, a folder it cannot read): its log has the words, the
    // student a line without the server's paths.
    log(std::string("failed: ") + error.what());
    write_all(out_fd, error_reply("the server failed on this check; try again, and tell your instructor if it stays", request));
    return kRefused;
  }
}

}  // namespace cdplab::remote
