// The process runner the grader uses for CMake, CTest and nvcc: exit codes, output, limits.
#include "process/process.h"

#include "files/files.h"
#include "test_folders.h"

#include <doctest/doctest.h>

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <thread>

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
