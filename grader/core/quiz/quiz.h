/// @file quiz.h
/// @brief Short-answer quizzes: the student's answers file and how an answer is judged.
///
/// A quiz exercise names a .toml file in its chapter folder. The student writes each answer
/// under the question's id in its `[answers]` table:
///
/// ```toml
/// [answers]
/// children-launched = "1024"
/// ```
///
/// An answer is accepted when it equals one of the question's accepted answers after both are
/// normalised: surrounding blanks and a final full stop dropped, letters lower-cased, runs of
/// blanks made one space. When both are numbers they are compared as numbers ("1024.0" is 1024).
#pragma once

#include "manifest/manifest.h"
#include "results/results.h"

#include <filesystem>
#include <map>
#include <string>

namespace cdplab::quiz {

/// What a quiz file holds: the answer given for each question id (numbers as written).
struct Answers {
  std::map<std::string, std::string> by_id;
  std::string problem;  ///< empty, or why the file could not be read (missing, not TOML, no [answers])
};

/// Reads a student's quiz file.
Answers read_answers(const std::filesystem::path& file);

/// The comparable form of an answer (see the file comment).
std::string normalise(const std::string& answer);

/// Whether `given` matches one of `accepted`.
bool accepts(const std::vector<std::string>& accepted, const std::string& given);

/// Grades a quiz exercise from the answers file in `exercise_dir` (laid out like chapters/).
grading::ExerciseResult grade(const manifest::Exercise& exercise, const std::filesystem::path& exercise_dir);

}  // namespace cdplab::quiz
