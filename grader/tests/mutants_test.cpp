// The grader proven by mutation (mutants/README.md). Every exercise has a catalogue of mutants
// (student-like bugs, each a small edit of the reference solution, with the items that must lose
// points for it) and alternatives (other correct ways, which must keep full marks). Three kinds
// of test read the catalogues:
//  - "mutants: the catalogues ...": every edit applies to today's solution, every item a mutant
//    names exists in its exercise's manifest (fast, no compiler);
//  - "mutants: rules ...": every mutant and alternative compiled to PTX and judged by its
//    exercise's rules (`cdplab rules`), without a GPU: this decides the mutants that rules alone
//    catch, requires every alternative's launch sites to make edges the lesson allows (as the GPU
//    checks judge the edges their runs make), and writes mutation-score-rules.md;
//  - "mutants graded on the GPU": every mutant and alternative graded as one class by `cdplab
//    grade CLASS` (CDPLAB_MUTANTS=<chapter>/<stem>,... grades only those catalogues, and
//    <chapter>/<stem>:<name> one variant); each catalogue writes its row of mutation-score.md.
//    Without a GPU it reports itself skipped.
// CTest labels (CMakeLists.txt): the first two `cpu` and `mutants`, the GPU ones `mutants` only.
#include "gpu_present.h"
#include "batch/submissions.h"
#include "files/files.h"
#include "manifest/manifest.h"
#include "process/process.h"
#include "report/report.h"
#include "rules/rule.h"

#include <doctest/doctest.h>
#include <toml++/toml.h>

#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using cdplab::grading::ExerciseResult;
using cdplab::grading::Item;
using cdplab::grading::Outcome;

// Every catalogue (mutants/<chapter>/<stem>.toml); the catalogue test checks that this list and
// the files agree.
#define CDPLAB_MUTANT_CATALOGUES(X)               \
  X("01-fundamentals/child_grids")                \
  X("01-fundamentals/tail_continuation")          \
  X("01-fundamentals/recursive_reduction")        \
  X("01-fundamentals/shared_histogram")           \
  X("02-bezier/fixed_tessellation")               \
  X("02-bezier/cdp_tessellation")                 \
  X("02-bezier/scaled_tessellation")              \
  X("02-bezier/aggregated_tessellation")          \
  X("03-quadtree/quadtree_build")                 \
  X("03-quadtree/adaptive_quadtree")              \
  X("04-memory-visibility/private_pointers")      \
  X("04-memory-visibility/tail_consumer")         \
  X("04-memory-visibility/constant_params")       \
  X("04-memory-visibility/device_heap")           \
  X("05-streams-and-pools/concurrency")           \
  X("05-streams-and-pools/pools")                 \
  X("05-streams-and-pools/quicksort")             \
  X("05-streams-and-pools/fast_quicksort")        \
  X("05-streams-and-pools/aggregation")

namespace {

const fs::path kRoot = CDPLAB_SOURCE_DIR;
const fs::path kCatalogueDir = kRoot / "grader" / "tests" / "mutants";
const fs::path kWork = fs::path(CDPLAB_TEST_BINARY_DIR) / "mutants";
/// The tables the runs write, in the test build folder.
const fs::path kRulesScore = fs::path(CDPLAB_TEST_BINARY_DIR) / "mutation-score-rules.md";
const fs::path kGpuScore = fs::path(CDPLAB_TEST_BINARY_DIR) / "mutation-score.md";

#define CDPLAB_CATALOGUE_NAME(path) path,
const std::vector<std::string> kCatalogued = {CDPLAB_MUTANT_CATALOGUES(CDPLAB_CATALOGUE_NAME)};
#undef CDPLAB_CATALOGUE_NAME

// ----- the catalogues ----------------------------------------------------------------------

/// One edit: the text `find` (which must occur exactly once) becomes `replace`.
struct Edit {
  std::string find;
  std::string replace;
};

/// A mutant or an alternative: the solution with its edits applied, in order.
struct Variant {
  std::string name;
  std::string why;
  std::vector<Edit> edits;
  std::vector<std::string> caught_by;  ///< a mutant's items that must each lose points
};

struct Catalogue {
  fs::path file;
  std::string chapter;
  std::string stem;
  std::vector<Variant> mutants;
  std::vector<Variant> alternatives;

  std::string key() const { return chapter + "/" + stem; }
  fs::path solution() const { return kRoot / "solutions" / chapter / (stem + ".cu"); }
};

[[noreturn]] void fail(const fs::path& file, const std::string& what) {
  throw std::runtime_error(fs::relative(file, kRoot).string() + ": " + what);
}

/// A key that holds one string or a list of strings.
std::vector<std::string> strings_of(const toml::table& table, const char* key, const fs::path& file,
                                    const std::string& where) {
  const toml::node* node = table.get(key);
  if (node == nullptr) fail(file, where + ": '" + key + "' is missing");
  if (const auto text = node->value<std::string>()) return {*text};
  std::vector<std::string> out;
  const toml::array* array = node->as_array();
  if (array == nullptr) fail(file, where + ": '" + key + "' must be a string or a list of strings");
  for (const auto& element : *array) {
    const auto text = element.value<std::string>();
    if (!text) fail(file, where + ": '" + key + "' must be a string or a list of strings");
    out.push_back(*text);
  }
  return out;
}

Variant read_variant(const toml::table& table, bool mutant, const fs::path& file, std::size_t index) {
  const std::string kind = mutant ? "mutant" : "alternative";
  const std::set<std::string> allowed = mutant ? std::set<std::string>{"name", "why", "find", "replace", "caught_by"}
                                               : std::set<std::string>{"name", "why", "find", "replace"};
  Variant v;
  v.name = table["name"].value<std::string>().value_or("");
  const std::string where = kind + " " + (v.name.empty() ? "#" + std::to_string(index + 1) : "'" + v.name + "'");
  for (const auto& [key, value] : table) {
    if (!allowed.count(std::string(key.str()))) fail(file, where + ": unknown key '" + std::string(key.str()) + "'");
  }
  if (v.name.empty()) fail(file, where + ": 'name' is missing");
  v.why = table["why"].value<std::string>().value_or("");
  const auto finds = strings_of(table, "find", file, where);
  const auto replaces = strings_of(table, "replace", file, where);
  if (finds.size() != replaces.size()) fail(file, where + ": 'find' and 'replace' must have as many entries");
  for (std::size_t i = 0; i < finds.size(); ++i) v.edits.push_back({finds[i], replaces[i]});
  if (mutant) {
    if (table.get("caught_by") == nullptr) fail(file, where + ": 'caught_by' is missing (an empty list says none yet)");
    if (table.get("caught_by")->as_array() == nullptr) fail(file, where + ": 'caught_by' must be a list of strings");
    v.caught_by = strings_of(table, "caught_by", file, where);
  }
  return v;
}

Catalogue read_catalogue(const fs::path& file) {
  Catalogue c;
  c.file = file;
  c.chapter = file.parent_path().filename().string();
  c.stem = file.stem().string();
  toml::table root;
  try {
    root = toml::parse_file(file.string());
  } catch (const toml::parse_error& error) {
    fail(file, std::string("not valid TOML: ") + error.what());
  }
  for (const auto& [key, value] : root) {
    if (key != "mutant" && key != "alternative") {
      fail(file, "unknown key '" + std::string(key.str()) + "' (only [[mutant]] and [[alternative]] tables)");
    }
  }
  for (const bool mutant : {true, false}) {
    const toml::node* node = root.get(mutant ? "mutant" : "alternative");
    if (node == nullptr) continue;
    const toml::array* array = node->as_array();
    if (array == nullptr || !array->is_array_of_tables()) fail(file, "write [[mutant]] and [[alternative]] tables");
    auto& into = mutant ? c.mutants : c.alternatives;
    for (std::size_t i = 0; i < array->size(); ++i) into.push_back(read_variant(*array->get(i)->as_table(), mutant, file, i));
  }
  return c;
}

/// Every catalogue, in the order of their paths. The mechanical sweep's equivalents files
/// (<stem>.equivalent.toml, README.md) are no catalogues.
std::vector<Catalogue> read_catalogues() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(kCatalogueDir)) {
    const std::string name = entry.path().filename().string();
    const bool equivalents = name.size() > 16 && name.compare(name.size() - 16, 16, ".equivalent.toml") == 0;
    if (entry.is_regular_file() && entry.path().extension() == ".toml" && !equivalents) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Catalogue> catalogues;
  for (const auto& file : files) catalogues.push_back(read_catalogue(file));
  return catalogues;
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

/// The solution with the variant's edits applied, in order. Throws std::runtime_error when a
/// `find` is empty or does not occur exactly once in the text it applies to.
std::string apply(const std::string& solution, const Variant& variant) {
  std::string text = solution;
  for (std::size_t i = 0; i < variant.edits.size(); ++i) {
    const Edit& edit = variant.edits[i];
    const std::size_t found = edit.find.empty() ? 0 : occurrences(text, edit.find);
    if (found != 1) {
      throw std::runtime_error("'" + variant.name + "': find #" + std::to_string(i + 1) + " occurs " +
                               std::to_string(found) + " times (exactly once expected):\n" + edit.find);
    }
    text.replace(text.find(edit.find), edit.find.size(), edit.replace);
  }
  return text;
}

// ----- the exercise's items ---------------------------------------------------------------

const cdplab::manifest::Workbook& workbook() {
  static const cdplab::manifest::Workbook book = cdplab::manifest::load_workbook(kRoot);
  return book;
}

const cdplab::manifest::Exercise& exercise_of(const Catalogue& c) {
  const auto* exercise = workbook().find_exercise(c.key());
  if (exercise == nullptr) fail(c.file, "no exercise " + c.key() + " in chapters/" + c.chapter + "/chapter.toml");
  return *exercise;
}

/// The points of each check and rule of an exercise, by the name a grade report gives the item
/// (a rule's description).
std::map<std::string, double> item_points(const cdplab::manifest::Exercise& exercise) {
  std::map<std::string, double> points;
  for (const auto& check : exercise.checks) points[check.name] = check.points;
  for (const auto& rule : exercise.rules) points[cdplab::rules::describe(rule)] = rule.points;
  return points;
}

std::set<std::string> rule_names(const cdplab::manifest::Exercise& exercise) {
  std::set<std::string> names;
  for (const auto& rule : exercise.rules) names.insert(cdplab::rules::describe(rule));
  return names;
}

/// Whether every item a mutant names is a rule: such a mutant is decided without a GPU.
bool decided_by_rules(const Variant& mutant, const cdplab::manifest::Exercise& exercise) {
  const auto rules = rule_names(exercise);
  return !mutant.caught_by.empty() && std::all_of(mutant.caught_by.begin(), mutant.caught_by.end(),
                                                  [&](const std::string& item) { return rules.count(item) != 0; });
}

std::string flat(const std::string& key) {
  std::string out = key;
  std::replace(out.begin(), out.end(), '/', '_');
  return out;
}

/// Writes `text` to `file` (creating its folder).
void write_file(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

cdplab::process::Result cdplab_cli(std::vector<std::string> args, double timeout_seconds) {
  args.insert(args.begin(), CDPLAB_CLI);
  cdplab::process::Options options;
  options.timeout_seconds = timeout_seconds;
  return cdplab::process::run(args, options);
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
  return text;
}

std::string fraction(std::size_t part, std::size_t whole) { return std::to_string(part) + " / " + std::to_string(whole); }

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "-" : out;
}

// ----- rules without a GPU ------------------------------------------------------------------

/// What `cdplab rules` said of one file.
struct RulesVerdict {
  bool compiled = false;
  std::set<std::string> failed;  ///< descriptions of the rules that failed
  /// Launch sites whose edges the lesson's rules do not allow (grading/launch_edges.h), as the
  /// checks would judge them on the GPU: "caller -> child".
  std::set<std::string> against_the_lesson;
  std::string output;
};

RulesVerdict judge_rules(const fs::path& file, const std::string& exercise_id) {
  const auto result = cdplab_cli({"rules", file.string(), "--exercise", exercise_id}, 600);
  RulesVerdict verdict;
  verdict.output = result.output;
  // Exit 0: every rule passed (or the exercise has none); 1 with the verdicts printed: some
  // failed; anything else, a file that did not compile.
  verdict.compiled = result.ok() || (result.exit_code == 1 && result.output.find("\nRules of ") != std::string::npos);
  // A failed rule's line, and the lines it wraps onto (under it, up to its "found:" line).
  std::istringstream lines(result.output);
  const std::string mark = "  [FAIL] ";
  const std::string under(mark.size(), ' ');
  std::string rule;
  const auto done = [&] {
    if (!rule.empty()) verdict.failed.insert(rule);
    rule.clear();
  };
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  [against the lesson] ", 0) == 0) verdict.against_the_lesson.insert(line.substr(23));
    if (line.rfind(mark, 0) == 0) {
      done();
      rule = line.substr(mark.size());
    } else if (!rule.empty() && line.rfind(under, 0) == 0 && line.rfind(under + "found: ", 0) != 0) {
      rule += " " + line.substr(under.size());
    } else {
      done();
    }
  }
  done();
  return verdict;
}

/// One file for `cdplab rules`: a variant of one catalogue.
struct RulesJob {
  const Catalogue* catalogue;
  const Variant* variant;
  bool mutant;
  fs::path file;
  RulesVerdict verdict;
};

/// Runs the jobs on as many threads as the machine has cores (nvcc is the cost).
void run_rules_jobs(std::vector<RulesJob>& jobs) {
  std::atomic<std::size_t> next{0};
  const unsigned workers = std::max(1u, std::min(std::thread::hardware_concurrency(), 8u));
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      for (std::size_t i = next++; i < jobs.size(); i = next++) {
        jobs[i].verdict = judge_rules(jobs[i].file, exercise_of(*jobs[i].catalogue).id);
      }
    });
  }
  for (auto& t : threads) t.join();
}

// ----- grading on a GPU ---------------------------------------------------------------------

using cdplab::testing::gpu_present;

const Item* find_item(const ExerciseResult& e, const std::string& name) {
  for (const auto& item : e.items)
    if (item.name == name) return &item;
  return nullptr;
}

bool lost_points(const Item& item) { return item.outcome == Outcome::failed && item.points < item.max_points; }

/// The items that were not passed, with their feedback's first line.
std::string failures_of(const ExerciseResult& e) {
  std::string out;
  for (const auto& item : e.items) {
    if (item.outcome == Outcome::passed) continue;
    out += "  - " + item.name + " (" + cdplab::grading::to_string(item.outcome) + "): " +
           item.feedback.substr(0, item.feedback.find('\n')) + "\n";
  }
  return out.empty() ? "  (none)\n" : out;
}

/// One exercise's row of the GPU table.
struct GpuRow {
  std::string key;
  std::string device;
  std::size_t mutants = 0, caught = 0, undecided = 0;
  std::size_t alternatives = 0, full_marks = 0;
  std::vector<std::string> survivors, failed_alternatives;
};

/// Adds or replaces the exercise's row of mutation-score.md. The rows live in one file each, so
/// that exercises graded at the same time (ctest -j) do not lose each other's; a lock keeps the
/// table whole while it is rewritten.
void write_gpu_row(const GpuRow& row) {
  const fs::path rows = kWork / "score-rows";
  fs::create_directories(rows);
  const int lock = ::open((rows / ".lock").c_str(), O_CREAT | O_RDWR, 0644);
  if (lock >= 0) ::flock(lock, LOCK_EX);
  std::string line = "| " + row.key + " | " + fraction(row.caught, row.mutants) + " | " +
                     fraction(row.full_marks, row.alternatives) + " | " + joined(row.survivors) + " | " +
                     joined(row.failed_alternatives) + " | " + std::to_string(row.undecided) + " | " + row.device +
                     ", " + today() + " |\n";
  write_file(rows / (flat(row.key) + ".md"), line);
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(rows))
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::string table =
      "Mutation score from `ctest -L mutants` (grader/tests/mutants_test.cpp): per exercise, the mutants that "
      "lost points and the alternatives that kept full marks.\n\n"
      "| exercise | mutants caught | alternatives with full marks | mutants not caught | alternatives "
      "that lost points | undecided | graded on |\n| --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& file : files) table += cdplab::files::read_text(file);
  write_file(kGpuScore.string() + ".tmp", table);
  fs::rename(kGpuScore.string() + ".tmp", kGpuScore);
  if (lock >= 0) ::close(lock);
}

/// A variant as a submission of the class the GPU run grades: its folder's name.
std::string submission_name(const Catalogue& catalogue, const Variant& variant, bool mutant) {
  return flat(catalogue.key()) + (mutant ? ".mutant." : ".alternative.") + variant.name;
}

/// The catalogues the GPU run grades: all, or those CDPLAB_MUTANTS names (comma-separated), each
/// whole (`<chapter>/<stem>`) or by its variants (`<chapter>/<stem>:<name>`, mutant or alternative).
/// A key or a variant that does not exist is an error: a typo must not grade nothing and pass.
std::vector<Catalogue> selected_catalogues() {
  const char* only = std::getenv("CDPLAB_MUTANTS");
  std::map<std::string, std::set<std::string>> wanted;  // key -> variant names; empty: all of them
  std::set<std::string> whole;                          // keys named without a variant
  std::istringstream in(only != nullptr ? only : "");
  for (std::string entry; std::getline(in, entry, ',');) {
    if (entry.empty()) continue;
    const auto colon = entry.find(':');
    auto& names = wanted[entry.substr(0, colon)];
    if (colon == std::string::npos) whole.insert(entry);
    else names.insert(entry.substr(colon + 1));
  }
  for (const auto& key : whole) wanted[key].clear();
  const bool all = wanted.empty();
  std::vector<Catalogue> out;
  for (auto& c : read_catalogues()) {
    if (all) {
      out.push_back(std::move(c));
      continue;
    }
    const auto found = wanted.find(c.key());
    if (found == wanted.end()) continue;
    const std::set<std::string> names = found->second;
    wanted.erase(found);
    if (names.empty()) {
      out.push_back(std::move(c));
      continue;
    }
    std::set<std::string> missing = names;
    auto unwanted = [&](const Variant& v) {
      missing.erase(v.name);
      return names.count(v.name) == 0;
    };
    c.mutants.erase(std::remove_if(c.mutants.begin(), c.mutants.end(), unwanted), c.mutants.end());
    c.alternatives.erase(std::remove_if(c.alternatives.begin(), c.alternatives.end(), unwanted),
                         c.alternatives.end());
    if (!missing.empty())
      throw std::runtime_error("CDPLAB_MUTANTS names " + c.key() + ":" + *missing.begin() +
                               ", which is no mutant or alternative of that catalogue");
    out.push_back(std::move(c));
  }
  if (!wanted.empty())
    throw std::runtime_error("CDPLAB_MUTANTS names " + wanted.begin()->first +
                             ", which is no catalogue (<chapter>/<stem>, as in grader/tests/mutants/)");
  return out;
}

/// Judges the graded mutants and alternatives of one catalogue (see the file's head) and writes
/// its row; returns whether anything failed.
bool judge_catalogue(const Catalogue& catalogue, const fs::path& grades, bool cut_short) {
  const auto& exercise = exercise_of(catalogue);
  const std::string key = catalogue.key();
  GpuRow row{key, "", catalogue.mutants.size(), 0, 0, catalogue.alternatives.size(), 0, {}, {}};
  std::size_t missed = 0;    // items a mutant names that kept their points
  bool unverified = false;   // items a mutant names that were skipped

  // The report of a variant, reduced to its exercise; nullopt (and a failed check) without one.
  const auto graded = [&](const Variant& v, bool mutant) -> std::optional<std::pair<ExerciseResult, std::string>> {
    // A name past 64 bytes is kept in a folder of a shorter name (batch/submissions.h).
    const fs::path file =
        grades / "students" / cdplab::batch::student_folder(submission_name(catalogue, v, mutant)) / "result.json";
    std::ifstream in(file);
    if (!in && cut_short) {  // the run was stopped before it came to this one
      ++row.undecided;
      return std::nullopt;
    }
    if (!in) {
      FAIL_CHECK(key << ", '" << v.name << "': no report at " << file.string());
      return std::nullopt;
    }
    const auto report = cdplab::report::from_json(nlohmann::json::parse(in));
    for (const auto& e : report.exercises) {
      if (e.id != exercise.id) continue;
      if (!report.device.empty()) row.device = report.device;
      const bool skipped = report.count(Outcome::skipped) > 0;
      return std::make_pair(e, std::string(skipped ? "skipped" : "") + " seed " + std::to_string(report.seed));
    }
    FAIL_CHECK(key << ", '" << v.name << "': the report has no " << exercise.id);
    return std::nullopt;
  };
  const auto any_skipped = [](const ExerciseResult& e) {
    return std::any_of(e.items.begin(), e.items.end(), [](const Item& i) { return i.outcome == Outcome::skipped; });
  };

  for (const Variant& mutant : catalogue.mutants) {
    const auto found = graded(mutant, true);
    if (!found) continue;
    const ExerciseResult& e = found->first;
    INFO(key << ", mutant '" << mutant.name << "' (" << mutant.why << ")," << found->second << ":\n" << failures_of(e));
    if (!e.problem.empty()) {
      row.survivors.push_back(mutant.name + " (does not build)");
      FAIL_CHECK("the mutant does not build, so it proves nothing: " << e.problem << "\n" << e.build_log);
      continue;
    }
    const bool lost = std::any_of(e.items.begin(), e.items.end(), lost_points);
    if (lost) {
      ++row.caught;
    } else if (any_skipped(e)) {
      ++row.undecided;
      continue;
    } else {
      row.survivors.push_back(mutant.name);
    }
    CHECK_MESSAGE(lost, "the mutant kept full marks");
    for (const auto& name : mutant.caught_by) {
      const Item* item = find_item(e, name);
      if (item == nullptr || item->outcome == Outcome::skipped) {
        unverified = true;  // caught, but not yet by what the catalogue says
        continue;
      }
      if (!lost_points(*item)) ++missed;
      CHECK_MESSAGE(lost_points(*item), "'" << name << "' should have lost points for this mutant");
    }
  }

  for (const Variant& alternative : catalogue.alternatives) {
    const auto found = graded(alternative, false);
    if (!found) continue;
    const ExerciseResult& e = found->first;
    INFO(key << ", alternative '" << alternative.name << "' (" << alternative.why << ")," << found->second << ":\n"
             << failures_of(e));
    if (!e.problem.empty()) {
      row.failed_alternatives.push_back(alternative.name + " (does not build)");
      FAIL_CHECK("the alternative does not build: " << e.problem << "\n" << e.build_log);
      continue;
    }
    const bool any_failed = std::any_of(e.items.begin(), e.items.end(),
                                        [](const Item& item) { return item.outcome == Outcome::failed; });
    if (!any_failed && any_skipped(e)) {
      ++row.undecided;
      continue;
    }
    if (!any_failed) ++row.full_marks;
    else row.failed_alternatives.push_back(alternative.name);
    CHECK_MESSAGE(!any_failed, "a correct alternative lost points");
  }

  write_gpu_row(row);
  MESSAGE(key << ": " << fraction(row.caught, row.mutants) << " mutants caught, "
              << fraction(row.full_marks, row.alternatives) << " alternatives with full marks");
  if (row.undecided > 0 || unverified) {
    MESSAGE(row.undecided << " mutant(s) or alternative(s) of " << key << " left undecided: their checks were skipped ("
                          << row.device << ")");
  }
  if (missed > 0) MESSAGE(missed << " item(s) named in caught_by kept their points");
  return !row.survivors.empty() || !row.failed_alternatives.empty() || missed > 0;
}

/// Grades every mutant and alternative of the selected catalogues as one class, with the class
/// grader (`cdplab grade CLASS`: builds side by side, the GPU checks of one submission at a time),
/// then judges each catalogue.
void grade_catalogues_on_gpu() {
  if (!gpu_present()) {
    MESSAGE("CDPLAB_TEST_SKIPPED: no GPU (nvidia-smi lists none): the mutants are graded on a GPU only");
    return;
  }
  const auto catalogues = selected_catalogues();
  REQUIRE_MESSAGE(!catalogues.empty(), "CDPLAB_MUTANTS names no catalogue");
  const fs::path class_dir = kWork / "gpu" / "class";
  const fs::path grades = kWork / "gpu" / "grades";
  fs::remove_all(class_dir);
  std::vector<std::string> args = {"grade", class_dir.string(), "--out", grades.string(), "--force",
                                   "--parallel", "6", "--only"};
  for (const auto& c : catalogues) {
    const auto& exercise = exercise_of(c);
    args.push_back(exercise.id);
    const std::string solution = cdplab::files::read_text(c.solution());
    for (const bool mutant : {true, false}) {
      for (const Variant& v : mutant ? c.mutants : c.alternatives)
        write_file(class_dir / submission_name(c, v, mutant) / c.chapter / exercise.file, apply(solution, v));
    }
  }
  // CDPLAB_MUTANTS_SECONDS stops the class grader after that long: what it graded by then is
  // judged, the rest counted undecided (the test then reports itself skipped, never passed).
  const char* limit = std::getenv("CDPLAB_MUTANTS_SECONDS");
  const double seconds_allowed = limit != nullptr && std::atof(limit) > 0 ? std::atof(limit) : 3 * 3600;
  const auto start = std::chrono::steady_clock::now();
  const auto ran = cdplab_cli(args, seconds_allowed);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO("cdplab grade said:\n" << ran.output.substr(ran.output.size() > 4000 ? ran.output.size() - 4000 : 0));
  REQUIRE_MESSAGE(ran.started, "cdplab grade did not start");
  MESSAGE(std::string(ran.timed_out ? "stopped the class grader after " : "graded the class of mutants and alternatives in ")
          << static_cast<int>(seconds) << " s");
  bool failed = false;
  for (const auto& c : catalogues) failed = judge_catalogue(c, grades, ran.timed_out) || failed;
  // Skipped only when nothing failed: CTest would report a failed test that prints it skipped.
  if (ran.timed_out && !failed) MESSAGE("CDPLAB_TEST_SKIPPED: the class grader was stopped before it graded every variant");
  MESSAGE("mutation score: " << kGpuScore.string());
}

}  // namespace

// ----- the catalogues against the solutions and the manifests ---------------------------------

TEST_CASE("mutants: the catalogues apply to today's solutions and name items of their exercises") {
  const auto catalogues = read_catalogues();

  // One catalogue per programming exercise, and one GPU test case per catalogue.
  std::set<std::string> exercises, files, listed(kCatalogued.begin(), kCatalogued.end());
  for (const auto* e : workbook().exercises())
    if (!e->is_quiz()) exercises.insert(e->chapter + "/" + e->stem);
  for (const auto& c : catalogues) files.insert(c.key());
  for (const auto& key : exercises) CHECK_MESSAGE(files.count(key), "no mutant catalogue for " << key);
  for (const auto& key : files) CHECK_MESSAGE(exercises.count(key), "a catalogue for no exercise: " << key);
  for (const auto& key : files) CHECK_MESSAGE(listed.count(key), key << " is missing in CDPLAB_MUTANT_CATALOGUES");
  for (const auto& key : listed) CHECK_MESSAGE(files.count(key), key << " in CDPLAB_MUTANT_CATALOGUES has no file");

  for (const auto& c : catalogues) {
    INFO(fs::relative(c.file, kRoot).string());
    if (!exercises.count(c.key())) continue;
    const auto& exercise = exercise_of(c);
    const auto points = item_points(exercise);
    const std::string solution = cdplab::files::read_text(c.solution());
    REQUIRE_MESSAGE(!solution.empty(), "cannot read " << c.solution().string());
    CHECK_MESSAGE(c.mutants.size() >= 4, "at least four mutants per exercise");
    CHECK_MESSAGE(!c.alternatives.empty(), "at least one alternative per exercise");

    std::set<std::string> names;
    for (const auto* list : {&c.mutants, &c.alternatives}) {
      for (const Variant& v : *list) {
        INFO("'" << v.name << "'");
        CHECK_MESSAGE(names.insert(v.name).second, "the name is used twice in the file");
        CHECK_MESSAGE(v.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos,
                      "a name is lower-case letters, digits and '-'");
        CHECK_MESSAGE((!v.why.empty() && v.why.find('\n') == std::string::npos), "'why' is one line");
        REQUIRE_MESSAGE(!v.edits.empty(), "no edit");
        // Each find in the solution itself, exactly once: an edited solution must not silently
        // leave a mutant behind.
        for (const Edit& edit : v.edits) {
          CHECK_MESSAGE(occurrences(solution, edit.find) == 1,
                        "this find occurs " << occurrences(solution, edit.find) << " times in the solution:\n"
                                            << edit.find);
        }
        std::string text;
        CHECK_NOTHROW(text = apply(solution, v));
        CHECK_MESSAGE(text != solution, "the edits change nothing");
      }
    }
    for (const Variant& m : c.mutants) {
      INFO("mutant '" << m.name << "'");
      std::set<std::string> seen;
      for (const auto& name : m.caught_by) {
        CHECK_MESSAGE(seen.insert(name).second, "caught_by names '" << name << "' twice");
        const auto it = points.find(name);
        CHECK_MESSAGE(it != points.end(), "caught_by names '" << name << "', which is neither a check nor a rule "
                                                                         "description of "
                                                                      << exercise.id);
        if (it != points.end()) CHECK_MESSAGE(it->second > 0, "'" << name << "' is worth no points: it cannot lose any");
      }
    }
  }
}

TEST_CASE("mutants: rules judge every mutant and alternative without a GPU") {
  const auto catalogues = read_catalogues();
  std::vector<RulesJob> jobs;
  for (const auto& c : catalogues) {
    if (workbook().find_exercise(c.key()) == nullptr) continue;  // the catalogue test says so
    const std::string solution = cdplab::files::read_text(c.solution());
    for (const bool mutant : {true, false}) {
      for (const Variant& v : mutant ? c.mutants : c.alternatives) {
        // The file's folder is named after its chapter: `cdplab rules` finds the chapter's
        // grader-side kernels (support/) by it.
        const fs::path file = kWork / "rules" / (c.stem + "." + v.name) / c.chapter / (c.stem + ".cu");
        std::string text;
        try {
          text = apply(solution, v);
        } catch (const std::exception&) {
          continue;  // the catalogue test names it
        }
        write_file(file, text);
        jobs.push_back({&c, &v, mutant, file, {}});
      }
    }
  }
  const auto start = std::chrono::steady_clock::now();
  run_rules_jobs(jobs);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  struct Tally {
    std::size_t mutants = 0, caught = 0, decidable = 0, alternatives = 0, passing = 0;
  };
  std::map<std::string, Tally> tallies;
  for (const auto& job : jobs) {
    const auto& exercise = exercise_of(*job.catalogue);
    const auto points = item_points(exercise);
    const auto rules = rule_names(exercise);
    const RulesVerdict& verdict = job.verdict;
    Tally& tally = tallies[job.catalogue->key()];
    INFO(job.catalogue->key() << (job.mutant ? ", mutant '" : ", alternative '") << job.variant->name << "' ("
                              << job.variant->why << ")\n"
                              << verdict.output);
    CHECK_MESSAGE(verdict.compiled, "it does not compile to PTX");
    if (!verdict.compiled) continue;
    if (job.mutant) {
      ++tally.mutants;
      const bool lost = std::any_of(verdict.failed.begin(), verdict.failed.end(), [&](const std::string& rule) {
        const auto it = points.find(rule);
        return it != points.end() && it->second > 0;
      });
      if (lost) ++tally.caught;
      if (decided_by_rules(*job.variant, exercise)) {
        ++tally.decidable;
        CHECK_MESSAGE(lost, "the mutant keeps every rule's points, and only rules are named to catch it");
      }
      for (const auto& name : job.variant->caught_by) {
        if (rules.count(name)) CHECK_MESSAGE(verdict.failed.count(name), "the rule '" << name << "' did not fail");
      }
    } else {
      ++tally.alternatives;
      if (verdict.failed.empty()) ++tally.passing;
      CHECK_MESSAGE(verdict.failed.empty(), "a correct alternative fails a rule");
      // Its launch sites as the GPU checks judge the edges their runs make: none against the lesson.
      CHECK_MESSAGE(verdict.against_the_lesson.empty(), "a correct alternative launches against the lesson");
    }
  }

  std::string table =
      "Mutants judged by the rules alone, without a GPU (`ctest -L mutants`, grader/tests/mutants_test.cpp).\n\n"
      "| exercise | mutants caught by rules | of them decided by rules alone | alternatives passing every rule |\n"
      "| --- | --- | --- | --- |\n";
  std::size_t caught = 0, mutants = 0;
  for (const auto& [key, t] : tallies) {
    table += "| " + key + " | " + fraction(t.caught, t.mutants) + " | " + std::to_string(t.decidable) + " | " +
             fraction(t.passing, t.alternatives) + " |\n";
    caught += t.caught;
    mutants += t.mutants;
  }
  write_file(kRulesScore, table);
  MESSAGE(jobs.size() << " files judged in " << static_cast<int>(seconds) << " s; rules catch " << caught << " of "
                      << mutants << " mutants (" << kRulesScore.string() << ")");
}

// ----- every catalogue graded on a GPU ------------------------------------------------------

TEST_CASE("mutants graded on the GPU") { grade_catalogues_on_gpu(); }

// ----- every reference through compute-sanitizer -------------------------------------------

// The sanitizer stage must pass every reference (the errors an exercise provokes on purpose are
// not findings) and still find a student's real memory error. The error here is child_grids'
// bounds test made inclusive, with the thread one past the range writing far past the output.
// A write just one past the end would not do: it lands in the DeviceArray's guard zone, which
// is allocated memory to memcheck (the check's download() reports that write instead).
TEST_CASE("references graded with --sanitize: no finding, and an out-of-bounds write is found") {
  if (!gpu_present()) {
    MESSAGE("CDPLAB_TEST_SKIPPED: no GPU (nvidia-smi lists none): compute-sanitizer needs one");
    return;
  }
  const fs::path class_dir = kWork / "sanitize" / "class";
  const fs::path grades = kWork / "sanitize" / "grades";
  fs::remove_all(class_dir);
  fs::create_directories(class_dir);
  fs::copy(kRoot / "solutions", class_dir / "references", fs::copy_options::recursive);
  const Catalogue* child_grids = nullptr;
  const auto catalogues = read_catalogues();
  for (const auto& c : catalogues)
    if (c.key() == "01-fundamentals/child_grids") child_grids = &c;
  REQUIRE(child_grids != nullptr);
  const Variant oob{"write-far-past-the-end",
                    "the thread one past the range writes 256 MiB past the output",
                    {{"if (j < end) out[j]", "if (j <= end) out[j + (j == end ? (1u << 26) : 0u)]"}},
                    {}};
  const auto& exercise = exercise_of(*child_grids);
  const std::string solution = cdplab::files::read_text(child_grids->solution());
  write_file(class_dir / "out-of-bounds" / child_grids->chapter / exercise.file, apply(solution, oob));

  const auto ran = cdplab_cli({"grade", class_dir.string(), "--out", grades.string(), "--force", "--sanitize",
                               "--parallel", "2"},
                              3600);
  INFO("cdplab grade said:\n" << ran.output.substr(ran.output.size() > 4000 ? ran.output.size() - 4000 : 0));
  REQUIRE(ran.started);
  auto report_of = [&](const std::string& student) {
    std::ifstream in(grades / "students" / student / "result.json");
    REQUIRE_MESSAGE(in, "no report for " << student);
    return cdplab::report::from_json(nlohmann::json::parse(in));
  };
  const auto references = report_of("references");
  std::size_t sanitized = 0;
  for (const auto& e : references.exercises) {
    for (const auto& item : e.items) {
      INFO(e.file << ": " << item.name << ": " << item.feedback);
      if (item.name.rfind("compute-sanitizer", 0) == 0) {
        // Passed, or skipped because the suite ran on no GPU (the quiz): a run that did not
        // finish must not pass for "no finding" here.
        CHECK((item.outcome == Outcome::passed ||
               (item.outcome == Outcome::skipped && item.feedback.find("ran on no GPU") != std::string::npos)));
        if (item.feedback.find("run again with") != std::string::npos) MESSAGE(e.file << ": " << item.feedback);
        if (item.outcome == Outcome::passed) ++sanitized;
      } else {
        CHECK(item.outcome == Outcome::passed);
      }
    }
  }
  MESSAGE("compute-sanitizer passed " << sanitized << " reference suites on " << references.device);
  CHECK(sanitized > 0);
  const auto mutant = report_of("out-of-bounds");
  bool found = false;
  for (const auto& e : mutant.exercises)
    for (const auto& item : e.items)
      if (e.id == exercise.id && item.name == "compute-sanitizer memcheck") {
        INFO(item.feedback);
        CHECK(item.outcome == Outcome::failed);
        CHECK(item.feedback.find("Invalid __global__") != std::string::npos);
        found = true;
      }
  CHECK_MESSAGE(found, "the out-of-bounds submission has no compute-sanitizer memcheck item");
}

