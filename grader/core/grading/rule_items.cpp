// The rule stage of grading: a manifest's rules judged on the launch graph of the PTX.
#include "grading/grade.h"
#include "rules/launch_graph.h"
#include "rules/rule.h"

namespace cdplab::grading {

std::vector<Item> evaluate_rules(const manifest::Exercise& exercise, const std::string& ptx,
                                 const std::string& source_text) {
  std::vector<Item> items;
  std::string unreadable;
  rules::LaunchGraph graph;
  try {
    graph = rules::analyze_ptx(ptx);
    graph.attach_source(exercise.file, source_text);
  } catch (const std::exception& error) {
    unreadable = std::string("the rule checker could not read the PTX: ") + error.what();
  }
  for (const auto& rule : exercise.rules) {
    Item item;
    item.kind = ItemKind::rule;
    item.name = rules::describe(rule);
    item.max_points = rules::deducts(rule) ? 0 : rule.points;
    if (!unreadable.empty()) {
      item.feedback = unreadable;
    } else {
      const auto verdict = rules::evaluate(rule, graph);
      if (verdict.passed) {
        item.outcome = Outcome::passed;
        item.points = item.max_points;
      } else {
        if (rules::deducts(rule)) item.points = -rule.points;  // a deduction: the code broke it
        // The item's name is what the rule expects: say it again only where the verdict words it otherwise.
        const bool said = verdict.expected.empty() || verdict.expected == item.name;
        item.feedback = (said ? "" : "expected: " + verdict.expected + "\n") + "found: " + verdict.found;
        if (!rule.message.empty()) item.feedback += "\n" + rule.message;
      }
    }
    items.push_back(item);
  }
  return items;
}

}  // namespace cdplab::grading
