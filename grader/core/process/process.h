/// @file process.h
/// @brief Runs a program with a time limit and a cap on the output it may produce.
///
/// The grader drives CMake, CTest and nvcc through this one function. The child runs in its own
/// process group, so a time limit ends the program and everything it started (a hanging check,
/// a compiler that spawned helpers); its output is kept up to a limit and the rest is counted.
/// With the environment variable CDPLAB_PROCESS_LOG naming a file, each run that starts a program
/// appends one line to it: start (seconds since the epoch), seconds, how it ended, the end of the
/// command line.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace cdplab::process {

/// Limits a program and what it starts get from the kernel (setrlimit); 0 leaves one as it is.
struct ResourceLimits {
  std::size_t file_bytes = 0;     ///< the largest file it may write (RLIMIT_FSIZE; past it, SIGXFSZ)
  std::size_t address_bytes = 0;  ///< its address space (RLIMIT_AS): a bound on memory, never for CUDA
  std::size_t processes = 0;      ///< threads of this user at once, in all its processes (RLIMIT_NPROC)
};

struct Options {
  std::string working_directory;              ///< empty: the current one
  std::map<std::string, std::string> env;     ///< variables set (added to this process's own)
  double timeout_seconds = 0;                 ///< 0: no limit
  std::size_t output_limit = 1 << 20;         ///< bytes of stdout+stderr kept
  int nice = 0;                               ///< added to the child's niceness (nice(2)); 0: this process's
  ResourceLimits limits;                      ///< applied in the child before it starts the program
  /// Called every `watch_seconds` while the program runs: a non-empty answer ends it (and
  /// everything it started) at once, and becomes Result::stopped_by. The grader watches a box's
  /// processes and the size of the tree it writes.
  std::function<std::string(int pid)> watch;
  double watch_seconds = 1;
  /// Called with each piece of output as it arrives (before the cap), in the thread of run():
  /// progress shown while a long program runs.
  std::function<void(const std::string& piece)> on_output;
  /// When the program is ended (time limit, watch, cancel_all), its process group is sent SIGTERM
  /// and given this long to end before SIGKILL; 0: SIGKILL at once. A cdplab that grades ends its
  /// own programs on SIGTERM, which SIGKILL would leave running.
  double grace_seconds = 0;
  /// A file the program reads as its standard input; empty: /dev/null.
  std::string stdin_file;
  /// A file (created or emptied) that receives the program's standard output; empty: stdout goes
  /// with stderr into Result::output. With a file, Result::output holds stderr alone.
  std::string stdout_file;
};

struct Result {
  int exit_code = -1;       ///< the program's exit status; -1 when it did not exit normally
  int signal = 0;           ///< the signal that ended it, 0 if none
  bool timed_out = false;   ///< ended by the time limit
  bool cancelled = false;   ///< ended, or never started, because cancel_all() was called
  bool started = false;     ///< false when the program (or its stdin or stdout file) could not be opened
  std::string stopped_by;   ///< why Options::watch ended it; empty when it did not
  std::string output;       ///< stdout and stderr, interleaved, capped at Options::output_limit
  std::size_t dropped = 0;  ///< bytes of output beyond the cap
  double seconds = 0;       ///< wall time

  bool ok() const { return started && !timed_out && exit_code == 0; }
  /// One line: "exit status 2", "killed after 30 s (time limit)", "ended by signal 11 (SIGSEGV)".
  std::string describe() const;
};

/// Runs `argv` (argv[0] is looked up in PATH) and waits for it. Never throws for the program's
/// own failures; they are in the Result.
Result run(const std::vector<std::string>& argv, const Options& options = {});

/// Ends every program run() is waiting for, in every thread, and makes later calls return at
/// once without starting anything (Ctrl-C in a command that runs programs). Async-signal-safe:
/// it only sets a flag, which run() reads within 100 ms.
void cancel_all();
/// Whether cancel_all() was called.
bool cancelled();
/// Undoes cancel_all(): run() starts programs again.
void clear_cancel();

/// Makes this process the reaper of every process its programs leave behind (Linux's child
/// subreaper): a program that detaches a process of its own (setsid, a double fork) leaves it to
/// this process, not to init, and every run() ends such processes once its program has ended.
/// cdplab calls it at start: without the box (--no-sandbox) no process of a submission outlives
/// its grading.
void end_left_behind_processes();

/// How many processes descend from `pid` (its children, theirs, ...), read from /proc; 0 where
/// /proc cannot be read.
std::size_t descendants(int pid);

/// How many threads this process's user runs, in all its processes: what RLIMIT_NPROC counts.
std::size_t user_tasks();

/// Quotes arguments for display as a shell command line.
std::string command_line(const std::vector<std::string>& argv);

}  // namespace cdplab::process
