// Chapter manifests: the loader's errors, and the workbook's own manifests against its files.
#include "manifest/manifest.h"
#include "process/process.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using cdplab::manifest::load_chapter;
using cdplab::manifest::load_workbook;

namespace {

/// Writes `text` as <tmp>/<chapter>/chapter.toml and returns its path.
fs::path write_manifest(const std::string& chapter, const std::string& text) {
  const fs::path dir = fs::path(CDPLAB_TEST_BINARY_DIR) / "manifest-cases" / chapter;
  fs::create_directories(dir);
  std::ofstream(dir / "chapter.toml") << text;
  return dir / "chapter.toml";
}

std::string load_error(const fs::path& file) {
  try {
    load_chapter(file);
  } catch (const std::exception& error) {
    return error.what();
  }
  return "";
}

/// The check names a suite executable declares (doctest --list-test-cases).
std::set<std::string> suite_checks(const std::string& executable) {
  const auto listed = cdplab::process::run({executable, "--list-test-cases"});
  REQUIRE_MESSAGE(listed.ok(), executable, ": ", listed.output);
  std::set<std::string> names;
  std::istringstream in(listed.output);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.rfind("[doctest]", 0) == 0 || line.rfind("===", 0) == 0) continue;
    names.insert(line);
  }
  return names;
}

}  // namespace

TEST_CASE("manifest reads a chapter") {
  const auto file = write_manifest("09-sample", R"(
[chapter]
id = "09-sample"
title = "Sample"

[[exercise]]
id = "first-one"
file = "first_one.cu"
title = "First"
hints = ["a", "b"]
[[exercise.check]]
name = "small"
points = 2
[[exercise.check]]
name = "in bounds"
points = 0
memcheck = true
timeline = true
[[exercise.rule]]
kind = "launches"
kernel = "parent"
points = 1.5
)");
  const auto chapter = load_chapter(file);
  REQUIRE(chapter.exercises.size() == 1);
  const auto& e = chapter.exercises[0];
  CHECK(e.stem == "first_one");
  CHECK(e.path() == "09-sample/first_one.cu");
  CHECK(e.hints.size() == 2);
  CHECK(e.checks.at(0).points == 2);
  CHECK_FALSE(e.checks.at(0).memcheck);
  CHECK(e.checks.at(1).memcheck);
  CHECK_FALSE(e.checks.at(0).timeline);
  CHECK(e.checks.at(1).timeline);
  CHECK(e.max_points() == doctest::Approx(3.5));
}

TEST_CASE("manifest errors name the file and the problem") {
  CHECK(load_error(write_manifest("09-bad-syntax", "[chapter\n")).find("chapter.toml") != std::string::npos);
  CHECK(load_error(write_manifest("09-no-id", "[chapter]\ntitle = \"x\"\n")).find("missing string 'id'") !=
        std::string::npos);
  CHECK(load_error(write_manifest("09-wrong-id", "[chapter]\nid = \"other\"\ntitle = \"x\"\n"))
            .find("differs from its folder") != std::string::npos);
  CHECK(load_error(write_manifest("09-bad-file", R"(
[chapter]
id = "09-bad-file"
title = "x"
[[exercise]]
id = "e"
file = "e.cpp"
title = "E"
[[exercise.check]]
name = "c"
)")).find("must be a .cu file") != std::string::npos);
  CHECK(load_error(write_manifest("09-bad-memcheck", R"(
[chapter]
id = "09-bad-memcheck"
title = "x"
[[exercise]]
id = "e"
file = "e.cu"
title = "E"
[[exercise.check]]
name = "c"
memcheck = "yes"
)")).find("check 'c': 'memcheck' must be true or false") != std::string::npos);
  CHECK(load_error(write_manifest("09-bad-timeline", R"(
[chapter]
id = "09-bad-timeline"
title = "x"
[[exercise]]
id = "e"
file = "e.cu"
title = "E"
[[exercise.check]]
name = "c"
timeline = 1
)")).find("check 'c': 'timeline' must be true or false") != std::string::npos);
  CHECK(load_error(write_manifest("09-nothing", R"(
[chapter]
id = "09-nothing"
title = "x"
[[exercise]]
id = "e"
file = "e.cu"
title = "E"
)")).find("no [[exercise.check]]") != std::string::npos);
  CHECK(load_error(write_manifest("09-quiz-with-check", R"(
[chapter]
id = "09-quiz-with-check"
title = "x"
[[exercise]]
id = "q"
file = "quiz.toml"
title = "Q"
[[exercise.check]]
name = "c"
)")).find("a quiz (a .toml file) has [[exercise.question]] items") != std::string::npos);
  CHECK(load_error(write_manifest("09-question-bad-id", R"(
[chapter]
id = "09-question-bad-id"
title = "x"
[[exercise]]
id = "q"
file = "quiz.toml"
title = "Q"
[[exercise.question]]
id = "two words"
text = "?"
answers = ["1"]
)")).find("letters, digits") != std::string::npos);
  CHECK(load_error(write_manifest("09-question-no-answer", R"(
[chapter]
id = "09-question-no-answer"
title = "x"
[[exercise]]
id = "q"
file = "quiz.toml"
title = "Q"
[[exercise.question]]
id = "a"
text = "?"
)")).find("no accepted answer") != std::string::npos);
  CHECK(load_error(write_manifest("09-question-in-code", R"(
[chapter]
id = "09-question-in-code"
title = "x"
[[exercise]]
id = "e"
file = "e.cu"
title = "E"
[[exercise.question]]
id = "a"
text = "?"
answers = ["1"]
)")).find("belong to a quiz") != std::string::npos);
}

TEST_CASE("manifest reads a quiz") {
  const auto chapter = load_chapter(write_manifest("09-quiz", R"(
[chapter]
id = "09-quiz"
title = "x"
[[exercise]]
id = "q"
file = "quiz.toml"
title = "Q"
[[exercise.question]]
id = "grids"
text = "How many?"
answers = ["4", "four"]
hint = "count them"
points = 2
[[exercise.question]]
id = "streams"
text = "And streams?"
answers = ["0"]
)"));
  REQUIRE(chapter.exercises.size() == 1);
  const auto& quiz = chapter.exercises.front();
  CHECK(quiz.is_quiz());
  CHECK(quiz.stem == "quiz");
  REQUIRE(quiz.questions.size() == 2);
  CHECK(quiz.questions[0].answers == std::vector<std::string>{"4", "four"});
  CHECK(quiz.questions[0].hint == "count them");
  CHECK(quiz.questions[1].points == 1);
  CHECK(quiz.max_points() == 3);
}

// A chapter folder deleted from chapters/ must not drop out of list and the total in silence: the
// grader's suites say which chapters the workbook has.
TEST_CASE("workbook names the chapters the grader has suites for and chapters/ lacks") {
  const fs::path root = fs::path(CDPLAB_TEST_BINARY_DIR) / "manifest-missing-chapter";
  fs::remove_all(root);
  for (const char* chapter : {"01-fundamentals", "02-bezier"}) fs::create_directories(root / "grader" / "suites" / chapter);
  fs::create_directories(root / "chapters" / "01-fundamentals");
  fs::copy_file(fs::path(CDPLAB_SOURCE_DIR) / "chapters" / "01-fundamentals" / "chapter.toml",
                root / "chapters" / "01-fundamentals" / "chapter.toml");
  auto book = load_workbook(root);
  CHECK(book.chapters.size() == 1);
  CHECK(book.missing_chapters == std::vector<std::string>{"02-bezier"});
  // An empty folder left behind is missing too: it has no chapter.toml.
  fs::create_directories(root / "chapters" / "02-bezier");
  book = load_workbook(root);
  CHECK(book.missing_chapters == std::vector<std::string>{"02-bezier"});
  // The project as it stands misses none.
  CHECK(load_workbook(CDPLAB_SOURCE_DIR).missing_chapters.empty());
}

TEST_CASE("workbook manifests match the exercise files") {
  const auto book = load_workbook(CDPLAB_SOURCE_DIR);
  REQUIRE_FALSE(book.chapters.empty());
  const fs::path root = CDPLAB_SOURCE_DIR;
  const std::regex check_name("[A-Za-z0-9 ()_-]+");
  for (const auto* e : book.exercises()) {
    INFO(e->path());
    CHECK(fs::exists(root / "solutions" / e->path()));
    CHECK(fs::exists(root / "chapters" / e->path()));
    // A quiz is graded from its answers file alone; every other exercise has a suite.
    CHECK(fs::exists(root / "grader" / "suites" / e->chapter / (e->stem + "_test.cpp")) != e->is_quiz());
    CHECK_FALSE(e->hints.empty());
    CHECK_FALSE(e->course.empty());
    for (const auto& c : e->checks) CHECK_MESSAGE(std::regex_match(c.name, check_name), "check name: ", c.name);
  }
  // Every suite belongs to an exercise of its chapter's manifest.
  for (const auto& chapter : book.chapters) {
    const fs::path suites = root / "grader" / "suites" / chapter.id;
    if (!fs::is_directory(suites)) continue;
    for (const auto& entry : fs::directory_iterator(suites)) {
      const std::string name = entry.path().filename().string();
      if (name.size() < 9 || name.substr(name.size() - 9) != "_test.cpp") continue;
      const std::string stem = name.substr(0, name.size() - 9);
      INFO(entry.path().string());
      CHECK(book.find_exercise(chapter.id + "/" + stem) != nullptr);
    }
  }
}

TEST_CASE("workbook manifests name exactly the checks of each suite") {
  std::ifstream in(fs::path(CDPLAB_BINARY_DIR) / "cdplab-index.json");
  REQUIRE(in);
  const auto index = nlohmann::json::parse(in);
  const auto book = load_workbook(CDPLAB_SOURCE_DIR);
  int compared = 0;
  for (const auto& entry : index.at("exercises")) {
    const auto* e = book.find_exercise(entry.at("test").get<std::string>());
    REQUIRE_MESSAGE(e != nullptr, "no manifest entry for ", entry.at("test").get<std::string>());
    if (entry.at("executable").get<std::string>().empty()) continue;
    std::set<std::string> expected;
    for (const auto& c : e->checks) expected.insert(c.name);
    INFO(e->path());
    CHECK(suite_checks(entry.at("executable").get<std::string>()) == expected);
    ++compared;
  }
  const auto all = book.exercises();
  const auto programs = std::count_if(all.begin(), all.end(), [](const auto* e) { return !e->is_quiz(); });
  CHECK(compared == static_cast<int>(programs));
}
