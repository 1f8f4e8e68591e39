// Accesses past the end of a sized __shared__ array at a constant offset (shared_bounds.h).
#include "rules/shared_bounds.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace cdplab::rules {
namespace {

/// The bytes one `ld`, `st`, `atom` or `red` moves: its type's width (`.u32`: 4), times the
/// vector length (`.v2`, `.v4`); 0 when the opcode names no type.
std::size_t access_width(const std::string& opcode) {
  std::size_t width = 0;
  std::size_t lanes = 1;
  std::size_t start = 0;
  for (std::size_t end = 0; end != std::string::npos; start = end + 1) {
    end = opcode.find('.', start);
    const std::string_view part =
        std::string_view(opcode).substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (part.size() == 2 && part[0] == 'v' && std::isdigit(static_cast<unsigned char>(part[1])))
      lanes = static_cast<std::size_t>(part[1] - '0');
    else if (const std::size_t bytes = ptx::type_bytes(part); bytes > 0)
      width = bytes;
  }
  return width * lanes;
}

}  // namespace

std::vector<SharedOverrun> shared_overruns(const ptx::Function& function, const ptx::Module& module) {
  std::vector<SharedOverrun> found;
  for (const auto& ins : function.body) {
    const std::string base = ptx::opcode_base(ins.opcode);
    if (base != "ld" && base != "st" && base != "atom" && base != "red") continue;
    for (const auto& operand : ins.operands) {
      if (operand.size() < 3 || operand.front() != '[' || operand.back() != ']') continue;
      const std::string inside = operand.substr(1, operand.size() - 2);
      const std::size_t plus = inside.find('+');
      const std::string symbol = inside.substr(0, plus);
      const auto declared = module.shared_bytes.find(symbol);
      if (declared == module.shared_bytes.end()) continue;
      std::size_t offset = 0;
      if (plus != std::string::npos) {
        const std::string number = inside.substr(plus + 1);
        if (number.empty() || !std::all_of(number.begin(), number.end(), [](unsigned char c) { return std::isdigit(c); }))
          continue;
        offset = static_cast<std::size_t>(std::stoull(number));
      }
      const std::size_t width = access_width(ins.opcode);
      if (width > 0 && offset + width > declared->second)
        found.push_back({ins.line, symbol, offset, width, declared->second});
    }
  }
  return found;
}

}  // namespace cdplab::rules
