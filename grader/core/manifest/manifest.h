/// @file manifest.h
/// @brief The chapters and exercises the workbook holds, read from chapters/<chapter>/chapter.toml.
///
/// The manifests are always read from the project's own chapters/ folder (never from a
/// submission), so points, rules and hints cannot be changed by the work being graded.
#pragma once

#include "rules/rule.h"

#include <filesystem>
#include <string>
#include <vector>

namespace cdplab::manifest {

/// A check of an exercise's test suite and its points.
struct CheckSpec {
  std::string name;
  double points = 1;
  /// `memcheck = true`: the check passes only when, run again under compute-sanitizer memcheck
  /// (the device heap included), it makes no invalid memory access either: a write one past a
  /// buffer that no output shows (one the student's code allocates on the device heap, say).
  bool memcheck = false;
  /// `timeline = true`: the check judges the order in which grids ran. It records its grids in
  /// every check and grading (grading::recorded_checks); when it fails, its feedback shows when each
  /// grid of its last run ran, and its timeline stands for the exercise in `--timelines` pictures
  /// (report/grid_timeline.h).
  bool timeline = false;
};

/// A short-answer question of a quiz exercise, and the answers that are accepted.
struct QuestionSpec {
  std::string id;                    ///< the key the student answers under in the quiz file
  std::string text;                  ///< the question
  std::vector<std::string> answers;  ///< accepted answers (compared as quiz.h describes)
  std::string hint;                  ///< shown when the answer given is not accepted
  double points = 1;
};

/// One exercise of a chapter: a programming exercise (a .cu file with a test suite and rules)
/// or a quiz (a .toml file of short answers, graded without building anything).
struct Exercise {
  std::string chapter;               ///< "01-fundamentals"
  std::string id;                    ///< "child-grids": what a student types
  std::string file;                  ///< "child_grids.cu"
  std::string stem;                  ///< "child_grids": names the suite and the targets
  std::string title;
  std::vector<std::string> course;   ///< where the course material teaches it
  std::vector<std::string> hints;
  std::vector<CheckSpec> checks;
  std::vector<rules::RuleSpec> rules;  ///< [[exercise.rule]]: CDP rules checked on the PTX
  std::vector<QuestionSpec> questions; ///< [[exercise.question]]: a quiz's short answers

  /// "01-fundamentals/child_grids.cu"
  std::string path() const { return chapter + "/" + file; }
  double max_points() const;
  /// A quiz: answers in a .toml file instead of code.
  bool is_quiz() const { return !questions.empty(); }
};

struct Chapter {
  std::string id;      ///< the folder name
  std::string title;
  std::vector<Exercise> exercises;
};

/// Every chapter of the workbook, in the order of their folder names.
struct Workbook {
  std::vector<Chapter> chapters;
  /// Chapters the grader has suites for (grader/suites/<chapter>/) whose folder in chapters/, or
  /// its chapter.toml, is missing: a deleted or moved chapter, which list and check name instead
  /// of leaving it out of the total in silence.
  std::vector<std::string> missing_chapters;

  /// Finds an exercise by id ("child-grids"), stem ("child_grids"), file name or
  /// "chapter/stem", also as a path below the project's top ("chapters/01-fundamentals/child_grids.cu",
  /// and "chapters/01-fundamentals/" for find_chapter); nullptr when there is none.
  const Exercise* find_exercise(const std::string& name) const;
  const Chapter* find_chapter(const std::string& id) const;
  /// All exercises, chapter by chapter.
  std::vector<const Exercise*> exercises() const;
  /// The exercises `names` name, in their order: a chapter ("01-fundamentals") gives all of its
  /// own, an exercise (find_exercise) itself; all when `names` is empty. The first name that is
  /// neither goes into `unknown`, and then nothing is returned.
  std::vector<const Exercise*> select(const std::vector<std::string>& names, std::string& unknown) const;
};

/// Reads one chapter.toml; throws std::runtime_error naming the file and the problem.
Chapter load_chapter(const std::filesystem::path& chapter_toml);

/// Reads chapters/*/chapter.toml below `project_root`.
Workbook load_workbook(const std::filesystem::path& project_root);

}  // namespace cdplab::manifest
