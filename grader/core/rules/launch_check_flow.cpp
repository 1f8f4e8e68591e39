#include "rules/launch_check_flow.h"

#include <cstddef>

namespace cdplab::rules {

std::vector<int> unchecked_launches(const ptx::Function& function, const std::vector<bool>& launches,
                                    const std::vector<bool>& checks) {
  const auto& body = function.body;
  const std::size_t n = body.size();
  const auto labels = ptx::label_positions(function);
  auto successors = [&](std::size_t i) {
    std::vector<std::size_t> to = ptx::branch_targets(function, i, labels);
    if (ptx::falls_through(body[i])) to.push_back(i + 1);  // n: off the end
    return to;
  };
  auto is_return = [&](std::size_t i) {
    const std::string base = ptx::opcode_base(body[i].opcode);
    return base == "ret" || base == "exit";
  };

  // escapes[i]: from instruction i, some path reaches the end with no check on it. Grown from
  // false until nothing changes (a loop needs more than one pass).
  std::vector<bool> escapes(n + 1, false);
  escapes[n] = true;
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t i = n; i-- > 0;) {
      if (escapes[i] || checks[i]) continue;
      bool out = is_return(i);
      for (const std::size_t to : successors(i)) out = out || escapes[to];
      if (out) escapes[i] = changed = true;
    }
  }

  std::vector<int> found;
  for (std::size_t i = 0; i < n; ++i) {
    if (!launches[i]) continue;
    bool escaped = false;
    for (const std::size_t to : successors(i)) escaped = escaped || escapes[to];
    if (escaped) found.push_back(body[i].line);
  }
  return found;
}

}  // namespace cdplab::rules
