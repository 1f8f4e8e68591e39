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

/// What a predicate tells of the threads that see it true, and false: the one thread left (its
/// tag), or kAnyThread.
struct ThreadTest {
  long if_true = kAnyThread;
  long if_false = kAnyThread;
};

/// The one thread that both conditions leave (either, when they contradict each other).
long narrower(long a, long b) { return a == kAnyThread ? b : a; }
/// The one thread that either condition leaves, when it is the same one.
long wider(long a, long b) { return a == b ? a : kAnyThread; }

/// Whether an instruction with this opcode base computes its result from its sources alone.
bool arithmetic(const std::string& base) {
  return base == "mov" || base == "cvt" || base == "add" || base == "sub" || base == "mul" || base == "mad" ||
         base == "shl" || base == "shr" || base == "and" || base == "or" || base == "xor" || base == "min" ||
         base == "max" || base == "div" || base == "rem";
}

/// The registers an instruction writes: its first operand, unless it writes memory or nothing.
std::vector<std::string> written(const Instruction& ins) {
  static const std::set<std::string> writes_none = {"st", "bra", "call", "ret", "exit", "bar", "barrier", "red",
                                                    "membar", "fence", "trap", "prefetch"};
  const std::string base = ptx::opcode_base(ins.opcode);
  if (ins.operands.empty() || ins.opcode.front() == '.' || writes_none.count(base)) return {};
  std::vector<std::string> out;
  std::string part;
  for (char c : ins.operands[0] + "|") {  // setp may write two predicates: %p1|%p2
    if (c != '|') {
      part += c;
      continue;
    }
    if (part.rfind('%', 0) == 0) out.push_back(part);
    part.clear();
  }
  return out;
}

/// The predicates of `function` that single out one thread: comparisons of `%tid.x` (or a copy
/// of it) with a value every thread of the block has alike, a constant or one computed from
/// constants, kernel parameters and the block's and grid's shape and index (`threadIdx.x == 0`,
/// `threadIdx.x == blockDim.x - 1`, `(threadIdx.x | blockIdx.x) == 0`), and their combinations
/// with `and`, `or` and `not`. Only registers written once, unguarded, are trusted: a value
/// written in a loop or on one path of several may differ between threads or rounds. A function
/// that reads `%tid.y` or `%tid.z` runs in blocks of more than one dimension, where a test of
/// `%tid.x` leaves a column of threads: it gets no such predicates.
std::map<std::string, ThreadTest> thread_tests(const ptx::Function& function) {
  std::map<std::string, ThreadTest> tests;
  std::map<std::string, int> writes;  // a guarded write counts as two: never trusted
  for (const Instruction& ins : function.body) {
    for (const auto& reg : written(ins)) writes[reg] += ins.guard.empty() ? 1 : 2;
    for (const auto& op : ins.operands)
      if (op.find("%tid.y") != std::string::npos || op.find("%tid.z") != std::string::npos) return tests;
  }
  auto once = [&](const std::string& reg) { return writes[reg] == 1; };

  std::set<std::string> thread_index;  // registers holding %tid.x
  std::set<std::string> zero_only_at_0;  // registers that are 0 only where %tid.x is 0 (tid | value)
  std::set<std::string> uniform;       // registers the block's threads hold alike
  std::map<std::string, long> tag_of;  // a uniform register's tag (below kAnyThread)
  auto is_uniform = [&](const std::string& operand) {
    return ptx::is_integer_literal(operand) || uniform.count(operand) || operand.rfind("%ntid.", 0) == 0 ||
           operand.rfind("%nctaid.", 0) == 0 || operand.rfind("%ctaid.", 0) == 0;
  };
  auto test_of = [&](const std::string& operand) {
    const bool negated = !operand.empty() && operand.front() == '!';
    const auto it = tests.find(negated ? operand.substr(1) : operand);
    const ThreadTest test = it == tests.end() ? ThreadTest{} : it->second;
    return negated ? ThreadTest{test.if_false, test.if_true} : test;
  };
  for (const Instruction& ins : function.body) {
    const std::string base = ptx::opcode_base(ins.opcode);
    const auto& ops = ins.operands;
    const auto targets = written(ins);
    if (targets.size() != 1 || !once(targets[0])) continue;
    const std::string& out = targets[0];
    if ((base == "mov" || base == "cvt") && ops.size() == 2 && (ops[1] == "%tid.x" || thread_index.count(ops[1]))) {
      thread_index.insert(out);
    } else if (base == "ld" && ptx::has_component(ins.opcode, "param") && ops.size() == 2) {
      // A kernel's own parameter (not a device function's, nor a call's return value).
      if (function.is_kernel && ptx::address_base(ops[1]).find("_param_") != std::string::npos) uniform.insert(out);
    } else if (base == "or" && ops.size() == 3 && (thread_index.count(ops[1]) || thread_index.count(ops[2]) ||
                                                   zero_only_at_0.count(ops[1]) || zero_only_at_0.count(ops[2]))) {
      zero_only_at_0.insert(out);
    } else if (arithmetic(base) && ops.size() >= 2 &&
               std::all_of(ops.begin() + 1, ops.end(), [&](const std::string& op) { return is_uniform(op); })) {
      uniform.insert(out);
    } else if (base == "setp" && ops.size() == 3) {
      const bool equal = ptx::has_component(ins.opcode, "eq");
      if (!equal && !ptx::has_component(ins.opcode, "ne")) continue;
      for (int side = 1; side <= 2; ++side) {
        const std::string& value = ops[side];
        const std::string& other = ops[side == 1 ? 2 : 1];
        long tag = kAnyThread;
        if (zero_only_at_0.count(value) && ptx::is_integer_literal(other) && ptx::integer_value(other) == 0) {
          tag = 0;
        } else if (!thread_index.count(value) || !is_uniform(other)) {
          continue;
        } else if (ptx::is_integer_literal(other)) {
          tag = static_cast<long>(ptx::integer_value(other));
          if (tag < 0) continue;  // no thread has it
        } else {  // another shared value: a tag below kAnyThread, one per register
          tag = tag_of.emplace(other, kAnyThread - 1 - static_cast<long>(tag_of.size())).first->second;
        }
        tests[out] = equal ? ThreadTest{tag, kAnyThread} : ThreadTest{kAnyThread, tag};
      }
    } else if ((base == "and" || base == "or") && ptx::has_component(ins.opcode, "pred") && ops.size() == 3) {
      const ThreadTest a = test_of(ops[1]);
      const ThreadTest b = test_of(ops[2]);
      tests[out] = base == "and" ? ThreadTest{narrower(a.if_true, b.if_true), wider(a.if_false, b.if_false)}
                                 : ThreadTest{wider(a.if_true, b.if_true), narrower(a.if_false, b.if_false)};
    } else if (base == "not" && ptx::has_component(ins.opcode, "pred") && ops.size() == 2) {
      const ThreadTest a = test_of(ops[1]);
      tests[out] = ThreadTest{a.if_false, a.if_true};
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
    return holds != negated ? it->second.if_true : it->second.if_false;
  };

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
      out.stores.insert({ins.guard.empty() ? out.thread : narrower(one_thread(ins.guard, true), out.thread), ins.line});

    const std::string base = ptx::opcode_base(ins.opcode);
    if (base == "bra" && !ins.operands.empty()) {
      const auto target = label_at.find(ins.operands[0]);
      State taken = out;
      if (!ins.guard.empty()) taken.thread = narrower(one_thread(ins.guard, true), out.thread);
      if (target != label_at.end()) {
        flow(target->second, taken);
      } else {  // a target not found (an indirect branch, say): any labelled statement, to be safe
        for (const auto& [label, at] : label_at) flow(at, taken);
      }
      if (ins.guard.empty()) continue;
      out.thread = narrower(one_thread(ins.guard, false), out.thread);
    } else if (base == "ret" || base == "exit" || base == "trap") {
      if (ins.guard.empty()) continue;
      out.thread = narrower(one_thread(ins.guard, false), out.thread);  // the threads that go on
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
