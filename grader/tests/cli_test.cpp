// End to end: the cdplab command line grading real folders. With a GPU the solutions score
// 100 %; without one the rules still pass and the grade is reported incomplete (exit 3).
#include "files/file_lock.h"
#include "files/files.h"
#include "grading/build_tree.h"
#include "manifest/manifest.h"
#include "process/process.h"
#include "report/report.h"
#include "report/text.h"
#include "rules/rule.h"
#include "starters/given_code.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using cdplab::grading::GradeReport;
using cdplab::grading::ItemKind;
using cdplab::grading::Outcome;

namespace {

const fs::path kRoot = CDPLAB_SOURCE_DIR;
const fs::path kWork = fs::path(CDPLAB_TEST_BINARY_DIR) / "cli";

cdplab::process::Result cdplab_cli(std::vector<std::string> args) {
  args.insert(args.begin(), CDPLAB_CLI);
  cdplab::process::Options options;
  options.timeout_seconds = 840;
  return cdplab::process::run(args, options);
}

/// Grades `folder` (only `exercises`) into JSON and reads the report back.
GradeReport grade(const fs::path& folder, const std::string& name, const std::vector<std::string>& exercises,
                  int expected_exit) {
  const fs::path json = kWork / (name + ".json");
  fs::remove(json);
  // The build folder given with a trailing slash, as a shell completes it: its lock lies beside it.
  std::vector<std::string> args = {"grade", folder.string(), "--quiet", "--format", "json", "--output", json.string(),
                                   "--build-dir", (kWork / ("build-" + name)).string() + "/"};
  if (!exercises.empty()) {
    args.push_back("--only");
    args.insert(args.end(), exercises.begin(), exercises.end());
  }
  const auto result = cdplab_cli(args);
  INFO(result.output);
  REQUIRE(result.started);
  std::ifstream in(json);
  REQUIRE_MESSAGE(in, "no JSON report from cdplab grade (", result.describe(), ")");
  const auto report = cdplab::report::from_json(nlohmann::json::parse(in));
  // The exit status follows the report: 1 when an item failed for certain (a rule, say), even
  // if GPU checks were skipped; else 3 when some were.
  const int expected = report.complete() || report.has_failure() ? expected_exit : 3;
  CHECK(result.exit_code == expected);
  CHECK(fs::exists(kWork / ("build-" + name + ".lock")));  // one grading at a time in this tree
  return report;
}

bool has_gpu(const GradeReport& report) { return !report.device.empty(); }

/// A submission folder made from some of the solutions of chapter 01.
fs::path make_submission(const std::string& name, const std::vector<std::string>& files) {
  const fs::path dir = kWork / name;
  fs::remove_all(dir);
  fs::create_directories(dir / "01-fundamentals");
  for (const auto& f : files) fs::copy_file(kRoot / "solutions/01-fundamentals" / f, dir / "01-fundamentals" / f);
  return dir;
}

const cdplab::grading::ExerciseResult& exercise(const GradeReport& report, const std::string& id) {
  for (const auto& e : report.exercises)
    if (e.id == id) return e;
  FAIL("no exercise " << id << " in the report");
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("grade the solutions") {
  const auto report = grade(kRoot / "solutions", "solutions", {}, 0);
  REQUIRE(report.exercises.size() >= 4);
  CHECK(report.max_points() > 0);
  for (const auto& e : report.exercises) {
    INFO(e.file, ": ", e.problem, "\n", e.build_log);
    CHECK(e.problem.empty());
    for (const auto& item : e.items) {
      INFO(item.name, ": ", item.feedback);
      if (item.kind != ItemKind::check || has_gpu(report)) {  // rules and quiz answers need no GPU
        CHECK(item.outcome == Outcome::passed);
      } else {
        CHECK(item.outcome == Outcome::skipped);
        CHECK(item.feedback.find("no usable CUDA GPU") != std::string::npos);
        // A machine without the NVIDIA driver is told so, not sent to upgrade a driver it lacks.
        if (!fs::exists("/proc/driver/nvidia/version")) {
          CHECK(item.feedback.find("no NVIDIA GPU was found") != std::string::npos);
          CHECK(item.feedback.find("insufficient") == std::string::npos);
        }
      }
    }
  }
  if (has_gpu(report)) CHECK(report.points() == doctest::Approx(report.max_points()));
  else CHECK_FALSE(report.gpu_problem.empty());
  // Where the time went: the phases that ran, each once, adding up to no more than the run.
  std::map<std::string, double> phases;
  double phase_sum = 0;
  for (const auto& [name, seconds] : report.phases) {
    CHECK(phases.count(name) == 0);
    CHECK(seconds >= 0);
    phases[name] = seconds;
    phase_sum += seconds;
  }
  for (const char* name : {"building", "rules", "checks beside others", "checks with the GPU alone",
                           "checks under memcheck"}) {
    INFO(name);
    CHECK(phases.count(name) == 1);
  }
  CHECK(phase_sum <= report.seconds + 0.01);

  // The processes that wrote child-grids' records: its checks pass (or are skipped, without a
  // GPU) in one shared process; with --process-per-check each has its own.
  std::size_t child_grids_checks = 0;
  for (const auto& e : report.exercises)
    if (e.id == "child-grids")
      for (const auto& item : e.items) child_grids_checks += item.kind == ItemKind::check ? 1 : 0;
  CHECK(child_grids_checks >= 5);
  const auto processes = [] {
    std::set<std::string> pids;
    std::ifstream log(kWork / "build-solutions-results" / "01-fundamentals.child_grids.jsonl");
    for (std::string line; std::getline(log, line);) pids.insert(nlohmann::json::parse(line).value("process", ""));
    return pids.size();
  };
  CHECK(processes() == 1);
  const auto alone = cdplab_cli({"grade", (kRoot / "solutions").string(), "--quiet", "--only", "child-grids",
                                 "--build-dir", (kWork / "build-solutions").string(), "--process-per-check"});
  INFO(alone.output);
  CHECK((alone.exit_code == 0 || alone.exit_code == 3));
  CHECK(processes() == child_grids_checks);

  // The terminal report counts what passed; --verbose lists it, with what it measured.
  const std::vector<std::string> again = {"grade", (kRoot / "solutions").string(), "--quiet", "--only", "child-grids",
                                          "--build-dir", (kWork / "build-solutions").string()};
  const auto brief = cdplab_cli(again);
  CHECK(brief.output.find("passed items not shown") != std::string::npos);
  CHECK(brief.output.find("[pass] rule:") == std::string::npos);
  auto verbose_args = again;
  verbose_args.push_back("--verbose");
  const auto verbose = cdplab_cli(verbose_args);
  CHECK(verbose.output.find("[pass] rule: expand_parent launches expand_child") != std::string::npos);
  CHECK(verbose.output.find("passed items not shown") == std::string::npos);
}

// After a student is graded, work/ keeps the copy of the submission's files and nothing of its
// build (hundreds of MB a student otherwise); --keep-work keeps the build tree.
TEST_CASE("grade a class keeps a small work folder unless --keep-work") {
  make_submission("small-class/alice", {"child_grids.cu"});
  const fs::path out = kWork / "small-class-grades";
  fs::remove_all(out);
  const auto folder_bytes = [](const fs::path& dir) {
    std::uintmax_t bytes = 0;
    for (const auto& entry : fs::recursive_directory_iterator(dir))
      if (entry.is_regular_file()) bytes += entry.file_size();
    return bytes;
  };
  const auto graded = cdplab_cli({"grade", (kWork / "small-class").string(), "--only", "child-grids", "--out",
                                  out.string()});
  INFO(graded.output);
  REQUIRE(fs::exists(out / "students" / "alice" / "result.json"));
  std::vector<std::string> kept;
  for (const auto& entry : fs::directory_iterator(out / "work" / "alice")) kept.push_back(entry.path().filename().string());
  CHECK(kept.size() == 1);
  CHECK(fs::exists(out / "work" / "alice" / kept.front() / "01-fundamentals" / "child_grids.cu"));
  CHECK(folder_bytes(out / "work" / "alice") < 1024 * 1024);

  const auto kept_work = cdplab_cli({"grade", (kWork / "small-class").string(), "--only", "child-grids", "--out",
                                     out.string(), "--force", "--keep-work"});
  INFO(kept_work.output);
  CHECK(fs::exists(out / "work" / "alice" / "build" / "CMakeCache.txt"));
}

TEST_CASE("grade the starters") {
  const auto report = grade(kRoot / "chapters", "starters", {}, 1);
  CHECK(report.points() == 0);
  const auto book = cdplab::manifest::load_workbook(kRoot);
  for (const auto& e : report.exercises) {
    INFO(e.file, ": ", e.problem, "\n", e.build_log);
    CHECK(e.problem.empty());  // starters compile
    // The rules that only deduct, by the names their items carry.
    std::set<std::string> deducting;
    if (const auto* spec = book.find_exercise(e.id))
      for (const auto& rule : spec->rules)
        if (cdplab::rules::deducts(rule)) deducting.insert(cdplab::rules::describe(rule));
    for (const auto& item : e.items) {
      INFO(item.name, ": ", item.feedback);
      if (item.name == "finished: no CDPLAB_TODO() left") {
        // A starter with a TODO left is never finished, with or without a GPU; a fix-the-bug
        // starter holds none.
        const bool todo = !cdplab::starters::todo_lines(cdplab::files::read_text(kRoot / "chapters" / e.file)).empty();
        CHECK(item.outcome == (todo ? Outcome::failed : Outcome::passed));
        if (todo) CHECK(item.feedback.find("not finished: the file still calls CDPLAB_TODO() at line") != std::string::npos);
      } else if (item.kind == ItemKind::rule && deducting.count(item.name) > 0) {
        // A rule that only deducts (code the starter hands out, arrays kept in bounds): met, worth nothing.
        CHECK(item.outcome == Outcome::passed);
        CHECK(item.points == 0);
      } else if (item.kind != ItemKind::check) {  // rules and quiz answers need no GPU
        CHECK(item.outcome == Outcome::failed);
      } else if (has_gpu(report)) {
        // Cleanly: with a message (a TODO reached, or the explained fault of a fix-the-bug starter),
        // never a hang or a crash of the test program.
        CHECK(item.outcome == Outcome::failed);
        CHECK_FALSE(item.feedback.empty());
        CHECK(item.feedback.find("stopped after") == std::string::npos);
        CHECK(item.feedback.find("crashed") == std::string::npos);
      } else {
        CHECK(item.outcome == Outcome::skipped);
      }
    }
  }
}

TEST_CASE("grade a submission with a compile error") {
  const auto dir = make_submission("compile-error", {"child_grids.cu", "shared_histogram.cu"});
  std::ofstream(dir / "01-fundamentals/child_grids.cu", std::ios::app) << "\nthis line is not C++;\n";
  const auto report = grade(dir, "compile-error", {"child-grids", "shared-histogram"}, 1);
  REQUIRE(report.exercises.size() == 2);
  const auto& broken = exercise(report, "child-grids");
  CHECK(broken.problem.find("does not compile") != std::string::npos);
  CHECK(broken.build_log.find("error") != std::string::npos);
  CHECK(broken.points() == 0);
  for (const auto& item : broken.items) CHECK(item.outcome == Outcome::failed);
  // The other exercise is graded as usual.
  const auto& fine = exercise(report, "shared-histogram");
  CHECK(fine.problem.empty());
  for (const auto& item : fine.items)
    if (item.kind == ItemKind::rule) CHECK(item.outcome == Outcome::passed);
}

TEST_CASE("grade a submission with a missing file") {
  const auto dir = make_submission("missing-file", {"shared_histogram.cu"});
  const auto report = grade(dir, "missing-file", {"child-grids", "shared-histogram"}, 1);
  const auto& missing = exercise(report, "child-grids");
  CHECK(missing.problem.find("file missing") != std::string::npos);
  CHECK(missing.problem.find("child_grids.cu") != std::string::npos);
  // Named inside the submission: the grader's own folders are no business of the student's.
  CHECK(missing.problem.find("01-fundamentals/child_grids.cu") != std::string::npos);
  CHECK(missing.problem.find(dir.string()) == std::string::npos);
  CHECK(missing.problem.find(kWork.string()) == std::string::npos);
  CHECK(missing.points() == 0);
  CHECK(missing.max_points() > 0);
  const auto& fine = exercise(report, "shared-histogram");
  CHECK(fine.problem.empty());
}

TEST_CASE("grade reports a device-side cudaDeviceSynchronize in CDP2 terms") {
  const auto dir = make_submission("device-sync", {"shared_histogram.cu"});
  std::ofstream(dir / "01-fundamentals/shared_histogram.cu", std::ios::app)
      << "\n__global__ void waits_for_children() { cudaDeviceSynchronize(); }\n";
  const auto report = grade(dir, "device-sync", {"shared-histogram"}, 1);
  const auto& e = exercise(report, "shared-histogram");
  CHECK(e.problem.find("does not compile") != std::string::npos);
  CHECK(e.build_log.find("cudaStreamTailLaunch") != std::string::npos);
}

TEST_CASE("cdplab refuses bad arguments with status 2 and a message") {
  const auto no_folder = cdplab_cli({"grade", (kWork / "no-such-folder").string()});
  CHECK(no_folder.exit_code == 2);
  CHECK(no_folder.output.find("no folder") != std::string::npos);
  fs::create_directories(kWork / "empty-submission");
  const auto empty = cdplab_cli({"grade", (kWork / "empty-submission").string()});
  CHECK(empty.exit_code == 2);
  CHECK(empty.output.find("holds no chapter folder") != std::string::npos);
  const auto unknown = cdplab_cli({"hint", "no-such-exercise"});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.output.find("child-grids") != std::string::npos);  // lists what exists
  for (const char* limit : {"soon", "0", "-5", "30s", "99999"}) {  // a check's time limit from the environment
    INFO(limit);
    cdplab::process::Options options;
    options.timeout_seconds = 120;
    options.env["CDPLAB_CHECK_SECONDS"] = limit;
    const auto bad_limit = cdplab::process::run({CDPLAB_CLI, "grade", (kRoot / "solutions").string(), "--quiet"}, options);
    CHECK(bad_limit.exit_code == 2);
    CHECK(bad_limit.output.find(std::string("CDPLAB_CHECK_SECONDS is '") + limit + "'") != std::string::npos);
  }
  const auto frobnicate = cdplab_cli({"frobnicate"});
  CHECK(frobnicate.exit_code == 2);
  CHECK(frobnicate.output.find("'frobnicate' is not a command") != std::string::npos);
  CHECK(frobnicate.output.find("did you mean") == std::string::npos);  // nothing near it
  const auto slip = cdplab_cli({"chek"});
  CHECK(slip.exit_code == 2);
  CHECK(slip.output.find("did you mean 'check'?") != std::string::npos);
  const auto near = cdplab_cli({"hint", "child-grid"});
  CHECK(near.exit_code == 2);
  CHECK(near.output.find("did you mean 'child-grids'?") != std::string::npos);
  // A chapter where an exercise is meant: its exercises, never the name just typed as a guess.
  const auto chapter = cdplab_cli({"hint", "01-fundamentals"});
  CHECK(chapter.exit_code == 2);
  CHECK(chapter.output.find("'01-fundamentals' is a chapter") != std::string::npos);
  CHECK(chapter.output.find("child-grids") != std::string::npos);
  CHECK(chapter.output.find("did you mean '01-fundamentals'") == std::string::npos);

  // A class asking for more GPUs than it was given stops before building anything.
  make_submission("gpus-class/alice", {"child_grids.cu"});
  const std::vector<std::string> too_many = {CDPLAB_CLI, "grade", (kWork / "gpus-class").string(), "--out",
                                             (kWork / "gpus-class-grades").string(), "--gpus", "3"};
  cdplab::process::Options given_two;
  given_two.timeout_seconds = 60;
  given_two.env["CUDA_VISIBLE_DEVICES"] = "0,1";
  const auto refused = cdplab::process::run(too_many, given_two);
  CHECK(refused.exit_code == 2);
  CHECK(refused.output.find("CUDA_VISIBLE_DEVICES=\"0,1\" lists (2)") != std::string::npos);
  CHECK_FALSE(fs::exists(kWork / "gpus-class-grades" / "work"));
}

TEST_CASE("cdplab hint shows hints one at a time") {
  const auto all = cdplab_cli({"hint", "child-grids", "--all"});
  CHECK(all.exit_code == 0);
  CHECK(all.output.find("hint 1 of") != std::string::npos);
  CHECK(all.output.find("Course material") != std::string::npos);
  // Every hint seen: the next call shows them again and says that no other is left.
  const auto again = cdplab_cli({"hint", "child-grids"});
  CHECK(again.output.find("that was the last of the 3 hints") != std::string::npos);
}

// Text for a terminal wraps to its width: 100 columns when the output is no terminal (here, a
// pipe), COLUMNS when set; a description goes on under its column, no word is split.
TEST_CASE("cdplab wraps --help, hint and rules to the width, never splitting a word") {
  const auto widest = [](const std::string& text) {
    std::size_t most = 0;
    for (const auto& line : cdplab::report::text::split_lines(text))
      most = std::max(most, cdplab::report::text::display_width(line));
    return most;
  };
  const auto with_columns = [](std::vector<std::string> args, const std::string& columns) {
    args.insert(args.begin(), CDPLAB_CLI);
    cdplab::process::Options options;
    options.timeout_seconds = 120;
    if (!columns.empty()) options.env["COLUMNS"] = columns;
    return cdplab::process::run(args, options);
  };
  const auto help = with_columns({"grade", "--help"}, "");
  REQUIRE(help.ok());
  CHECK(widest(help.output) <= 100);
  CHECK(widest(help.output) > 80);  // it fills the width it has
  CHECK(help.output.find("\n                              ") != std::string::npos);  // continued under the column
  const auto narrow = with_columns({"grade", "--help"}, "80");
  CHECK(widest(narrow.output) <= 80);
  // The same words in the same order, only the line breaks moved.
  const auto words = [](const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> out;
    for (std::string word; in >> word;) out.push_back(word);
    return out;
  };
  CHECK(words(narrow.output) == words(help.output));
  const auto hint = with_columns({"hint", "child-grids", "--all"}, "60");
  CHECK(hint.ok());
  CHECK(widest(hint.output) <= 60);
  const auto rules = with_columns({"rules", (kRoot / "chapters/01-fundamentals/child_grids.cu").string()}, "70");
  INFO(rules.output);
  CHECK(widest(rules.output) <= 70);
}

TEST_CASE("cdplab starters agrees with the committed starters") {
  const auto result = cdplab_cli({"starters"});
  INFO(result.output);
  CHECK(result.exit_code == 0);
}

// The ./cdplab wrapper, with a stand-in for cmake and for the tool: a run with nothing to rebuild
// prints nothing of the build tool's; a failed build shows its words and exits 2.
TEST_CASE("./cdplab stays quiet when the tool is up to date, and shows a failed build") {
  const fs::path dir = kWork / "wrapper";
  fs::remove_all(dir);
  fs::create_directories(dir / "bin");
  fs::create_directories(dir / "build" / "student" / "grader" / "cli");
  fs::copy_file(kRoot / "cdplab", dir / "cdplab");
  std::ofstream(dir / "build" / "student" / "CMakeCache.txt") << "";
  std::ofstream(dir / "build" / "student" / "build.ninja") << "";
  const auto script = [](const fs::path& file, const std::string& body) {
    std::ofstream(file) << "#!/bin/sh\n" << body;
    fs::permissions(file, fs::perms::owner_all, fs::perm_options::add);
  };
  script(dir / "build" / "student" / "grader" / "cli" / "cdplab", "echo \"the tool ran: $*\"\n");
  script(dir / "bin" / "cmake", "echo '[0/2] Re-checking globbed directories...'\necho 'ninja: no work to do.'\n");
  cdplab::process::Options options;
  options.env["PATH"] = (dir / "bin").string() + ":/usr/bin:/bin";
  const auto quiet = cdplab::process::run({(dir / "cdplab").string(), "list"}, options);
  INFO(quiet.output);
  CHECK(quiet.exit_code == 0);
  CHECK(quiet.output == "the tool ran: list\n");

  script(dir / "bin" / "cmake", "echo 'error: the compiler said no'\nexit 1\n");
  const auto failed = cdplab::process::run({(dir / "cdplab").string(), "list"}, options);
  INFO(failed.output);
  CHECK(failed.exit_code == 2);
  CHECK(failed.output.find("error: the compiler said no") != std::string::npos);
  CHECK(failed.output.find("building the tool failed") != std::string::npos);
  CHECK(failed.output.find("the tool ran") == std::string::npos);

  // A first run (no tool yet): the build's own lines as they come, and the time it took.
  fs::remove(dir / "build" / "student" / "grader" / "cli" / "cdplab");
  script(dir / "bin" / "cmake",
         "if [ ! -x tool-made ]; then echo '[1/2] Building CXX object main.cpp.o'; echo '[2/2] Linking CXX executable cdplab'\n"
         "  printf '#!/bin/sh\\necho \"the tool ran: $*\"\\n' > build/student/grader/cli/cdplab\n"
         "  chmod +x build/student/grader/cli/cdplab; touch tool-made; fi\n");
  options.working_directory = dir.string();
  const auto first = cdplab::process::run({(dir / "cdplab").string(), "list"}, options);
  INFO(first.output);
  CHECK(first.exit_code == 0);
  CHECK(first.output.find("cdplab: building the tool (first run") != std::string::npos);
  CHECK(first.output.find("[1/2] Building CXX object main.cpp.o") != std::string::npos);
  CHECK(first.output.find("cdplab: the tool is built (") != std::string::npos);
  CHECK(first.output.find("the tool ran: list") != std::string::npos);

  // A first configure that failed left CMakeCache.txt without build.ninja: the next run configures
  // again rather than failing every build on "loading 'build.ninja'".
  fs::remove(dir / "build" / "student" / "build.ninja");
  script(dir / "bin" / "cmake",
         "if [ \"$1\" = --preset ]; then echo configured; touch build/student/build.ninja; exit 0; fi\n"
         "[ -f build/student/build.ninja ] || { echo \"ninja: error: loading 'build.ninja'\"; exit 1; }\n");
  const auto again = cdplab::process::run({(dir / "cdplab").string(), "list"}, options);
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(again.output.find("configuring " + (dir / "build" / "student").string() + " again") != std::string::npos);
  CHECK(again.output.find("loading 'build.ninja'") == std::string::npos);
  CHECK(again.output.find("the tool ran: list") != std::string::npos);
}

// Two checks of one project at once (a watch in one terminal, a check in another) would build in
// one tree and write one results file, each reading the other's lines as forged: the second waits
// for the first, and says so.
TEST_CASE("a second cdplab check in the same project waits for the first, and says so") {
  const fs::path lock_file = fs::path(CDPLAB_BINARY_DIR) / "cdplab-check.lock";
  {
    const auto first = cdplab::files::wait_for_any({lock_file}, [] { return false; }, {});
    REQUIRE(first.held());
    cdplab::process::Options options;
    options.timeout_seconds = 5;
    const auto second = cdplab::process::run({CDPLAB_CLI, "check", "streams-quiz"}, options);
    INFO(second.output);
    CHECK(second.timed_out);
    CHECK(second.output.find("another cdplab check or watch is running in this project; this one waits for it") !=
          std::string::npos);
  }
  const auto after = cdplab_cli({"check", "streams-quiz"});
  INFO(after.output);
  CHECK(after.started);
  CHECK_FALSE(after.timed_out);
  CHECK(after.output.find("05-streams-and-pools/quiz.toml") != std::string::npos);
}

// A build folder without its cache or its build.ninja (deleted, or a configure that did not finish)
// is named as the problem, never the exercises that could not build in it.
TEST_CASE("a missing or half-configured build folder is named, not blamed on the exercises") {
  const fs::path dir = kWork / "broken-build";
  fs::remove_all(dir);
  CHECK(cdplab::grading::build_tree_problem(dir).find("is missing") != std::string::npos);
  fs::create_directories(dir);
  CHECK(cdplab::grading::build_tree_problem(dir).find("no CMakeCache.txt") != std::string::npos);
  std::ofstream(dir / "CMakeCache.txt") << "";
  CHECK(cdplab::grading::build_tree_problem(dir).find("no build.ninja") != std::string::npos);
  std::ofstream(dir / "build.ninja") << "";
  CHECK(cdplab::grading::build_tree_problem(dir).empty());
}

// The first hour's snags: --help names the command as typed, list's columns line up, a name is
// found from a part of it or from the path a shell completes.
TEST_CASE("cdplab --help says cdplab, list lines up, and check takes paths and suggests chapters") {
  const auto help = cdplab_cli({"--help"});
  CHECK(help.ok());
  CHECK(help.output.find("Usage: cdplab ") != std::string::npos);
  CHECK(help.output.find(CDPLAB_CLI) == std::string::npos);

  const auto list = cdplab_cli({"list"});
  REQUIRE(list.ok());
  std::set<std::size_t> file_columns, status_columns;
  for (const auto& line : cdplab::report::text::split_lines(list.output)) {
    for (const auto& file : {"aggregated_tessellation.cu", "child_grids.cu", "quiz.toml"}) {
      const auto at = line.find(std::string(" ") + file + " ");
      if (line.rfind("  ", 0) != 0 || at == std::string::npos) continue;
      file_columns.insert(at + 1);
      status_columns.insert(line.find_first_not_of(' ', at + 1 + std::string(file).size()));
    }
  }
  CHECK(file_columns.size() == 1);  // every file name starts in one column, the longest id's too
  CHECK(status_columns.size() == 1);  // and every status

  const auto suggested = cdplab_cli({"check", "fundamentals"});
  CHECK(suggested.exit_code == 2);
  CHECK(suggested.output.find("did you mean '01-fundamentals'?") != std::string::npos);

  // A path from the project's top (tab-completed), from the current folder, or absolute.
  const auto by_path = cdplab_cli({"hint", "chapters/01-fundamentals/child_grids.cu"});
  CHECK(by_path.ok());
  CHECK(by_path.output.find("01-fundamentals/child_grids.cu") != std::string::npos);
  cdplab::process::Options in_chapter;
  in_chapter.working_directory = (kRoot / "chapters/01-fundamentals").string();
  in_chapter.timeout_seconds = 120;
  const auto relative = cdplab::process::run({CDPLAB_CLI, "hint", "./tail_continuation.cu"}, in_chapter);
  CHECK(relative.ok());
  CHECK(relative.output.find("01-fundamentals/tail_continuation.cu") != std::string::npos);
  const auto absolute = cdplab_cli({"hint", (kRoot / "chapters/01-fundamentals/shared_histogram.cu").string()});
  CHECK(absolute.ok());
  CHECK(absolute.output.find("01-fundamentals/shared_histogram.cu") != std::string::npos);
  const fs::path json = kWork / "check-by-path.json";
  fs::remove(json);
  const auto checked = cdplab_cli({"check", "chapters/01-fundamentals/child_grids.cu", "./chapters/02-bezier/", "--quiet",
                                   "--format", "json", "--output", json.string()});
  INFO(checked.output);
  CHECK(checked.exit_code != 2);
  std::ifstream in(json);
  REQUIRE(in);
  const auto report = cdplab::report::from_json(nlohmann::json::parse(in));
  REQUIRE(report.exercises.size() == 5);  // child-grids and chapter 02's four
  CHECK(report.exercises.front().id == "child-grids");
  CHECK(report.exercises.back().chapter == "02-bezier");
}

// Every line the tool prints fits 100 columns when COLUMNS is unset and the output is a pipe (a
// CI log, `| less`): the help of every command and what the commands that run on the CPU print.
TEST_CASE("every line cdplab prints fits 100 columns without a terminal") {
  const auto without_columns = [](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"env", "-u", "COLUMNS", CDPLAB_CLI};
    argv.insert(argv.end(), args.begin(), args.end());
    cdplab::process::Options options;
    options.timeout_seconds = 600;
    return cdplab::process::run(argv, options);
  };
  std::vector<std::vector<std::string>> runs = {
      {"--help"},
      {"list"},
      {"check", "child-grids"},
      {"check", "01-fundamentals"},
      {"check", "streams-quiz"},
      {"check", "fundamentals"},
      {"hint", "child-grids"},
      {"hint", "child-grids", "--all"},
      {"hint", "01-fundamentals"},
      {"rules", (kRoot / "chapters/01-fundamentals/child_grids.cu").string()},
      {"rules", (kRoot / "chapters/02-bezier/cdp_tessellation.cu").string()},
      {"starters"},
      {"frobnicate"},
      {},
  };
  for (const auto* command : {"list", "check", "watch", "grade", "hint", "reset", "rules", "run", "bench", "probe",
                              "release", "starters", "serve", "gradescope", "remote-check"})
    runs.push_back({command, "--help"});
  for (const auto& args : runs) {
    const auto ran = without_columns(args);
    std::string command = "cdplab";
    for (const auto& a : args) command += " " + a;
    INFO(command);
    CHECK(ran.started);
    for (const auto& line : cdplab::report::text::split_lines(ran.output)) {
      INFO(line);
      CHECK(cdplab::report::text::display_width(line) <= 100);
    }
  }
}

// pools' and concurrency's checks need the GPU alone: their processes start ahead and wait at a
// start gate, made in the grader's scratch folder beside the student's own build tree too.
TEST_CASE("cdplab check runs the checks that need the GPU alone, behind their start gates") {
  const auto ran = cdplab_cli({"check", "pools", "concurrency", "--quiet"});
  INFO(ran.output);
  CHECK(ran.exit_code != 2);
  CHECK(ran.output.find("filesystem error") == std::string::npos);  // no gate without its folder
  CHECK(ran.output.find("points: ") != std::string::npos);
  CHECK(ran.output.find("pools.cu") != std::string::npos);
}

TEST_CASE("cdplab alone checks the first exercise not done, and says which") {
  // Without a terminal (as here) it checks once; in one it goes on watching, as `cdplab watch`.
  const auto ran = cdplab_cli({});
  INFO(ran.output);
  CHECK(ran.exit_code != 2);  // never "A subcommand is required"
  CHECK((ran.output.find("the first exercise not done is") != std::string::npos ||
         ran.output.find("every exercise is done") != std::string::npos));
}

TEST_CASE("grade a class refuses a --regrade name that is no student's, with the nearest") {
  const fs::path dir = kWork / "regrade-typo";
  fs::remove_all(dir);
  fs::create_directories(dir / "class/carol/05-streams-and-pools");
  fs::copy_file(kRoot / "chapters/05-streams-and-pools/quiz.toml", dir / "class/carol/05-streams-and-pools/quiz.toml");
  const auto ran = cdplab_cli({"grade", (dir / "class").string(), "--out", (dir / "grades").string(), "--only",
                               "streams-quiz", "--regrade", "carl"});
  INFO(ran.output);
  CHECK(ran.exit_code == 2);
  CHECK(ran.output.find("--regrade carl: no student") != std::string::npos);
  CHECK(ran.output.find("did you mean 'carol'?") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "grades" / "students"));  // nothing was graded
}
