// The graded speed checks (grader/harness/speed.h), tested on the CPU with the suites of
// fixtures/speed: host workloads stand in for the exercise and its baseline, so the baseline's
// child process, the comparison, the report of both times, the failures and the baseline cache
// are real.
#include "../harness/speed.h"

#include "grading/grade.h"
#include "process/process.h"
#include "test_folders.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
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

std::string suite_path(const std::string& name) { return (kFixtures / ("speed_fixture_" + name)).string(); }

/// Runs `command` (a fixture suite, with its arguments) with `env` added; its results go to
/// `<dir>/<label>.jsonl`.
SuiteRun run_suite(const std::vector<std::string>& command, const fs::path& dir, const std::string& label,
                   const std::map<std::string, std::string>& env = {}) {
  const fs::path results = dir / (label + ".jsonl");
  fs::remove(results);
  cdplab::process::Options options;
  options.env = env;
  options.env["CDPLAB_RESULTS_FILE"] = results.string();
  options.timeout_seconds = 60;
  SuiteRun run;
  run.result = cdplab::process::run(command, options);
  run.events = read_check_events(results.string());
  return run;
}

SuiteRun run_fixture(const std::string& name) {
  const fs::path dir = cdplab::testing::empty_folder(kFixtures / ("run-" + name));
  return run_suite({suite_path(name)}, dir, "results");
}

/// An empty baseline cache in `dir`, and the environment of a suite process that uses it on GPU 3
/// (the fixture's baseline makes sure that its process sees the same GPU).
std::map<std::string, std::string> cache_on_gpu_3(const fs::path& dir) {
  const fs::path cache = cdplab::testing::empty_folder(dir / "baseline-times");
  return {{"CDPLAB_BASELINE_CACHE", cache.string()}, {"CUDA_VISIBLE_DEVICES", "3"}, {"SPEED_FIXTURE_EXPECT_GPUS", "3"}};
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

TEST_CASE("a speed check keeps its baseline's times in the cache, per GPU, and compares later runs with them") {
  const fs::path dir = cdplab::testing::empty_folder(kFixtures / "run-cached");
  const auto env = cache_on_gpu_3(dir);
  const fs::path cache = env.at("CDPLAB_BASELINE_CACHE");
  const std::string suite = suite_path("self");
  // A process the grader runs beside other work on the GPU (cache only) times nothing: with the
  // baseline not kept yet, it ends with the status that makes the grader run it again alone.
  static_assert(cdplab::harness::kBaselineNotCached == cdplab::grading::kBaselineNotCached);
  auto cache_only = env;
  cache_only["CDPLAB_BASELINE_CACHE_ONLY"] = "1";
  const SuiteRun too_early = run_suite({suite}, dir, "too-early", cache_only);
  INFO(too_early.result.output);
  CHECK(too_early.result.exit_code == cdplab::grading::kBaselineNotCached);
  REQUIRE(too_early.last() != nullptr);
  CHECK(too_early.last()->event == "start");  // the check never ended
  CHECK(fs::is_empty(cache));

  const SuiteRun first = run_suite({suite}, dir, "first", env);
  INFO(first.result.output);
  REQUIRE(first.last() != nullptr);
  CHECK(first.last()->status == "passed");
  const fs::path kept = cache / "busy_work.gpu-3.ms";
  REQUIRE(fs::exists(kept));  // the workload's name and the GPU name the file
  CHECK(fs::file_size(kept) > 0);
  // Once it is kept, the same process, cache only, reads it and decides.
  const SuiteRun beside = run_suite({suite}, dir, "beside", cache_only);
  INFO(beside.result.output);
  CHECK(beside.result.exit_code == 0);
  REQUIRE(beside.last() != nullptr);
  CHECK(beside.last()->status == "passed");

  // A later run on that GPU reads the times instead of timing: a baseline kept as next to nothing
  // fails the same code by the ratio.
  std::ofstream(kept) << "0.000001\n";
  const SuiteRun later = run_suite({suite}, dir, "later", env);
  INFO(later.result.output);
  REQUIRE(later.last() != nullptr);
  CHECK(later.last()->status == "failed");
  CHECK(contains(joined(later.last()->failures), "0.000 ms (best of 1 runs)"));
  // Another GPU has no times yet: its process times the baseline itself, and keeps its times.
  auto other = env;
  other["CUDA_VISIBLE_DEVICES"] = "5";
  other["SPEED_FIXTURE_EXPECT_GPUS"] = "5";
  const SuiteRun other_gpu = run_suite({suite}, dir, "other-gpu", other);
  INFO(other_gpu.result.output);
  REQUIRE(other_gpu.last() != nullptr);
  CHECK(other_gpu.last()->status == "passed");
  CHECK(fs::exists(cache / "busy_work.gpu-5.ms"));
  // A process that sees every GPU (CUDA_VISIBLE_DEVICES unset) keeps its times under "all".
  std::map<std::string, std::string> all_gpus{{"CDPLAB_BASELINE_CACHE", cache.string()}};
  const SuiteRun every_gpu = run_suite({"env", "-u", "CUDA_VISIBLE_DEVICES", suite}, dir, "all-gpus", all_gpus);
  INFO(every_gpu.result.output);
  REQUIRE(every_gpu.last() != nullptr);
  CHECK(every_gpu.last()->status == "passed");
  CHECK(fs::exists(cache / "busy_work.gpu-all.ms"));
}

TEST_CASE("--time-baselines keeps a suite's baselines ahead, and a process beside other work then reads them") {
  const fs::path dir = cdplab::testing::empty_folder(kFixtures / "run-ahead");
  const auto env = cache_on_gpu_3(dir);
  const fs::path cache = env.at("CDPLAB_BASELINE_CACHE");
  const std::string suite = suite_path("self");
  auto cache_only = env;
  cache_only["CDPLAB_BASELINE_CACHE_ONLY"] = "1";
  // Asked first without a turn alone: nothing kept yet is the status that asks for one.
  const SuiteRun asked = run_suite({suite, "--time-baselines"}, dir, "asked", cache_only);
  CHECK(asked.result.exit_code == cdplab::grading::kBaselineNotCached);
  CHECK(fs::is_empty(cache));
  const SuiteRun timed = run_suite({suite, "--time-baselines"}, dir, "timed", env);
  INFO(timed.result.output);
  CHECK(timed.result.exit_code == 0);
  CHECK(contains(timed.result.output, "baseline-ready busy work"));
  CHECK(timed.events.empty());  // no check ran
  REQUIRE(fs::exists(cache / "busy_work.gpu-3.ms"));
  CHECK(run_suite({suite, "--time-baselines"}, dir, "again", cache_only).result.exit_code == 0);
  // The suite, beside other work, reads the kept times and decides.
  const SuiteRun beside = run_suite({suite}, dir, "beside", cache_only);
  INFO(beside.result.output);
  CHECK(beside.result.exit_code == 0);
  REQUIRE(beside.last() != nullptr);
  CHECK(beside.last()->status == "passed");

  // A baseline that cannot be timed is named, and kept nowhere: a check that needs it times it
  // again and says why it fails.
  const fs::path broken_cache = cdplab::testing::empty_folder(dir / "broken-times");
  const std::map<std::string, std::string> broken_env{{"CDPLAB_BASELINE_CACHE", broken_cache.string()}};
  const SuiteRun broken = run_suite({suite_path("broken_baseline"), "--time-baselines"}, dir, "broken", broken_env);
  CHECK(broken.result.exit_code == 1);
  CHECK(contains(broken.result.output, "speed-error busy work: "));
  CHECK(fs::is_empty(broken_cache));
  const SuiteRun broken_check = run_suite({suite_path("broken_baseline")}, dir, "broken-check", broken_env);
  REQUIRE(broken_check.last() != nullptr);
  CHECK(broken_check.last()->status == "failed");
  CHECK(contains(joined(broken_check.last()->failures), "value 7 is out of place"));
  CHECK(fs::is_empty(broken_cache));
  // Without a cache there is nothing to keep the times in.
  const SuiteRun no_cache = run_suite({suite, "--time-baselines"}, dir, "no-cache");
  CHECK(no_cache.result.exit_code == 2);
  CHECK(contains(no_cache.result.output, "needs a baseline cache (CDPLAB_BASELINE_CACHE)"));
}
