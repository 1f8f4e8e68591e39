#include "process/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>

extern char** environ;

namespace cdplab::process {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void append_capped(Result& result, const char* data, std::size_t size, std::size_t limit) {
  const std::size_t room = result.output.size() < limit ? limit - result.output.size() : 0;
  const std::size_t kept = size < room ? size : room;
  result.output.append(data, kept);
  result.dropped += size - kept;
}

/// Runs in the child after fork(): only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const std::vector<std::string>& argv, const Options& options, int out_fd) {
  setpgid(0, 0);
  dup2(out_fd, STDOUT_FILENO);
  dup2(out_fd, STDERR_FILENO);
  close(out_fd);
  const int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
  if (!options.working_directory.empty() && chdir(options.working_directory.c_str()) != 0) {
    const char msg[] = "cannot enter the working directory\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(127);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  _exit(127);
}

}  // namespace

std::string Result::describe() const {
  std::ostringstream out;
  if (!started) {
    out << "could not be started";
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

Result run(const std::vector<std::string>& argv, const Options& options) {
  Result result;
  const auto start = Clock::now();
  if (argv.empty()) return result;

  int fds[2];
  if (pipe(fds) != 0) return result;
  fcntl(fds[0], F_SETFD, FD_CLOEXEC);

  // Environment changes are made here, in the parent, around fork(): setenv is not safe after it.
  std::vector<std::pair<std::string, std::string>> saved;
  for (const auto& [name, value] : options.env) {
    const char* old = std::getenv(name.c_str());
    saved.emplace_back(name, old ? std::string("=") + old : std::string());
    setenv(name.c_str(), value.c_str(), 1);
  }
  const pid_t pid = fork();
  if (pid == 0) exec_child(argv, options, fds[1]);
  for (const auto& [name, old] : saved) {
    if (old.empty()) unsetenv(name.c_str()); else setenv(name.c_str(), old.c_str() + 1, 1);
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
  while (!exited) {
    int wait_ms = 100;
    if (options.timeout_seconds > 0) {
      const double left = options.timeout_seconds - since(start);
      if (left <= 0 && !result.timed_out) {
        result.timed_out = true;
        kill(-pid, SIGKILL);  // the whole process group
      }
      if (left > 0 && left * 1000 < wait_ms) wait_ms = static_cast<int>(left * 1000) + 1;
    }
    if (open_pipe) {
      pollfd p{fds[0], POLLIN, 0};
      if (poll(&p, 1, wait_ms) > 0) {
        const ssize_t n = read(fds[0], buffer, sizeof buffer);
        if (n > 0) append_capped(result, buffer, static_cast<std::size_t>(n), options.output_limit);
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

  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
    if (result.exit_code == 127 && result.output.empty()) result.started = false;
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  result.seconds = since(start);
  return result;
}

}  // namespace cdplab::process
