/// @file class_fixtures.h
/// @brief What the tests of a graded class build by hand: a one-chapter workbook (a program
///        exercise and a 3-point quiz), its quiz answers, results and reports, and CSV lines.
#pragma once

#include "manifest/manifest.h"
#include "results/results.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace cdplab::testing {

/// A workbook of one chapter, built by hand: a program exercise and a quiz of 3 points.
inline manifest::Workbook sample_book() {
  manifest::Exercise code;
  code.chapter = "09-sample";
  code.id = "sample-kernel";
  code.file = "sample.cu";
  code.stem = "sample";
  code.title = "A sample kernel";
  code.checks = {{"runs", 2}};
  manifest::Exercise quiz;
  quiz.chapter = "09-sample";
  quiz.id = "sample-quiz";
  quiz.file = "quiz.toml";
  quiz.stem = "quiz";
  quiz.title = "A sample quiz";
  quiz.questions = {{"grids", "How many grids?", {"1024"}, "one per thread", 2},
                    {"wait", "Does the parent wait?", {"no"}, "", 1}};
  manifest::Chapter chapter;
  chapter.id = "09-sample";
  chapter.title = "Sample";
  chapter.exercises = {code, quiz};
  manifest::Workbook book;
  book.chapters = {chapter};
  return book;
}

/// The sample quiz answered right (3 points), and with one answer wrong (2 points).
inline const char* const kRightAnswers = "[answers]\ngrids = \"1024\"\nwait = \"no\"\n";
inline const char* const kOneWrong = "[answers]\ngrids = \"1024\"\nwait = \"yes\"\n";

/// An item of a result, built by hand.
inline grading::Item item(grading::ItemKind kind, const std::string& name, grading::Outcome outcome, double points,
                          double max_points, const std::string& feedback = "") {
  grading::Item i;
  i.kind = kind;
  i.name = name;
  i.outcome = outcome;
  i.points = points;
  i.max_points = max_points;
  i.feedback = feedback;
  return i;
}

/// An exercise of chapter 09-sample named `stem`, with these items.
inline grading::ExerciseResult exercise(const std::string& stem, std::vector<grading::Item> items) {
  grading::ExerciseResult e;
  e.chapter = "09-sample";
  e.id = stem;
  e.title = "Exercise " + stem;
  e.file = "09-sample/" + stem + ".cu";
  e.hint = "Read the lesson again.";
  e.items = std::move(items);
  return e;
}

/// A report of these exercises.
inline grading::GradeReport report_of(std::vector<grading::ExerciseResult> exercises) {
  grading::GradeReport r;
  r.exercises = std::move(exercises);
  return r;
}

/// The lines of a CSV text; each must end in CRLF.
inline std::vector<std::string> csv_lines(const std::string& csv) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < csv.size()) {
    const std::size_t end = csv.find("\r\n", pos);
    REQUIRE_MESSAGE(end != std::string::npos, "a CSV line without CRLF: ", csv.substr(pos));
    out.push_back(csv.substr(pos, end - pos));
    pos = end + 2;
  }
  return out;
}

}  // namespace cdplab::testing
