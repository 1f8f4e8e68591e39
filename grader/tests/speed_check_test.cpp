// The graded speed checks (grader/harness/speed.h), tested on the CPU with the suites of
// fixtures/speed: host workloads stand in for the exercise and its baseline, so the baseline's
// child process, the comparison, the report of both times and the failures are real.
#include "grading/grade.h"
#include "process/process.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using cdplab::grading::CheckEvent;
using cdplab::grading::read_check_events;

namespace {

const fs::path kFixtures = fs::path(CDPLAB_TEST_BINARY_DIR) / "fixtures" / "speed";

struct SuiteRun {
  cdplab::process::Result result;
  std::vector<CheckEvent> events;
  /// The last record of the speed check (end or skipped).
  const CheckEvent* last() const { return events.empty() ? nullptr : &events.back(); }
};

SuiteRun run_fixture(const std::string& name) {
  const fs::path dir = kFixtures / ("run-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path results = dir / "results.jsonl";
  cdplab::process::Options options;
  options.env["CDPLAB_RESULTS_FILE"] = results.string();
  options.timeout_seconds = 60;
  SuiteRun run;
  run.result = cdplab::process::run({(kFixtures / ("speed_fixture_" + name)).string()}, options);
  run.events = read_check_events(results.string());
  return run;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

}  // namespace

TEST_CASE("a speed check as fast as its baseline passes and reports both times, with no reference build") {
  // The fixtures have no reference twin, as a student release has none: the bar ships with the
  // grader, so the check is decided, never skipped.
  const SuiteRun run = run_fixture("self");
  INFO(run.result.output);
  CHECK(run.result.exit_code == 0);
  REQUIRE(run.last() != nullptr);
  CHECK(run.last()->event == "end");
  CHECK(run.last()->status == "passed");
  const std::string notes = joined(run.last()->notes);
  CHECK(contains(notes, "\"busy work\": your code "));
  CHECK(contains(notes, "the same arithmetic once "));
  CHECK(contains(notes, "best of 5 runs"));
}

TEST_CASE("a speed check fails code much slower than its baseline and says by how much") {
  const SuiteRun run = run_fixture("slow");
  INFO(run.result.output);
  CHECK(run.result.exit_code != 0);
  REQUIRE(run.last() != nullptr);
  CHECK(run.last()->status == "failed");
  const std::string failures = joined(run.last()->failures);
  CHECK(contains(failures, "ratio "));
  CHECK(contains(failures, "(at most 2.0 passes)"));
}

TEST_CASE("a speed check whose baseline fails says so and does not pass") {
  const SuiteRun run = run_fixture("broken_baseline");
  INFO(run.result.output);
  CHECK(run.result.exit_code != 0);
  REQUIRE(run.last() != nullptr);
  CHECK(run.last()->status == "failed");
  const std::string failures = joined(run.last()->failures);
  CHECK(contains(failures, "could not time its baseline (the same arithmetic once)"));
  CHECK(contains(failures, "value 7 is out of place"));
  CHECK(contains(failures, "not of your code"));
}

TEST_CASE("a suite in speed-workload mode prints one time per run of the workload or its baseline, or why it cannot") {
  const std::string suite = (kFixtures / "speed_fixture_self").string();
  const auto count_times = [](const std::string& output) {
    std::size_t lines = 0;
    for (std::size_t at = output.find("speed-ms "); at != std::string::npos; at = output.find("speed-ms ", at + 1)) ++lines;
    return lines;
  };
  const auto times = cdplab::process::run({suite, "--speed-workload", "busy work", "--runs", "3", "--warmups", "0"});
  CHECK(times.exit_code == 0);
  CHECK(count_times(times.output) == 3);
  const auto baseline =
      cdplab::process::run({suite, "--speed-workload", "busy work", "--baseline", "--runs", "2", "--warmups", "0"});
  CHECK(baseline.exit_code == 0);
  CHECK(count_times(baseline.output) == 2);
  const auto unknown = cdplab::process::run({suite, "--speed-workload", "no such work"});
  CHECK(unknown.exit_code == 1);
  CHECK(contains(unknown.output, "speed-error no speed workload named \"no such work\""));
}
