// Every exercise's CDP rules, judged on the PTX of its solution and of its starter: the solution
// meets them all, and the starter meets none (no points for code that was handed out) but the
// rules that only deduct (rules::deducts: given code, arrays kept in bounds), worth nothing when met.
// Runs `cdplab rules`, which compiles each file to PTX with the build's nvcc; no GPU needed.
#include "manifest/manifest.h"
#include "process/process.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;

namespace {

struct RulesRun {
  int exit_code;
  int passed;
  int failed;
  std::string output;
};

int count_of(const std::string& text, const std::string& word) {
  int n = 0;
  for (auto at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

RulesRun judge(const fs::path& file, const std::string& exercise) {
  cdplab::process::Options options;
  options.timeout_seconds = 300;
  const auto result = cdplab::process::run({CDPLAB_CLI, "rules", file.string(), "--exercise", exercise}, options);
  return {result.exit_code, count_of(result.output, "[pass]"), count_of(result.output, "[FAIL]"), result.output};
}

}  // namespace

TEST_CASE("workbook rules pass on every solution and fail on every starter") {
  const fs::path root = CDPLAB_SOURCE_DIR;
  const auto book = cdplab::manifest::load_workbook(root);
  int judged = 0;
  for (const auto* e : book.exercises()) {
    if (e->rules.empty()) continue;
    const int rules = static_cast<int>(e->rules.size());
    const int given = static_cast<int>(std::count_if(e->rules.begin(), e->rules.end(), [](const auto& r) { return cdplab::rules::deducts(r); }));
    {
      const auto run = judge(root / "solutions" / e->path(), e->id);
      INFO("solutions/", e->path(), ":\n", run.output);
      CHECK(run.exit_code == 0);
      CHECK(run.passed == rules);
    }
    {
      const auto run = judge(root / "chapters" / e->path(), e->id);
      INFO("chapters/", e->path(), " (the starter):\n", run.output);
      CHECK(run.exit_code == (rules > given ? 1 : 0));  // an exercise whose rules all deduct: nothing fails
      CHECK(run.failed == rules - given);
      CHECK(run.passed == given);
    }
    ++judged;
  }
  CHECK(judged > 0);
}
