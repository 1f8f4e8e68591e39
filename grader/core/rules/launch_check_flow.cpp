#include "rules/launch_check_flow.h"

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

namespace cdplab::rules {
namespace {

/// How many (instruction, launches not yet checked, predicate values) states the walk may visit
/// before it gives up and reports nothing: a verdict it cannot reach is a pass.
constexpr std::size_t kStateBudget = 100000;

/// The predicate registers worth following: those that could tie one branch to another. Code
/// that tests one predicate twice (`if (c) launch; ...; if (c) check;`) cannot take the first
/// branch one way and the second the other; nor can a branch on a flag set to a constant next
/// to the launch. A predicate that guards a single branch and is never a copy or a constant
/// ties nothing, and following it would only multiply the states (the inlined loops of a
/// library's block-wide primitives test dozens of them).
std::set<std::string> branch_predicates(const ptx::Function& function) {
  std::map<std::string, int> branches;
  for (const auto& ins : function.body)
    if (ptx::opcode_base(ins.opcode) == "bra" && !ins.guard.empty())
      ++branches[ins.guard[0] == '!' ? ins.guard.substr(1) : ins.guard];
  // Copies (and negations) join predicates into one class: a value known of one is known of all.
  std::set<std::string> copied;
  std::map<std::string, std::set<std::string>> copies_of;
  for (const auto& ins : function.body) {
    const std::string base = ptx::opcode_base(ins.opcode);
    if ((base == "not" || base == "mov") && ins.operands.size() == 2) {
      const std::string& target = ins.operands[0];
      const std::string& source = ins.operands[1];
      if (ptx::is_integer_literal(source)) copied.insert(target);
      if (source.rfind('%', 0) == 0) {
        copies_of[target].insert(source);
        copies_of[source].insert(target);
      }
    }
  }
  std::set<std::string> tracked;
  for (const auto& [reg, count] : branches)
    if (count >= 2 || copied.count(reg) || copies_of.count(reg)) tracked.insert(reg);
  for (bool grown = true; grown;) {  // every copy of a tracked predicate is tracked too
    grown = false;
    for (const auto& reg : std::set<std::string>(tracked))
      if (const auto it = copies_of.find(reg); it != copies_of.end())
        for (const auto& other : it->second) grown = tracked.insert(other).second || grown;
  }
  return tracked;
}

struct PathState {
  std::size_t at = 0;
  std::set<int> pending;               ///< PTX lines of launches not checked yet on this path
  std::map<std::string, bool> values;  ///< what this path knows of the tracked predicates
};

}  // namespace

std::vector<int> unchecked_launches(const ptx::Function& function, const std::vector<bool>& launches,
                                    const std::vector<bool>& checks) {
  const auto& body = function.body;
  const std::size_t n = body.size();
  const auto labels = ptx::label_positions(function);
  const std::set<std::string> tracked = branch_predicates(function);

  std::set<int> found;
  std::set<std::tuple<std::size_t, std::set<int>, std::map<std::string, bool>>> seen;
  std::vector<PathState> work{PathState{}};
  while (!work.empty()) {
    PathState state = std::move(work.back());
    work.pop_back();
    if (state.at >= n) {  // off the end of the body: the function returns
      found.insert(state.pending.begin(), state.pending.end());
      continue;
    }
    if (!seen.insert({state.at, state.pending, state.values}).second) continue;
    if (seen.size() > kStateBudget) return {};

    const ptx::Instruction& ins = body[state.at];
    const std::string base = ptx::opcode_base(ins.opcode);
    if (checks[state.at]) state.pending.clear();
    if (launches[state.at]) state.pending.insert(ins.line);

    // What the instruction writes is no longer known, unless it is a constant or a copy.
    const auto targets = ptx::written_registers(ins);
    std::optional<bool> value;
    if ((base == "mov" || base == "not") && ins.operands.size() == 2) {
      const std::string& source = ins.operands[1];
      if (ptx::is_integer_literal(source)) {
        value = ptx::integer_value(source) != 0;
      } else if (const auto known = state.values.find(source); known != state.values.end()) {
        value = known->second;
      }
      if (value && base == "not") value = !*value;
    }
    for (const auto& reg : targets) state.values.erase(reg);
    if (value && ins.guard.empty() && targets.size() == 1 && tracked.count(targets[0]))
      state.values[targets[0]] = *value;

    if (base == "ret" || base == "exit") {
      found.insert(state.pending.begin(), state.pending.end());
      if (ins.guard.empty()) continue;
    }
    if (base == "trap" && ins.guard.empty()) continue;
    if (base == "bra" && !ins.guard.empty()) {
      const bool negated = ins.guard[0] == '!';
      const std::string reg = negated ? ins.guard.substr(1) : ins.guard;
      const bool follow = tracked.count(reg) > 0;
      const auto known = state.values.find(reg);
      const bool may_take = known == state.values.end() || known->second != negated;
      const bool may_skip = known == state.values.end() || known->second == negated;
      if (may_take) {
        PathState taken = state;
        if (follow) taken.values[reg] = !negated;
        for (const std::size_t to : ptx::branch_targets(function, state.at, labels)) {
          taken.at = to;
          work.push_back(taken);
        }
      }
      if (may_skip) {
        if (follow) state.values[reg] = negated;
        ++state.at;
        work.push_back(std::move(state));
      }
      continue;
    }
    for (const std::size_t to : ptx::branch_targets(function, state.at, labels)) {
      PathState next = state;
      next.at = to;
      work.push_back(std::move(next));
    }
    if (ptx::falls_through(ins)) {
      ++state.at;
      work.push_back(std::move(state));
    }
  }
  return {found.begin(), found.end()};
}

}  // namespace cdplab::rules
