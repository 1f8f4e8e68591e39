// The texts a student reads agree with the code they are handed and with each other:
// - every constant (kSomething) and every function named in backticks or with its namespace
//   (`name()`, ns::name) that a starter's comments, a hint or a rule message names exists in the
//   exercise's starter or in the starter kit's headers (starter/include);
// - what a pending-launch-pool entry is held for is said one way, the one measured
//   (docs/measured-limits.md), and never the old ways.
#include "files/files.h"
#include "manifest/manifest.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = CDPLAB_SOURCE_DIR;

/// `text` split into its code (each line up to a `//` comment) and its comments.
void split_code(const std::string& text, std::string& code, std::string& comments) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto at = line.find("//");
    code += line.substr(0, at) + "\n";
    if (at != std::string::npos) comments += line.substr(at) + "\n";
  }
}

/// The code of every header of the starter kit.
std::string kit_code() {
  std::string code;
  std::string comments;
  for (const auto& entry : fs::recursive_directory_iterator(kRoot / "starter" / "include")) {
    if (entry.is_regular_file()) split_code(cdplab::files::read_text(entry.path()), code, comments);
  }
  return code;
}

bool declared(const std::string& code, const std::string& name) {
  return std::regex_search(code, std::regex("\\b" + name + "\\b"));
}

/// The names `text` relies on: constants kSomething, `name(` in backticks, and ns::name( calls.
std::set<std::string> named_in(const std::string& text) {
  std::set<std::string> names;
  static const std::regex constant("\\bk[A-Z][A-Za-z0-9_]*\\b");
  static const std::regex backticked("`(?:[A-Za-z_]\\w*::)*([A-Za-z_]\\w*)\\(");
  static const std::regex qualified("\\b(?:cdplab|sorting|grader|streams)::(?:\\w+::)*([A-Za-z_]\\w*)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), constant); it != std::sregex_iterator(); ++it)
    names.insert(it->str());
  for (const auto* pattern : {&backticked, &qualified}) {
    for (auto it = std::sregex_iterator(text.begin(), text.end(), *pattern); it != std::sregex_iterator(); ++it) {
      const std::string name = (*it)[1].str();
      if (name.rfind("cuda", 0) != 0 && name.rfind("__", 0) != 0) names.insert(name);
    }
  }
  return names;
}

}  // namespace

TEST_CASE("texts: the names a starter's TODOs, its hints and its rule messages use exist in its starter or the kit") {
  const auto workbook = cdplab::manifest::load_workbook(kRoot);
  const std::string kit = kit_code();
  std::size_t exercises = 0;
  for (const auto* exercise : workbook.exercises()) {
    if (exercise->is_quiz()) continue;
    ++exercises;
    std::string code;
    std::string comments;
    split_code(cdplab::files::read_text(kRoot / "chapters" / exercise->path()), code, comments);
    std::string told = comments;
    for (const auto& hint : exercise->hints) told += hint + "\n";
    for (const auto& rule : exercise->rules) told += rule.message + "\n";
    for (const auto& name : named_in(told)) {
      if (!declared(code, name) && !declared(kit, name))
        FAIL_CHECK(exercise->id << ": its starter's comments, hints or rule messages name " << name
                                << ", which neither " << exercise->path() << " nor starter/include defines");
    }
  }
  CHECK(exercises > 10);
}

TEST_CASE("texts: the detector of names finds constants, backticked calls and namespaced calls") {
  const auto names = named_in("add kPendingLaunchMargin; call `launch_bound(n)` and sorting::block_sort(x); "
                              "cudaGetLastError() and `cudaDeviceSetLimit(` are the runtime's; kernel is a word");
  CHECK(names == std::set<std::string>{"kPendingLaunchMargin", "launch_bound", "block_sort"});
  CHECK(declared("constexpr int kA = 1;", "kA"));
  CHECK_FALSE(declared("constexpr int kAB = 1;", "kA"));
}

TEST_CASE("texts: how long a launch holds its pending-pool entry is said the measured way") {
  // The measured fact, stated once with the device it was seen on.
  const std::string limits = cdplab::files::read_text(kRoot / "docs" / "measured-limits.md");
  CHECK(limits.find("a launch holds its entry at least until its grid starts to\nrun") != std::string::npos);
  // The ways it was said before, which that measurement contradicts or does not support.
  const std::vector<std::regex> old_ways = {
      std::regex("until its grid has (completed|finished)"),
      std::regex("(pool|entry|pending)[^.]{0,80}until (its|the) child grid has (completed|finished)"),
      std::regex("until (its|the) subtree has"),
      std::regex("pending (launch )?until (it|its|the child)"),
      std::regex("held from the launch until"),
      std::regex("pending until everything below"),
      std::regex("pending from the moment it is made until"),
  };
  std::size_t files = 0;
  for (const char* folder : {"chapters", "solutions", "starter", "docs", "grader/suites"}) {
    for (const auto& entry : fs::recursive_directory_iterator(kRoot / folder)) {
      if (!entry.is_regular_file()) continue;
      const auto ext = entry.path().extension();
      if (ext != ".md" && ext != ".toml" && ext != ".cu" && ext != ".h" && ext != ".cuh" && ext != ".cpp") continue;
      if (entry.path().filename() == "measured-limits.md") continue;  // quotes the old claim to refute it
      ++files;
      std::string text = cdplab::files::read_text(entry.path());
      // One sentence may run over lines (comments, wrapped Markdown): join them.
      text = std::regex_replace(text, std::regex("\\n\\s*(//\\|?|///|#)?\\s*"), " ");
      for (const auto& old_way : old_ways) {
        std::smatch found;
        if (std::regex_search(text, found, old_way))
          FAIL_CHECK(fs::relative(entry.path(), kRoot).string() << " says \"" << found.str()
                                                                << "\": say what was measured (docs/measured-limits.md)");
      }
    }
  }
  CHECK(files > 50);
}

TEST_CASE("texts: an exercise that reports its launches on the board is told so by its launch_checked rule") {
  const auto workbook = cdplab::manifest::load_workbook(kRoot);
  std::size_t reporting = 0;
  for (const auto* exercise : workbook.exercises()) {
    if (exercise->is_quiz()) continue;
    std::string code;
    std::string comments;
    split_code(cdplab::files::read_text(kRoot / "chapters" / exercise->path()), code, comments);
    if (comments.find("TODO") == std::string::npos || comments.find("report_launch") == std::string::npos) continue;
    ++reporting;
    for (const auto& rule : exercise->rules) {
      if (rule.kind != "launch_checked") continue;
      CHECK_MESSAGE(rule.message.find("report_launch") != std::string::npos,
                    exercise->id << ": its TODO reports each launch with grader::report_launch, its rule message says: "
                                 << rule.message);
    }
  }
  CHECK(reporting >= 1);
}

TEST_CASE("texts: the quadtree's texts say that the root's grid launches its children too") {
  for (const char* file : {"chapters/03-quadtree/adaptive_quadtree.cu", "solutions/03-quadtree/adaptive_quadtree.cu",
                           "chapters/03-quadtree/chapter.toml", "chapters/03-quadtree/README.md"}) {
    const std::string text = std::regex_replace(cdplab::files::read_text(kRoot / file),
                                                std::regex("\\n\\s*(//\\|?|///)?\\s*"), " ");
    CHECK_MESSAGE(!std::regex_search(text, std::regex("internal node (but|other than) the root")), file);
  }
}

TEST_CASE("texts: the tail-consumer lesson says why the consumer is a tail launch and not a NULL-stream one") {
  const std::string lesson = cdplab::files::read_text(kRoot / "chapters" / "04-memory-visibility" / "README.md");
  const auto section = lesson.find("### b. tail-consumer");
  REQUIRE(section != std::string::npos);
  const std::string text = lesson.substr(section, lesson.find("\n### ", section + 1) - section);
  CHECK(text.find("Why a tail launch") != std::string::npos);
  CHECK(text.find("NULL stream") != std::string::npos);
  CHECK(text.find("other blocks") != std::string::npos);
}

TEST_CASE("texts: the lessons speak to the student of their own code, not of the solution") {
  for (const auto& entry : fs::directory_iterator(kRoot / "chapters")) {
    const fs::path lesson = entry.path() / "README.md";
    if (!fs::exists(lesson)) continue;
    const std::string text = std::regex_replace(cdplab::files::read_text(lesson), std::regex("\\s+"), " ");
    std::smatch found;
    // "the solution preset" and "the solution build" name a build, which the lessons may.
    CHECK_MESSAGE(!std::regex_search(text, found, std::regex("\\b[Tt]he solution\\b(?! (preset|build|and test presets))")),
                  lesson.string() << ": " << found.str());
  }
}

TEST_CASE("texts: the heap and visibility facts are stated once, and the lessons point there") {
  const std::string limits = cdplab::files::read_text(kRoot / "docs" / "measured-limits.md");
  CHECK(limits.find("## The device heap") != std::string::npos);
  CHECK(limits.find("## What a child grid sees") != std::string::npos);
  CHECK(limits.find("chapter 04's table \"What a child sees\"") != std::string::npos);
  const auto joined = [](const fs::path& file) {
    return std::regex_replace(cdplab::files::read_text(file), std::regex("\\n\\s*"), " ");
  };
  for (const char* lesson : {"chapters/02-bezier/README.md", "chapters/04-memory-visibility/README.md"}) {
    INFO(lesson);
    CHECK(joined(kRoot / lesson).find("docs/measured-limits.md, \"The device heap\"") != std::string::npos);
  }
  CHECK(cdplab::files::read_text(kRoot / "chapters/04-memory-visibility/README.md").find("## What a child sees") !=
        std::string::npos);
}
