#include "process/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

extern char** environ;

namespace cdplab::process {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_cancelled{false};
static_assert(std::atomic<bool>::is_always_lock_free, "cancel_all() is called from signal handlers");

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void append_capped(Result& result, const char* data, std::size_t size, std::size_t limit) {
  const std::size_t room = result.output.size() < limit ? limit - result.output.size() : 0;
  const std::size_t kept = size < room ? size : room;
  result.output.append(data, kept);
  result.dropped += size - kept;
}

/// Runs in the child after fork(): only async-signal-safe calls until exec (the argument and
/// environment arrays are built before the fork, since the parent may have other threads).
[[noreturn]] void exec_child(char* const* args, char* const* envp, const Options& options, int out_fd, int in_fd,
                             int stdout_fd) {
  setpgid(0, 0);
  const auto limit = [](int resource, std::size_t value) {
    if (value == 0) return;
    const rlimit bound{static_cast<rlim_t>(value), static_cast<rlim_t>(value)};
    setrlimit(resource, &bound);
  };
  limit(RLIMIT_FSIZE, options.limits.file_bytes);
  limit(RLIMIT_AS, options.limits.address_bytes);
  limit(RLIMIT_NPROC, options.limits.processes);
  if (options.nice != 0) {
    const int ignored = nice(options.nice);  // lower priority is never refused; -1 may be a value
    (void)ignored;
  }
  dup2(stdout_fd >= 0 ? stdout_fd : out_fd, STDOUT_FILENO);  // the copies do not inherit close-on-exec
  dup2(out_fd, STDERR_FILENO);
  const int input = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY);
  if (input >= 0) dup2(input, STDIN_FILENO);
  if (!options.working_directory.empty() && chdir(options.working_directory.c_str()) != 0) {
    const char msg[] = "cannot enter the working directory\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(127);
  }
  execvpe(args[0], args, envp);
  _exit(127);
}

/// This process's environment with `overrides` set: "NAME=value" strings for the child.
std::vector<std::string> child_environment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> out;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (overrides.count(text.substr(0, text.find('='))) == 0) out.push_back(text);
  }
  for (const auto& [name, value] : overrides) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

/// With CDPLAB_PROCESS_LOG naming a file, every run() appends a line to it: when the program
/// started (seconds since the epoch), how long it ran, how it ended, and the end of its command
/// line (the box's options come first). Where a grading's time goes, program by program.
void log_run(const std::vector<std::string>& argv, const Result& result) {
  const char* log = std::getenv("CDPLAB_PROCESS_LOG");
  if (log == nullptr || *log == '\0') return;
  const double ended = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string command = command_line(argv);
  constexpr std::size_t kMostChars = 300;
  if (command.size() > kMostChars) command = "..." + command.substr(command.size() - kMostChars);
  char head[96];
  std::snprintf(head, sizeof head, "%.3f\t%.3f\t", ended - result.seconds, result.seconds);
  const std::string line = head + result.describe() + "\t" + command + "\n";
  const int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const ssize_t ignored = write(fd, line.data(), line.size());  // one write: lines never interleave
  (void)ignored;
  close(fd);
}

}  // namespace

std::string Result::describe() const {
  std::ostringstream out;
  if (cancelled) {
    out << "cancelled";
  } else if (!started) {
    out << "could not be started";
  } else if (!stopped_by.empty()) {
    out << "stopped: " << stopped_by;
  } else if (timed_out) {
    out << "stopped after " << static_cast<int>(seconds + 0.5) << " s (time limit)";
  } else if (signal != 0) {
    out << "ended by signal " << signal << " (" << strsignal(signal) << ")";
  } else {
    out << "exit status " << exit_code;
  }
  return out.str();
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& arg : argv) {
    if (!line.empty()) line += ' ';
    const bool plain = !arg.empty() && arg.find_first_of(" \t\"'\\$`;&|<>*?()") == std::string::npos;
    if (plain) {
      line += arg;
    } else {
      line += '\'';
      for (char c : arg) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
      line += '\'';
    }
  }
  return line;
}

std::size_t descendants(int pid) {
  // Every process's parent, from /proc/<pid>/stat: "pid (comm) state ppid ...", comm may hold ')'.
  std::map<int, std::vector<int>> children;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return 0;
  while (const dirent* entry = readdir(proc)) {
    const int child = std::atoi(entry->d_name);
    if (child <= 0) continue;
    std::ifstream stat("/proc/" + std::string(entry->d_name) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    int parent = 0;
    if (rest >> state >> parent) children[parent].push_back(child);
  }
  closedir(proc);
  std::size_t count = 0;
  std::vector<int> pending{pid};
  while (!pending.empty()) {
    const int at = pending.back();
    pending.pop_back();
    const auto it = children.find(at);
    if (it == children.end()) continue;
    count += it->second.size();
    pending.insert(pending.end(), it->second.begin(), it->second.end());
  }
  return count;
}

std::size_t user_tasks() {
  std::size_t count = 0;
  const uid_t me = getuid();
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return 0;
  while (const dirent* entry = readdir(proc)) {
    if (std::atoi(entry->d_name) <= 0) continue;
    const std::string dir = "/proc/" + std::string(entry->d_name);
    struct stat info {};
    if (stat(dir.c_str(), &info) != 0 || info.st_uid != me) continue;
    // RLIMIT_NPROC counts threads: "Threads:" of the process's status.
    std::ifstream status(dir + "/status");
    std::size_t threads = 1;
    for (std::string line; std::getline(status, line);)
      if (line.rfind("Threads:", 0) == 0) threads = static_cast<std::size_t>(std::max(1L, std::atol(line.c_str() + 8)));
    count += threads;
  }
  closedir(proc);
  return count;
}

void cancel_all() { g_cancelled.store(true); }

bool cancelled() { return g_cancelled.load(); }

void clear_cancel() { g_cancelled.store(false); }

namespace {

/// The programs run() is running now (this process's own children), and whether processes left
/// behind are ended (end_left_behind_processes).
struct Children {
  std::mutex mutex;
  std::set<pid_t> running;
  bool reaping = false;
};

Children& children() {
  static Children c;
  return c;
}

/// Ends and reaps the children of this process that no run() started: processes a program left
/// behind, which the subreaper setting handed to this process.
void end_orphans() {
  Children& c = children();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (!c.reaping) return;
  const pid_t me = getpid();
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return;
  std::vector<pid_t> orphans;
  while (const dirent* entry = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0 || c.running.count(pid) != 0) continue;
    std::ifstream stat("/proc/" + std::string(entry->d_name) + "/stat");
    std::string line;
    if (!std::getline(stat, line) || line.rfind(')') == std::string::npos) continue;
    std::istringstream rest(line.substr(line.rfind(')') + 1));
    std::string state;
    int parent = 0;
    if (rest >> state >> parent && parent == me) orphans.push_back(pid);
  }
  closedir(proc);
  for (const pid_t pid : orphans) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
}

}  // namespace

void end_left_behind_processes() {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::lock_guard<std::mutex> lock(children().mutex);
  children().reaping = true;
}

Result run(const std::vector<std::string>& argv, const Options& options) {
  Result result;
  const auto start = Clock::now();
  if (argv.empty()) return result;
  if (cancelled()) {
    result.cancelled = true;
    return result;
  }

  // Close-on-exec on both ends: a program another thread starts meanwhile must not inherit
  // this pipe (it would hold the pipe open, and the output would never end).
  // The files of stdin and stdout, opened here: a file that cannot be opened starts nothing.
  struct FileDescriptor {
    int fd = -1;
    ~FileDescriptor() {
      if (fd >= 0) close(fd);
    }
  } in_file, out_file;
  if (!options.stdin_file.empty() && (in_file.fd = open(options.stdin_file.c_str(), O_RDONLY | O_CLOEXEC)) < 0)
    return result;
  if (!options.stdout_file.empty() &&
      (out_file.fd = open(options.stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
    return result;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return result;
  std::vector<std::string> arg_strings(argv.begin(), argv.end());
  std::vector<std::string> env_strings = child_environment(options.env);
  const std::vector<char*> args = pointers(arg_strings);
  const std::vector<char*> envp = pointers(env_strings);
  pid_t pid = -1;
  {
    // Registered before another thread can take the new child for one left behind.
    std::lock_guard<std::mutex> lock(children().mutex);
    pid = fork();
    if (pid == 0) exec_child(args.data(), envp.data(), options, fds[1], in_file.fd, out_file.fd);
    if (pid > 0) children().running.insert(pid);
  }
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return result;
  }

  setpgid(pid, pid);  // also done by the child; whichever runs first wins the race
  close(fds[1]);
  result.started = true;

  char buffer[8192];
  bool open_pipe = true;
  bool exited = false;
  int status = 0;
  // Once the output has ended, the exit usually follows within a millisecond: wait for it in
  // short steps, then longer ones (a grading runs hundreds of programs one after another).
  int closed_wait_ms = 1;
  auto last_watch = Clock::now();
  // Ending the program: the whole process group, SIGTERM first when it has a grace period.
  bool stopping = false;
  auto stop_asked = Clock::now();
  const auto stop = [&] {
    if (stopping) return;
    stopping = true;
    stop_asked = Clock::now();
    kill(-pid, options.grace_seconds > 0 ? SIGTERM : SIGKILL);
  };
  while (!exited) {
    int wait_ms = open_pipe ? 100 : closed_wait_ms;
    if (!open_pipe && closed_wait_ms < 100) closed_wait_ms *= 2;
    if (cancelled() && !result.cancelled) {
      result.cancelled = true;
      stop();
    }
    if (options.timeout_seconds > 0) {
      const double left = options.timeout_seconds - since(start);
      if (left <= 0 && !result.timed_out) {
        result.timed_out = true;
        stop();
      }
      if (left > 0 && left * 1000 < wait_ms) wait_ms = static_cast<int>(left * 1000) + 1;
    }
    if (options.watch && result.stopped_by.empty() && since(last_watch) >= options.watch_seconds) {
      last_watch = Clock::now();
      result.stopped_by = options.watch(pid);
      if (!result.stopped_by.empty()) stop();
    }
    if (stopping && options.grace_seconds > 0 && since(stop_asked) >= options.grace_seconds) kill(-pid, SIGKILL);
    if (open_pipe) {
      pollfd p{fds[0], POLLIN, 0};
      if (poll(&p, 1, wait_ms) > 0) {
        const ssize_t n = read(fds[0], buffer, sizeof buffer);
        if (n > 0) {
          append_capped(result, buffer, static_cast<std::size_t>(n), options.output_limit);
          if (options.on_output) options.on_output(std::string(buffer, static_cast<std::size_t>(n)));
        }
        else if (n == 0 || errno != EINTR) open_pipe = false;
      }
    } else {
      usleep(static_cast<useconds_t>(wait_ms) * 1000);
    }
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) exited = true;
  }
  // Drain what is left; processes the program left behind in its group are ended.
  kill(-pid, SIGKILL);
  if (open_pipe) {
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    ssize_t n;
    while ((n = read(fds[0], buffer, sizeof buffer)) > 0)
      append_capped(result, buffer, static_cast<std::size_t>(n), options.output_limit);
  }
  close(fds[0]);
  {
    std::lock_guard<std::mutex> lock(children().mutex);
    children().running.erase(pid);
  }
  end_orphans();

  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
    if (result.exit_code == 127 && result.output.empty()) result.started = false;
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  result.seconds = since(start);
  log_run(argv, result);
  return result;
}

}  // namespace cdplab::process
