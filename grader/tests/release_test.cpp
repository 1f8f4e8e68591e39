// The student release: what it holds and leaves out, its presets, and that its cdplab builds
// and restores starters without the solutions.
#include "gpu_present.h"
#include "files/files.h"
#include "process/process.h"
#include "release/release.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = CDPLAB_SOURCE_DIR;

cdplab::process::Result run_in(const fs::path& dir, const std::vector<std::string>& argv, double seconds = 900) {
  cdplab::process::Options options;
  options.working_directory = dir.string();
  options.timeout_seconds = seconds;
  return cdplab::process::run(argv, options);
}

/// Writes a release of the project into <test build>/`name`/student-copy (emptied first) and
/// returns that folder.
fs::path make_release_copy(const std::string& name) {
  const fs::path work = fs::path(CDPLAB_TEST_BINARY_DIR) / name;
  const fs::path copy = work / "student-copy";
  fs::remove_all(work);
  fs::create_directories(work);
  const auto made = run_in(work, {CDPLAB_CLI, "release", copy.string()});
  INFO(made.output);
  REQUIRE(made.ok());
  return copy;
}

/// Configures the release `copy` the way its README says and builds its cdplab; returns the
/// command's path. Where this build found its dependencies only through CMAKE_PREFIX_PATH (no
/// system packages), the copy is told the same, as its user would; else it would try to
/// download them.
std::string build_release_cli(const fs::path& copy) {
  std::vector<std::string> configure = {"cmake", "--preset", "student"};
  std::string prefix_path = CDPLAB_PREFIX_PATH;
  std::replace(prefix_path.begin(), prefix_path.end(), '|', ';');
  if (!prefix_path.empty()) configure.push_back("-DCMAKE_PREFIX_PATH=" + prefix_path);
  const auto configured = run_in(copy, configure);
  INFO(configured.output);
  REQUIRE(configured.ok());
  const auto built = run_in(copy, {"cmake", "--build", "build/student", "--target", "cdplab"});
  INFO(built.output);
  REQUIRE(built.ok());
  return (copy / "build" / "student" / "grader" / "cli" / "cdplab").string();
}

}  // namespace

TEST_CASE("release text leaves out the parts of the project's Markdown that speak of solutions") {
  const std::string project =
      "# Title\n\nFor everyone.\n\n<!-- project-only: why -->\nAbout solutions/.\n\n| a | b |\n<!-- /project-only -->\n\n"
      "After.\n";
  CHECK(cdplab::release::without_project_parts(project) == "# Title\n\nFor everyone.\n\nAfter.\n");
  CHECK_THROWS_WITH(cdplab::release::without_project_parts("<!-- project-only -->\nnever ended\n"),
                    doctest::Contains("no <!-- /project-only --> line"));
  // The project's README: its release mentions neither solutions/ nor grading a class.
  const std::string readme = cdplab::release::without_project_parts(cdplab::files::read_text(kRoot / "README.md"));
  CHECK(readme.find("solutions/") == std::string::npos);
  CHECK(readme.find("cdplab grade CLASS") == std::string::npos);
  CHECK(readme.find("project-only") == std::string::npos);
  CHECK(readme.find("cdplab check") != std::string::npos);
  // Its Quick start offers the student's commands, not the project's own tests.
  CHECK(readme.find("cmake --workflow --preset test") == std::string::npos);
  CHECK(readme.find("release-only") == std::string::npos);
  CHECK(readme.find("./cdplab                         # start at the first exercise not done") != std::string::npos);
  CHECK(cdplab::release::without_project_parts("a\n<!-- release-only\nkept\n/release-only -->\nb\n") == "a\nkept\nb\n");
}

// An instructor who tried an exercise in chapters/ has an edited starter: the release refuses it,
// names the file, and never offers `cdplab starters --write` as the fix without saying that it
// overwrites that file.
TEST_CASE("release refuses an edited starter, naming it, and warns that starters --write overwrites it") {
  const fs::path work = fs::path(CDPLAB_TEST_BINARY_DIR) / "release-edited-starter";
  fs::remove_all(work);
  fs::create_directories(work / "solutions/01-fundamentals");
  fs::create_directories(work / "chapters/01-fundamentals");
  fs::copy_file(kRoot / "solutions/01-fundamentals/child_grids.cu", work / "solutions/01-fundamentals/child_grids.cu");
  std::ofstream(work / "chapters/01-fundamentals/child_grids.cu")
      << cdplab::files::read_text(kRoot / "chapters/01-fundamentals/child_grids.cu") << "// my attempt\n";
  try {
    cdplab::release::make_release(work, work.string() + "-release");
    FAIL("an edited starter was released");
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    INFO(message);
    CHECK(message.find("chapters/01-fundamentals/child_grids.cu") != std::string::npos);
    CHECK(message.find("overwrites these files") != std::string::npos);
    CHECK(message.find("run `cdplab starters --write` first") == std::string::npos);
  }
  CHECK_FALSE(fs::exists(work.string() + "-release"));
}

// What a student reads in the release (its README, its pages, the chapters and the kit's headers)
// names only files the release holds: no instructor's page, no folder left out. A path written
// with a placeholder (chapters/NN-name) names none.
TEST_CASE("release names nothing it does not hold") {
  const fs::path copy = make_release_copy("release-names");
  const std::regex path(R"((?:^|[^A-Za-z0-9_/.-])((?:docs|chapters|grader|starter|cmake|solutions)/[A-Za-z0-9_./-]*[A-Za-z0-9_]))");
  const std::regex link(R"(\]\(([^)#:\s]+)(?:#[^)]*)?\))");
  std::vector<fs::path> read;
  for (const auto& entry : fs::recursive_directory_iterator(copy)) {
    if (!entry.is_regular_file()) continue;
    const std::string relative = fs::relative(entry.path(), copy).generic_string();
    const bool student_text = entry.path().extension() == ".md" || entry.path().extension() == ".toml" ||
                              relative.rfind("chapters/", 0) == 0 || relative.rfind("starter/include/", 0) == 0;
    if (student_text && relative.rfind("build/", 0) != 0) read.push_back(entry.path());
  }
  CHECK(read.size() > 40);
  std::vector<std::string> missing;
  for (const auto& file : read) {
    const std::string text = cdplab::files::read_text(file);
    const auto named = [&](const std::string& name) {
      return fs::exists(copy / name) || fs::exists(file.parent_path() / name);
    };
    for (std::sregex_iterator it(text.begin(), text.end(), path), end; it != end; ++it) {
      const std::string name = (*it)[1].str();
      if (name.find("NN-") != std::string::npos) continue;  // a placeholder
      if (!named(name)) missing.push_back(fs::relative(file, copy).string() + ": " + name);
    }
    if (file.extension() != ".md") continue;
    for (std::sregex_iterator it(text.begin(), text.end(), link), end; it != end; ++it) {
      const std::string target = (*it)[1].str();
      if (target.rfind("http", 0) != 0 && !named(target)) missing.push_back(fs::relative(file, copy).string() + ": link " + target);
    }
  }
  INFO(missing.size(), " names of files the release does not hold");
  for (const auto& m : missing) CHECK_MESSAGE(false, m);
  // The detector finds what it is for: a page that names an instructor's page.
  const std::string planted = "see docs/grading-a-class.md";
  std::smatch m;
  REQUIRE(std::regex_search(planted, m, path));
  CHECK(m[1].str() == "docs/grading-a-class.md");
  CHECK_FALSE(fs::exists(copy / m[1].str()));
}

TEST_CASE("release presets drop the solutions and test the student's chapters") {
  const auto presets =
      nlohmann::json::parse(cdplab::release::release_presets(cdplab::files::read_text(kRoot / "CMakePresets.json")));
  bool has_test = false;
  for (const auto& preset : presets["configurePresets"]) {
    const std::string dump = preset.dump();
    CHECK_MESSAGE(dump.find("solutions") == std::string::npos, dump);
    if (preset.value("name", "") == "test") {
      has_test = true;
      CHECK(preset["cacheVariables"]["CDPLAB_EXERCISE_DIR"] == "${sourceDir}/chapters");
      CHECK(preset["cacheVariables"]["CDPLAB_BUILD_TESTS"] == "OFF");
    }
  }
  CHECK(has_test);
  for (const char* kind : {"buildPresets", "testPresets"})
    for (const auto& preset : presets[kind]) CHECK(preset.value("configurePreset", "") != "solution");
  CHECK(presets.contains("workflowPresets"));  // the README's test command stays
}

TEST_CASE("cdplab release writes a student copy whose cdplab builds and resets starters") {
  const fs::path copy = make_release_copy("release");
  const fs::path work = copy.parent_path();
  CHECK_FALSE(fs::exists(copy / "solutions"));
  CHECK_FALSE(fs::exists(copy / "grader" / "tests"));
  CHECK_FALSE(fs::exists(copy / ".ci"));
  CHECK_FALSE(fs::exists(copy / "build"));
  CHECK(fs::exists(copy / "grader" / "suites" / "01-fundamentals" / "child_grids_test.cpp"));
  // The instructor's pages stay behind, and no page of the copy links to them or keeps a marker.
  for (const char* page : {"instructor-guide.md", "grading-a-class.md", "authoring.md", "slide-map.md"})
    CHECK_FALSE(fs::exists(copy / "docs" / page));
  CHECK(fs::exists(copy / "docs" / "migration.md"));
  for (const auto& entry : fs::recursive_directory_iterator(copy)) {
    if (entry.path().extension() != ".md") continue;
    const std::string text = cdplab::files::read_text(entry.path());
    INFO(entry.path().string());
    for (const char* gone : {"@ref instructor_guide", "@ref grading_class", "@ref authoring", "@ref slide_map",
                             "project-only", "release-only", "--preset test"})
      CHECK(text.find(gone) == std::string::npos);
  }
  CHECK(cdplab::files::read_text(copy / "docs" / "mainpage.md").find("./cdplab                         # starts at") !=
        std::string::npos);
  const fs::path starter = copy / "chapters" / "01-fundamentals" / "child_grids.cu";
  CHECK(cdplab::files::read_text(starter) ==
        cdplab::files::read_text(kRoot / "chapters" / "01-fundamentals" / "child_grids.cu"));
  CHECK(cdplab::files::read_text(copy / cdplab::release::kOriginals / "01-fundamentals" / "child_grids.cu") ==
        cdplab::files::read_text(starter));
  CHECK((fs::status(copy / "cdplab").permissions() & fs::perms::owner_exec) != fs::perms::none);
  // No solution region reaches the students' files.
  for (const auto& entry : fs::recursive_directory_iterator(copy / "chapters")) {
    if (!entry.is_regular_file()) continue;
    const std::string text = cdplab::files::read_text(entry.path());
    INFO(entry.path().string());
    CHECK(text.find("BEGIN SOLUTION") == std::string::npos);
  }
  // A second release into the same folder is refused; the first stays whole.
  CHECK(run_in(work, {CDPLAB_CLI, "release", copy.string()}).exit_code == 2);
  CHECK(fs::exists(starter));

  // The copy's own cdplab, then a starter reset.
  const std::string cli = build_release_cli(copy);
  std::ofstream(starter, std::ios::app) << "\n// my work\n";
  const auto reset = run_in(copy, {cli, "reset", "child-grids"});
  INFO(reset.output);
  CHECK(reset.ok());
  CHECK(cdplab::files::read_text(starter) ==
        cdplab::files::read_text(copy / cdplab::release::kOriginals / "01-fundamentals" / "child_grids.cu"));
  const auto listed = run_in(copy, {cli, "list"});
  CHECK(listed.ok());
  CHECK(listed.output.find("not started") != std::string::npos);
  // The instructor's commands are neither offered nor run: one line, at once.
  const auto help = run_in(copy, {cli, "--help"});
  CHECK(help.ok());
  CHECK(help.output.find("  check") != std::string::npos);
  CHECK(help.output.find("  grade") == std::string::npos);
  CHECK(help.output.find("  release") == std::string::npos);
  const auto graded = run_in(copy, {cli, "grade", "chapters"});
  CHECK(graded.exit_code == 2);
  CHECK(graded.output == "cdplab: 'grade' is an instructor's command, for the project with its solutions/; this "
                         "student copy has none (your own work: cdplab check)\n");

  // The copy describes itself: no solutions/ in its README, and `starters` compares with the
  // starters as released.
  const std::string readme = cdplab::files::read_text(copy / "README.md");
  CHECK(readme.find("solutions/") == std::string::npos);
  CHECK(readme.find("start at the first exercise not done") != std::string::npos);
  std::ofstream(starter, std::ios::app) << "\n// more of my work\n";
  const auto starters = run_in(copy, {cli, "starters"});
  INFO(starters.output);
  CHECK(starters.ok());
  CHECK(starters.output.find("student release") != std::string::npos);
  CHECK(starters.output.find("chapters/01-fundamentals/child_grids.cu: your work") != std::string::npos);
  CHECK(starters.output.find("matches its solution") == std::string::npos);
  CHECK(run_in(copy, {cli, "starters", "--write"}).exit_code == 2);

  // cdplab watch: checks the exercise at once, again when its file is saved, and leaves cleanly
  // on Ctrl-C (SIGINT). Without a GPU the rules are what each check can judge.
  const std::string watch_script = R"sh(
    log=watch.log
    "$1" watch child-grids > "$log" 2>&1 &
    pid=$!
    wait_for() {  # wait_for COUNT TEXT: until TEXT is in the log COUNT times (or 600 s)
      for _ in $(seq 600); do
        # The status line wraps at 100 columns: the log is read as one line.
        [ "$(tr '\n' ' ' < "$log" | tr -s ' ' | grep -o -- "$2" | wc -l)" -ge "$1" ] && return 0
        kill -0 $pid 2>/dev/null || return 1
        sleep 1
      done
      return 1
    }
    wait_for 1 "save chapters/01-fundamentals/child_grids.cu" || { echo "no first check"; cat "$log"; exit 1; }
    echo "// saved" >> chapters/01-fundamentals/child_grids.cu
    wait_for 2 "save chapters/01-fundamentals/child_grids.cu" || { echo "no check after the save"; cat "$log"; exit 1; }
    # The build folder broken while watch runs (its build.ninja gone): the check names the folder
    # and blames no exercise.
    mv build/student/build.ninja build/student/build.ninja.kept
    echo "// saved again" >> chapters/01-fundamentals/child_grids.cu
    wait_for 1 "went away during the check" || { mv build/student/build.ninja.kept build/student/build.ninja; echo "no word of the build folder"; cat "$log"; exit 1; }
    mv build/student/build.ninja.kept build/student/build.ninja
    kill -INT $pid
    wait $pid
    status=$?
    cat "$log"
    echo "watch exit status $status"
  )sh";
  const auto watched = run_in(copy, {"bash", "-c", watch_script, "watch-test", cli});
  INFO(watched.output);
  CHECK(watched.ok());
  const auto count = [&](const std::string& text) {
    std::size_t n = 0;
    for (auto at = watched.output.find(text); at != std::string::npos; at = watched.output.find(text, at + 1)) ++n;
    return n;
  };
  CHECK(count("watch: checking child-grids (01-fundamentals/child_grids.cu)") == 3);
  CHECK(count("went away during the check") == 1);
  CHECK(count("does not compile") == 0);
  CHECK(count("launches expand_child") >= 2);  // a rule, judged in each check
  CHECK(watched.output.find("watch: stopped") != std::string::npos);
  CHECK(watched.output.find("watch exit status 0") != std::string::npos);

  // Without a GPU and without a remote, an exercise whose rules pass awaits its GPU checks: the
  // loop moves on, check says the grade is incomplete (status 3) and how to reach a GPU. The
  // course's file came with the release. (CUDA_VISIBLE_DEVICES= hides a GPU where there is one.)
  CHECK(fs::exists(copy / "course.toml"));
  fs::copy_file(kRoot / "solutions" / "01-fundamentals" / "child_grids.cu", starter,
                fs::copy_options::overwrite_existing);
  cdplab::process::Options hidden;
  hidden.working_directory = copy.string();
  hidden.timeout_seconds = 900;
  hidden.env = {{"CUDA_VISIBLE_DEVICES", ""}, {"CDPLAB_REMOTE", ""}};
  const auto pending = cdplab::process::run({cli, "check", "child-grids"}, hidden);
  INFO(pending.output);
  CHECK(pending.exit_code == 3);
  CHECK(pending.output.find("To run them on your course's GPUs") != std::string::npos);
  CHECK(pending.output.find("checking on") == std::string::npos);  // no remote: it stayed here
  const auto after = cdplab::process::run({cli, "list"}, hidden);
  INFO(after.output);
  CHECK(after.output.find("rules pass; GPU checks pending") != std::string::npos);
  CHECK(after.output.find("next: Three dependent children") != std::string::npos);
  const auto next = cdplab::process::run({cli}, hidden);
  CHECK(next.output.find("the first exercise not done is tail-continuation") != std::string::npos);
  fs::copy_file(copy / cdplab::release::kOriginals / "01-fundamentals" / "child_grids.cu", starter,
                fs::copy_options::overwrite_existing);

  // The documentation builds while an exercise does not compile: a student halfway through one
  // can still read the lessons. (Only where this build has Doxygen: the copy's docs target then
  // exists.)
  std::ofstream(starter, std::ios::app) << "\nthis line is not C++ {\n";
  const auto docs = run_in(copy, {"cmake", "--build", "build/student", "--target", "docs"}, 1200);
  if (docs.output.find("unknown target 'docs'") != std::string::npos) {
    MESSAGE("this build has no Doxygen: the docs of a broken exercise were not built");
  } else {
    INFO(docs.output);
    CHECK(docs.ok());
    const std::string figures = cdplab::files::read_text(copy / "build" / "student" / "docs" / "figures" / "figures.md");
    CHECK(figures.find("`child_grids.cu`: no launch graph") != std::string::npos);
    CHECK(fs::exists(copy / "build" / "student" / "docs" / "html" / "index.html"));
    // The lesson shows the expected launch graph beside a picture that says why this build has none.
    const fs::path html = copy / "build" / "student" / "docs" / "html";
    CHECK(cdplab::files::read_text(html / "ch01.html").find("expected-01-fundamentals-child_grids.svg") !=
          std::string::npos);
    CHECK(cdplab::files::read_text(html / "expected-01-fundamentals-child_grids.svg").find("expand_child") !=
          std::string::npos);
    CHECK(cdplab::files::read_text(html / "launch-graph-01-fundamentals-child_grids.svg").find("no launch graph") !=
          std::string::npos);
  }

  // A chapter folder moved away is named, not left out of the list in silence.
  fs::rename(copy / "chapters" / "05-streams-and-pools", work / "05-streams-and-pools");
  const auto short_list = run_in(copy, {cli, "list"});
  INFO(short_list.output);
  CHECK(short_list.output.find("chapter 05-streams-and-pools is missing") != std::string::npos);
  CHECK(short_list.output.find("git checkout -- chapters/05-streams-and-pools") != std::string::npos);
}

// A student who finishes every exercise in a release must be able to see it: every point,
// every exercise done, exit status 0. The speed checks compare with baselines that ship with the
// grader, so nothing of solutions/ is needed; the reference answers stand in for the student's.
TEST_CASE("cdplab release writes a copy where the reference answers earn every point") {
  if (!cdplab::testing::gpu_present()) {
    MESSAGE("CDPLAB_TEST_SKIPPED: no GPU: a release earns its GPU checks' points on a GPU only");
    return;
  }
  const fs::path copy = make_release_copy("release-answered");
  const fs::path work = copy.parent_path();
  const std::string cli = build_release_cli(copy);
  for (const auto& entry : fs::recursive_directory_iterator(kRoot / "solutions")) {
    if (!entry.is_regular_file()) continue;
    const fs::path relative = fs::relative(entry.path(), kRoot / "solutions");
    fs::copy_file(entry.path(), copy / "chapters" / relative, fs::copy_options::overwrite_existing);
  }
  const fs::path report = work / "check.json";
  const auto checked = run_in(copy, {cli, "check", "--format", "json", "--output", report.string()}, 1800);
  INFO(checked.output);
  CHECK(checked.exit_code == 0);
  REQUIRE(fs::exists(report));
  const auto json = nlohmann::json::parse(cdplab::files::read_text(report));
  double points = 0;
  double max_points = 0;
  std::string lost;
  for (const auto& exercise : json.at("exercises")) {
    for (const auto& item : exercise.at("items")) {
      points += item.at("points").get<double>();
      max_points += item.at("max_points").get<double>();
      if (item.at("points").get<double>() < item.at("max_points").get<double>())
        lost += exercise.at("id").get<std::string>() + ": " + item.at("name").get<std::string>() + "\n";
    }
  }
  MESSAGE("cdplab check in the release:\n" << checked.output);
  INFO("items that lost points:\n" << lost);
  CHECK(max_points > 0);
  CHECK(points == max_points);
  const auto listed = run_in(copy, {cli, "list"});
  MESSAGE("cdplab list in the release:\n" << listed.output);
  CHECK(listed.ok());
  CHECK(listed.output.find("in progress") == std::string::npos);
  CHECK(listed.output.find("not started") == std::string::npos);
  CHECK(listed.output.find("done") != std::string::npos);
}

TEST_CASE("the starter kit includes nothing of the grader") {
  // The kit is what a student's code and the grader share; it stands on its own and never
  // reaches into the grader's folders (what both need lives in the kit).
  const fs::path starter = kRoot / "starter";
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(starter)) {
    if (!entry.is_regular_file()) continue;
    ++files;
    const std::string text = cdplab::files::read_text(entry.path());
    INFO(entry.path().string());
    CHECK(text.find("#include \"../../grader/") == std::string::npos);
    CHECK(text.find("grader/suites/") == std::string::npos);
  }
  CHECK(files > 10);
}
