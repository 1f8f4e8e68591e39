#include "rules/barrier_flow.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

namespace cdplab::rules {
namespace {

using ptx::Instruction;

/// The tag of a special register the block shares (`%ctaid.x`, `%ntid.x`): not a thread's own,
/// so a test against it gets the tag of the test instead.
constexpr long kSpecialTag = kAnyThread - 2;

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

/// What a register holds, as far as telling threads apart needs it.
struct Meaning {
  enum Kind {
    unknown,
    thread_index,   ///< `%tid.x`
    shifted_index,  ///< `%tid.x` plus a value the block shares (`blockIdx.x * blockDim.x + threadIdx.x`)
    zero_at_0,      ///< 0 only where `%tid.x` is 0 (`threadIdx.x | blockIdx.x`)
    shared_value,   ///< a value every thread of the block holds alike
    test,           ///< a predicate (see `test_value`)
  } kind = unknown;
  long tag = kAnyThread;  ///< shared_value: the constant (0 or more), or a tag below kAnyThread
  ThreadTest test_value;  ///< test: what the predicate tells
};

/// What `setp.<cmp> p, a, b` tells when it compares a thread index with a shared value (either
/// side): equality singles out one thread where it holds, inequality where it fails. An order
/// test of `%tid.x` itself against 0 or 1 singles out thread 0 (`threadIdx.x < 1`, `> 0`, as
/// a signed int). `made_here` tags a thread chosen by a value that is not a constant.
ThreadTest index_test(const std::string& opcode, const Meaning& a, const Meaning& b, long made_here) {
  const bool index_left = a.kind == Meaning::thread_index || a.kind == Meaning::shifted_index;
  const Meaning& index = index_left ? a : b;
  const Meaning& value = index_left ? b : a;
  auto has = [&](const char* part) { return ptx::has_component(opcode, part); };
  if (index.kind == Meaning::zero_at_0 || value.kind == Meaning::zero_at_0) {  // (tid | v) == 0
    const Meaning& zero = index.kind == Meaning::zero_at_0 ? value : index;
    if (zero.kind != Meaning::shared_value || zero.tag != 0) return {};
    if (has("eq")) return {0, kAnyThread};
    if (has("ne")) return {kAnyThread, 0};
    return {};
  }
  if ((index.kind != Meaning::thread_index && index.kind != Meaning::shifted_index) ||
      value.kind != Meaning::shared_value)
    return {};
  const long tag = index.kind == Meaning::thread_index && value.tag != kSpecialTag ? value.tag : made_here;
  if (has("eq")) return {tag, kAnyThread};
  if (has("ne")) return {kAnyThread, tag};
  if (index.kind != Meaning::thread_index || (value.tag != 0 && value.tag != 1)) return {};
  // Written with the index on the left: index < 1, index <= 0 mean thread 0; > 0, >= 1 its opposite.
  const bool lt = has("lt") || has("lo"), le = has("le") || has("ls"), gt = has("gt") || has("hi"),
             ge = has("ge") || has("hs");
  const bool zero_when_true = index_left ? (lt && value.tag == 1) || (le && value.tag == 0)
                                         : (gt && value.tag == 1) || (ge && value.tag == 0);
  const bool zero_when_false = index_left ? (gt && value.tag == 0) || (ge && value.tag == 1)
                                          : (lt && value.tag == 0) || (le && value.tag == 1);
  if (zero_when_true) return {0, kAnyThread};
  if (zero_when_false) return {kAnyThread, 0};
  return {};
}

/// For each instruction of `function`, what its guard (with its `!`, if any) tells of the
/// threads that run it and of those that do not; an instruction without a guard tells nothing. A guard singles out one thread when it compares `%tid.x` (or a copy, or
/// `%tid.x` plus a shared value) with a value every thread of the block has alike: a constant,
/// or one computed from constants, kernel parameters and the block's and grid's shape and index
/// (`threadIdx.x == 0`, `threadIdx.x == blockDim.x - 1`, `(threadIdx.x | blockIdx.x) == 0`,
/// `threadIdx.x < 1`), or combines such tests with `and`, `or` and `not`.
///
/// PTX reuses registers, so a register's meaning is trusted where it is certain: written earlier
/// in the same straight run of instructions (no label, no branch in between), or written only
/// once in the whole function, unguarded. A function that reads `%tid.y` or `%tid.z` runs in
/// blocks of more than one dimension, where a test of `%tid.x` leaves a column of threads: no
/// guard of it singles out a thread.
std::vector<ThreadTest> guard_tests(const ptx::Function& function) {
  const auto& body = function.body;
  std::vector<ThreadTest> guards(body.size());
  std::map<std::string, int> writes;  // a guarded write counts as two: never trusted
  for (const Instruction& ins : body) {
    for (const auto& reg : ptx::written_registers(ins)) writes[reg] += ins.guard.empty() ? 1 : 2;
    for (const auto& op : ins.operands)
      if (op.find("%tid.y") != std::string::npos || op.find("%tid.z") != std::string::npos) return guards;
  }

  std::map<std::string, Meaning> once;   // registers written once: what they hold
  std::map<std::string, Meaning> local;  // registers written in the current straight run
  auto meaning_of = [&](const std::string& operand) {
    Meaning m;
    if (operand == "%tid.x") {
      m.kind = Meaning::thread_index;
    } else if (ptx::is_integer_literal(operand)) {
      m.kind = Meaning::shared_value;
      m.tag = static_cast<long>(ptx::integer_value(operand));
      if (m.tag < 0) m.tag = kAnyThread - 1;  // no thread has it; any tag of its own will do
    } else if (operand.rfind("%ntid.", 0) == 0 || operand.rfind("%nctaid.", 0) == 0 ||
               operand.rfind("%ctaid.", 0) == 0) {
      m.kind = Meaning::shared_value;
      m.tag = kSpecialTag;
    } else if (const auto it = local.find(operand); it != local.end()) {
      m = it->second;
    } else if (const auto at = once.find(operand); at != once.end()) {
      m = at->second;
    }
    return m;
  };
  auto test_of = [&](const std::string& operand) {
    const bool negated = !operand.empty() && operand.front() == '!';
    const Meaning m = meaning_of(negated ? operand.substr(1) : operand);
    const ThreadTest test = m.kind == Meaning::test ? m.test_value : ThreadTest{};
    return negated ? ThreadTest{test.if_false, test.if_true} : test;
  };
  auto index_like = [](const Meaning& m) { return m.kind == Meaning::thread_index || m.kind == Meaning::shifted_index; };
  // A tag of its own for a value made at instruction i (below kAnyThread, and below the others).
  auto tag_made_at = [](std::size_t i) { return kAnyThread - 3 - static_cast<long>(i); };

  for (std::size_t i = 0; i < body.size(); ++i) {
    const Instruction& ins = body[i];
    if (!ins.labels.empty()) local.clear();  // another path may enter here
    const std::string base = ptx::opcode_base(ins.opcode);
    const auto& ops = ins.operands;
    if (!ins.guard.empty()) guards[i] = test_of(ins.guard);

    Meaning made;  // what the instruction's register holds after it
    const bool binary = ops.size() == 3;
    if ((base == "mov" || base == "cvt") && ops.size() == 2) {
      made = meaning_of(ops[1]);
    } else if (base == "ld" && ptx::has_component(ins.opcode, "param") && ops.size() == 2) {
      // A kernel's own parameter (not a device function's, nor a call's return value).
      if (function.is_kernel && ptx::address_base(ops[1]).find("_param_") != std::string::npos)
        made = Meaning{Meaning::shared_value, tag_made_at(i), {}};
    } else if (base == "or" && !ptx::has_component(ins.opcode, "pred") && binary) {
      const Meaning a = meaning_of(ops[1]);
      const Meaning b = meaning_of(ops[2]);
      const auto zero_only_at_0 = [&](const Meaning& m) {
        return m.kind == Meaning::thread_index || m.kind == Meaning::zero_at_0;
      };
      if (zero_only_at_0(a) || zero_only_at_0(b)) made.kind = Meaning::zero_at_0;
      else if (a.kind == Meaning::shared_value && b.kind == Meaning::shared_value)
        made = Meaning{Meaning::shared_value, tag_made_at(i), {}};
    } else if ((base == "add" || base == "sub") && binary) {
      const Meaning a = meaning_of(ops[1]);
      const Meaning b = meaning_of(ops[2]);
      if ((index_like(a) && b.kind == Meaning::shared_value) || (base == "add" && index_like(b) && a.kind == Meaning::shared_value))
        made.kind = Meaning::shifted_index;
      else if (a.kind == Meaning::shared_value && b.kind == Meaning::shared_value)
        made = Meaning{Meaning::shared_value, tag_made_at(i), {}};
    } else if (base == "mad" && ops.size() == 4 && meaning_of(ops[1]).kind == Meaning::shared_value &&
               meaning_of(ops[2]).kind == Meaning::shared_value) {
      const Meaning c = meaning_of(ops[3]);
      if (index_like(c)) made.kind = Meaning::shifted_index;
      else if (c.kind == Meaning::shared_value) made = Meaning{Meaning::shared_value, tag_made_at(i), {}};
    } else if (arithmetic(base) && ops.size() >= 2 && !ptx::has_component(ins.opcode, "pred") &&
               std::all_of(ops.begin() + 1, ops.end(),
                           [&](const std::string& op) { return meaning_of(op).kind == Meaning::shared_value; })) {
      made = Meaning{Meaning::shared_value, tag_made_at(i), {}};
    } else if (base == "setp" && binary) {
      made.kind = Meaning::test;
      made.test_value = index_test(ins.opcode, meaning_of(ops[1]), meaning_of(ops[2]), tag_made_at(i));
    } else if ((base == "and" || base == "or") && ptx::has_component(ins.opcode, "pred") && binary) {
      const ThreadTest a = test_of(ops[1]);
      const ThreadTest b = test_of(ops[2]);
      made.kind = Meaning::test;
      made.test_value = base == "and" ? ThreadTest{narrower(a.if_true, b.if_true), wider(a.if_false, b.if_false)}
                                      : ThreadTest{wider(a.if_true, b.if_true), narrower(a.if_false, b.if_false)};
    } else if (base == "not" && ptx::has_component(ins.opcode, "pred") && ops.size() == 2) {
      const ThreadTest a = test_of(ops[1]);
      made.kind = Meaning::test;
      made.test_value = ThreadTest{a.if_false, a.if_true};
    }

    const auto targets = ptx::written_registers(ins);
    for (const auto& reg : targets) {
      local[reg] = targets.size() == 1 && ins.guard.empty() ? made : Meaning{};
      if (writes[reg] == 1) once[reg] = local[reg];
    }
    if (base == "bra" || base == "ret" || base == "exit") local.clear();  // the straight run ends
  }
  return guards;
}

/// What the analysis knows before an instruction: which thread may run it, and the stores since
/// the last barrier, each with the thread tag of the code that made it.
struct State {
  bool reached = false;
  long thread = kAnyThread;
  std::set<std::tuple<long, int, bool>> stores;  // (thread tag, PTX line, ordered by __syncwarp())

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

/// What the analysis knows before each instruction of `function`, followed along its control
/// flow; `guards` from guard_tests.
std::vector<State> states_before(const ptx::Function& function, const std::vector<FlowEvent>& events,
                                 const std::vector<ThreadTest>& guards) {
  const auto& body = function.body;
  const std::size_t n = body.size();
  const auto labels = ptx::label_positions(function);
  // The one thread that runs instruction i when its guard is `holds` (true or false), if the
  // guard says so; kAnyThread otherwise (also when it has no guard).
  auto one_thread = [&](std::size_t i, bool holds) { return holds ? guards[i].if_true : guards[i].if_false; };

  std::vector<State> before(n);
  if (n == 0) return before;
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
    if (events[i] == FlowEvent::warp_barrier) {
      std::set<std::tuple<long, int, bool>> ordered;
      for (const auto& [thread, line, warp_ordered] : out.stores) ordered.insert({thread, line, true});
      out.stores = std::move(ordered);
    }
    if (events[i] == FlowEvent::store)
      out.stores.insert({narrower(one_thread(i, true), out.thread), ins.line, false});

    const auto targets = ptx::branch_targets(function, i, labels);
    if (!targets.empty()) {
      State taken = out;
      taken.thread = narrower(one_thread(i, true), out.thread);
      for (const std::size_t at : targets) flow(at, taken);
    }
    if (!ptx::falls_through(ins)) continue;
    if (!ins.guard.empty() && ptx::transfers_control(ins))
      out.thread = narrower(one_thread(i, false), out.thread);  // the threads that go on
    flow(i + 1, out);
  }
  return before;
}

}  // namespace

BarrierFlow barrier_flow(const ptx::Function& function, const std::vector<FlowEvent>& events) {
  const auto& body = function.body;
  const std::size_t n = body.size();
  BarrierFlow flow;
  flow.running_thread.assign(n, kAnyThread);
  if (n == 0) return flow;
  const auto guards = guard_tests(function);
  const std::vector<State> before = states_before(function, events, guards);
  for (std::size_t i = 0; i < n; ++i) {
    if (!before[i].reached) continue;
    const State& state = before[i];
    // A guarded instruction that is not a branch runs in the threads its guard leaves.
    flow.running_thread[i] =
        ptx::transfers_control(body[i]) ? state.thread : narrower(guards[i].if_true, state.thread);
    if (events[i] != FlowEvent::launch) continue;
    int latest = 0;
    for (const auto& [thread, line, warp_ordered] : state.stores) {
      const bool offends = state.thread == kAnyThread ? !warp_ordered : thread != state.thread;
      if (offends) latest = std::max(latest, line);
    }
    if (latest != 0) flow.unguarded_launches.push_back({body[i].line, latest});
  }
  return flow;
}

std::vector<Stretch> barrier_stretches(const ptx::Function& function, const std::vector<FlowEvent>& events) {
  const auto& body = function.body;
  const std::size_t n = body.size();
  if (n == 0) return {};
  const auto labels = ptx::label_positions(function);
  std::vector<std::vector<std::size_t>> successors(n);
  for (std::size_t i = 0; i < n; ++i) {
    successors[i] = ptx::branch_targets(function, i, labels);
    if (ptx::falls_through(body[i]) && i + 1 < n) successors[i].push_back(i + 1);
  }
  const auto barrier = [&](std::size_t i) { return events[i] == FlowEvent::barrier; };
  std::vector<std::set<int>> begins(n), ends(n);
  // Beginnings flow forward: a barrier begins the stretch after it.
  begins[0].insert(-1);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (begins[i].empty()) continue;
      const std::set<int> out = barrier(i) ? std::set<int>{static_cast<int>(i)} : begins[i];
      for (const std::size_t to : successors[i]) {
        const std::size_t size = begins[to].size();
        begins[to].insert(out.begin(), out.end());
        changed = changed || begins[to].size() != size;
      }
    }
  }
  // Ends flow backward: a barrier ends the stretch before it; an instruction with nowhere to go
  // (a return, an exit), the function.
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t k = n; k-- > 0;) {
      const std::size_t size = ends[k].size();
      if (successors[k].empty()) ends[k].insert(-2);
      for (const std::size_t to : successors[k]) {
        if (barrier(to)) ends[k].insert(static_cast<int>(to));
        else ends[k].insert(ends[to].begin(), ends[to].end());
      }
      changed = changed || ends[k].size() != size;
    }
  }
  std::vector<Stretch> stretches(n);
  for (std::size_t i = 0; i < n; ++i) {
    stretches[i].begins.assign(begins[i].begin(), begins[i].end());
    stretches[i].ends.assign(ends[i].begin(), ends[i].end());
  }
  return stretches;
}

namespace {
/// Whether two sorted lists hold a common value.
bool meet(const std::vector<int>& a, const std::vector<int>& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) return true;
    if (a[i] < b[j]) ++i;
    else ++j;
  }
  return false;
}
}  // namespace

bool share_a_stretch(const Stretch& a, const Stretch& b) { return meet(a.begins, b.begins) && meet(a.ends, b.ends); }

}  // namespace cdplab::rules
