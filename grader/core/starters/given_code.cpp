#include "starters/given_code.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

namespace cdplab::starters {
namespace {

/// `text` with every run of whitespace one space, none at either end.
std::string collapsed(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

bool SourceFunction::students() const {
  return header.find("__global__") != std::string::npos || header.find("__device__") != std::string::npos ||
         header.find("CDPLAB_HOST_PART") != std::string::npos;
}

std::vector<SourceFunction> namespace_functions(const std::string& source) {
  std::vector<SourceFunction> functions;
  struct Open {
    bool function;       // a function's body (everything inside it belongs to it)
    std::size_t index;   // its place in `functions`
  };
  std::vector<Open> open;
  std::string pending;  // code since the last ';', '{' or '}' (the next block's header)
  bool in_block_comment = false;
  char quote = 0;
  int line = 1;
  const auto inside_function = [&] {
    return std::any_of(open.begin(), open.end(), [](const Open& o) { return o.function; });
  };
  for (std::size_t i = 0; i < source.size(); ++i) {
    const char c = source[i];
    const char next = i + 1 < source.size() ? source[i + 1] : '\0';
    if (c == '\n') ++line;
    if (in_block_comment) {
      if (c == '*' && next == '/') {
        in_block_comment = false;
        ++i;
      }
      continue;
    }
    const bool in_function = inside_function();
    if (quote != 0) {
      if (in_function) functions[open.back().index].body += c;
      if (c == '\\' && next != '\0') {
        if (in_function) functions[open.back().index].body += next;
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '/' && next == '/') {  // a line comment: to the end of the line
      while (i + 1 < source.size() && source[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '/' && next == '*') {
      in_block_comment = true;
      ++i;
      continue;
    }
    if (c == '#' && !in_function && collapsed(pending).empty()) {  // a preprocessor line
      while (i + 1 < source.size() && source[i + 1] != '\n') ++i;
      continue;
    }
    if (in_function) {
      // Inside a function everything is its body; only its own closing brace ends it.
      if (c == '"' || c == '\'') quote = c;
      if (c == '{') open.push_back({false, open.back().index});
      if (c == '}') {
        const bool closes_function = open.back().function;
        open.pop_back();
        if (closes_function) {
          functions.back().body = collapsed(functions.back().body);
          functions.back().end_line = line;
          continue;
        }
      }
      functions[open.back().index].body += c;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    if (c == '{') {
      const std::string header = collapsed(pending);
      // A function's header has its parameters; a namespace, a class or an initialiser has none
      // before any '=' (a lambda's or an initialiser's braces come after one).
      const auto paren = header.find('(');
      const bool function = paren != std::string::npos && header.rfind("namespace", 0) != 0 &&
                            header.substr(0, paren).find('=') == std::string::npos;
      if (function) {
        functions.push_back({header, "", line});
        open.push_back({true, functions.size() - 1});
      } else {
        open.push_back({false, 0});
      }
      pending.clear();
    } else if (c == '}') {
      if (!open.empty()) open.pop_back();
      pending.clear();
    } else if (c == ';') {
      pending.clear();
    } else {
      pending += c;
    }
  }
  return functions;
}

std::vector<int> todo_lines(const std::string& source) {
  std::vector<int> lines;
  std::istringstream in(source);
  bool in_block_comment = false;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    std::string code;  // the line without its comments
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (in_block_comment) {
        if (line.compare(i, 2, "*/") == 0) {
          in_block_comment = false;
          ++i;
        }
        continue;
      }
      if (line.compare(i, 2, "//") == 0) break;
      if (line.compare(i, 2, "/*") == 0) {
        in_block_comment = true;
        ++i;
        continue;
      }
      code += line[i];
    }
    if (code.find("CDPLAB_TODO(") != std::string::npos) lines.push_back(number);
  }
  return lines;
}

std::vector<std::string> given_host_changes(const std::string& starter, const std::string& student) {
  std::map<std::string, std::string> bodies;  // the student's functions by header
  for (const auto& f : namespace_functions(student)) bodies.emplace(f.header, f.body);
  std::vector<std::string> changed;
  for (const auto& f : namespace_functions(starter)) {
    if (f.students()) continue;
    const auto it = bodies.find(f.header);
    if (it == bodies.end() || it->second != f.body) changed.push_back(f.header);
  }
  return changed;
}

}  // namespace cdplab::starters
