#include "rules/counter_fences.h"

#include <algorithm>
#include <string>

namespace cdplab::rules {
namespace {

using ptx::has_component;
using ptx::Instruction;

bool fence(const Instruction& ins) {
  const std::string base = ptx::opcode_base(ins.opcode);
  if (base == "membar") return !has_component(ins.opcode, "cta");
  if (base == "fence") return !has_component(ins.opcode, "cta") && !has_component(ins.opcode, "proxy");
  return false;
}

/// `__syncthreads()` and its kin; not `__syncwarp()`.
bool block_barrier(const Instruction& ins) {
  const std::string base = ptx::opcode_base(ins.opcode);
  return (base == "bar" || base == "barrier") && !has_component(ins.opcode, "warp");
}

/// Memory a child grid or another block can see: not shared, local, parameter or constant space.
bool visible_space(const std::string& opcode) {
  return !has_component(opcode, "shared") && !has_component(opcode, "local") && !has_component(opcode, "param") &&
         !has_component(opcode, "const");
}

bool calls_defined(const Instruction& ins, const ptx::Module& module) {
  if (ptx::opcode_base(ins.opcode) != "call") return false;
  const ptx::Function* target = module.find(ptx::call_operands(ins).callee);
  return target != nullptr && target->defined;
}

bool writes(const Instruction& ins, const ptx::Module& module) {
  const std::string base = ptx::opcode_base(ins.opcode);
  if (base == "st" || base == "atom" || base == "red") return visible_space(ins.opcode);
  return calls_defined(ins, module);
}

/// A device-side launch: the child reads memory through the launching thread's view of it.
bool launches(const Instruction& ins) {
  if (ptx::opcode_base(ins.opcode) != "call") return false;
  const std::string callee = ptx::call_operands(ins).callee;
  return callee.find("LaunchDevice") != std::string::npos || callee.find("GetParameterBuffer") != std::string::npos;
}

bool reads(const Instruction& ins, const ptx::Module& module) {
  const std::string base = ptx::opcode_base(ins.opcode);
  if (base == "ld") return visible_space(ins.opcode);
  return calls_defined(ins, module) || launches(ins);
}

}  // namespace

CounterFences counter_fences(const ptx::Function& function, const ptx::Module& module) {
  CounterFences out;
  const auto& body = function.body;
  const std::size_t n = body.size();
  // The control flow: successors and predecessors of each instruction.
  const auto labels = ptx::label_positions(function);
  std::vector<std::vector<std::size_t>> next(n), prev(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (const std::size_t to : ptx::branch_targets(function, i, labels)) next[i].push_back(to);
    if (ptx::falls_through(body[i]) && i + 1 < n) next[i].push_back(i + 1);
    for (const std::size_t to : next[i]) prev[to].push_back(i);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Instruction& ins = body[i];
    if (ptx::opcode_base(ins.opcode) != "atom" || !visible_space(ins.opcode) || ins.operands.size() < 3) continue;
    const auto result = ptx::registers_in(ins.operands[0]);
    if (result.size() != 1) continue;
    const bool compared = std::any_of(body.begin() + static_cast<long>(i) + 1, body.end(), [&](const Instruction& later) {
      if (ptx::opcode_base(later.opcode) != "setp") return false;
      for (std::size_t k = 1; k < later.operands.size(); ++k)
        for (const auto& reg : ptx::registers_in(later.operands[k]))
          if (reg == result.front()) return true;
      return false;
    });
    if (!compared) continue;
    ++out.counters;
    const bool release = has_component(ins.opcode, "release") || has_component(ins.opcode, "acq_rel");
    const bool acquire = has_component(ins.opcode, "acquire") || has_component(ins.opcode, "acq_rel");

    // Back from the atomic along every path: the first write on a path must be behind a fence
    // (or the atomic releases) and a block barrier. State: bit 0 fenced, bit 1 barrier.
    {
      std::vector<unsigned> seen(n, 0);  // the states each instruction was reached in, as bits
      std::vector<std::pair<std::size_t, unsigned>> work;
      const unsigned start_state = release ? 1u : 0u;
      for (const std::size_t p : prev[i]) work.push_back({p, start_state});
      bool reported = false;
      while (!work.empty() && !reported) {
        auto [k, state] = work.back();
        work.pop_back();
        if (seen[k] & (1u << state)) continue;
        seen[k] |= 1u << state;
        if (fence(body[k])) state |= 1u;
        if (block_barrier(body[k])) state |= 2u;
        if (state == 3u) continue;
        if (writes(body[k], module)) {
          out.unfenced.push_back({ins.line, body[k].line, (state & 1u) ? CounterGap::barrier_before : CounterGap::fence_before});
          reported = true;
          continue;
        }
        for (const std::size_t p : prev[k]) work.push_back({p, state});
      }
    }
    // After the atomic, in text order: the fence sits in the branch the last block takes, which
    // a path-wise reading cannot tell from the others (the test is on a value shared through
    // memory), so the first read or launch after the atomic in the text must follow a fence.
    if (!acquire) {
      for (std::size_t k = i + 1; k < n; ++k) {
        if (fence(body[k])) break;
        if (ptx::opcode_base(body[k].opcode) == "ld" && has_component(body[k].opcode, "acquire")) break;
        if (reads(body[k], module)) {
          out.unfenced.push_back({ins.line, body[k].line, CounterGap::fence_after});
          break;
        }
      }
    }
  }
  return out;
}

}  // namespace cdplab::rules
