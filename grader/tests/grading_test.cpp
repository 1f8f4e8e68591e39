// Scoring: how the suites' logged events become graded items and points, and how build
// failures are explained. The end-to-end runs are in cli_test.cpp.
#include "files/files.h"
#include "grading/build_tree.h"
#include "grading/check_process.h"
#include "grading/grade.h"
#include "grading/shared_process.h"
#include "rules_fixtures.h"
#include "test_folders.h"

#include <doctest/doctest.h>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace cdplab::grading;

namespace {

cdplab::manifest::Exercise exercise_with_checks() {
  cdplab::manifest::Exercise e;
  e.chapter = "09-sample";
  e.id = "sample";
  e.file = "sample.cu";
  e.stem = "sample";
  e.checks = {{"passes", 2}, {"fails", 3}, {"skips", 1}, {"hangs", 1}, {"crashes silently", 1}, {"never runs", 1}};
  return e;
}

/// The sample exercise with one rule of `kind` about `kernel`, worth `points`.
cdplab::manifest::Exercise exercise_with_rule(const std::string& kind, const std::string& kernel, double points) {
  auto e = exercise_with_checks();
  cdplab::rules::RuleSpec rule;
  rule.kind = kind;
  rule.kernel = kernel;
  rule.points = points;
  e.rules = {rule};
  return e;
}

CheckEvent event(const std::string& kind, const std::string& check) {
  CheckEvent e;
  e.event = kind;
  e.check = check;
  return e;
}

}  // namespace

TEST_CASE("grading turns suite events into items and points") {
  std::vector<CheckEvent> events;
  events.push_back(event("start", "passes"));
  auto passed = event("end", "passes");
  passed.status = "passed";
  passed.seconds = 0.25;
  events.push_back(passed);
  events.push_back(event("start", "fails"));
  auto failed = event("end", "fails");
  failed.status = "failed";
  failed.failures = {"expected 3, found 4", "second message"};
  events.push_back(failed);
  auto skipped = event("skipped", "skips");
  skipped.reason = "no usable CUDA GPU";
  events.push_back(skipped);
  events.push_back(event("start", "hangs"));
  auto stopped = event("stopped", "hangs");
  stopped.reason = "stopped after 30 s";
  events.push_back(stopped);
  events.push_back(event("start", "crashes silently"));

  const auto items = check_items(exercise_with_checks(), events, "line 1\nctest said this\n");
  REQUIRE(items.size() == 6);
  CHECK(items[0].outcome == Outcome::passed);
  CHECK(items[0].points == 2);
  CHECK(items[0].seconds == doctest::Approx(0.25));
  CHECK(items[1].outcome == Outcome::failed);
  CHECK(items[1].points == 0);
  CHECK(items[1].max_points == 3);
  CHECK(items[1].feedback == "expected 3, found 4\nsecond message");
  CHECK(items[2].outcome == Outcome::skipped);
  CHECK(items[2].points == 0);
  CHECK(items[2].feedback == "no usable CUDA GPU");
  CHECK(items[3].outcome == Outcome::failed);
  CHECK(items[3].feedback == "stopped after 30 s");
  CHECK(items[4].outcome == Outcome::failed);
  CHECK(items[4].feedback.find("never finished") != std::string::npos);
  CHECK(items[5].outcome == Outcome::failed);
  CHECK(items[5].feedback.find("ctest said this") != std::string::npos);

  ExerciseResult result;
  result.items = items;
  CHECK(result.points() == 2);
  CHECK(result.max_points() == 9);
  CHECK_FALSE(result.all_passed());
}

TEST_CASE("a speed check counts only beside the exercise's other checks") {
  const auto item = [](const std::string& name, Outcome outcome) {
    Item i;
    i.name = name;
    i.outcome = outcome;
    i.max_points = 2;
    i.points = outcome == Outcome::passed ? 2 : 0;
    return i;
  };
  std::vector<Item> correct = {item("sorts", Outcome::passed), item("speed at 10M", Outcome::passed)};
  speed_counts_only_when_correct(correct);
  CHECK(correct[1].outcome == Outcome::passed);
  CHECK(correct[1].points == 2);

  std::vector<Item> wrong = {item("sorts", Outcome::failed), item("speed at 10M", Outcome::passed)};
  Item rule = item("a rule", Outcome::failed);
  rule.kind = ItemKind::rule;  // rules are not results: they do not hold back a speed check
  std::vector<Item> rule_failed = {item("sorts", Outcome::passed), rule, item("speed at 10M", Outcome::passed)};
  speed_counts_only_when_correct(wrong);
  speed_counts_only_when_correct(rule_failed);
  CHECK(wrong[1].outcome == Outcome::failed);
  CHECK(wrong[1].points == 0);
  CHECK(wrong[1].feedback.find("\"sorts\"") != std::string::npos);
  CHECK(rule_failed[2].outcome == Outcome::passed);
}

TEST_CASE("a shared suite process settles the checks that passed or were skipped there, as last recorded") {
  CheckEvent passed = event("end", "passes");
  passed.status = "passed";
  CheckEvent failed = event("end", "fails");
  failed.status = "failed";
  CheckEvent failed_then_passed = event("end", "fails, then passes");
  failed_then_passed.status = "failed";
  CheckEvent passed_later = failed_then_passed;
  passed_later.status = "passed";
  CheckEvent passed_then_crashed = event("end", "passes, then crashes");
  passed_then_crashed.status = "passed";
  const std::vector<CheckEvent> events = {
      event("start", "passes"), passed,
      event("start", "fails"), failed,
      event("start", "fails, then passes"), failed_then_passed, event("start", "fails, then passes"), passed_later,
      event("skipped", "skips"),
      event("start", "hangs"), event("stopped", "hangs"),
      event("start", "crashes silently"),
      passed_then_crashed, event("start", "passes, then crashes"),
  };
  cdplab::manifest::Exercise e = exercise_with_checks();
  e.checks = {{"passes", 1}, {"fails", 1}, {"fails, then passes", 1}, {"skips", 1}, {"hangs", 1},
              {"crashes silently", 1}, {"passes, then crashes", 1}, {"never runs", 1}};
  CHECK(settled_checks(e, events) == std::set<std::string>{"passes", "fails, then passes", "skips"});
  CHECK(settled_checks(e, {}).empty());
}

TEST_CASE("a shared suite process is asked for exactly its checks") {
  CHECK(test_case_filter({"uniform ranges"}) == "uniform ranges");
  CHECK(test_case_filter({"a", "b c"}) == "a,b c");
  // doctest splits its filters at commas; a backslash keeps one in a name.
  CHECK(test_case_filter({"one, two", "back\\slash"}) == "one\\, two,back\\\\slash");
  CHECK(test_case_filter({}).empty());
}

TEST_CASE("parallel_for calls the work once for every index, on as many threads as asked") {
  for (const int jobs : {1, 3, 16}) {
    std::vector<std::atomic<int>> calls(10);
    parallel_for(calls.size(), jobs, [&](std::size_t i) { ++calls[i]; });
    for (const auto& c : calls) CHECK(c == 1);
  }
  parallel_for(0, 4, [](std::size_t) { FAIL("no work to do"); });
  // A call that throws: every other index still runs, and the caller gets the exception.
  std::vector<std::atomic<int>> calls(6);
  CHECK_THROWS_AS(parallel_for(calls.size(), 3,
                               [&](std::size_t i) {
                                 ++calls[i];
                                 if (i == 2) throw std::runtime_error("work failed");
                               }),
                  std::runtime_error);
  for (const auto& c : calls) CHECK(c == 1);
}

TEST_CASE("run_work_list runs every job and every follow-up once, a follow-up before later first jobs end") {
  for (const int jobs : {1, 2, 4}) {
    INFO("threads: ", jobs);
    std::mutex mutex;
    std::vector<std::string> order;
    const auto note = [&](const std::string& what) {
      std::lock_guard<std::mutex> lock(mutex);
      order.push_back(what);
    };
    std::atomic<int> at_once{0}, most_at_once{0};
    const auto busy = [&](int milliseconds) {
      const int now = ++at_once;
      for (int seen = most_at_once; now > seen && !most_at_once.compare_exchange_weak(seen, now);) {}
      std::this_thread::sleep_for(std::chrono::milliseconds(milliseconds));
      --at_once;
    };
    std::vector<Job> first;
    // "short" ends first and adds two follow-ups, one of which adds another: each runs once.
    first.push_back({[&] {
      busy(5);
      note("short");
      return std::vector<Job>{{[&] {
                                note("follow-up 1");
                                return std::vector<Job>{{[&] {
                                  note("follow-up 2");
                                  return std::vector<Job>{};
                                }}};
                              }},
                              {[&] {
                                note("follow-up 3");
                                return std::vector<Job>{};
                              }}};
    }});
    first.push_back({[&] {
      busy(300);
      note("long");
      return std::vector<Job>{};
    }});
    run_work_list(std::move(first), jobs);
    REQUIRE(order.size() == 5);
    for (const char* job : {"short", "long", "follow-up 1", "follow-up 2", "follow-up 3"})
      CHECK(std::count(order.begin(), order.end(), job) == 1);
    CHECK(most_at_once <= jobs);
    // With a thread free beside the long job, the follow-ups do not wait for it.
    if (jobs > 1) CHECK(order.back() == "long");
  }
  run_work_list({}, 4);
  // A job that throws: the others still run, and the caller gets the exception.
  std::atomic<int> ran{0};
  std::vector<Job> throwing;
  throwing.push_back({[]() -> std::vector<Job> { throw std::runtime_error("job failed"); }});
  throwing.push_back({[&] {
    ++ran;
    return std::vector<Job>{};
  }});
  CHECK_THROWS_AS(run_work_list(std::move(throwing), 2), std::runtime_error);
  CHECK(ran == 1);
}

TEST_CASE("grading reads the results log and skips broken lines") {
  const auto file = std::filesystem::path(CDPLAB_TEST_BINARY_DIR) / "grading-events.jsonl";
  std::ofstream(file) << R"({"event":"start","suite":"s","check":"a","seed":1,"device":"GPU"})" "\n"
                      << "not json at all\n"
                      << R"({"event":"end","suite":"s","check":"a","status":"failed","seconds":1.5,"failures":["x"]})" "\n";
  const auto events = read_check_events(file.string());
  REQUIRE(events.size() == 2);
  CHECK(events[0].device == "GPU");
  CHECK(events[1].status == "failed");
  CHECK(events[1].failures == std::vector<std::string>{"x"});
  CHECK(read_check_events((file.string() + ".missing")).empty());
}

TEST_CASE("grading explains build failures in CDP2 terms") {
  const std::string ninja =
      "[1/2] Building CUDA object x.o\n"
      "FAILED: x.o\n"
      "/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -rdc=true -c x.cu\n"
      "x.cu(2): error: calling a __host__ function(\"cudaDeviceSynchronize\") from a __global__ function(\"parent\") is not allowed\n"
      "ninja: build stopped: subcommand failed.\n";
  const auto text = explain_build_failure(ninja);
  CHECK(text.find("x.cu(2): error") != std::string::npos);
  CHECK(text.find("nvcc -forward") == std::string::npos);  // the command line is noise
  CHECK(text.find("cudaStreamTailLaunch") != std::string::npos);
  CHECK(explain_build_failure("undefined reference to `f()'").find("entry points") != std::string::npos);
}

TEST_CASE("grading names a file outside the submission in a build failure, never quotes it") {
  const std::string output =
      "/srv/class/alice/01-fundamentals/x.cu(3): error: identifier \"oops\" is undefined\n"
      "    int a = oops;\n"
      "            ^\n"
      "\n"
      "/srv/secret/answers.txt(1): error: this declaration has no storage class or type specifier\n"
      "  EXAM-ANSWER-KEY: the instructor's eyes only\n"
      "  ^\n"
      "/srv/secret/answers.txt:2:1: error: expected unqualified-id\n"
      "    2 | second secret line\n"
      "      | ^~~~~~\n"
      "In file included from /srv/class/alice/01-fundamentals/x.cu:1:\n";
  const auto text = explain_build_failure(output, "/srv/class/alice");
  CHECK(text.find("int a = oops;") != std::string::npos);          // the student's own line stays
  CHECK(text.find("/srv/secret/answers.txt(1): error") != std::string::npos);  // the file is named
  CHECK(text.find("EXAM-ANSWER-KEY") == std::string::npos);        // its text is not quoted
  CHECK(text.find("second secret line") == std::string::npos);
  CHECK(text.find("In file included from") != std::string::npos);
  // Without a submission folder nothing is left out.
  CHECK(explain_build_failure(output).find("EXAM-ANSWER-KEY") != std::string::npos);
}

TEST_CASE("grading fails every rule when the PTX cannot be read") {
  const auto items = evaluate_rules(exercise_with_rule("recursion", "k", 2), "this is not PTX");
  REQUIRE(items.size() == 1);
  CHECK(items[0].kind == ItemKind::rule);
  CHECK(items[0].outcome == Outcome::failed);
  CHECK(items[0].max_points == 2);
  CHECK(items[0].feedback.find("could not read the PTX") != std::string::npos);
}

TEST_CASE("a failed rule's feedback says what was found, and does not repeat the rule's name") {
  const auto items = evaluate_rules(exercise_with_rule("launch_checked", "unchecked", 1), fixture_ptx("launch_checks"));
  REQUIRE(items.size() == 1);
  INFO(items[0].name << "\n" << items[0].feedback);
  CHECK(items[0].outcome == Outcome::failed);
  CHECK(items[0].feedback.rfind("found: ", 0) == 0);
  CHECK(items[0].feedback.find(items[0].name) == std::string::npos);
}

// A rule marked given guards code the starter hands out: worth nothing when kept, its points
// taken off when broken, and the exercise's total never below zero.
TEST_CASE("a given rule earns nothing when kept and takes its points off when broken") {
  auto kept = exercise_with_rule("launch_checked", "checked_after", 2);
  kept.rules[0].given = true;
  auto broken = exercise_with_rule("launch_checked", "unchecked", 2);
  broken.rules[0].given = true;
  CHECK(kept.max_points() == broken.max_points());  // adds nothing to the maximum
  const auto passed = evaluate_rules(kept, fixture_ptx("launch_checks"));
  REQUIRE(passed.size() == 1);
  CHECK(passed[0].outcome == Outcome::passed);
  CHECK(passed[0].points == 0);
  CHECK(passed[0].max_points == 0);
  CHECK(passed[0].name.rfind("given code: ", 0) == 0);
  const auto failed = evaluate_rules(broken, fixture_ptx("launch_checks"));
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].outcome == Outcome::failed);
  CHECK(failed[0].points == -2);
  CHECK(failed[0].max_points == 0);
  ExerciseResult result;
  result.items = failed;
  CHECK(result.points() == 0);  // never below nothing
  Item earned;
  earned.points = 5;
  earned.max_points = 5;
  result.items.push_back(earned);
  CHECK(result.points() == 3);
  CHECK(result.max_points() == 5);
}

TEST_CASE("grading refuses sources that use the grader's own code") {
  CHECK(reference_code_problem("#include \"cdplab/check.h\"\n__global__ void k() {}\n").empty());
  CHECK(reference_code_problem("// the oracle computes this on the CPU\n").empty());
  const auto oracle = reference_code_problem("int a;\nauto x = cdplab::oracle::expand(in);\n");
  CHECK(oracle.find("line 2") != std::string::npos);
  CHECK(oracle.find("oracle::") != std::string::npos);
  CHECK_FALSE(reference_code_problem("#include \"../../solutions/01-fundamentals/child_grids.cu\"\n").empty());
  CHECK_FALSE(reference_code_problem("#  include <grader/oracles/01-fundamentals.h>\n").empty());
  CHECK_FALSE(reference_code_problem("#include \"harness.h\"\n").empty());
  CHECK_FALSE(reference_code_problem("cdplab::harness :: ResultsLog::close();\n").empty());
  // The compiled exercise: nm lists what it calls, whatever the source text looked like.
  CHECK(linked_reference_problem("                 U cudaLaunchKernel\n                 U cdplab::check_host_call(cudaError, char const*, char const*, int)\n").empty());
  const auto linked = linked_reference_problem(
      "                 U cdplab::oracle::fundamentals::expected_expansion(std::vector<unsigned int> const&)\n");
  CHECK(linked.find("calls the grader's own code (cdplab::oracle::fundamentals::expected_expansion") != std::string::npos);
}

TEST_CASE("the rules read the PTX the exercise's compile kept, under the name nvcc gave it") {
  namespace fs = std::filesystem;
  const fs::path dir = cdplab::testing::empty_folder(fs::path(CDPLAB_TEST_BINARY_DIR) / "work" / "kept-ptx");
  IndexEntry entry;
  entry.ptx = (dir / "child_grids.ptx").string();
  CHECK(entry.kept_ptx() == entry.ptx);  // nothing kept: the name the index gives
  // Several architectures the build could not name in advance: one file per architecture; the
  // first by name is read.
  cdplab::testing::write_file(dir / "child_grids.compute_90.ptx", "// 90\n");
  cdplab::testing::write_file(dir / "child_grids.compute_75.ptx", "// 75\n");
  cdplab::testing::write_file(dir / "child_grids.cpp1.ii", "not PTX\n");
  CHECK(entry.kept_ptx() == dir / "child_grids.compute_75.ptx");
  // The file the index names wins whenever it is there.
  cdplab::testing::write_file(dir / "child_grids.ptx", "// one architecture\n");
  CHECK(entry.kept_ptx() == dir / "child_grids.ptx");
  entry.ptx.clear();
  CHECK(entry.kept_ptx().empty());
}

TEST_CASE("a build tree's builds run at a lower priority than the grader (the checks come first)") {
  namespace fs = std::filesystem;
  const fs::path dir = cdplab::testing::empty_folder(fs::path(CDPLAB_TEST_BINARY_DIR) / "work" / "build-niceness");
  // A stand-in for cmake that prints the niceness it runs at.
  const fs::path cmake = dir / "fake-cmake";
  cdplab::testing::write_file(cmake, "#!/bin/sh\nnice\n");
  fs::permissions(cmake, fs::perms::owner_all);
  Toolchain tools;
  tools.cmake = cmake.string();
  const BuildTree tree(dir, dir / "build", tools);
  errno = 0;
  const int own = getpriority(PRIO_PROCESS, 0);
  REQUIRE(errno == 0);
  const auto built = tree.build({"anything"}, 60);
  CHECK(built.ok());
  CHECK(built.output == std::to_string(std::min(19, own + kBuildNiceness)) + "\n");
}

TEST_CASE("a new build tree takes the compiler checks of the grader's own tree and builds with the same commands") {
  namespace fs = std::filesystem;
  const fs::path dir = cdplab::testing::empty_folder(fs::path(CDPLAB_TEST_BINARY_DIR) / "work" / "seeded-configure");
  // A project of both languages, which writes the index BuildTree::configure reads.
  cdplab::testing::write_file(dir / "project" / "CMakeLists.txt",
                              "cmake_minimum_required(VERSION 3.25)\nproject(seeded LANGUAGES CXX CUDA)\n"
                              "set(CMAKE_EXPORT_COMPILE_COMMANDS ON)\nadd_library(kernel STATIC kernel.cu)\n"
                              "file(WRITE \"${CMAKE_BINARY_DIR}/cdplab-index.json\" \"{\\\"exercises\\\": []}\")\n");
  cdplab::testing::write_file(dir / "project" / "kernel.cu", "__global__ void kernel(int* x) { *x = 1; }\n");
  Toolchain tools;
  tools.cmake = CDPLAB_CMAKE;
  tools.generator = CDPLAB_GENERATOR;
  tools.cache_args = {std::string("-DCMAKE_CXX_COMPILER=") + CDPLAB_CXX_COMPILER,
                      std::string("-DCMAKE_CUDA_COMPILER=") + CDPLAB_CUDA_COMPILER, "-DCMAKE_CUDA_ARCHITECTURES=90"};
  BuildTree plain(dir / "project", dir / "plain", tools);
  const auto plain_configure = plain.configure(dir, {});
  REQUIRE(plain_configure.ok());
  CHECK(plain_configure.output.find("compiler identification") != std::string::npos);

  tools.compilers_from = CDPLAB_BINARY_DIR;  // this build, configured with the same compilers
  std::string why_not;
  CHECK_MESSAGE(seed_compiler_checks(CDPLAB_BINARY_DIR, dir / "probe", tools, &why_not), why_not);
  BuildTree seeded(dir / "project", dir / "seeded", tools);
  const auto seeded_configure = seeded.configure(dir, {});
  REQUIRE(seeded_configure.ok());
  CHECK(seeded_configure.output.find("compiler identification") == std::string::npos);  // the checks were not run
  // The same compile commands, but for the tree's own folder.
  std::string plain_commands = cdplab::files::read_text(dir / "plain" / "compile_commands.json");
  for (auto at = plain_commands.find("/plain"); at != std::string::npos; at = plain_commands.find("/plain", at))
    plain_commands.replace(at, 6, "/seeded");
  CHECK(plain_commands == cdplab::files::read_text(dir / "seeded" / "compile_commands.json"));
  CHECK(plain_commands.find("nvcc") != std::string::npos);

  // Another compiler than the one the grader's tree checked, or a tree configured already: no seed.
  Toolchain other = tools;
  other.cache_args[0] = "-DCMAKE_CXX_COMPILER=/opt/another/c++";
  CHECK_FALSE(seed_compiler_checks(CDPLAB_BINARY_DIR, dir / "other", other));
  CHECK_FALSE(fs::exists(dir / "other" / "CMakeCache.txt"));
  CHECK_FALSE(seed_compiler_checks(CDPLAB_BINARY_DIR, dir / "seeded", tools));

  // A setting of the grader's tree (device debug code, say) is not a compiler check: not copied,
  // and flags the new tree does not get, or another CUDA host compiler, leave it unseeded.
  const fs::path own = dir / "own-with-flags";
  for (const auto& entry : fs::directory_iterator(fs::path(CDPLAB_BINARY_DIR) / "CMakeFiles"))
    if (fs::exists(entry.path() / "CMakeCUDACompiler.cmake"))
      for (const char* file : {"CMakeSystem.cmake", "CMakeCXXCompiler.cmake", "CMakeCUDACompiler.cmake"}) {
        fs::create_directories(own / "CMakeFiles" / entry.path().filename());
        fs::copy_file(entry.path() / file, own / "CMakeFiles" / entry.path().filename() / file);
      }
  const std::string own_cache = cdplab::files::read_text(fs::path(CDPLAB_BINARY_DIR) / "CMakeCache.txt");
  cdplab::testing::write_file(own / "CMakeCache.txt", own_cache + "CMAKE_CUDA_FLAGS:STRING=-G\n");
  tools.compilers_from = own;
  CHECK_FALSE(seed_compiler_checks(own, dir / "flags-differ", tools));
  Toolchain same_flags = tools;
  same_flags.cache_args.push_back("-DCMAKE_CUDA_FLAGS=-G");
  CHECK(seed_compiler_checks(own, dir / "same-flags", same_flags));
  BuildTree flagged(dir / "project", dir / "flagged", tools);
  REQUIRE(flagged.configure(dir, {}).ok());
  CHECK(cdplab::files::read_text(dir / "flagged" / "CMakeCache.txt").find("-G\n") == std::string::npos);
  CHECK(cdplab::files::read_text(dir / "flagged" / "compile_commands.json").find(" -G ") == std::string::npos);
  cdplab::testing::write_file(own / "CMakeCache.txt", own_cache + "CMAKE_CUDA_HOST_COMPILER:FILEPATH=/opt/g++-12\n");
  CHECK_FALSE(seed_compiler_checks(own, dir / "host-compiler", tools));
  // A toolchain file shapes the checks themselves: no seed.
  cdplab::testing::write_file(own / "CMakeCache.txt", own_cache + "CMAKE_TOOLCHAIN_FILE:FILEPATH=/opt/cross.cmake\n");
  CHECK_FALSE(seed_compiler_checks(own, dir / "cross", tools));
  cdplab::testing::write_file(own / "CMakeCache.txt", own_cache);
  CHECK(seed_compiler_checks(own, dir / "own-plain", tools));
  Toolchain cross = tools;
  cross.cache_args.push_back("-DCMAKE_TOOLCHAIN_FILE=/opt/cross.cmake");
  CHECK_FALSE(seed_compiler_checks(own, dir / "cross-args", cross));

  // A host compiler given by CUDAHOSTCXX alone: CMake 4 records it in CMakeCUDACompiler.cmake and
  // in no cache entry. The seed follows the record: the same variable seeds, none does not.
  for (const auto& entry : fs::directory_iterator(own / "CMakeFiles")) {
    const fs::path recorded = entry.path() / "CMakeCUDACompiler.cmake";
    std::string text = cdplab::files::read_text(recorded);
    const auto at = text.find("set(CMAKE_CUDA_HOST_COMPILER \"");
    REQUIRE(at != std::string::npos);
    text.replace(at, text.find('\n', at) - at, "set(CMAKE_CUDA_HOST_COMPILER \"/opt/recorded/g++\")");
    cdplab::testing::write_file(recorded, text);
  }
  const char* saved = std::getenv("CUDAHOSTCXX");
  const std::string saved_value = saved != nullptr ? saved : "";
  setenv("CUDAHOSTCXX", "/opt/recorded/g++", 1);
  std::string why;
  CHECK_MESSAGE(seed_compiler_checks(own, dir / "recorded-host", tools, &why), why);
  unsetenv("CUDAHOSTCXX");
  CHECK_FALSE(seed_compiler_checks(own, dir / "recorded-host-unset", tools, &why));
  CHECK(why.find("CMAKE_CUDA_HOST_COMPILER is \"/opt/recorded/g++\" there") != std::string::npos);
  if (saved != nullptr) setenv("CUDAHOSTCXX", saved_value.c_str(), 1);
}

// A student's first build takes minutes: the tree passes on the build tool's own step count.
TEST_CASE("a build tree reports how far its build is, from the build tool's step count") {
  namespace fs = std::filesystem;
  const fs::path dir = cdplab::testing::empty_folder(fs::path(CDPLAB_TEST_BINARY_DIR) / "work" / "build-progress");
  // A stand-in for cmake --build: Ninja's status lines, one of them cut across two writes.
  cdplab::testing::write_file(dir / "cmake", "#!/bin/sh\nprintf '[1/3] Building CUDA object a.o\\n[2/'\n"
                                             "sleep 0.2\nprintf '3] Building b.o\\nwarning: [x/y] is no step\\n'\n"
                                             "printf '[3/3] Linking c\\n'\n");
  fs::permissions(dir / "cmake", fs::perms::owner_all);
  Toolchain tools;
  tools.cmake = (dir / "cmake").string();
  BuildTree tree(dir, dir / "tree", tools);
  std::vector<std::string> lines;
  tree.set_build_progress([&](const std::string& line) { lines.push_back(line); });
  CHECK(tree.build({"all"}, 30).ok());
  REQUIRE_FALSE(lines.empty());
  CHECK(lines.back().rfind("3 of 3 steps, ", 0) == 0);  // the last step is always shown
  CHECK(lines.size() <= 2);  // at most every 5 s, and the last
}

// A host parts' program past its limits (here: more processes than a host part may start) is
// ended by the grader, which leaves the reason in the folder of its pipes, where the check reads it.
TEST_CASE("check process: a host parts' process past its limits is ended, and the check is told which limit") {
  namespace fs = std::filesystem;
  const fs::path dir = cdplab::testing::empty_folder(fs::path(CDPLAB_TEST_BINARY_DIR) / "work" / "host-parts-limit");
  cdplab::testing::write_file(dir / "forks.sh", "#!/bin/sh\nfor i in $(seq 40); do sleep 61 & done\nwait\n");
  cdplab::testing::write_file(dir / "check.sh",
                              "#!/bin/sh\nfor i in $(seq 100); do [ -s \"$CDPLAB_HOST_PARTS/ended\" ] && break; sleep 0.1; done\n"
                              "cat \"$CDPLAB_HOST_PARTS/ended\"\n");
  for (const char* script : {"forks.sh", "check.sh"}) fs::permissions(dir / script, fs::perms::owner_all);
  cdplab::grading::CheckProcess check;
  check.suite = (dir / "check.sh").string();
  check.host_parts = (dir / "forks.sh").string();
  check.scratch = dir / "scratch";
  cdplab::process::Options options;
  options.timeout_seconds = 60;
  const auto ran = cdplab::grading::run_check_process(check, {}, {}, options);
  INFO(ran.output);
  CHECK(ran.ok());
  CHECK(ran.output.find("more than 16 processes") != std::string::npos);
  // None of its processes lives on (ended ones may wait a moment to be reaped).
  const auto alive = [] {
    int count = 0;
    for (const auto& entry : fs::directory_iterator("/proc")) {
      std::ifstream stat(entry.path() / "stat");
      std::string line;
      if (!std::getline(stat, line) || line.find("(sleep)") == std::string::npos) continue;
      if (line.substr(line.rfind(')') + 2, 1) == "Z") continue;
      std::ifstream cmdline(entry.path() / "cmdline");
      std::string command((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
      if (command == std::string("sleep\0" "61\0", 9)) ++count;
    }
    return count;
  };
  for (int i = 0; i < 50 && alive() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(alive() == 0);

  // One that ends on its own is named by how: here the signal a file past the size limit sends.
  cdplab::testing::write_file(dir / "forks.sh", "#!/bin/sh\nkill -s XFSZ $$\nsleep 60\n");
  const auto ended = cdplab::grading::run_check_process(check, {}, {}, options);
  INFO(ended.output);
  CHECK(ended.output.find("past the size a host part may write (64 MiB; signal SIGXFSZ)") != std::string::npos);
}

TEST_CASE("check process: the host parts' process ends with its check process, even one that never returns") {
  namespace fs = std::filesystem;
  const fs::path dir = cdplab::testing::empty_folder(fs::path(CDPLAB_TEST_BINARY_DIR) / "work" / "host-parts-end");
  // A host parts' program that never reads its requests and never ends.
  cdplab::testing::write_file(dir / "stuck.sh", "#!/bin/sh\nexec sleep 300\n");
  fs::permissions(dir / "stuck.sh", fs::perms::owner_all);
  cdplab::grading::CheckProcess check;
  check.suite = "/bin/true";
  check.host_parts = (dir / "stuck.sh").string();
  check.scratch = dir / "scratch";
  cdplab::process::Options options;
  options.timeout_seconds = 120;
  const auto start = std::chrono::steady_clock::now();
  const auto ran = cdplab::grading::run_check_process(check, {}, {}, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(ran.ok());
  CHECK(seconds < 10);  // not the host parts' own limit of two minutes
  CHECK(fs::is_empty(dir / "scratch"));  // its FIFOs' folder is gone
}

// The grader starts the processes of the checks that need the GPU alone ahead of that turn
// (grade.cpp, StartedAhead): a suite behind a closed gate ends without running a check, and one
// behind an opened gate runs its checks as any other.
TEST_CASE("check process: a suite behind a start gate says it is ready, runs its checks once the gate opens, and none once it closes") {
  namespace fs = std::filesystem;
  const fs::path dir = cdplab::testing::empty_folder(fs::path(CDPLAB_TEST_BINARY_DIR) / "work" / "start-gate");
  cdplab::grading::CheckProcess check;
  check.suite = std::string(CDPLAB_BINARY_DIR) + "/suite_01_fundamentals_child_grids";
  check.scratch = dir / "scratch";
  const fs::path results = dir / "results.jsonl";
  cdplab::process::Options options;
  options.timeout_seconds = 120;
  options.env["CDPLAB_RESULTS_FILE"] = results.string();
  const std::vector<std::string> one_check = {"--test-case=empty ranges"};

  for (const bool opened : {false, true}) {
    CAPTURE(opened);
    fs::remove(results);
    cdplab::grading::StartGate gate(check.scratch);
    // The gate is decided before the process starts: it finds the answer at its first look.
    if (opened) gate.open();
    else gate.close();
    const auto ran = cdplab::grading::run_check_process(check, {}, one_check, options, &gate);
    INFO(ran.output);
    CHECK(ran.started);
    // Opened: the check passed, or was skipped (77) on a machine without a GPU. Closed: nothing ran.
    CHECK((opened ? ran.exit_code == 0 || ran.exit_code == 77 : ran.exit_code == 0));
    const std::string events = fs::exists(results) ? cdplab::files::read_text(results) : std::string();
    CHECK((events.find("empty ranges") != std::string::npos) == opened);
    CHECK(gate.ready());  // it said so once started, before the gate's answer
  }
  CHECK(fs::is_empty(check.scratch));  // each gate's folder is gone with it

  // A gate whose folder is gone counts as closed.
  fs::remove(results);
  cdplab::grading::StartGate gone(check.scratch);
  fs::remove_all(gone.dir());
  const auto ran = cdplab::grading::run_check_process(check, {}, one_check, options, &gone);
  CHECK(ran.exit_code == 0);
  CHECK_FALSE(fs::exists(results));

  // A gate that cannot be opened says so (here its folder became a file, which no one can write
  // into, whatever their rights), and closing it then removes what is left.
  cdplab::grading::StartGate unwritable(check.scratch);
  fs::remove_all(unwritable.dir());
  std::ofstream(unwritable.dir()) << "not a folder\n";
  CHECK_FALSE(unwritable.open());
  unwritable.close();
  CHECK_FALSE(fs::exists(unwritable.dir()));
  CHECK(fs::is_empty(check.scratch));
}
