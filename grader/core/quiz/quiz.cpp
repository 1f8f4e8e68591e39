#include "quiz/quiz.h"

#include <toml++/toml.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace cdplab::quiz {
namespace {

namespace fs = std::filesystem;

/// A TOML value as the student wrote it: strings as they are, numbers and booleans as text.
std::string as_text(const toml::node& node) {
  if (const auto text = node.value<std::string>()) return *text;
  if (const auto* integer = node.as_integer()) return std::to_string(integer->get());
  if (const auto* boolean = node.as_boolean()) return boolean->get() ? "true" : "false";
  if (const auto* number = node.as_floating_point()) {
    std::ostringstream out;
    out << number->get();
    return out.str();
  }
  return "";  // a table or an array is no answer
}

/// The number a whole answer spells, if it is one.
bool parse_number(const std::string& text, double& value) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return errno == 0 && end == text.c_str() + text.size() && std::isfinite(value);
}

}  // namespace

Answers read_answers(const fs::path& file) {
  Answers answers;
  if (!fs::exists(file)) {
    answers.problem = "file missing: " + file.string();
    return answers;
  }
  toml::table root;
  try {
    root = toml::parse_file(file.string());
  } catch (const toml::parse_error& error) {
    answers.problem = file.filename().string() + " is not valid TOML";
    if (error.source().begin) answers.problem += " (line " + std::to_string(error.source().begin.line) + ")";
    answers.problem += ": " + std::string(error.description());
    return answers;
  }
  const auto* table = root["answers"].as_table();
  if (table == nullptr) {
    answers.problem = file.filename().string() + " has no [answers] table";
    return answers;
  }
  for (const auto& [key, value] : *table) answers.by_id[std::string(key.str())] = as_text(value);
  return answers;
}

std::string normalise(const std::string& answer) {
  std::string out;
  bool blank = false;
  for (const char c : answer) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      blank = !out.empty();
      continue;
    }
    if (blank) out += ' ';
    blank = false;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

bool accepts(const std::vector<std::string>& accepted, const std::string& given) {
  const std::string answer = normalise(given);
  if (answer.empty()) return false;
  double given_number = 0;
  const bool numeric = parse_number(answer, given_number);
  for (const auto& candidate : accepted) {
    const std::string expected = normalise(candidate);
    double expected_number = 0;
    if (numeric && parse_number(expected, expected_number)) {
      if (given_number == expected_number) return true;
    } else if (answer == expected) {
      return true;
    }
  }
  return false;
}

grading::ExerciseResult grade(const manifest::Exercise& exercise, const fs::path& exercise_dir) {
  grading::ExerciseResult result;
  result.chapter = exercise.chapter;
  result.id = exercise.id;
  result.title = exercise.title;
  result.file = exercise.path();
  if (!exercise.hints.empty()) result.hint = exercise.hints.front();

  const fs::path file = exercise_dir / exercise.chapter / exercise.file;
  Answers answers = read_answers(file);
  if (!fs::exists(file)) answers.problem = "file missing: " + exercise.path();
  if (!answers.problem.empty()) result.problem = answers.problem;
  for (const auto& question : exercise.questions) {
    grading::Item item;
    item.kind = grading::ItemKind::question;
    item.name = question.id;
    item.max_points = question.points;
    const auto given = answers.by_id.find(question.id);
    if (!answers.problem.empty()) {
      item.feedback = "not graded: " + answers.problem;
    } else if (given == answers.by_id.end()) {
      item.feedback = "no answer: " + exercise.file + " has no key '" + question.id +
                      "' in its [answers] table (keep the keys as the starter spells them)\nquestion: " + question.text;
    } else if (normalise(given->second).empty()) {
      item.feedback = "not answered yet: write your answer between the quotes of '" + question.id + "' in " +
                      exercise.path() + "\nquestion: " + question.text;
    } else if (accepts(question.answers, given->second)) {
      item.outcome = grading::Outcome::passed;
      item.points = question.points;
    } else {
      item.feedback = "your answer \"" + given->second + "\" is not right\nquestion: " + question.text;
      if (!question.hint.empty()) item.feedback += "\nthink about it: " + question.hint;
    }
    result.items.push_back(item);
  }
  return result;
}

}  // namespace cdplab::quiz
