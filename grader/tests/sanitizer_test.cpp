// The compute-sanitizer stage: how the tool's output becomes an item (the tool itself needs a GPU).
#include "sanitizer/sanitizer.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

using cdplab::grading::Outcome;
namespace fs = std::filesystem;

namespace {

const cdplab::sanitizer::Tool& memcheck() { return cdplab::sanitizer::tools().front(); }

/// A stand-in for compute-sanitizer: a script with `body`, in a folder of its own.
std::string fake_sanitizer(const std::string& name, const std::string& body) {
  const fs::path dir = fs::path(CDPLAB_TEST_BINARY_DIR) / "sanitizer" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path script = dir / "compute-sanitizer";
  std::ofstream(script) << "#!/bin/bash\n" << body;
  fs::permissions(script, fs::perms::owner_all, fs::perm_options::replace);
  return script.string();
}

}  // namespace

TEST_CASE("sanitizer: a clean run passes and is worth no points") {
  const auto item = cdplab::sanitizer::item_from_output(
      memcheck(), "========= COMPUTE-SANITIZER\n[doctest] Status: SUCCESS!\n========= ERROR SUMMARY: 0 errors\n", 0,
      false);
  CHECK(item.outcome == Outcome::passed);
  CHECK(item.max_points == 0);
  CHECK(item.name == "compute-sanitizer memcheck");
}

TEST_CASE("sanitizer: racecheck's own summary line counts as clean when it has no errors") {
  const cdplab::sanitizer::Tool racecheck{"racecheck", {"--tool", "racecheck"}};
  const auto clean = cdplab::sanitizer::item_from_output(
      racecheck, "========= COMPUTE-SANITIZER\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n",
      0, false);
  CHECK(clean.outcome == Outcome::passed);
  const auto hazard = cdplab::sanitizer::item_from_output(
      racecheck,
      "========= COMPUTE-SANITIZER\n========= Error: Race reported between Write access at block_sort+0x90\n"
      "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n",
      86, false);
  CHECK(hazard.outcome == Outcome::failed);
  CHECK(hazard.feedback.find("Race reported") != std::string::npos);
}

TEST_CASE("sanitizer: a tool that refuses a CDP program skips its item and says why") {
  const auto item = cdplab::sanitizer::item_from_output(
      memcheck(),
      "========= COMPUTE-SANITIZER\n========= Warning: CUDA Dynamic Parallelism is not supported by the selected tool\n"
      "=========\n",
      0, false);
  CHECK(item.outcome == Outcome::skipped);
  CHECK(item.feedback.find("cannot check this program") != std::string::npos);
  CHECK(item.feedback.find("Dynamic Parallelism is not supported") != std::string::npos);
}

TEST_CASE("sanitizer: findings fail the item and are shown, without the program's own output") {
  const std::string output =
      "========= COMPUTE-SANITIZER\n"
      "========= Invalid __global__ write of size 4 bytes\n"
      "=========     at expand_child(const float *, float *, unsigned int, unsigned int, unsigned int)+0x1d0\n"
      "[doctest] Status: SUCCESS!\n"
      "========= ERROR SUMMARY: 1 error\n";
  const auto item = cdplab::sanitizer::item_from_output(memcheck(), output, 86, false);
  CHECK(item.outcome == Outcome::failed);
  CHECK(item.feedback.find("Invalid __global__ write") != std::string::npos);
  CHECK(item.feedback.find("expand_child") != std::string::npos);
  CHECK(item.feedback.find("[doctest]") == std::string::npos);
  CHECK(item.feedback.find("COMPUTE-SANITIZER") == std::string::npos);
}

TEST_CASE("sanitizer: long findings are cut, and a run that said nothing still explains itself") {
  std::string output;
  for (int i = 0; i < 100; ++i) output += "========= Leaked 64 bytes at 0x" + std::to_string(i) + "\n";
  const auto cut = cdplab::sanitizer::item_from_output(memcheck(), output, 86, false, 10);
  CHECK(cut.feedback.find("(90 more lines)") != std::string::npos);
  const auto silent = cdplab::sanitizer::item_from_output(memcheck(), "", 1, false);
  CHECK(silent.outcome == Outcome::failed);
  CHECK(silent.feedback.find("exit status 1") != std::string::npos);
  const auto slow = cdplab::sanitizer::item_from_output(memcheck(), "", -1, true);
  CHECK(slow.outcome == Outcome::skipped);  // the tool reported nothing: no finding either way
  CHECK(slow.feedback.find("did not finish in time") != std::string::npos);
}

TEST_CASE("sanitizer: a run past the limit runs again without device-heap checking, and says so") {
  // Stands in for memcheck's device-heap checking taking minutes: only the second run ends.
  const auto sanitizer = fake_sanitizer(
      "heap-slow", "for a in \"$@\"; do [ \"$a\" = --check-device-heap ] && { echo '========= ERROR SUMMARY: 0 errors'; "
                   "exit 0; }; done\nexec sleep 30\n");
  const auto item = cdplab::sanitizer::run_check(sanitizer, memcheck(), "/bin/true", "a check", {}, 1);
  CHECK(item.outcome == Outcome::passed);
  CHECK(item.feedback.find("did not finish in 1 s; run again with --check-device-heap no, it finished") !=
        std::string::npos);
  CHECK(item.feedback.find("allocated in device code were not checked") != std::string::npos);

  const auto found = cdplab::sanitizer::run_check(
      fake_sanitizer("heap-slow-finding",
                     "for a in \"$@\"; do [ \"$a\" = --check-device-heap ] && { echo '========= Invalid __global__ "
                     "write of size 4 bytes'; echo '========= ERROR SUMMARY: 1 error'; exit 86; }; done\nexec sleep 30\n"),
      memcheck(), "/bin/true", "a check", {}, 1);
  CHECK(found.outcome == Outcome::failed);
  CHECK(found.feedback.find("Invalid __global__ write") != std::string::npos);

  const auto never = cdplab::sanitizer::run_check(fake_sanitizer("never", "exec sleep 30\n"), memcheck(), "/bin/true",
                                                  "a check", {}, 1);
  CHECK(never.outcome == Outcome::skipped);
  CHECK(never.feedback.find("it did not finish either") != std::string::npos);
}

TEST_CASE("sanitizer: a run that finishes in time runs once") {
  // Counts its runs in a file beside itself.
  const auto sanitizer =
      fake_sanitizer("once", "echo run >> \"$(dirname \"$0\")/runs\"; echo '========= ERROR SUMMARY: 0 errors'\n");
  const auto item = cdplab::sanitizer::run_check(sanitizer, memcheck(), "/bin/true", "a check", {}, 10);
  CHECK(item.outcome == Outcome::passed);
  CHECK(item.feedback.empty());
  std::ifstream runs(fs::path(sanitizer).parent_path() / "runs");
  std::string line;
  int count = 0;
  while (std::getline(runs, line)) ++count;
  CHECK(count == 1);
}

TEST_CASE("sanitizer: a missing compute-sanitizer skips the item with the reason") {
  const auto item = cdplab::sanitizer::run_check("/nonexistent/compute-sanitizer", memcheck(), "/bin/true", "a check", {}, 10);
  CHECK(item.outcome == Outcome::skipped);
  CHECK(item.feedback.find("could not be started") != std::string::npos);
}

TEST_CASE("sanitizer: checks that failed under the tool are no finding of the tool") {
  // The checks are graded without the tools; under them a check may fail (exit status 1) while
  // memcheck found nothing.
  const auto item = cdplab::sanitizer::item_from_output(
      memcheck(),
      "========= COMPUTE-SANITIZER\n[doctest] Status: FAILURE!\n========= Target application returned an error\n"
      "========= LEAK SUMMARY: 0 bytes leaked in 0 allocations\n========= ERROR SUMMARY: 0 errors\n",
      1, false);
  CHECK(item.outcome == Outcome::passed);
  CHECK(cdplab::sanitizer::item_from_output(memcheck(), "========= ERROR SUMMARY: 0 errors\n", 86, false).outcome ==
        Outcome::failed);
}

TEST_CASE("sanitizer: one item per suite from its checks' runs, naming the checks with findings") {
  using cdplab::grading::Item;
  auto item = [](Outcome outcome, const std::string& feedback) {
    Item i;
    i.outcome = outcome;
    i.feedback = feedback;
    return i;
  };
  const auto clean = cdplab::sanitizer::merge(
      memcheck(), {{"a", item(Outcome::passed, "")}, {"speed", item(Outcome::skipped, "not run under compute-sanitizer")}});
  CHECK(clean.outcome == Outcome::passed);
  CHECK(clean.feedback == "check \"speed\": not run under compute-sanitizer");
  const auto noted = cdplab::sanitizer::merge(
      memcheck(), {{"a", item(Outcome::passed, "")}, {"many lines", item(Outcome::passed, "run again with ...")}});
  CHECK(noted.outcome == Outcome::passed);
  CHECK(noted.feedback == "check \"many lines\": run again with ...");
  CHECK(clean.name == "compute-sanitizer memcheck");
  CHECK(clean.max_points == 0);
  const auto found = cdplab::sanitizer::merge(memcheck(), {{"a", item(Outcome::passed, "")},
                                                           {"uniform ranges", item(Outcome::failed, "Invalid __global__ write")},
                                                           {"b", item(Outcome::failed, "Leaked 64 bytes")}});
  CHECK(found.outcome == Outcome::failed);
  CHECK(found.feedback.find("check \"uniform ranges\": Invalid __global__ write") != std::string::npos);
  CHECK(found.feedback.find("check \"b\": Leaked 64 bytes") != std::string::npos);
  const auto none = cdplab::sanitizer::merge(memcheck(), {{"speed", item(Outcome::skipped, "not run under compute-sanitizer")}});
  CHECK(none.outcome == Outcome::skipped);
  CHECK(none.feedback == "not run under compute-sanitizer");
}

TEST_CASE("sanitizer: a check graded under memcheck keeps its points only when the tool found nothing") {
  using cdplab::grading::Item;
  const auto& tool = cdplab::sanitizer::graded_memcheck();
  CHECK(tool.fallback_args.empty());  // the device heap is always checked: that is the point
  const Item passed_check{cdplab::grading::ItemKind::check, "buffers stay in bounds (memcheck)", Outcome::passed, 1, 1,
                          "", 0.2};

  Item clean = passed_check;
  cdplab::sanitizer::require_clean(
      clean, cdplab::sanitizer::item_from_output(tool, "========= ERROR SUMMARY: 0 errors\n", 0, false));
  CHECK(clean.outcome == Outcome::passed);
  CHECK(clean.points == 1);
  CHECK(clean.feedback.find("found no invalid memory access") != std::string::npos);

  Item dirty = passed_check;
  cdplab::sanitizer::require_clean(
      dirty, cdplab::sanitizer::item_from_output(tool,
                                                 "========= Invalid __global__ write of size 4 bytes\n"
                                                 "=========     at heap_sums_kernel(...)+0x2a0\n"
                                                 "========= ERROR SUMMARY: 1 error\n",
                                                 86, false));
  CHECK(dirty.outcome == Outcome::failed);
  CHECK(dirty.points == 0);
  CHECK(dirty.feedback.find("its results were right, but compute-sanitizer memcheck found") != std::string::npos);
  CHECK(dirty.feedback.find("Invalid __global__ write") != std::string::npos);
  CHECK(dirty.feedback.find("worth no points") == std::string::npos);

  Item unknown = passed_check;
  cdplab::sanitizer::require_clean(unknown, cdplab::sanitizer::item_from_output(tool, "", 0, true));
  CHECK(unknown.outcome == Outcome::skipped);
  CHECK(unknown.points == 0);
  CHECK(unknown.feedback.find("could not tell") != std::string::npos);
  CHECK(unknown.feedback.find("did not finish in time") != std::string::npos);
}
