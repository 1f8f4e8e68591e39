// Observed steps (grader/harness/observe.h): the codec, the observation files with a record folder
// of the tests' own, and the judge mode of a real suite (fixtures/observe, fixtures/speed) run
// on what a runner recorded. No GPU needed: the steps here run host code.
#include "../harness/observe.h"
#include "../harness/speed.h"

#include "grading/grade.h"
#include "process/process.h"
#include "test_folders.h"

#include "cdplab/check.h"
#include "cdplab/fundamentals.h"
#include "cdplab/quadtree.h"
#include "cdplab/random.h"
#include "cdplab/streams.h"
#include "cdplab/visibility.h"

#include <doctest/doctest.h>

#include <csignal>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace fs = std::filesystem;
namespace observe = cdplab::harness::observe;
using cdplab::harness::observed;
using cdplab::harness::ObserveMode;
using cdplab::grading::CheckEvent;

namespace {

template <class T>
T round_trip(const T& value) {
  return observe::decode<T>(observe::encode(value));
}

std::uint32_t bits(float value) {
  std::uint32_t out;
  std::memcpy(&out, &value, sizeof out);
  return out;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// A fresh record folder under the tests' build folder.
fs::path fresh_dir(const std::string& name) {
  return cdplab::testing::empty_folder(fs::path(CDPLAB_TEST_BINARY_DIR) / "observe" / name);
}

const observe::CheckIdentity kCheck{"01-fundamentals/child_grids", "uniform ranges", 1234, "Test GPU", false};

/// A recorded check: two steps (a vector of floats and a struct), then the end.
void record_two_steps(const fs::path& dir, const observe::CheckIdentity& id = kCheck) {
  observe::begin_check(ObserveMode::record, dir.string(), id);
  observed("values", [] { return std::vector<float>{1.5f, -0.0f, 3.25f}; });
  observed("sum", [] { return cdplab::fundamentals::ReductionResult{42, 3}; });
  observe::end_check(true, false);
}

/// What the judge makes of the recorded file: both steps in order, then the end.
struct Judged {
  std::optional<observe::ObservationProblem> problem;  ///< what a step threw
  observe::CheckOutcome outcome;
  int steps_run = 0;  ///< lambdas the judge called: must stay 0
};

/// With `verify`, also checks the values replayed (a forged file may hold any).
Judged judge_two_steps(const fs::path& dir, const observe::CheckIdentity& id = kCheck, bool verify = true) {
  Judged judged;
  const std::string device = observe::begin_check(ObserveMode::judge, dir.string(), id);
  try {
    const auto values = observed("values", [&] {
      ++judged.steps_run;
      return std::vector<float>{};
    });
    const auto sum = observed("sum", [&] {
      ++judged.steps_run;
      return cdplab::fundamentals::ReductionResult{};
    });
    if (verify) {
      CHECK(values.size() == 3);
      CHECK(sum.sum == 42);
      CHECK(device == "Test GPU");
    }
  } catch (const observe::ObservationProblem& problem) {
    judged.problem = problem;
  }
  judged.outcome = observe::end_check(true, false);
  return judged;
}

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

fs::path path_of(const fs::path& dir, const observe::CheckIdentity& id = kCheck) {
  return observe::observation_path(dir.string(), id.suite, id.check);
}

struct NestedAggregate {
  std::string name;
  std::vector<std::vector<cdplab::quadtree::Box>> boxes;
  std::optional<std::pair<int, std::vector<double>>> extra;
  std::array<std::string, 2> labels;
  std::tuple<bool, char, std::vector<bool>> flags;
  cdplab::streams::Aggregation how;
};

}  // namespace

TEST_CASE("observe: values round-trip through the codec, floats bit for bit") {
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
                            std::nanf("0x12345"), -std::nanf("7"), 1.0f / 3.0f};
  cdplab::fundamentals::PipelineStages stages;
  for (const float f : specials) {
    stages.x.push_back(f);
    stages.result.push_back(-f);
  }
  stages.y = {1.0f};
  const auto back = round_trip(stages);
  REQUIRE(back.x.size() == stages.x.size());
  REQUIRE(back.result.size() == stages.result.size());
  for (std::size_t i = 0; i < stages.x.size(); ++i) {
    CHECK(bits(back.x[i]) == bits(stages.x[i]));
    CHECK(bits(back.result[i]) == bits(stages.result[i]));
  }
  CHECK(back.y == stages.y);
  CHECK(back.z.empty());

  cdplab::quadtree::Quadtree tree;
  tree.nodes.push_back(cdplab::quadtree::QuadtreeNode{5, 1, {0.0f, 0.5f, 0.5f, 1.0f}, 3, 9, true});
  tree.x = {0.25f};
  tree.y = {0.75f};
  const auto tree_back = round_trip(tree);
  REQUIRE(tree_back.nodes.size() == 1);
  CHECK(tree_back.nodes[0].id == 5);
  CHECK(tree_back.nodes[0].box.max_y == 1.0f);
  CHECK(tree_back.nodes[0].leaf);
  CHECK(tree_back.x == tree.x);

  const cdplab::visibility::HeapRun heap{{1, 2, 3}, cudaErrorInvalidDevicePointer};
  const auto heap_back = round_trip(heap);
  CHECK(heap_back.sums == heap.sums);
  CHECK(heap_back.host_free_error == cudaErrorInvalidDevicePointer);

  cdplab::streams::FastSortRun sort;
  sort.sorted = {-3, 0, 7};
  sort.stats = {2, 3, 1, 4, 99};
  const auto sort_back = round_trip(sort);
  CHECK(sort_back.sorted == sort.sorted);
  CHECK(sort_back.stats.memory_values == 99);

  NestedAggregate nested{"n", {{{1, 2, 3, 4}}, {}}, std::make_pair(-1, std::vector<double>{0.5}), {"a", ""},
                         {true, 'x', {true, false, true}}, cdplab::streams::Aggregation::per_block};
  const auto nested_back = round_trip(nested);
  CHECK(nested_back.name == "n");
  REQUIRE(nested_back.boxes.size() == 2);
  CHECK(nested_back.boxes[0][0].max_y == 4.0f);
  CHECK(nested_back.boxes[1].empty());
  REQUIRE(nested_back.extra.has_value());
  CHECK(nested_back.extra->second == std::vector<double>{0.5});
  CHECK(nested_back.labels[0] == "a");
  CHECK(std::get<2>(nested_back.flags) == std::vector<bool>{true, false, true});
  CHECK(nested_back.how == cdplab::streams::Aggregation::per_block);
  CHECK(round_trip(std::optional<int>{}) == std::nullopt);
  const int* pointer = reinterpret_cast<const int*>(0x1234);
  CHECK(round_trip(pointer) == pointer);  // a device address travels as a number
}

TEST_CASE("observe: a payload that does not hold the type fails to decode, without a large allocation") {
  const std::string payload = observe::encode(std::vector<float>{1.0f, 2.0f});
  CHECK_THROWS_AS(observe::decode<std::vector<float>>(payload.substr(0, payload.size() - 1)), observe::DecodeError);
  CHECK_THROWS_AS(observe::decode<std::vector<float>>(payload + "x"), observe::DecodeError);
  // A length of 2^60 elements: refused before anything is allocated.
  std::string forged = payload;
  const std::uint64_t huge = std::uint64_t{1} << 60;
  std::memcpy(forged.data(), &huge, sizeof huge);
  CHECK_THROWS_AS(observe::decode<std::vector<float>>(forged), observe::DecodeError);
  CHECK_THROWS_AS(observe::decode<std::vector<std::vector<int>>>(forged), observe::DecodeError);
  CHECK_THROWS_AS(observe::decode<std::string>(forged), observe::DecodeError);
  CHECK_THROWS_AS(observe::decode<bool>(std::string(1, '\2')), observe::DecodeError);
}

TEST_CASE("observe: exceptions keep their kind, codes and message") {
  const auto kept = [](std::exception_ptr error) {
    const auto [kind, payload] = observe::encode_exception(error);
    try {
      observe::rethrow_recorded(kind, payload);
    } catch (...) {
      return std::current_exception();
    }
    return std::exception_ptr();
  };
  try {
    std::rethrow_exception(kept(std::make_exception_ptr(cdplab::CudaError(cudaErrorIllegalAddress, "fault"))));
  } catch (const cdplab::CudaError& e) {
    CHECK(e.code() == cudaErrorIllegalAddress);
    CHECK(std::string(e.what()) == "fault");
  }
  try {
    std::rethrow_exception(kept(std::make_exception_ptr(
        cdplab::DeviceLaunchError(cudaErrorLaunchPendingCountExceeded, 12, "pool full"))));
  } catch (const cdplab::DeviceLaunchError& e) {
    CHECK(e.code() == cudaErrorLaunchPendingCountExceeded);
    CHECK(e.failures() == 12);
    CHECK(std::string(e.what()) == "pool full");
  }
  CHECK_THROWS_WITH_AS(std::rethrow_exception(kept(std::make_exception_ptr(cdplab::NotImplemented("todo")))), "todo",
                       cdplab::NotImplemented);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(kept(std::make_exception_ptr(std::invalid_argument("bad")))), "bad",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(kept(std::make_exception_ptr(std::out_of_range("far")))), "far",
                       std::out_of_range);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(kept(std::make_exception_ptr(std::bad_alloc()))), "std::bad_alloc",
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(kept(std::make_exception_ptr(42))), "an unknown exception",
                       std::runtime_error);
}

TEST_CASE("observe: files are named by suite and check") {
  CHECK(observe::fnv1a64("") == 0xcbf29ce484222325ull);
  CHECK(observe::fnv1a64("a") == 0xaf63dc4c8601ec8cull);
  const std::string path = observe::observation_path("/obs", "02-bezier/cdp_tessellation", "a");
  CHECK(path == "/obs/02-bezier.cdp_tessellation/af63dc4c8601ec8c.obs");
}

TEST_CASE("observe: a judge replays what the runner recorded and runs no step") {
  const fs::path dir = fresh_dir("replay");
  record_two_steps(dir);
  const Judged judged = judge_two_steps(dir);
  CHECK_FALSE(judged.problem.has_value());
  CHECK(judged.steps_run == 0);
  CHECK(judged.outcome.kind == observe::CheckOutcome::Kind::complete);
  CHECK(judged.outcome.observations == 2);

  // A later run of the check replaces the earlier one.
  observe::begin_check(ObserveMode::record, dir.string(), kCheck);
  observed("values", [] { return std::vector<float>{9.0f}; });
  observe::end_check(true, false);
  observe::begin_check(ObserveMode::judge, dir.string(), kCheck);
  CHECK(observed("values", [] { return std::vector<float>{}; }) == std::vector<float>{9.0f});
  CHECK(observe::end_check(true, false).kind == observe::CheckOutcome::Kind::complete);
}

TEST_CASE("observe: recorded exceptions are thrown again by the judge, and steps inside steps are not recorded") {
  const fs::path dir = fresh_dir("exceptions");
  observe::begin_check(ObserveMode::record, dir.string(), kCheck);
  CHECK_THROWS_AS(observed("launch", []() -> int { throw cdplab::DeviceLaunchError(cudaErrorInvalidValue, 3, "x"); }),
                  cdplab::DeviceLaunchError);
  const int outer = observed("outer", [] { return observed("inner", [] { return 5; }) + 1; });
  CHECK(outer == 6);
  observed("nothing back", [] {});
  observe::end_check(true, false);

  observe::begin_check(ObserveMode::judge, dir.string(), kCheck);
  try {
    observed("launch", []() -> int { return 0; });
    FAIL("the recorded exception was not thrown");
  } catch (const cdplab::DeviceLaunchError& e) {
    CHECK(e.code() == cudaErrorInvalidValue);
    CHECK(e.failures() == 3);
  }
  CHECK(observed("outer", [] { return 0; }) == 6);
  observed("nothing back", [] {});
  const auto outcome = observe::end_check(true, false);
  CHECK(outcome.kind == observe::CheckOutcome::Kind::complete);
  CHECK(outcome.observations == 3);
}

TEST_CASE("observe: a step under another label fails the check") {
  const fs::path dir = fresh_dir("mismatch");
  record_two_steps(dir);
  observe::begin_check(ObserveMode::judge, dir.string(), kCheck);
  observed("values", [] { return std::vector<float>{}; });
  std::optional<observe::ObservationProblem> problem;
  try {
    observed("another step", [] { return 0; });
  } catch (const observe::ObservationProblem& p) {
    problem = p;
  }
  REQUIRE(problem.has_value());
  CHECK_FALSE(problem->unobserved);
  CHECK(contains(problem->message, "the run's record of this check does not match its steps"));
  // Every later step meets the same problem, and the check ends failed.
  CHECK_THROWS_AS(observed("sum", [] { return 0; }), observe::ObservationProblem);
  const auto outcome = observe::end_check(true, false);
  CHECK(outcome.kind == observe::CheckOutcome::Kind::failed);
  CHECK(contains(outcome.message, "does not match its steps"));
}

TEST_CASE("observe: a missing or cut record leaves the check unobserved, never passed") {
  const fs::path dir = fresh_dir("missing");
  Judged judged = judge_two_steps(dir);  // nothing recorded
  REQUIRE(judged.problem.has_value());
  CHECK(judged.problem->unobserved);
  CHECK(judged.outcome.kind == observe::CheckOutcome::Kind::unobserved);
  CHECK(contains(judged.outcome.message, "left no record of this check"));

  record_two_steps(dir);
  const std::string whole = file_bytes(path_of(dir));
  // The runner stopped after the first step, or while writing the second, or before the end.
  for (const std::size_t cut : {whole.size() - 1, whole.size() - 20, whole.size() / 2}) {
    write_bytes(path_of(dir), whole.substr(0, cut));
    judged = judge_two_steps(dir);
    INFO("cut at " << cut << " of " << whole.size());
    CHECK(judged.outcome.kind == observe::CheckOutcome::Kind::unobserved);
    CHECK(judged.steps_run == 0);
  }
  write_bytes(path_of(dir), whole.substr(0, 10));  // within the header
  CHECK(judge_two_steps(dir).outcome.kind == observe::CheckOutcome::Kind::unobserved);
}

TEST_CASE("observe: a record of another check, seed or kind of run, or a corrupt one, fails the check") {
  const fs::path dir = fresh_dir("forged");
  auto other = kCheck;
  other.seed = 99;
  record_two_steps(dir, other);
  Judged judged = judge_two_steps(dir);
  CHECK(judged.outcome.kind == observe::CheckOutcome::Kind::failed);
  CHECK(contains(judged.outcome.message, "seed 99"));

  other = kCheck;
  other.under_sanitizer = true;
  record_two_steps(dir, other);
  CHECK(judge_two_steps(dir).outcome.kind == observe::CheckOutcome::Kind::failed);

  record_two_steps(dir);
  const std::string whole = file_bytes(path_of(dir));
  std::string bad = whole;
  bad[0] = 'X';  // the magic
  write_bytes(path_of(dir), bad);
  judged = judge_two_steps(dir);
  CHECK(judged.outcome.kind == observe::CheckOutcome::Kind::failed);
  CHECK(contains(judged.outcome.message, "corrupt"));

  // More after the end, and a step the check never takes.
  write_bytes(path_of(dir), whole + "junk");
  CHECK(judge_two_steps(dir).outcome.kind == observe::CheckOutcome::Kind::failed);
  observe::begin_check(ObserveMode::record, dir.string(), kCheck);
  observed("values", [] { return std::vector<float>{1.5f, -0.0f, 3.25f}; });
  observed("sum", [] { return cdplab::fundamentals::ReductionResult{42, 3}; });
  observed("one more", [] { return 1; });
  observe::end_check(true, false);
  judged = judge_two_steps(dir);
  CHECK(judged.outcome.kind == observe::CheckOutcome::Kind::failed);
  CHECK(contains(judged.outcome.message, "one more"));

  // A value of the wrong type for its step.
  observe::begin_check(ObserveMode::record, dir.string(), kCheck);
  observed("values", [] { return std::string("not floats, and odd length"); });
  observe::end_check(true, false);
  judged = judge_two_steps(dir);
  CHECK(judged.outcome.kind == observe::CheckOutcome::Kind::failed);
  CHECK(contains(judged.outcome.message, "does not decode"));
}

TEST_CASE("observe: a forged file is refused cleanly, whatever its bytes") {
  const fs::path dir = fresh_dir("fuzz");
  record_two_steps(dir);
  const std::string whole = file_bytes(path_of(dir));
  // Payload lengths past the file and past what a record may hold: no allocation, no crash.
  const std::size_t header = 8 + 4 + 4 + 8 + (8 + kCheck.suite.size()) + (8 + kCheck.check.size()) +
                             (8 + kCheck.device.size());
  const std::size_t first_length = header + 1 + 8 + std::strlen("values");
  for (const std::uint64_t length : {observe::kMaxRecordBytes + 1, std::uint64_t{1} << 62, std::uint64_t{1} << 29}) {
    std::string forged = whole;
    std::memcpy(forged.data() + first_length, &length, sizeof length);
    write_bytes(path_of(dir), forged);
    const Judged judged = judge_two_steps(dir, kCheck, false);
    CHECK(judged.outcome.kind != observe::CheckOutcome::Kind::complete);
    CHECK(judged.steps_run == 0);
  }
  cdplab::Random rng(7);
  for (int round = 0; round < 400; ++round) {
    std::string forged = whole;
    const int flips = static_cast<int>(rng.integer(1, 4));
    for (int i = 0; i < flips; ++i) {
      forged[static_cast<std::size_t>(rng.integer(0, static_cast<std::int64_t>(forged.size()) - 1))] =
          static_cast<char>(rng.next());
    }
    if (rng.uniform() < 0.3) forged.resize(static_cast<std::size_t>(rng.integer(0, static_cast<std::int64_t>(forged.size()))));
    write_bytes(path_of(dir), forged);
    const Judged judged = judge_two_steps(dir, kCheck, false);  // whatever it decides, without crashing
    CHECK(judged.steps_run == 0);
  }
}

TEST_CASE("observe: a GPU check that observed nothing fails in a judge") {
  const fs::path dir = fresh_dir("nothing");
  observe::begin_check(ObserveMode::record, dir.string(), kCheck);
  observe::end_check(true, false);
  observe::begin_check(ObserveMode::judge, dir.string(), kCheck);
  auto outcome = observe::end_check(true, false);
  CHECK(outcome.kind == observe::CheckOutcome::Kind::failed);
  CHECK(contains(outcome.message, "grader error: the check observed nothing"));
  observe::begin_check(ObserveMode::judge, dir.string(), kCheck);
  CHECK(observe::end_check(true, true).kind == observe::CheckOutcome::Kind::complete);  // skipped
  observe::begin_check(ObserveMode::judge, dir.string(), kCheck);
  CHECK(observe::end_check(false, false).kind == observe::CheckOutcome::Kind::complete);  // not a GPU check
}

// ----- a suite in judge mode ------------------------------------------------------------

namespace {

const fs::path kObserveFixture = fs::path(CDPLAB_TEST_BINARY_DIR) / "fixtures" / "observe" / "observe_fixture";
const fs::path kSpeedFixtures = fs::path(CDPLAB_TEST_BINARY_DIR) / "fixtures" / "speed";

struct SuiteRun {
  cdplab::process::Result result;
  std::vector<CheckEvent> events;
  /// The last word on `check`: its "end", "skipped", "stopped" or "unobserved" record.
  const CheckEvent* last(const std::string& check) const {
    const CheckEvent* found = nullptr;
    for (const auto& e : events)
      if (e.check == check && e.event != "start") found = &e;
    return found;
  }
  const CheckEvent* start(const std::string& check) const {
    for (const auto& e : events)
      if (e.check == check && e.event == "start") return &e;
    return nullptr;
  }
};

/// Runs a suite in record mode (`judge` false) or judge mode over `dir`.
SuiteRun run_suite(const fs::path& executable, const fs::path& dir, bool judge, const std::string& name,
                   std::map<std::string, std::string> env = {}, std::vector<std::string> args = {}) {
  const fs::path results = dir / (name + ".jsonl");
  fs::remove(results);
  env["CDPLAB_RESULTS_FILE"] = results.string();
  env["CDPLAB_SEED"] = "31337";
  if (judge) {
    env["CDPLAB_JUDGE_DIR"] = (dir / "observations").string();
    env["CUDA_VISIBLE_DEVICES"] = "";  // as the grader runs it: a CUDA call would fail
  } else {
    env["CDPLAB_OBSERVATIONS_DIR"] = (dir / "observations").string();
  }
  cdplab::process::Options options;
  options.env = env;
  options.timeout_seconds = 120;
  std::vector<std::string> argv{executable.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  SuiteRun run;
  run.result = cdplab::process::run(argv, options);
  run.events = cdplab::grading::read_check_events(results.string());
  return run;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

}  // namespace

TEST_CASE("observe: a suite's judge decides its checks on the runner's records") {
  const fs::path dir = fresh_dir("suite");
  // The GPU hidden, on a machine with one too.
  const SuiteRun runner = run_suite(kObserveFixture, dir, false, "runner", {{"CUDA_VISIBLE_DEVICES", ""}});
  INFO(runner.result.output);
  // Without a GPU the runner reports its GPU checks skipped; the others ran and recorded.
  REQUIRE(runner.last("doubled values") != nullptr);
  CHECK(runner.last("doubled values")->status == "passed");
  CHECK(runner.last("doubled on the GPU")->event == "skipped");

  const SuiteRun judge = run_suite(kObserveFixture, dir, true, "judge");
  INFO(judge.result.output);
  CHECK(judge.result.exit_code == 1);
  REQUIRE(judge.last("doubled values") != nullptr);
  CHECK(judge.last("doubled values")->event == "end");
  CHECK(judge.last("doubled values")->status == "passed");
  CHECK(judge.last("stopped after a step")->status == "passed");
  // The code under test's errors fail the check as they did in the runner.
  const CheckEvent* errors = judge.last("errors of the code under test");
  REQUIRE(errors != nullptr);
  CHECK(errors->status == "failed");
  CHECK(joined(errors->failures) == joined(runner.last("errors of the code under test")->failures));
  CHECK(contains(joined(errors->failures), "not implemented yet"));
  // A GPU check runs in a judge without a GPU; with no record of it, it is unobserved.
  REQUIRE(judge.last("doubled on the GPU") != nullptr);
  CHECK(judge.last("doubled on the GPU")->event == "unobserved");
  CHECK(contains(judge.last("doubled on the GPU")->reason, "left no record"));
}

TEST_CASE("observe: the judge, not the runner, decides: wrong values fail, a crash is unobserved, an empty GPU check fails") {
  const fs::path dir = fresh_dir("suite-wrong");
  const SuiteRun runner =
      run_suite(kObserveFixture, dir, false, "runner", {{"OBSERVE_FIXTURE_WRONG", "1"}, {"OBSERVE_FIXTURE_CRASH", "1"}},
                {"--test-case=doubled values,stopped after a step"});
  INFO(runner.result.output);
  REQUIRE(runner.last("stopped after a step") != nullptr);
  CHECK(runner.result.signal == SIGABRT);  // doctest reports the crash as the check's failed end

  // "observes nothing" as a runner with a GPU would have recorded it: a start and an end.
  observe::begin_check(ObserveMode::record, (dir / "observations").string(),
                       {"observe/fixture", "observes nothing", 31337, "Test GPU", false});
  observe::end_check(true, false);

  const SuiteRun judge = run_suite(kObserveFixture, dir, true, "judge");
  INFO(judge.result.output);
  CHECK(judge.last("doubled values")->status == "failed");
  CHECK(contains(joined(judge.last("doubled values")->failures), "value 999 is"));
  CHECK(judge.last("stopped after a step")->event == "unobserved");
  CHECK(contains(judge.last("stopped after a step")->reason, "ends before step \"second step\""));
  REQUIRE(judge.last("observes nothing") != nullptr);
  CHECK(judge.last("observes nothing")->status == "failed");
  CHECK(contains(joined(judge.last("observes nothing")->failures), "grader error: the check observed nothing"));
  REQUIRE(judge.start("observes nothing") != nullptr);
  CHECK(judge.start("observes nothing")->device == "Test GPU");  // the runner's device, from its record
}

TEST_CASE("observe: a speed check records the student's times and the judge times the baseline") {
  const fs::path dir = fresh_dir("speed-self");
  const SuiteRun runner = run_suite(kSpeedFixtures / "speed_fixture_self", dir, false, "runner");
  INFO(runner.result.output);
  REQUIRE(runner.last("speed of busy work") != nullptr);
  CHECK(runner.last("speed of busy work")->status == "passed");
  CHECK(contains(joined(runner.last("speed of busy work")->notes), "the grader times the same arithmetic once"));

  // The judge's baseline runs in a child of its own, with CDPLAB_JUDGE_GPUS for its devices
  // (the workload throws in a judge, with the GPU hidden, or with other devices).
  const SuiteRun judge = run_suite(kSpeedFixtures / "speed_fixture_self", dir, true, "judge",
                                   {{"CDPLAB_JUDGE_GPUS", "3"}, {"SPEED_FIXTURE_EXPECT_GPUS", "3"}});
  INFO(judge.result.output);
  REQUIRE(judge.last("speed of busy work") != nullptr);
  CHECK(judge.last("speed of busy work")->status == "passed");
  const std::string notes = joined(judge.last("speed of busy work")->notes);
  CHECK(contains(notes, "\"busy work\": your code "));
  CHECK(contains(notes, "the same arithmetic once "));

  // Without CDPLAB_JUDGE_GPUS the baseline's child sees every device (CUDA_VISIBLE_DEVICES unset).
  const SuiteRun all_gpus = run_suite(kSpeedFixtures / "speed_fixture_self", dir, true, "judge-all");
  INFO(all_gpus.result.output);
  CHECK(all_gpus.last("speed of busy work")->status == "passed");
}

namespace {
/// The speed fixture's records of a runner in `dir`, and a judge's environment for them with an
/// empty baseline cache in `dir` and GPU 3 (which the fixture's baseline checks it was given).
std::map<std::string, std::string> records_and_cache(const fs::path& dir) {
  run_suite(kSpeedFixtures / "speed_fixture_self", dir, false, "runner");
  const fs::path cache = dir / "baseline-times";
  fs::create_directories(cache);
  return {{"CDPLAB_BASELINE_CACHE", cache.string()}, {"CDPLAB_JUDGE_GPUS", "3"}, {"SPEED_FIXTURE_EXPECT_GPUS", "3"}};
}
}  // namespace

TEST_CASE("observe: a class's judges time a baseline once per GPU and compare every later submission with it") {
  const fs::path dir = fresh_dir("speed-cached");
  const auto env = records_and_cache(dir);
  const fs::path cache = env.at("CDPLAB_BASELINE_CACHE");
  // A judge the grader runs beside other work on the GPU (cache only) times nothing: with the
  // baseline not kept yet, it ends with the status that makes the grader run it again alone.
  static_assert(cdplab::harness::kBaselineNotCached == cdplab::grading::kBaselineNotCached);
  auto cache_only = env;
  cache_only["CDPLAB_BASELINE_CACHE_ONLY"] = "1";
  const SuiteRun too_early = run_suite(kSpeedFixtures / "speed_fixture_self", dir, true, "judge-too-early", cache_only);
  INFO(too_early.result.output);
  CHECK(too_early.result.exit_code == cdplab::grading::kBaselineNotCached);
  CHECK(fs::is_empty(cache));

  const SuiteRun first = run_suite(kSpeedFixtures / "speed_fixture_self", dir, true, "judge-first", env);
  INFO(first.result.output);
  CHECK(first.last("speed of busy work")->status == "passed");
  const fs::path kept = cache / "busy_work.gpu-3.ms";
  REQUIRE(fs::exists(kept));  // the workload's name and the GPU name the file
  CHECK(fs::file_size(kept) > 0);
  // Once it is kept, the same judge, cache only, reads it and decides.
  const SuiteRun beside = run_suite(kSpeedFixtures / "speed_fixture_self", dir, true, "judge-beside", cache_only);
  INFO(beside.result.output);
  CHECK(beside.result.exit_code == 0);
  REQUIRE(beside.last("speed of busy work") != nullptr);
  CHECK(beside.last("speed of busy work")->status == "passed");

  // A later judge on that GPU reads the times instead of timing: a baseline kept as next to
  // nothing fails the same records by the ratio.
  std::ofstream(kept) << "0.000001\n";
  const SuiteRun later = run_suite(kSpeedFixtures / "speed_fixture_self", dir, true, "judge-later", env);
  INFO(later.result.output);
  CHECK(later.last("speed of busy work")->status == "failed");
  // Another GPU has no times yet: its judge times the baseline itself.
  auto other = env;
  other["CDPLAB_JUDGE_GPUS"] = "5";
  other["SPEED_FIXTURE_EXPECT_GPUS"] = "5";
  const SuiteRun other_gpu = run_suite(kSpeedFixtures / "speed_fixture_self", dir, true, "judge-other", other);
  INFO(other_gpu.result.output);
  CHECK(other_gpu.last("speed of busy work")->status == "passed");
  CHECK(fs::exists(cache / "busy_work.gpu-5.ms"));
}

TEST_CASE("observe: --time-baselines keeps a suite's baselines ahead, and a judge beside other work then reads them") {
  const fs::path dir = fresh_dir("speed-ahead");
  const fs::path suite = kSpeedFixtures / "speed_fixture_self";
  const auto env = records_and_cache(dir);
  const fs::path cache = env.at("CDPLAB_BASELINE_CACHE");
  auto cache_only = env;
  cache_only["CDPLAB_BASELINE_CACHE_ONLY"] = "1";
  // Asked first without a turn alone: nothing kept yet is the status that asks for one.
  const SuiteRun asked = run_suite(suite, dir, true, "ahead-asked", cache_only, {"--time-baselines"});
  CHECK(asked.result.exit_code == cdplab::grading::kBaselineNotCached);
  CHECK(fs::is_empty(cache));
  const SuiteRun timed = run_suite(suite, dir, true, "ahead-timed", env, {"--time-baselines"});
  INFO(timed.result.output);
  CHECK(timed.result.exit_code == 0);
  CHECK(contains(timed.result.output, "baseline-ready busy work"));
  CHECK(timed.events.empty());  // no check ran
  REQUIRE(fs::exists(cache / "busy_work.gpu-3.ms"));
  CHECK(run_suite(suite, dir, true, "ahead-again", cache_only, {"--time-baselines"}).result.exit_code == 0);
  // The judge, beside other work, reads the kept times and decides.
  const SuiteRun beside = run_suite(suite, dir, true, "judge-beside", cache_only);
  INFO(beside.result.output);
  CHECK(beside.result.exit_code == 0);
  REQUIRE(beside.last("speed of busy work") != nullptr);
  CHECK(beside.last("speed of busy work")->status == "passed");

  // A baseline that cannot be timed is named, and kept nowhere: its judge times it again and says why.
  const fs::path broken_cache = dir / "broken-times";
  fs::create_directories(broken_cache);
  const SuiteRun broken = run_suite(kSpeedFixtures / "speed_fixture_broken_baseline", dir, true, "ahead-broken",
                                    {{"CDPLAB_BASELINE_CACHE", broken_cache.string()}}, {"--time-baselines"});
  CHECK(broken.result.exit_code == 1);
  CHECK(contains(broken.result.output, "speed-error "));
  CHECK(fs::is_empty(broken_cache));
  // Outside a judge, or without a cache, there is nothing to keep the times in.
  const SuiteRun no_cache = run_suite(suite, dir, true, "ahead-no-cache", {}, {"--time-baselines"});
  CHECK(no_cache.result.exit_code == 2);
  const SuiteRun not_judge = run_suite(suite, dir, false, "ahead-runner", env, {"--time-baselines"});
  CHECK(not_judge.result.exit_code == 2);
}

TEST_CASE("observe: the judge of a slow exercise's times fails it by the ratio") {
  const fs::path dir = fresh_dir("speed-slow");
  const SuiteRun runner = run_suite(kSpeedFixtures / "speed_fixture_slow", dir, false, "runner");
  INFO(runner.result.output);
  CHECK(runner.last("speed of busy work")->status == "passed");  // the runner decides nothing
  const SuiteRun judge = run_suite(kSpeedFixtures / "speed_fixture_twin_of_slow", dir, true, "judge");
  INFO(judge.result.output);
  REQUIRE(judge.last("speed of busy work") != nullptr);
  CHECK(judge.last("speed of busy work")->status == "failed");
  CHECK(contains(joined(judge.last("speed of busy work")->failures), "(at most 2.0 passes)"));
}
