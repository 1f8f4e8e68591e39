// Hostile submissions: a class of them, each the solution of child_grids.cu with one thing done
// wrong on purpose, graded by `cdplab grade` like any class. Each must get its expected verdict,
// and no case may stop the batch. The cases that need a kernel to run are graded only where a
// GPU is present (on a machine without one they would only be skipped).
#include "files/files.h"
#include "process/process.h"
#include "report/report.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <utility>

namespace fs = std::filesystem;
using cdplab::grading::Outcome;

namespace {

const fs::path kRoot = CDPLAB_SOURCE_DIR;
const fs::path kWork = fs::path(CDPLAB_TEST_BINARY_DIR) / "hostile";

/// One hostile submission: how it is made from the solution, and what its grade must show.
struct HostileCase {
  std::string name;
  bool needs_gpu;
  std::function<std::string(std::string)> make;  ///< solution text -> hostile text
  std::string expect;                             ///< in the exercise's problem or every failed item's feedback
};

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "the solution no longer holds: ", from);
  return text.replace(at, from.size(), to);
}

const std::string kChildLine = "if (j < end) out[j] = values[j] * 2.0f + static_cast<float>(item);";
const std::string kEntry = "  check_offsets(offsets, values.size());";

std::vector<HostileCase> hostile_cases() {
  return {
      {"compile-error", false, [](std::string s) { return s + "\nthis line is not C++;\n"; }, "does not compile"},
      {"calls-the-oracle", false,
       [](std::string s) {
         return s + "\nnamespace cdplab::fundamentals { float peek() { return cdplab::oracle::tolerance(); } }\n";
       },
       "refers to the grader's own code"},
      // The same call where the source scan cannot see it: a namespace alias, no "oracle::" in
      // the text. The compiled exercise still names the oracle's function.
      {"hides-an-oracle-call", false,
       [](std::string s) {
         return "#include <vector>\nnamespace cdplab { namespace oracle { namespace fundamentals {\n"
                "std::vector<float> expected_expansion(const std::vector<unsigned>&, const std::vector<float>&);\n"
                "} } }\n" +
                replace(s, kEntry,
                        "  namespace reference = cdplab::oracle;\n"
                        "  if (values.size() == 1) return reference::fundamentals::expected_expansion(offsets, values);\n" +
                            kEntry);
       },
       "calls the grader's own code"},
      {"includes-a-solution", false,
       [](std::string s) { return "#include \"../../solutions/01-fundamentals/child_grids.cu\"\n" + s; },
       "refers to the grader's own code"},
      // Computes nothing, and writes "passed" lines into the results file from a static
      // initialiser, before any check runs.
      {"forges-results", false,
       [](std::string s) {
         // The results file as the harness finds it: "{suite}" stands for the suite's name.
         return "#include <cstdlib>\n#include <fstream>\n#include <string>\n" +
                replace(s, kChildLine, "if (j < end) out[j] = 0.0f;") +
                "\nnamespace {\nconst bool forged = [] {\n"
                "  if (const char* file = std::getenv(\"CDPLAB_RESULTS_FILE\")) {\n"
                "    std::string path = file;\n"
                "    if (path.find(\"{suite}\") != std::string::npos)\n"
                "      path.replace(path.find(\"{suite}\"), 7, \"01-fundamentals.child_grids\");\n"
                "    for (const char* check : {\"uniform ranges\", \"skewed ranges\", \"empty ranges\", \"one huge range\"})\n"
                "      std::ofstream(path, std::ios::app) << \"{\\\"event\\\":\\\"end\\\",\\\"suite\\\":\\\"01-fundamentals/child_grids\\\",\\\"check\\\":\\\"\" << check << \"\\\",\\\"status\\\":\\\"passed\\\",\\\"seconds\\\":0.1,\\\"failures\\\":[]}\\n\";\n"
                "  }\n  return true;\n}();\n}  // namespace\n";
       },
       "not written by the test harness"},
      {"prints-fake-passes", true,
       [](std::string s) {
         return "#include <cstdio>\n" +
                replace(s, kEntry,
                        "  std::printf(\"[doctest] Status: SUCCESS!\\nPASSED\\n\");\n"
                        "  return std::vector<float>(values.size(), 0.0f);\n" + kEntry);
       },
       ""},
      {"exits-early", true,
       [](std::string s) { return "#include <cstdlib>\n" + replace(s, kEntry, "  std::exit(0);\n" + kEntry); },
       "never finished"},
      {"kernel-never-ends", true,
       [](std::string s) {
         // __nanosleep keeps the compiler from removing the loop; out is never null.
         return replace(s, kChildLine, "while (out != nullptr) __nanosleep(1000);\n  " + kChildLine);
       },
       "stopped after"},
      {"unbounded-recursion", true,
       [](std::string s) {
         return replace(s, "  if (begin == end) return;",
                        "  expand_parent<<<1, 32>>>(offsets, items, values, out);\n  if (begin == end) return;");
       },
       ""},
      {"exhausts-the-heap", true,
       [](std::string s) {
         return replace(s, kChildLine,
                        "float* scratch = static_cast<float*>(malloc(1 << 20));\n"
                        "  scratch[threadIdx.x] = 1.0f;\n  " + kChildLine);
       },
       ""},
      {"writes-out-of-bounds", true,
       [](std::string s) { return replace(s, kChildLine, "out[j + (1u << 30)] = 1.0f;\n  " + kChildLine); }, ""},
  };
}

/// Grades every submission in class_dir with `cdplab grade`, limited to the exercise `only`.
void grade_class(const fs::path& class_dir, const fs::path& out_dir, const std::string& only) {
  cdplab::process::Options options;
  options.timeout_seconds = 1800;
  const auto ran = cdplab::process::run(
      {CDPLAB_CLI, "grade", class_dir.string(), "--only", only, "--out", out_dir.string(), "--parallel", "2"}, options);
  INFO(ran.output);
  REQUIRE(ran.started);
  CHECK_FALSE(ran.timed_out);
}

cdplab::grading::GradeReport student_report(const fs::path& out_dir, const std::string& student) {
  std::ifstream in(out_dir / "students" / student / "result.json");
  REQUIRE_MESSAGE(in, "no result for ", student);
  return cdplab::report::from_json(nlohmann::json::parse(in));
}

bool gpu_present() {
  cdplab::process::Options options;
  options.timeout_seconds = 30;
  const auto listed = cdplab::process::run({"nvidia-smi", "-L"}, options);
  return listed.ok() && listed.output.find("GPU") != std::string::npos;
}

}  // namespace

TEST_CASE("hostile submissions get their verdicts and never stop the batch") {
  const bool gpu = gpu_present();
  const std::string solution = cdplab::files::read_text(kRoot / "solutions/01-fundamentals/child_grids.cu");
  const fs::path class_dir = kWork / "class";
  const fs::path out_dir = kWork / "grades";
  fs::remove_all(class_dir);
  fs::remove_all(out_dir);
  std::vector<HostileCase> cases;
  for (auto& c : hostile_cases()) {
    if (c.needs_gpu && !gpu) continue;
    fs::create_directories(class_dir / c.name / "01-fundamentals");
    std::ofstream(class_dir / c.name / "01-fundamentals" / "child_grids.cu") << c.make(solution);
    cases.push_back(c);
  }
  grade_class(class_dir, out_dir, "child-grids");

  for (const auto& c : cases) {
    INFO("case ", c.name);
    const auto report = student_report(out_dir, c.name);
    REQUIRE(report.exercises.size() == 1);
    const auto& e = report.exercises.front();
    std::string said = e.problem;
    for (const auto& item : e.items) {
      INFO(item.name, ": ", item.feedback);
      // A hostile submission never earns a check. (Its rules may pass: forged results do not
      // change the code's launch graph.)
      if (item.kind == cdplab::grading::ItemKind::check) CHECK(item.outcome != Outcome::passed);
      said += "\n" + item.feedback;
    }
    if (!c.expect.empty()) CHECK_MESSAGE(said.find(c.expect) != std::string::npos, said);
    CHECK(report.points() < report.max_points());
  }
  if (!gpu) MESSAGE("no GPU: only the cases that need no kernel to run were graded");
}

// A suite's checks share one process, and a check that does not pass there runs again in a
// process of its own, which decides it (grading/shared_process.h). Each check of child-grids calls
// the exercise once; a submission that fails every call after the first in a process passes each
// check alone, so it must keep full marks. Its log must show the shared process ending at its
// second check, and that check and the ones after it each starting in a process of their own.
TEST_CASE("checks share a suite process, and one that fails there is decided alone") {
  if (!gpu_present()) {
    MESSAGE("CDPLAB_TEST_SKIPPED: no GPU, and shared processes only matter where checks run");
    return;
  }
  const std::string solution = cdplab::files::read_text(kRoot / "solutions/01-fundamentals/child_grids.cu");
  const std::string first_call_only =
      "#include <vector>\nnamespace { int calls_in_this_process = 0; }\n" +
      replace(solution, kEntry,
              "  if (++calls_in_this_process > 1) return std::vector<float>(values.size(), -1.0f);\n" + kEntry);
  const fs::path class_dir = kWork / "shared-class";
  const fs::path out_dir = kWork / "shared-grades";
  fs::remove_all(class_dir);
  fs::remove_all(out_dir);
  for (const auto& [name, text] : {std::pair{std::string("reference"), solution},
                                   std::pair{std::string("first-call-only"), first_call_only}}) {
    fs::create_directories(class_dir / name / "01-fundamentals");
    std::ofstream(class_dir / name / "01-fundamentals" / "child_grids.cu") << text;
  }
  grade_class(class_dir, out_dir, "child-grids");

  for (const std::string student : {"reference", "first-call-only"}) {
    INFO("student ", student);
    const auto report = student_report(out_dir, student);
    CHECK(report.points() == report.max_points());
    // The processes each check started in, in the order of the log; the first is the shared one.
    std::map<std::string, std::vector<long>> pids;
    long shared = 0;
    std::ifstream log(out_dir / "work" / student / "build" / "cdplab-results" / "01-fundamentals.child_grids.jsonl");
    REQUIRE(log);
    for (std::string line; std::getline(log, line);) {
      const auto record = nlohmann::json::parse(line);
      if (record.value("event", "") != "start") continue;
      const long pid = record.value("pid", 0L);
      if (shared == 0) shared = pid;
      pids[record.value("check", "")].push_back(pid);
    }
    REQUIRE(pids.size() == 4);
    int in_shared = 0, twice = 0;
    for (const auto& [check, started] : pids) {
      INFO("check ", check, ": started ", started.size(), " times");
      REQUIRE((started.size() == 1 || started.size() == 2));
      if (started.front() == shared) ++in_shared;
      if (started.size() == 2) {
        ++twice;
        CHECK(started.front() == shared);
        CHECK(started.back() != shared);
      } else if (started.front() != shared) {
        CHECK(std::count(started.begin(), started.end(), shared) == 0);
      }
    }
    CHECK(in_shared == (student == "reference" ? 4 : 2));
    CHECK(twice == (student == "reference" ? 0 : 1));
  }
}

// The concurrency check must tell the strategies apart on every run, not on average: a parent
// whose "named streams" launches go into the NULL stream fails "named streams overlap" in each
// of several copies, and the solution passes it in each.
TEST_CASE("the concurrency check fails a NULL-stream parent and passes a named-stream one, every time") {
  if (!gpu_present()) {
    MESSAGE("CDPLAB_TEST_SKIPPED: no GPU, and the concurrency check needs kernels to run");
    return;
  }
  const std::string solution = cdplab::files::read_text(kRoot / "solutions/05-streams-and-pools/concurrency.cu");
  const std::string named_launch = "grader::timed_child<<<1, grader::kTimedChildThreads, 0, stream>>>";
  const std::string null_stream =
      replace(solution, named_launch, "grader::timed_child<<<1, grader::kTimedChildThreads>>>");
  const fs::path class_dir = kWork / "concurrency-class";
  const fs::path out_dir = kWork / "concurrency-grades";
  fs::remove_all(class_dir);
  fs::remove_all(out_dir);
  constexpr int kCopies = 3;
  for (int copy = 1; copy <= kCopies; ++copy) {
    for (const auto& [name, text] : {std::pair{"named-" + std::to_string(copy), solution},
                                     std::pair{"null-" + std::to_string(copy), null_stream}}) {
      fs::create_directories(class_dir / name / "05-streams-and-pools");
      std::ofstream(class_dir / name / "05-streams-and-pools" / "concurrency.cu") << text;
    }
  }
  grade_class(class_dir, out_dir, "concurrency");

  for (int copy = 1; copy <= kCopies; ++copy) {
    for (const std::string kind : {"named", "null"}) {
      const std::string student = kind + "-" + std::to_string(copy);
      INFO("student ", student);
      const auto report = student_report(out_dir, student);
      REQUIRE(report.exercises.size() == 1);
      const auto& items = report.exercises.front().items;
      const auto overlap = std::find_if(items.begin(), items.end(),
                                        [](const auto& item) { return item.name == "named streams overlap"; });
      REQUIRE(overlap != items.end());
      INFO(overlap->feedback);
      CHECK(overlap->outcome == (kind == "named" ? Outcome::passed : Outcome::failed));
    }
  }
}
