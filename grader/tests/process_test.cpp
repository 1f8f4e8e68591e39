// The process runner the grader uses for CMake, CTest and nvcc: exit codes, output, limits.
#include "process/process.h"

#include "files/files.h"
#include "sandbox/submission.h"
#include "test_folders.h"

#include <doctest/doctest.h>

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <unistd.h>

namespace fs = std::filesystem;
namespace process = cdplab::process;
using cdplab::process::Options;
using cdplab::process::run;

TEST_CASE("process reports exit status and output") {
  const auto result = run({"sh", "-c", "echo out; echo err >&2; exit 3"});
  CHECK(result.started);
  CHECK_FALSE(result.ok());
  CHECK(result.exit_code == 3);
  CHECK(result.output.find("out") != std::string::npos);
  CHECK(result.output.find("err") != std::string::npos);
  CHECK(result.describe() == "exit status 3");
}

TEST_CASE("process time limit ends the whole process group") {
  Options options;
  options.timeout_seconds = 0.5;
  // The shell's background child would keep a naive runner waiting on the pipe.
  const auto result = run({"sh", "-c", "sleep 30 & sleep 30"}, options);
  CHECK(result.timed_out);
  CHECK_FALSE(result.ok());
  CHECK(result.seconds < 10);
  CHECK(result.describe().find("time limit") != std::string::npos);
}

TEST_CASE("process output is capped and the rest counted") {
  Options options;
  options.output_limit = 100;
  const auto result = run({"sh", "-c", "yes cdplab | head -c 5000"}, options);
  CHECK(result.ok());
  CHECK(result.output.size() == 100);
  CHECK(result.dropped == 4900);
}

TEST_CASE("process environment and working directory") {
  Options options;
  options.env = {{"CDPLAB_PROCESS_TEST", "visible"}};
  options.working_directory = "/";
  const auto result = run({"sh", "-c", "echo $CDPLAB_PROCESS_TEST; pwd"}, options);
  CHECK(result.output == "visible\n/\n");
}

TEST_CASE("process niceness: a child may run at a lower priority than the grader") {
  errno = 0;
  const int own = getpriority(PRIO_PROCESS, 0);
  REQUIRE(errno == 0);
  CHECK(run({"nice"}).output == std::to_string(own) + "\n");  // unchanged by default
  Options options;
  options.nice = 5;
  CHECK(run({"nice"}, options).output == std::to_string(std::min(19, own + 5)) + "\n");
}

TEST_CASE("process log: CDPLAB_PROCESS_LOG gets a line per program, with its time and how it ended") {
  const auto dir = cdplab::testing::empty_folder(std::filesystem::path(CDPLAB_TEST_BINARY_DIR) / "work" / "process-log");
  const std::string log = (dir / "processes.log").string();
  setenv("CDPLAB_PROCESS_LOG", log.c_str(), 1);
  run({"sh", "-c", "exit 4"});
  run({"true"});
  unsetenv("CDPLAB_PROCESS_LOG");
  run({"false"});  // not logged
  const std::string text = cdplab::files::read_text(log);
  CHECK(std::count(text.begin(), text.end(), '\n') == 2);
  CHECK(text.find("\texit status 4\tsh -c 'exit 4'\n") != std::string::npos);
  CHECK(text.find("\texit status 0\ttrue\n") != std::string::npos);
  CHECK(text.find("false") == std::string::npos);
}

TEST_CASE("process that cannot be started") {
  const auto result = run({"cdplab-no-such-program-anywhere"});
  CHECK_FALSE(result.started);
  CHECK_FALSE(result.ok());
  CHECK(result.describe() == "could not be started");
}

TEST_CASE("process crash is reported by signal") {
  const auto result = run({"sh", "-c", "kill -SEGV $$"});
  CHECK(result.signal == 11);
  CHECK(result.describe().find("signal 11") != std::string::npos);
}

TEST_CASE("command lines are quoted for display") {
  CHECK(cdplab::process::command_line({"cmake", "--build", "a b", "it's"}) == "cmake --build 'a b' 'it'\\''s'");
}

TEST_CASE("process cancel_all ends a running program and starts no other") {
  // Another thread cancels while run() waits for a long program, as a Ctrl-C handler would.
  std::thread canceller([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cdplab::process::cancel_all();
  });
  const auto running = run({"sh", "-c", "sleep 30 & sleep 30"});
  canceller.join();
  CHECK(running.cancelled);
  CHECK_FALSE(running.ok());
  CHECK(running.seconds < 10);
  CHECK(running.describe() == "cancelled");
  const auto later = run({"sh", "-c", "echo never"});
  CHECK(later.cancelled);
  CHECK_FALSE(later.started);
  CHECK(later.output.empty());
  cdplab::process::clear_cancel();
  CHECK(run({"true"}).ok());
}

TEST_CASE("process limits: a file past the size limit is cut, an allocation past the address space fails") {
  const fs::path dir = fs::temp_directory_path() / ("cdplab-limits-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  process::Options options;
  options.limits.file_bytes = 1 << 20;
  options.working_directory = dir.string();
  const auto big = process::run({"sh", "-c", "head -c 3000000 /dev/zero > big; echo done"}, options);
  CHECK(fs::file_size(dir / "big") <= (1u << 20));
  CHECK(big.output.find("done") != std::string::npos);  // the shell goes on; the writer was stopped
  process::Options memory;
  memory.limits.address_bytes = std::size_t{256} << 20;
  const auto huge = process::run({"awk", "BEGIN { s = sprintf(\"%900000000s\", \"\"); print length(s) }"}, memory);
  CHECK_FALSE(huge.ok());
  CHECK(huge.output.find("900000000") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("process watch: a program with too many processes is ended, naming why") {
  process::Options options;
  options.timeout_seconds = 60;
  options.watch_seconds = 0.1;
  options.watch = [](int pid) -> std::string {
    return process::descendants(pid) > 10 ? std::string("more than 10 processes") : std::string();
  };
  const auto many = process::run({"sh", "-c", "for i in $(seq 40); do sleep 30 & done; wait"}, options);
  CHECK(many.stopped_by == "more than 10 processes");
  CHECK(many.seconds < 20);
  CHECK(many.describe().find("stopped: more than 10 processes") != std::string::npos);
  // Fine programs are never stopped.
  const auto one = process::run({"sh", "-c", "sleep 0.3; echo ok"}, options);
  CHECK(one.ok());
  CHECK(one.stopped_by.empty());
}

TEST_CASE("sandbox budget: a build tree that grows past its limit stops its build") {
  const fs::path dir = fs::temp_directory_path() / ("cdplab-budget-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  cdplab::sandbox::Budget budget = cdplab::sandbox::build_budget(dir);
  budget.tree_bytes = 3 << 20;
  process::Options options;
  options.timeout_seconds = 60;
  options.working_directory = dir.string();
  options = cdplab::sandbox::budgeted(options, budget);
  const auto filled =
      process::run({"sh", "-c", "for i in $(seq 30); do head -c 1000000 /dev/zero > f$i; sleep 0.1; done"}, options);
  CHECK(filled.stopped_by.find("build tree grew past 3 MiB") != std::string::npos);
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) files += entry.is_regular_file() ? 1 : 0;
  CHECK(files < 30);
  fs::remove_all(dir);
}

TEST_CASE("process: a process a program leaves behind ends with the run") {
  process::end_left_behind_processes();
  const fs::path pid_file = fs::temp_directory_path() / ("cdplab-left-behind-" + std::to_string(::getpid()));
  fs::remove(pid_file);
  // A daemon of the classic kind: a new session, its parent gone, so neither the process group
  // nor the parent's end reaches it.
  const auto ran = process::run({"sh", "-c", "setsid sh -c 'echo $$ > " + pid_file.string() + "; exec sleep 300' & "
                                             "while [ ! -s " + pid_file.string() + " ]; do sleep 0.05; done"});
  CHECK(ran.ok());
  const std::string pid = cdplab::files::read_text(pid_file);
  REQUIRE_FALSE(pid.empty());
  const fs::path proc = fs::path("/proc") / pid.substr(0, pid.find('\n'));
  for (int i = 0; i < 50 && fs::exists(proc); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(fs::exists(proc));
  fs::remove(pid_file);
}
