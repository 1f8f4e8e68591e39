#include "rules/ptx_reader.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace cdplab::rules::ptx {
namespace {

enum class TokenKind { statement, label, open, close };

struct Token {
  TokenKind kind;
  int line;
  std::string text;  // statements: white space collapsed to single spaces; labels: the name
};

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$' || c == '.';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string first_word(std::string_view s) {
  s = trim(s);
  std::size_t end = 0;
  while (end < s.size() && !is_space(s[end]) && s[end] != '(') ++end;
  return std::string(s.substr(0, end));
}

std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::string word;
  for (char c : s) {
    if (is_space(c) || c == '(' || c == ')' || c == ',') {
      if (!word.empty()) out.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) out.push_back(word);
  return out;
}

// Directives that end at the end of their line instead of at a ';'.
bool is_line_directive(std::string_view text) {
  const std::string word = first_word(text);
  return word == ".version" || word == ".target" || word == ".address_size" || word == ".file" ||
         word == ".loc";
}

// "$L__BB0_2" or "prototype_0": a statement label, when followed by ':'.
bool is_label(std::string_view text) {
  text = trim(text);
  if (text.empty()) return false;
  for (char c : text)
    if (!is_name_char(c) && c != '%') return false;
  return true;
}

bool has_word(std::string_view text, std::string_view word) {
  for (const auto& w : words(text))
    if (w == word) return true;
  return false;
}

bool is_function_header(std::string_view text) {
  return has_word(text, ".entry") || has_word(text, ".func");
}

// Splits PTX text into statements and block braces. Braces inside a statement (vector operands,
// initializers) stay part of it; a '{' right after a function header opens the body.
std::vector<Token> tokenize(std::string_view ptx) {
  std::vector<Token> tokens;
  std::string current;
  int current_line = 0;
  int line = 1;

  auto emit = [&] {
    const std::string_view text = trim(current);
    if (!text.empty()) tokens.push_back({TokenKind::statement, current_line, std::string(text)});
    current.clear();
  };
  auto append_space = [&] {
    if (!current.empty() && current.back() != ' ') current += ' ';
  };

  for (std::size_t i = 0; i < ptx.size(); ++i) {
    const char c = ptx[i];
    const char next = i + 1 < ptx.size() ? ptx[i + 1] : '\0';
    if (c == '\n') {
      ++line;
      if (is_line_directive(current))
        emit();
      else
        append_space();
      continue;
    }
    if (c == '/' && next == '/') {
      while (i + 1 < ptx.size() && ptx[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '/' && next == '*') {
      const std::size_t end = ptx.find("*/", i + 2);
      if (end == std::string_view::npos)
        throw std::runtime_error("PTX line " + std::to_string(line) + ": unterminated comment");
      for (std::size_t j = i; j < end; ++j)
        if (ptx[j] == '\n') ++line;
      i = end + 1;
      append_space();
      continue;
    }
    if (current.empty()) {
      if (is_space(c)) continue;
      if (c == '{' || c == '}') {
        tokens.push_back({c == '{' ? TokenKind::open : TokenKind::close, line, {}});
        continue;
      }
      current_line = line;
    }
    if (c == '"') {  // a string literal (.file, .pragma): copied whole
      current += c;
      while (++i < ptx.size() && ptx[i] != '"') {
        if (ptx[i] == '\n') ++line;
        if (ptx[i] == '\\' && i + 1 < ptx.size()) current += ptx[i++];
        current += ptx[i];
      }
      current += '"';
      continue;
    }
    if (c == ';') {
      emit();
    } else if (c == ':' && next != ':' && is_label(current)) {
      tokens.push_back({TokenKind::label, current_line, std::string(trim(current))});
      current.clear();
    } else if (c == '{' && first_word(current) == ".section") {
      // Debug information (-G, -lineinfo): data the checker does not need, skipped whole.
      const std::size_t end = ptx.find('}', i);
      if (end == std::string_view::npos)
        throw std::runtime_error("PTX line " + std::to_string(line) + ": unterminated .section");
      for (std::size_t j = i; j < end; ++j)
        if (ptx[j] == '\n') ++line;
      i = end;
      current.clear();
    } else if (c == '{' && is_function_header(current)) {
      emit();
      tokens.push_back({TokenKind::open, line, {}});
    } else if (is_space(c)) {
      append_space();
    } else {
      current += c;
    }
  }
  if (is_line_directive(current)) emit();
  if (!trim(current).empty())
    throw std::runtime_error("PTX line " + std::to_string(current_line) +
                             ": statement not ended by ';': " + std::string(trim(current)));
  return tokens;
}

// Splits at commas outside (), [] and {}; removes all white space from the parts.
std::vector<std::string> split_operands(std::string_view text) {
  std::vector<std::string> parts;
  std::string part;
  int depth = 0;
  for (char c : text) {
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(part);
      part.clear();
    } else if (!is_space(c)) {
      part += c;
    }
  }
  if (!part.empty()) parts.push_back(part);
  return parts;
}

Instruction parse_instruction(const Token& token) {
  Instruction instruction;
  instruction.line = token.line;
  std::string_view text = token.text;
  if (!text.empty() && text.front() == '@') {
    const std::size_t space = text.find(' ');
    instruction.guard =
        std::string(text.substr(1, space == std::string_view::npos ? 0 : space - 1));
    text = space == std::string_view::npos ? std::string_view{} : trim(text.substr(space));
  }
  const std::size_t space = text.find(' ');
  instruction.opcode = std::string(text.substr(0, space));
  if (space != std::string_view::npos) instruction.operands = split_operands(text.substr(space));
  return instruction;
}

// The function symbol of a header: the first name after `.entry`, or after `.func` and its
// optional return parameter list in parentheses.
std::string header_symbol(std::string_view header) {
  std::size_t at = std::string_view::npos;
  for (std::string_view key : {std::string_view(".entry"), std::string_view(".func")}) {
    std::size_t pos = 0;
    while ((pos = header.find(key, pos)) != std::string_view::npos) {
      const std::size_t end = pos + key.size();
      const bool starts = pos == 0 || is_space(header[pos - 1]);
      const bool ends = end == header.size() || !is_name_char(header[end]);
      if (starts && ends) {
        at = end;
        break;
      }
      pos = end;
    }
    if (at != std::string_view::npos) break;
  }
  if (at == std::string_view::npos) return {};
  std::string_view rest = trim(header.substr(at));
  if (!rest.empty() && rest.front() == '(') {  // return parameters of a .func
    const std::size_t close = rest.find(')');
    if (close == std::string_view::npos) return {};
    rest = trim(rest.substr(close + 1));
  }
  std::size_t end = 0;
  while (end < rest.size() && is_name_char(rest[end])) ++end;
  return std::string(rest.substr(0, end));
}

// `.shared .align 4 .b8 _ZZ6parentPiiE2sm[128]` declares `_ZZ6parentPiiE2sm` in shared space.
// Returns the space ("shared", "local") and the name, or empty strings for other statements.
std::pair<std::string, std::string> variable_declaration(std::string_view text) {
  std::string space;
  std::string name;
  for (const auto& word : words(text)) {
    if (word == ".shared" || word == ".local") {
      space = word.substr(1);
      continue;
    }
    if (word.front() == '.') continue;                                     // .extern, .align, .b8
    if (space.empty()) break;                                              // an instruction
    if (std::isdigit(static_cast<unsigned char>(word.front()))) continue;  // the 4 of .align 4
    name = word.substr(0, word.find_first_of("[<="));
    break;
  }
  if (name.empty()) return {};
  return {space, name};
}

// The bytes a declaration such as `.shared .align 4 .b8 name[12]` or `.shared .u32 name[3]`
// reserves for `name`: the element type's width times the count; nullopt without a count.
std::optional<std::size_t> declared_bytes(std::string_view text, const std::string& name) {
  std::size_t element = 0;
  for (const auto& word : words(text))
    if (const std::size_t bytes = type_bytes(word); bytes > 0) element = bytes;
  const auto at = text.find(name + "[");
  if (element == 0 || at == std::string_view::npos) return std::nullopt;
  const auto open = at + name.size() + 1;
  const auto close = text.find(']', open);
  if (close == std::string_view::npos || close == open) return std::nullopt;
  const std::string count(trim(text.substr(open, close - open)));
  if (count.empty() || !std::all_of(count.begin(), count.end(), [](unsigned char c) { return std::isdigit(c); }))
    return std::nullopt;
  return element * static_cast<std::size_t>(std::stoull(count));
}

// `.loc 1 47 3` or `.loc 1 47 3, function_name $L__info_string0, inlined_at 2 60 5`.
SourcePlace parse_loc(const std::string& text) {
  SourcePlace place;
  std::istringstream in(text.substr(4));
  in >> place.file >> place.line;
  const auto inlined = text.find("inlined_at");
  if (inlined != std::string::npos) {
    std::istringstream outer(text.substr(inlined + 10));
    outer >> place.outer_file >> place.outer_line;
  }
  return in ? place : SourcePlace{};
}

// `.file 1 "/path/child_grids.cu"` (optionally followed by a time stamp and a size).
void add_file(Module& module, const std::string& text) {
  std::istringstream in(text.substr(5));
  int index = 0;
  in >> index;
  const auto open = text.find('"');
  const auto close = open == std::string::npos ? open : text.find('"', open + 1);
  if (in && close != std::string::npos) module.files[index] = text.substr(open + 1, close - open - 1);
}

}  // namespace

const Function* Module::find(std::string_view symbol) const {
  for (const auto& function : functions)
    if (function.name == symbol) return &function;
  return nullptr;
}

Module read_module(std::string_view ptx) {
  const std::vector<Token> tokens = tokenize(ptx);
  Module module;
  int depth = 0;
  Function* current = nullptr;

  auto function_named = [&](const std::string& name, int line) -> Function& {
    for (auto& f : module.functions)
      if (f.name == name) return f;
    module.functions.push_back(Function{name, false, false, line, {}});
    return module.functions.back();
  };

  std::vector<std::string> labels;  // labels waiting for the statement they name
  SourcePlace place;                 // the latest `.loc`: the place of the instructions after it
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& token = tokens[i];
    if (token.kind == TokenKind::label) {
      if (current != nullptr) labels.push_back(token.text);
      continue;
    }
    if (token.kind == TokenKind::open) {
      ++depth;
      continue;
    }
    if (token.kind == TokenKind::close) {
      if (--depth < 0)
        throw std::runtime_error("PTX line " + std::to_string(token.line) + ": unbalanced '}'");
      if (depth == 0) {
        current = nullptr;
        labels.clear();  // a label at the very end names the function's end
      }
      continue;
    }

    const auto [space, variable] = variable_declaration(token.text);
    if (space == "shared") {
      module.shared_symbols.insert(variable);
      if (const auto bytes = declared_bytes(token.text, variable)) module.shared_bytes[variable] = *bytes;
    }
    if (space == "local") module.local_symbols.insert(variable);

    if (first_word(token.text) == ".loc") {
      place = parse_loc(token.text);
      continue;
    }
    if (depth == 0) {
      const std::string word = first_word(token.text);
      if (word == ".file") add_file(module, token.text);
      if (word == ".version") module.version = std::string(trim(token.text.substr(8)));
      if (word == ".target") module.target = std::string(trim(token.text.substr(7)));
      if (!is_function_header(token.text)) {
        if (word.empty() || word.front() != '.')
          throw std::runtime_error("PTX line " + std::to_string(token.line) +
                                   ": instruction outside any function: " + token.text);
        continue;
      }
      const std::string symbol = header_symbol(token.text);
      if (symbol.empty())
        throw std::runtime_error("PTX line " + std::to_string(token.line) +
                                 ": function header without a name");
      Function& function = function_named(symbol, token.line);
      function.is_kernel = has_word(token.text, ".entry");
      const bool has_body = i + 1 < tokens.size() && tokens[i + 1].kind == TokenKind::open;
      place = SourcePlace{};
      if (has_body) {
        if (function.defined)
          throw std::runtime_error("PTX line " + std::to_string(token.line) + ": " + symbol +
                                   " is defined twice");
        function.defined = true;
        current = &function;
      }
      continue;
    }
    if (current == nullptr)
      throw std::runtime_error("PTX line " + std::to_string(token.line) +
                               ": block outside any function");
    current->body.push_back(parse_instruction(token));
    if (place.line > 0) module.places[token.line] = place;
    current->body.back().labels = std::move(labels);
    labels.clear();
  }
  if (depth != 0) throw std::runtime_error("PTX ends inside a block: unbalanced '{'");
  if (module.version.empty())
    throw std::runtime_error("not PTX: the text has no .version directive");
  return module;
}

CallOperands call_operands(const Instruction& call) {
  CallOperands out;
  auto list = [](std::string_view operand) {
    operand.remove_prefix(1);
    if (!operand.empty() && operand.back() == ')') operand.remove_suffix(1);
    return split_operands(operand);
  };
  bool seen_callee = false;
  for (const auto& operand : call.operands) {
    const bool is_list = !operand.empty() && operand.front() == '(';
    if (!seen_callee && is_list) {
      out.results = list(operand);
    } else if (!seen_callee) {
      out.callee = operand;
      seen_callee = true;
    } else if (is_list && out.arguments.empty()) {
      out.arguments = list(operand);
    }
  }
  return out;
}

std::size_t type_bytes(std::string_view type) {
  if (!type.empty() && type.front() == '.') type.remove_prefix(1);
  if (type.size() < 2 || (type[0] != 'b' && type[0] != 'u' && type[0] != 's' && type[0] != 'f')) return 0;
  const std::string_view bits = type.substr(1);
  if (!std::all_of(bits.begin(), bits.end(), [](unsigned char c) { return std::isdigit(c); })) return 0;
  return static_cast<std::size_t>(std::stoul(std::string(bits))) / 8;
}

std::vector<std::string> registers_in(std::string_view operand) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < operand.size(); ++i) {
    if (operand[i] != '%') continue;
    std::size_t end = i + 1;
    while (end < operand.size() && is_name_char(operand[end]) && operand[end] != '.') ++end;
    // %tid.x and friends: keep the component, they are distinct special registers
    if (end < operand.size() && operand[end] == '.') {
      while (end < operand.size() && is_name_char(operand[end])) ++end;
    }
    if (end > i + 1) out.emplace_back(operand.substr(i, end - i));
    i = end - 1;
  }
  return out;
}

std::string opcode_base(const std::string& opcode) { return opcode.substr(0, opcode.find('.')); }

std::map<std::string, std::size_t> label_positions(const Function& function) {
  std::map<std::string, std::size_t> positions;
  for (std::size_t i = 0; i < function.body.size(); ++i)
    for (const auto& label : function.body[i].labels) positions[label] = i;
  return positions;
}

std::vector<std::size_t> branch_targets(const Function& function, std::size_t i,
                                        const std::map<std::string, std::size_t>& labels) {
  const Instruction& ins = function.body[i];
  if (opcode_base(ins.opcode) != "bra" || ins.operands.empty()) return {};
  if (const auto target = labels.find(ins.operands[0]); target != labels.end()) return {target->second};
  std::vector<std::size_t> every;  // not found: to be safe, any labelled statement
  for (const auto& [label, at] : labels) every.push_back(at);
  return every;
}

std::vector<std::string> written_registers(const Instruction& ins) {
  static const std::set<std::string> writes_none = {"st", "bra", "call", "ret", "exit", "bar", "barrier", "red",
                                                    "membar", "fence", "trap", "prefetch"};
  const std::string base = opcode_base(ins.opcode);
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

bool transfers_control(const Instruction& instruction) {
  const std::string base = opcode_base(instruction.opcode);
  return base == "bra" || base == "ret" || base == "exit" || base == "trap";
}

bool falls_through(const Instruction& instruction) {
  return !instruction.guard.empty() || !transfers_control(instruction);
}

bool has_component(const std::string& opcode, std::string_view part) {
  std::size_t start = 0;
  while (start <= opcode.size()) {
    std::size_t end = opcode.find('.', start);
    if (end == std::string::npos) end = opcode.size();
    const std::string_view component = std::string_view(opcode).substr(start, end - start);
    if (component == part || component.substr(0, part.size() + 2) == std::string(part) + "::")
      return true;
    start = end + 1;
  }
  return false;
}

std::string address_base(std::string_view operand) {
  if (operand.size() < 2 || operand.front() != '[' || operand.back() != ']') return {};
  operand = operand.substr(1, operand.size() - 2);
  const std::size_t end = operand.find_first_of("+-");
  return std::string(trim(operand.substr(0, end)));
}

bool is_integer_literal(std::string_view operand) {
  if (!operand.empty() && (operand.front() == '-' || operand.front() == '+'))
    operand.remove_prefix(1);
  if (!operand.empty() && (operand.back() == 'U' || operand.back() == 'u'))
    operand.remove_suffix(1);
  if (operand.empty()) return false;
  std::size_t start = 0;
  bool hex = false;
  if (operand.size() > 2 && operand[0] == '0' && (operand[1] == 'x' || operand[1] == 'X')) {
    start = 2;
    hex = true;
  }
  for (std::size_t i = start; i < operand.size(); ++i) {
    const auto c = static_cast<unsigned char>(operand[i]);
    if (!(hex ? std::isxdigit(c) : std::isdigit(c))) return false;
  }
  return true;
}

long long integer_value(std::string_view operand) {
  const std::string text(operand);
  return static_cast<long long>(
             std::stoull(text.front() == '-' ? text.substr(1) : text, nullptr, 0)) *
         (text.front() == '-' ? -1 : 1);
}

bool is_symbol(std::string_view operand) {
  if (operand.empty() || operand.front() == '%') return false;
  if (std::isdigit(static_cast<unsigned char>(operand.front())) || operand.front() == '-')
    return false;
  for (char c : operand)
    if (!is_name_char(c)) return false;
  return true;
}

}  // namespace cdplab::rules::ptx
