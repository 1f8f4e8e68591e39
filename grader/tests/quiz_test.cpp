// Quizzes: how answers are read and judged, and the workbook's own quizzes against their
// solutions and starters.
#include "manifest/manifest.h"
#include "quiz/quiz.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using cdplab::grading::Outcome;

namespace {

cdplab::manifest::Exercise sample_quiz() {
  cdplab::manifest::Exercise e;
  e.chapter = "09-sample";
  e.id = "sample-quiz";
  e.file = "quiz.toml";
  e.stem = "quiz";
  e.questions = {{"grids", "How many grids?", {"1024"}, "one per thread", 2},
                 {"wait", "Does the parent wait?", {"no"}, "", 1},
                 {"streams", "How many streams?", {"16"}, "", 1}};
  return e;
}

/// A submission folder holding only `text` as the sample quiz's answers file.
fs::path answers_folder(const std::string& name, const std::string& text) {
  const fs::path dir = fs::path(CDPLAB_TEST_BINARY_DIR) / "quiz-cases" / name;
  fs::create_directories(dir / "09-sample");
  std::ofstream(dir / "09-sample" / "quiz.toml") << text;
  return dir;
}

}  // namespace

TEST_CASE("quiz answers are compared after normalising") {
  using cdplab::quiz::accepts;
  CHECK(cdplab::quiz::normalise("  No.  ") == "no");
  CHECK(cdplab::quiz::normalise("Fire   and\tForget") == "fire and forget");
  CHECK(accepts({"1024"}, " 1024 "));
  CHECK(accepts({"1024"}, "1024.0"));
  CHECK(accepts({"1024"}, "1.024e3"));
  CHECK(accepts({"no", "false"}, "NO."));
  CHECK(accepts({"no", "false"}, "false"));
  CHECK_FALSE(accepts({"1024"}, "16"));
  CHECK_FALSE(accepts({"1024"}, "1024 grids"));
  CHECK_FALSE(accepts({"no"}, ""));
  CHECK_FALSE(accepts({"no"}, "   "));
}

TEST_CASE("quiz grading gives points for right answers and says why the others failed") {
  const auto quiz = sample_quiz();
  const auto dir = answers_folder("mixed", "[answers]\ngrids = 1024\nwait = \"Yes\"\nstreams = \"\"\n");
  const auto result = cdplab::quiz::grade(quiz, dir);
  CHECK(result.problem.empty());
  REQUIRE(result.items.size() == 3);
  CHECK(result.items[0].outcome == Outcome::passed);  // a bare number is an answer too
  CHECK(result.items[0].points == 2);
  CHECK(result.items[1].outcome == Outcome::failed);
  CHECK(result.items[1].feedback.find("\"Yes\" is not right") != std::string::npos);
  CHECK(result.items[1].feedback.find("Does the parent wait?") != std::string::npos);
  CHECK(result.items[2].outcome == Outcome::failed);
  CHECK(result.items[2].feedback.find("not answered yet") != std::string::npos);
  CHECK(result.points() == 2);
  CHECK(result.max_points() == 4);
}

TEST_CASE("quiz grading names a wrong answer's hint, a missing key, a broken file and a missing one") {
  const auto quiz = sample_quiz();
  {
    const auto result = cdplab::quiz::grade(quiz, answers_folder("hint", "[answers]\ngrids = \"16\"\nwait = \"no\"\n"));
    CHECK(result.items[0].feedback.find("one per thread") != std::string::npos);
    CHECK(result.items[1].outcome == Outcome::passed);
    CHECK(result.items[2].feedback.find("no key 'streams'") != std::string::npos);
  }
  {
    const auto result = cdplab::quiz::grade(quiz, answers_folder("broken", "[answers]\ngrids = \"16\n"));
    CHECK(result.problem.find("not valid TOML (line 2)") != std::string::npos);
    for (const auto& item : result.items) CHECK(item.outcome == Outcome::failed);
  }
  {
    const auto result = cdplab::quiz::grade(quiz, answers_folder("no-table", "grids = \"1024\"\n"));
    CHECK(result.problem.find("no [answers] table") != std::string::npos);
  }
  {
    const auto result = cdplab::quiz::grade(quiz, fs::path(CDPLAB_TEST_BINARY_DIR) / "quiz-cases" / "nowhere");
    CHECK(result.problem.find("file missing") != std::string::npos);
    CHECK(result.points() == 0);
  }
}

TEST_CASE("workbook quizzes: the solutions answer every question right, the starters none") {
  const fs::path root = CDPLAB_SOURCE_DIR;
  const auto book = cdplab::manifest::load_workbook(root);
  int quizzes = 0;
  for (const auto* e : book.exercises()) {
    if (!e->is_quiz()) continue;
    ++quizzes;
    INFO(e->path());
    const auto solved = cdplab::quiz::grade(*e, root / "solutions");
    CHECK(solved.problem.empty());
    for (const auto& item : solved.items) CHECK_MESSAGE(item.outcome == Outcome::passed, item.name, ": ", item.feedback);
    const auto starter = cdplab::quiz::grade(*e, root / "chapters");
    CHECK(starter.problem.empty());
    for (const auto& item : starter.items)
      CHECK_MESSAGE(item.feedback.find("not answered yet") != std::string::npos, item.name, ": ", item.feedback);
  }
  CHECK(quizzes > 0);
}
