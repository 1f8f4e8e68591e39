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
  for (std::size_t i = 0; i < body.size(); ++i) {
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
    if (!release) {
      for (std::size_t k = i; k-- > 0;) {
        if (fence(body[k])) break;
        if (writes(body[k], module)) {
          out.unfenced.push_back({ins.line, body[k].line, true});
          break;
        }
      }
    }
    if (!acquire) {
      for (std::size_t k = i + 1; k < body.size(); ++k) {
        if (fence(body[k])) break;
        if (ptx::opcode_base(body[k].opcode) == "ld" && has_component(body[k].opcode, "acquire")) break;
        if (reads(body[k], module)) {
          out.unfenced.push_back({ins.line, body[k].line, false});
          break;
        }
      }
    }
  }
  return out;
}

}  // namespace cdplab::rules
