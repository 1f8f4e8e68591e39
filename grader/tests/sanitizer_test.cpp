// The compute-sanitizer stage: how the tool's output becomes an item (the tool itself needs a GPU).
#include "sanitizer/sanitizer.h"

#include <doctest/doctest.h>

using cdplab::grading::Outcome;

namespace {

const cdplab::sanitizer::Tool& memcheck() { return cdplab::sanitizer::tools().front(); }

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
  CHECK(slow.feedback.find("did not finish in time") != std::string::npos);
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
