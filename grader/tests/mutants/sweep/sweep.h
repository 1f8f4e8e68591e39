/// @file sweep.h
/// @brief The mechanical mutation sweep (grader/tests/mutants/README.md, "The mechanical sweep"):
///        the mutants of every reference solution (generator.h), checked to compile to PTX and
///        judged by the exercise's rules (`cdplab rules`), graded on a GPU by the class grader
///        (`cdplab grade CLASS --only EXERCISE`), exercise by exercise within a time budget, and
///        reported. Every stage keeps what it did in the sweep's folder, so a second run goes on
///        where the first stopped.
///
/// The sweep's folder:
///   rules/<chapter>_<stem>/<name>/      a mutant compiled by `cdplab rules`, and its verdict.json
///   class/<chapter>_<stem>/<name>/      the class graded for one exercise: one submission per mutant
///   grades/<chapter>_<stem>/            the class grader's results (students/<name>/result.json)
///   sweep-score.md, sweep-survivors.md, sweep-results.json   the report
/// where <name> is `<chapter>_<stem>.sweep.<id as a file name>`.
#pragma once

#include "generator.h"

#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace cdplab::sweep {

/// The sample a sweep takes by default: mutants per exercise (0: all of them).
inline constexpr std::size_t kDefaultSample = 10;
/// The kill rate below which the GPU test fails an exercise.
inline constexpr double kRequiredKillRate = 0.90;

/// The mutants of one programming exercise's reference solution.
struct ExerciseMutants {
  std::string chapter;      ///< "01-fundamentals"
  std::string stem;         ///< "child_grids"
  std::string file;         ///< "child_grids.cu"
  std::string exercise_id;  ///< "child-grids"
  std::filesystem::path solution;
  std::string source;
  std::vector<Mutant> mutants;
  std::vector<int> duplicate;  ///< see duplicates()

  std::string key() const { return chapter + "/" + stem; }
  std::string flat() const { return chapter + "_" + stem; }
  /// The submission's (student's) name of a mutant in the sweep's class.
  std::string submission(const Mutant& mutant) const { return flat() + ".sweep." + mutant.safe_id(); }
};

/// The mutants of the programming exercises of every chapter.toml below `root`, in the
/// workbook's order: all of them, or those `names` names (a chapter "01-fundamentals", an
/// exercise "child-grids" or "01-fundamentals/child_grids"). Throws std::runtime_error for a
/// name that is neither, or a solution that cannot be read.
std::vector<ExerciseMutants> generate_exercises(const std::filesystem::path& root, const std::vector<std::string>& names);

/// A mutant the lead proved equivalent to the reference: no submission can tell them apart.
struct Equivalent {
  std::string id;
  std::string why;
};

/// grader/tests/mutants/<chapter>/<stem>.equivalent.toml
std::filesystem::path equivalents_file(const std::filesystem::path& root, const std::string& chapter, const std::string& stem);

/// The `[[equivalent]]` tables of a file (none when it does not exist). Throws
/// std::runtime_error naming the file for bad TOML, an unknown key, a missing or empty `id` or
/// `why`, or an id listed twice.
std::vector<Equivalent> read_equivalents(const std::filesystem::path& file);

/// What a sweep does, and where.
struct Settings {
  std::filesystem::path root;    ///< the project
  std::filesystem::path out;     ///< the sweep's folder
  std::string cdplab;            ///< the cdplab command line
  std::vector<std::string> only; ///< chapters or exercises; empty: all
  std::size_t sample = kDefaultSample;  ///< mutants that compile, per exercise; 0: all
  double seconds = 0;            ///< budget of the whole run; 0: none
  unsigned compile_jobs = 0;     ///< `cdplab rules` at a time; 0: the cores, at most 8
  int parallel = 6;              ///< `cdplab grade --parallel`
  int build_jobs = 0;            ///< `cdplab -j`; 0: the build tool's choice
  bool grade = true;             ///< false: compile and judge the rules only (no GPU needed)
  bool grade_rule_kills = false; ///< grade on the GPU the mutants the rules already kill
  bool keep_work = false;        ///< keep the class grader's build trees (grades/<...>/work)
  std::ostream* log = nullptr;   ///< progress lines; nullptr: none
};

/// Where a mutant stands.
enum class State {
  duplicate,        ///< the same text as the reference or an earlier mutant: dropped
  not_tried,        ///< not in the sample, or the budget ran out before it was compiled
  did_not_compile,  ///< no PTX (`cdplab rules`), or the class grader could not build it
  killed_by_rules,  ///< a rule worth points fails in `cdplab rules`; not graded on the GPU
  killed,           ///< graded: lost points
  survived,         ///< graded: full marks
  equivalent,       ///< graded: full marks, and listed in the exercise's equivalents file
  not_graded,       ///< compiled, but not (or not completely) graded yet
};
const char* to_string(State state);

struct MutantOutcome {
  std::size_t index = 0;  ///< of the mutant in its ExerciseMutants::mutants
  State state = State::not_tried;
  std::string detail;     ///< the items that lost points, or why it did not compile
  bool listed_equivalent = false;
  std::string why;        ///< the equivalents file's reason
};

struct ExerciseOutcome {
  std::size_t exercise = 0;  ///< of the exercise in SweepOutcome::exercises
  std::vector<MutantOutcome> mutants;
  std::map<State, std::size_t> counts;
  std::string device;  ///< the GPU its mutants were graded on
  std::vector<std::string> unknown_equivalents;  ///< ids the equivalents file lists but the generator no longer makes

  std::size_t count(State s) const { return counts.count(s) ? counts.at(s) : 0; }
  std::size_t killed() const { return count(State::killed) + count(State::killed_by_rules); }
  /// Killed over killed + survived (equivalents left out); negative when nothing was decided.
  double kill_rate() const;
  /// Every mutant tried is decided: none compiled but left ungraded.
  bool complete() const { return count(State::not_graded) == 0; }
};

struct SweepOutcome {
  std::vector<ExerciseMutants> exercises;
  std::vector<ExerciseOutcome> outcomes;  ///< one per exercise, in the same order
  bool stopped = false;  ///< the budget ran out before everything was done
  bool graded = false;   ///< the GPU stage ran
};

/// Generates, compiles, grades (when `settings.grade` and a GPU is present) and reports.
SweepOutcome run_sweep(const Settings& settings);

/// Only the report of what the sweep's folder holds (nothing is compiled or graded).
SweepOutcome report_sweep(const Settings& settings);

/// The hash the sweep's folder records of a mutant's text (16 hexadecimal digits).
std::string hash_hex(const std::string& text);

}  // namespace cdplab::sweep
