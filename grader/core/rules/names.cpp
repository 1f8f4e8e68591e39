#include "rules/names.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace cdplab::rules {
namespace {

bool opens(char c) { return c == '(' || c == '<' || c == '['; }
bool closes(char c) { return c == ')' || c == '>' || c == ']'; }

// The position of the '(' that matches the ')' at `close`, or npos.
std::size_t matching_open(std::string_view s, std::size_t close) {
  int depth = 0;
  for (std::size_t i = close + 1; i-- > 0;) {
    if (closes(s[i])) ++depth;
    if (opens(s[i]) && --depth == 0) return i;
  }
  return std::string_view::npos;
}

}  // namespace

std::string demangle(std::string_view symbol) {
  std::string plain(symbol.substr(0, symbol.find('$')));
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(
      abi::__cxa_demangle(plain.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || !text) return plain;
  return text.get();
}

std::string qualified_name(std::string_view demangled) {
  std::string_view s = demangled;
  // A trailing " const" or similar qualifier cannot occur on kernels; the parameter list ends it.
  if (!s.empty() && s.back() == ')') {
    const std::size_t open = matching_open(s, s.size() - 1);
    if (open != std::string_view::npos && open > 0) s = s.substr(0, open);
  }
  // A return type (function templates) is separated by a space outside brackets.
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (opens(s[i])) ++depth;
    if (closes(s[i])) --depth;
    if (s[i] == ' ' && depth == 0) start = i + 1;
  }
  return std::string(s.substr(start));
}

std::string unqualified_name(std::string_view qualified) {
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i + 1 < qualified.size(); ++i) {
    if (opens(qualified[i])) ++depth;
    if (closes(qualified[i])) --depth;
    if (depth == 0 && qualified[i] == ':' && qualified[i + 1] == ':') start = i + 2;
  }
  return std::string(qualified.substr(start));
}

std::string short_name(std::string_view symbol) {
  return symbol.empty() ? std::string() : unqualified_name(qualified_name(demangle(symbol)));
}

std::string without_template_arguments(std::string_view name) {
  if (name.empty() || name.back() != '>') return std::string(name);
  const std::size_t open = matching_open(name, name.size() - 1);
  if (open == std::string_view::npos || open == 0) return std::string(name);
  return std::string(name.substr(0, open));
}

bool name_matches(std::string_view written, std::string_view mangled, std::string_view qualified) {
  if (written.empty()) return false;
  if (written == mangled) return true;
  const std::string full(qualified);
  const std::string bare = without_template_arguments(qualified);
  if (written.substr(0, 2) == "::") {  // anchored at the global namespace
    written.remove_prefix(2);
    return written == full || written == bare;
  }
  if (written.find("::") == std::string_view::npos) {
    const std::string last = unqualified_name(qualified);
    return written == last || written == without_template_arguments(last);
  }
  // Qualified: the whole name, or its trailing components ("inner::child" for lab::inner::child).
  auto ends_with_components = [&](const std::string& name) {
    if (name == written) return true;
    return name.size() > written.size() + 2 &&
           name.compare(name.size() - written.size(), written.size(), written) == 0 &&
           name.compare(name.size() - written.size() - 2, 2, "::") == 0;
  };
  return ends_with_components(full) || ends_with_components(bare);
}

}  // namespace cdplab::rules
