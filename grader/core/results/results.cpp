#include "results/results.h"

namespace cdplab::grading {

const char* to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::passed: return "passed";
    case Outcome::failed: return "failed";
    case Outcome::skipped: return "skipped";
  }
  return "failed";
}

const char* to_string(ItemKind kind) {
  switch (kind) {
    case ItemKind::check: return "check";
    case ItemKind::rule: return "rule";
    case ItemKind::question: return "question";
  }
  return "check";
}

double ExerciseResult::points() const {
  double sum = 0;
  for (const auto& item : items) sum += item.points;
  return sum > 0 ? sum : 0;  // a given rule broken takes points off, never below nothing
}

double ExerciseResult::max_points() const {
  double sum = 0;
  for (const auto& item : items) sum += item.max_points;
  return sum;
}

double ExerciseResult::decided_max_points() const {
  double sum = 0;
  for (const auto& item : items)
    if (item.outcome != Outcome::skipped) sum += item.max_points;
  return sum;
}

bool ExerciseResult::all_passed() const {
  if (!problem.empty() || items.empty()) return false;
  for (const auto& item : items)
    if (item.outcome != Outcome::passed) return false;
  return true;
}

double GradeReport::points() const {
  double sum = 0;
  for (const auto& e : exercises) sum += e.points();
  return sum;
}

double GradeReport::max_points() const {
  double sum = 0;
  for (const auto& e : exercises) sum += e.max_points();
  return sum;
}

double GradeReport::decided_max_points() const {
  double sum = 0;
  for (const auto& e : exercises) sum += e.decided_max_points();
  return sum;
}

int GradeReport::count(Outcome outcome) const {
  int n = 0;
  for (const auto& e : exercises)
    for (const auto& item : e.items) n += item.outcome == outcome ? 1 : 0;
  return n;
}

bool GradeReport::complete() const { return count(Outcome::skipped) == 0; }

bool GradeReport::has_failure() const { return count(Outcome::failed) > 0; }

}  // namespace cdplab::grading
