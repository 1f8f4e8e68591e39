#include "rules/barrier_flow.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace cdplab::rules {
namespace {

using ptx::Instruction;

/// The thread tag of code that every thread may run. Other tags name the one thread that runs
/// it: its `%tid` value (0 or more), or a value computed at run time (below kAnyThread).
constexpr long kAnyThread = -1;

/// A predicate that compares a thread index with a value the whole block shares: true when
/// `%tid` equals it (`equal`), or when it differs (not `equal`). `thread` names the value: the
/// constant, or the register (then a negative tag of its own).
struct ThreadTest {
  long thread = 0;
  bool equal = true;
};

/// Whether an instruction with this opcode base computes its result from its sources alone.
bool arithmetic(const std::string& base) {
  return base == "mov" || base == "cvt" || base == "add" || base == "sub" || base == "mul" || base == "mad" ||
         base == "shl" || base == "shr" || base == "and" || base == "or" || base == "xor" || base == "min" ||
         base == "max" || base == "div" || base == "rem";
}

/// The predicates of `function` that compare `%tid.x`, `%tid.y` or `%tid.z` (or a copy of one)
/// with a value every thread of the block has alike: a constant, or one computed from constants,
/// kernel parameters and the block's and grid's shape and index (`threadIdx.x == 0`,
/// `threadIdx.x == blockDim.x - 1`).
std::map<std::string, ThreadTest> thread_tests(const ptx::Function& function) {
  std::set<std::string> thread_index;  // registers holding a %tid component
  std::set<std::string> uniform;       // registers the block's threads hold alike
  std::map<std::string, long> tag_of;  // a uniform register's tag (below kAnyThread)
  auto is_uniform = [&](const std::string& operand) {
    return ptx::is_integer_literal(operand) || uniform.count(operand) || operand.rfind("%ntid.", 0) == 0 ||
           operand.rfind("%nctaid.", 0) == 0 || operand.rfind("%ctaid.", 0) == 0;
  };
  std::map<std::string, ThreadTest> tests;
  for (const Instruction& ins : function.body) {
    const std::string base = ptx::opcode_base(ins.opcode);
    const auto& ops = ins.operands;
    if (ops.empty() || !ins.guard.empty()) continue;
    if ((base == "mov" || base == "cvt") && ops.size() == 2 &&
        (ops[1].rfind("%tid.", 0) == 0 || thread_index.count(ops[1]))) {
      thread_index.insert(ops[0]);
      continue;
    }
    if (base == "ld" && ptx::has_component(ins.opcode, "param") && ops.size() == 2) {
      // A kernel's own parameter (not a device function's, nor a call's return value).
      if (function.is_kernel && ptx::address_base(ops[1]).find("_param_") != std::string::npos) uniform.insert(ops[0]);
      continue;
    }
    if (arithmetic(base) && ops.size() >= 2 &&
        std::all_of(ops.begin() + 1, ops.end(), [&](const std::string& op) { return is_uniform(op); })) {
      uniform.insert(ops[0]);
      continue;
    }
    if (base != "setp" || ops.size() != 3) continue;
    const bool equal = ptx::has_component(ins.opcode, "eq");
    if (!equal && !ptx::has_component(ins.opcode, "ne")) continue;
    for (int side = 1; side <= 2; ++side) {
      const std::string& other = ops[side == 1 ? 2 : 1];
      if (!thread_index.count(ops[side]) || !is_uniform(other)) continue;
      // A constant is its own tag; another shared value gets a tag below kAnyThread, one per register.
      long tag = 0;
      if (ptx::is_integer_literal(other)) {
        tag = static_cast<long>(ptx::integer_value(other));
        if (tag < 0) continue;  // no thread has it
      } else {
        const auto it = tag_of.emplace(other, kAnyThread - 1 - static_cast<long>(tag_of.size())).first;
        tag = it->second;
      }
      tests[ops[0]] = ThreadTest{tag, equal};
    }
  }
  return tests;
}

/// What the analysis knows before an instruction: which thread may run it, and the stores since
/// the last barrier, each with the thread tag of the code that made it.
struct State {
  bool reached = false;
  long thread = kAnyThread;
  std::set<std::pair<long, int>> stores;  // (thread tag, PTX line)

  /// Joins `other` into this state; returns whether this state changed.
  bool join(const State& other) {
    if (!other.reached) return false;
    if (!reached) {
      *this = other;
      return true;
    }
    bool changed = false;
    if (thread != other.thread && thread != kAnyThread) {
      thread = kAnyThread;
      changed = true;
    }
    for (const auto& store : other.stores) changed = stores.insert(store).second || changed;
    return changed;
  }
};

}  // namespace

std::vector<UnguardedLaunchSite> unguarded_launches(const ptx::Function& function, const std::vector<FlowEvent>& events) {
  const auto& body = function.body;
  const std::size_t n = body.size();
  std::vector<UnguardedLaunchSite> found;
  if (n == 0) return found;

  std::map<std::string, std::size_t> label_at;
  for (std::size_t i = 0; i < n; ++i)
    for (const auto& label : body[i].labels) label_at[label] = i;
  const auto tests = thread_tests(function);

  // The one thread that runs code under `guard` when the guard is `holds` (true or false), if
  // the guard says so; kAnyThread otherwise.
  auto one_thread = [&](const std::string& guard, bool holds) {
    const bool negated = !guard.empty() && guard.front() == '!';
    const auto it = tests.find(negated ? guard.substr(1) : guard);
    if (it == tests.end()) return kAnyThread;
    const bool tid_equals = it->second.equal != negated ? holds : !holds;
    return tid_equals ? it->second.thread : kAnyThread;
  };
  auto narrowed = [](long thread, long to) { return to == kAnyThread ? thread : to; };

  std::vector<State> before(n);
  before[0].reached = true;
  std::deque<std::size_t> work{0};
  std::vector<bool> queued(n, false);
  queued[0] = true;
  auto flow = [&](std::size_t to, const State& state) {
    if (to < n && before[to].join(state) && !queued[to]) {
      queued[to] = true;
      work.push_back(to);
    }
  };
  while (!work.empty()) {
    const std::size_t i = work.front();
    work.pop_front();
    queued[i] = false;
    const Instruction& ins = body[i];
    State out = before[i];
    if (events[i] == FlowEvent::barrier) out.stores.clear();
    if (events[i] == FlowEvent::store)
      out.stores.insert({ins.guard.empty() ? out.thread : narrowed(out.thread, one_thread(ins.guard, true)), ins.line});

    const std::string base = ptx::opcode_base(ins.opcode);
    if (base == "bra" && !ins.operands.empty()) {
      const auto target = label_at.find(ins.operands[0]);
      State taken = out;
      if (!ins.guard.empty()) taken.thread = narrowed(out.thread, one_thread(ins.guard, true));
      if (target != label_at.end()) flow(target->second, taken);
      if (ins.guard.empty()) continue;
      out.thread = narrowed(out.thread, one_thread(ins.guard, false));
    } else if ((base == "ret" || base == "exit" || base == "trap") && ins.guard.empty()) {
      continue;
    }
    flow(i + 1, out);
  }

  for (std::size_t i = 0; i < n; ++i) {
    if (events[i] != FlowEvent::launch || !before[i].reached) continue;
    const State& state = before[i];
    int latest = 0;
    for (const auto& [thread, line] : state.stores)
      if (state.thread == kAnyThread || thread != state.thread) latest = std::max(latest, line);
    if (latest != 0) found.push_back({body[i].line, latest});
  }
  return found;
}

}  // namespace cdplab::rules
