// The mechanical mutants of a CUDA source (generator.h). The source is read as tokens; a light
// structure is recovered from them (bracket pairs, template angle brackets, launch
// configurations, function bodies, statements, declarations), enough to find each operator's
// sites without a compiler. What the reading cannot tell apart is left alone rather than guessed.
#include "generator.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

namespace cdplab::sweep {

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80; }
bool ident_char(char c) { return ident_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

int newlines(const std::string& s, std::size_t from, std::size_t to) {
  return static_cast<int>(std::count(s.begin() + static_cast<std::ptrdiff_t>(from), s.begin() + static_cast<std::ptrdiff_t>(to), '\n'));
}

/// Punctuators, longest first (`<<<` and `>>>` are handled apart).
const std::vector<std::string>& punctuators() {
  static const std::vector<std::string> list = {
      "<<=", ">>=", "...", "->*", "<=>", "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&",
      "||",  "+=",  "-=",  "*=",  "/=",  "%=", "&=", "|=", "^=", ".*", "##"};
  return list;
}

}  // namespace

std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> out;
  const std::size_t n = s.size();
  std::size_t i = 0;
  int line = 1;
  bool line_start = true;  // only blanks since the last newline
  int open_launches = 0;
  const auto push = [&](TokenKind kind, std::size_t begin, std::size_t end, int at) {
    out.push_back({kind, begin, end, s.substr(begin, end - begin), at});
  };
  // A quoted literal from `i` (at the opening quote); returns the offset past the closing quote.
  const auto quoted = [&](std::size_t at, char quote) {
    std::size_t j = at + 1;
    while (j < n && s[j] != quote && s[j] != '\n') j += (s[j] == '\\' && j + 1 < n) ? 2 : 1;
    return j < n && s[j] == quote ? j + 1 : j;
  };
  while (i < n) {
    const char c = s[i];
    if (c == '\n') {
      ++line;
      line_start = true;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    const std::size_t begin = i;
    const int at = line;
    const char next = i + 1 < n ? s[i + 1] : '\0';
    if (c == '#' && line_start) {  // a directive, to the end of its (continued) line
      while (i < n && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < n && s[i + 1] == '\n') {
          i += 2;
          ++line;
        } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
          const std::size_t close = s.find("*/", i + 2);
          const std::size_t end = close == std::string::npos ? n : close + 2;
          line += newlines(s, i, end);
          i = end;
        } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
          while (i < n && s[i] != '\n') ++i;
        } else {
          ++i;
        }
      }
      push(TokenKind::preprocessor, begin, i, at);
      continue;
    }
    line_start = false;
    if (c == '/' && next == '/') {
      while (i < n && s[i] != '\n') ++i;
      push(TokenKind::comment, begin, i, at);
      continue;
    }
    if (c == '/' && next == '*') {
      const std::size_t close = s.find("*/", i + 2);
      i = close == std::string::npos ? n : close + 2;
      line += newlines(s, begin, i);
      push(TokenKind::comment, begin, i, at);
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && std::isdigit(static_cast<unsigned char>(next)))) {
      ++i;
      while (i < n) {
        const char d = s[i];
        if (ident_char(d) || d == '.') {
          ++i;
        } else if (d == '\'' && i + 1 < n && ident_char(s[i + 1])) {  // a digit separator
          ++i;
        } else if ((d == '+' || d == '-') && std::string("eEpP").find(s[i - 1]) != std::string::npos) {
          ++i;
        } else {
          break;
        }
      }
      push(TokenKind::number, begin, i, at);
      continue;
    }
    if (ident_start(c)) {
      while (i < n && ident_char(s[i])) ++i;
      const std::string word = s.substr(begin, i - begin);
      const bool raw = (word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR") && i < n && s[i] == '"';
      if (raw) {  // R"delim( ... )delim"
        const std::size_t open = s.find('(', i);
        const std::string delimiter = open == std::string::npos ? "" : s.substr(i + 1, open - i - 1);
        const std::size_t close = open == std::string::npos ? std::string::npos : s.find(")" + delimiter + "\"", open);
        i = close == std::string::npos ? n : close + delimiter.size() + 2;
        line += newlines(s, begin, i);
        push(TokenKind::string, begin, i, at);
        continue;
      }
      const bool prefix = word == "u8" || word == "u" || word == "U" || word == "L";
      if (prefix && i < n && (s[i] == '"' || s[i] == '\'')) {
        const bool string = s[i] == '"';
        i = quoted(i, s[i]);
        push(string ? TokenKind::string : TokenKind::character, begin, i, at);
        continue;
      }
      push(TokenKind::identifier, begin, i, at);
      continue;
    }
    if (c == '"' || c == '\'') {
      i = quoted(i, c);
      push(c == '"' ? TokenKind::string : TokenKind::character, begin, i, at);
      continue;
    }
    if (s.compare(i, 3, "<<<") == 0) {
      i += 3;
      ++open_launches;
      push(TokenKind::punct, begin, i, at);
      continue;
    }
    if (open_launches > 0 && s.compare(i, 3, ">>>") == 0) {
      i += 3;
      --open_launches;
      push(TokenKind::punct, begin, i, at);
      continue;
    }
    std::size_t length = 1;
    for (const auto& p : punctuators()) {
      if (s.compare(i, p.size(), p) == 0) {
        length = p.size();
        break;
      }
    }
    i += length;
    push(TokenKind::punct, begin, i, at);
  }
  return out;
}

const std::vector<Operator>& operators() {
  static const std::vector<Operator> list = {
      {"rel-lt-le", "`<` becomes `<=`"},
      {"rel-le-lt", "`<=` becomes `<`"},
      {"rel-gt-ge", "`>` becomes `>=`"},
      {"rel-ge-gt", "`>=` becomes `>`"},
      {"rel-eq-ne", "`==` becomes `!=`"},
      {"rel-ne-eq", "`!=` becomes `==`"},
      {"const-inc", "an integer literal plus one"},
      {"const-dec", "an integer literal minus one"},
      {"logic-and-or", "`&&` becomes `||`"},
      {"logic-or-and", "`||` becomes `&&`"},
      {"call-removed", "a call whose value is unused, removed"},
      {"sync-removed", "a barrier (`__syncthreads()`, `__syncwarp()`, `.sync()`) removed"},
      {"fence-removed", "a memory fence (`__threadfence*()`) removed"},
      {"set-limit-removed", "a `cudaDeviceSetLimit` call removed"},
      {"launch-check-removed", "a launch check (`CDPLAB_CHECK_LAUNCH()`, a checked `cudaGetLastError()`) removed"},
      {"launch-removed", "a kernel launch removed"},
      {"narrow-64", "a 64-bit type (`long long`, `size_t`, `int64_t`, ...) narrowed to `int` or `unsigned`"},
      {"launch-stream-null", "a launch's stream replaced by `0` (the NULL stream)"},
      {"launch-stream-faf", "a device launch's stream replaced by (or given) `cudaStreamFireAndForget`"},
      {"launch-stream-tail", "a device launch's stream replaced by (or given) `cudaStreamTailLaunch`"},
      {"launch-grid-dec", "a launch's grid one smaller"},
      {"launch-grid-inc", "a launch's grid one larger"},
      {"launch-block-dec", "a launch's block one thread smaller"},
      {"shared-address-to-child", "a `__shared__` variable's address handed to a child in place of a pointer"},
      {"local-address-to-child", "a local variable's (or parameter's) address handed to a child in place of a pointer"},
  };
  return list;
}

std::string Mutant::id() const { return op + "@" + function + "#" + std::to_string(occurrence); }

std::string Mutant::safe_id() const {
  std::string name = function;
  for (char& c : name)
    if (!ident_char(c) || static_cast<unsigned char>(c) >= 0x80) c = '_';
  return op + "." + name + "." + std::to_string(occurrence);
}

std::vector<std::pair<std::size_t, std::size_t>> student_regions(const std::string& source) {
  std::vector<std::pair<std::size_t, std::size_t>> regions;
  std::optional<std::size_t> open;
  bool markers = false;
  std::size_t at = 0;
  while (at < source.size()) {
    std::size_t end = source.find('\n', at);
    if (end == std::string::npos) end = source.size();
    std::string line = source.substr(at, end - at);
    const auto first = line.find_first_not_of(" \t");
    const auto last = line.find_last_not_of(" \t\r");
    line = first == std::string::npos ? "" : line.substr(first, last - first + 1);
    if (line == "// BEGIN SOLUTION") {
      markers = true;
      if (!open) open = end;
    } else if (line == "// END SOLUTION" && open) {
      regions.emplace_back(*open, at);
      open.reset();
    }
    at = end + 1;
  }
  if (open) regions.emplace_back(*open, source.size());
  if (!markers) regions.emplace_back(0, source.size());
  return regions;
}

namespace {

const std::set<std::string>& keywords() {
  static const std::set<std::string> words = {
      "alignas", "alignof", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const", "constexpr",
      "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete", "do",
      "double", "dynamic_cast", "else", "enum", "explicit", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "nullptr", "operator", "private",
      "protected", "public", "register", "reinterpret_cast", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true",
      "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
      "while", "__global__", "__device__", "__host__", "__shared__", "__constant__", "__managed__",
      "__restrict__", "__forceinline__", "__noinline__", "__launch_bounds__"};
  return words;
}

const std::set<std::string>& builtin_types() {
  static const std::set<std::string> words = {"unsigned", "signed", "int", "long", "short", "char", "float", "double", "bool", "void"};
  return words;
}

/// What a `{` at namespace or class level opens.
enum class ScopeKind { space, type, function, block, other };

struct Function {
  std::string name;
  bool device = false;  ///< __global__ or __device__
  std::size_t params_open = 0, params_close = 0, body_open = 0, body_close = 0;
};

/// A variable a function can name: a parameter or a local declaration.
struct Variable {
  std::string name;
  std::string base;  ///< the type without qualifiers, pointers or extents
  int pointers = 0;
  bool array = false;
  bool constant = false;  ///< what a pointer to it would point to is const (the scalar, the elements, the pointee)
  bool shared = false;
  bool parameter = false;
  std::size_t declared = 0;  ///< token index of its name
  std::size_t visible_until = 0;  ///< token index of the brace that ends its scope
};

struct Edit {
  std::string op;
  int function = -1;
  std::size_t begin = 0, end = 0;
  std::string replacement;
};

class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {
    for (auto& token : tokenize(source))
      if (token.kind != TokenKind::comment && token.kind != TokenKind::preprocessor) t_.push_back(std::move(token));
    regions_ = student_regions(source);
    match_brackets();
    find_templates();
    find_launches();
    find_functions();
    mark_attributes();
    mark_throws();
  }

  std::vector<Edit> edits() {
    for (std::size_t f = 0; f < functions_.size(); ++f) {
      statements(f);
      declarations(f);
    }
    relational();
    literals();
    logical();
    narrowing();
    for (std::size_t f = 0; f < functions_.size(); ++f) calls(f);
    launches();
    std::stable_sort(edits_.begin(), edits_.end(), [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
    return edits_;
  }

  const std::vector<Function>& functions() const { return functions_; }
  int line_of(std::size_t offset) const { return 1 + newlines(source_, 0, offset); }

 private:
  const std::string& source_;
  std::vector<Token> t_;
  std::vector<std::pair<std::size_t, std::size_t>> regions_;
  std::vector<long> match_;          // the partner of ( ) [ ] { } <<< >>>, or -1
  std::vector<long> template_close_; // for a template's `<`: its `>`; else -1
  std::vector<bool> in_template_;    // inside (or a bracket of) a template argument list
  std::vector<bool> in_config_;      // inside a launch configuration <<< ... >>>
  std::vector<bool> in_attribute_;   // inside [[...]], __launch_bounds__(...), alignas(...), static_assert(...)
  std::vector<bool> in_throw_;       // in a throw expression (an error message being built)
  std::vector<int> function_of_;     // the function whose body holds the token, or -1
  std::vector<bool> statement_start_;
  std::vector<bool> controlled_;     // a statement that is the body of if/for/while/else/do
  std::vector<bool> after_label_;    // a statement right after case/default/label ':'
  std::vector<long> enclosing_;      // the `{` around the token within its function, or -1
  std::vector<Function> functions_;
  std::vector<std::vector<Variable>> variables_;  // per function
  std::vector<Edit> edits_;

  std::size_t size() const { return t_.size(); }
  bool is(std::size_t k, const char* text) const { return k < t_.size() && t_[k].text == text; }
  bool ident(std::size_t k) const { return k < t_.size() && t_[k].kind == TokenKind::identifier; }
  bool plain_ident(std::size_t k) const { return ident(k) && !keywords().count(t_[k].text); }

  bool student(std::size_t k) const {
    const std::size_t at = t_[k].begin;
    for (const auto& [begin, end] : regions_)
      if (at >= begin && at < end) return true;
    return false;
  }
  /// A site the operators may touch: in a function body and in the student's code.
  bool site(std::size_t k) const { return code_site(k) && student(k); }
  /// A site in any function body, given code included: where barriers and fences are removed
  /// (a student may edit given code too, and every barrier of a reference must be needed).
  bool code_site(std::size_t k) const { return k < t_.size() && function_of_[k] >= 0 && !in_throw_[k]; }

  void add(const std::string& op, std::size_t first, std::size_t last, const std::string& replacement) {
    edits_.push_back({op, function_of_[first], t_[first].begin, t_[last].end, replacement});
  }

  std::string text(std::size_t first, std::size_t last) const {  // the source of tokens [first, last]
    return source_.substr(t_[first].begin, t_[last].end - t_[first].begin);
  }

  void match_brackets() {
    match_.assign(size(), -1);
    std::vector<std::size_t> open;
    for (std::size_t k = 0; k < size(); ++k) {
      const std::string& x = t_[k].text;
      if (t_[k].kind != TokenKind::punct) continue;
      if (x == "(" || x == "[" || x == "{") {
        open.push_back(k);
      } else if (x == ")" || x == "]" || x == "}") {
        const char want = x == ")" ? '(' : x == "]" ? '[' : '{';
        // Tolerate a stray bracket: close the nearest opener of the same kind.
        for (std::size_t back = open.size(); back-- > 0;) {
          if (t_[open[back]].text[0] == want) {
            match_[k] = static_cast<long>(open[back]);
            match_[open[back]] = static_cast<long>(k);
            open.resize(back);
            break;
          }
        }
      }
    }
  }

  /// Whether the `<` at k opens a template argument list, and where it closes.
  long template_at(std::size_t k) const {
    if (k == 0 || !ident(k - 1)) return -1;
    const std::string& before = t_[k - 1].text;
    if (before == "operator") return -1;
    if (keywords().count(before) && before != "template" && before != "static_cast" && before != "reinterpret_cast" &&
        before != "const_cast" && before != "dynamic_cast")
      return -1;
    int angle = 1, depth = 0;
    for (std::size_t j = k + 1; j < size(); ++j) {
      const std::string& x = t_[j].text;
      if (t_[j].kind != TokenKind::punct) continue;
      if (x == "(" || x == "[") {
        ++depth;
      } else if (x == ")" || x == "]") {
        if (--depth < 0) return -1;
      } else if (depth == 0) {
        if (x == "<" && ident(j - 1)) ++angle;
        else if (x == ">") angle -= 1;
        else if (x == ">>") angle -= 2;
        else if (x == ";" || x == "{" || x == "}" || x == "&&" || x == "||" || x == "?" || x == "=" || x == "<<<" ||
                 x == ">>>" || x == "<=" || x == ">=" || x == "==" || x == "!=" || x == "+=" || x == "-=" || x == "<<")
          return -1;
        if (angle <= 0) return static_cast<long>(j);
      }
    }
    return -1;
  }

  void find_templates() {
    template_close_.assign(size(), -1);
    in_template_.assign(size(), false);
    for (std::size_t k = 0; k < size(); ++k) {
      if (!is(k, "<") || in_template_[k]) continue;
      const long close = template_at(k);
      if (close < 0) continue;
      template_close_[k] = close;
      for (std::size_t j = k; j <= static_cast<std::size_t>(close); ++j) in_template_[j] = true;
      // Nested lists: their `<` are inside; mark them as templates too.
      for (std::size_t j = k + 1; j < static_cast<std::size_t>(close); ++j)
        if (is(j, "<") && template_close_[j] < 0) template_close_[j] = template_at(j);
    }
  }

  void find_launches() {
    in_config_.assign(size(), false);
    std::vector<std::size_t> open;
    for (std::size_t k = 0; k < size(); ++k) {
      if (is(k, "<<<")) {
        open.push_back(k);
      } else if (is(k, ">>>") && !open.empty()) {
        match_[k] = static_cast<long>(open.back());
        match_[open.back()] = static_cast<long>(k);
        for (std::size_t j = open.back() + 1; j < k; ++j) in_config_[j] = true;
        open.pop_back();
      }
    }
  }

  void mark_attributes() {
    in_attribute_.assign(size(), false);
    for (std::size_t k = 0; k + 1 < size(); ++k) {
      long close = -1;
      if (is(k, "[") && is(k + 1, "[") && match_[k] > 0) close = match_[k];
      const bool named = ident(k) && (t_[k].text == "__launch_bounds__" || t_[k].text == "alignas" ||
                                      t_[k].text == "__align__" || t_[k].text == "__attribute__" ||
                                      t_[k].text == "static_assert" || t_[k].text == "__declspec");
      if (named && is(k + 1, "(") && match_[k + 1] > 0) close = match_[k + 1];
      for (long j = static_cast<long>(k); j <= close; ++j) in_attribute_[static_cast<std::size_t>(j)] = true;
    }
  }

  /// A throw expression builds an error for the host: its message is no grader's business, and
  /// the condition that throws lies outside it.
  void mark_throws() {
    in_throw_.assign(size(), false);
    for (std::size_t k = 0; k < size(); ++k) {
      if (!is(k, "throw")) continue;
      int depth = 0;
      for (std::size_t j = k; j < size(); ++j) {
        if (is(j, "(") || is(j, "[") || is(j, "{")) ++depth;
        if (is(j, ")") || is(j, "]") || is(j, "}")) --depth;
        if (depth < 0 || (depth == 0 && is(j, ";"))) break;
        in_throw_[j] = true;
      }
    }
  }

  /// The kind of scope a `{` opens at namespace or class level, from the tokens before it.
  ScopeKind classify(std::size_t first, std::size_t brace, Function& function) const {
    std::size_t k = first;
    // A template head and attributes first.
    while (k < brace) {
      if (is(k, "template") && is(k + 1, "<")) {
        int angle = 0;
        std::size_t j = k + 1;
        for (; j < brace; ++j) {
          if (is(j, "<")) ++angle;
          else if (is(j, ">")) --angle;
          else if (is(j, ">>")) angle -= 2;
          if (angle <= 0) break;
        }
        k = j + 1;
      } else if (is(k, "[") && is(k + 1, "[") && match_[k] > 0) {
        k = static_cast<std::size_t>(match_[k]) + 1;
      } else {
        break;
      }
    }
    if (k >= brace) return ScopeKind::other;
    for (std::size_t j = k; j < brace; ++j)
      if (is(j, "namespace")) return ScopeKind::space;
    if (is(k, "extern") && k + 1 < brace && t_[k + 1].kind == TokenKind::string) return ScopeKind::space;
    int depth = 0;
    for (std::size_t j = k; j < brace; ++j) {
      if (is(j, "(") || is(j, "[")) ++depth;
      if (is(j, ")") || is(j, "]")) --depth;
      if (depth == 0 && is(j, "=")) return ScopeKind::other;
    }
    if (is(k, "class") || is(k, "struct") || is(k, "union") || is(k, "enum") || is(k, "typedef")) return ScopeKind::type;
    static const std::set<std::string> not_names = {"__launch_bounds__", "alignas", "__align__", "__attribute__",
                                                    "__declspec", "decltype", "noexcept", "sizeof", "alignof",
                                                    "throw", "requires"};
    depth = 0;
    for (std::size_t j = k; j < brace; ++j) {
      if (is(j, "(") && depth == 0 && j > k && match_[j] > 0) {
        std::string name;
        if (ident(j - 1) && !not_names.count(t_[j - 1].text)) {
          name = t_[j - 1].text;
        } else {
          for (std::size_t q = j; q-- > k;) {  // operator@ (...)
            if (is(q, "operator")) {
              name = "operator";
              for (std::size_t r = q + 1; r < j; ++r) name += t_[r].text;
              break;
            }
            if (t_[q].kind != TokenKind::punct) break;
          }
        }
        if (!name.empty()) {
          function.name = name;
          function.params_open = j;
          function.params_close = static_cast<std::size_t>(match_[j]);
          function.device = false;
          for (std::size_t q = first; q < j; ++q)
            if (is(q, "__global__") || is(q, "__device__")) function.device = true;
          return ScopeKind::function;
        }
      }
      if (is(j, "(") || is(j, "[")) ++depth;
      if (is(j, ")") || is(j, "]")) --depth;
    }
    return ScopeKind::other;
  }

  void find_functions() {
    function_of_.assign(size(), -1);
    enclosing_.assign(size(), -1);
    struct Scope {
      ScopeKind kind;
      int function;
      std::size_t open;
    };
    std::vector<Scope> stack;
    std::size_t head = 0;
    for (std::size_t k = 0; k < size(); ++k) {
      const bool inside = !stack.empty() && (stack.back().kind == ScopeKind::function || stack.back().kind == ScopeKind::block);
      if (inside) {
        function_of_[k] = stack.back().function;
        enclosing_[k] = static_cast<long>(stack.back().open);
      }
      if (is(k, "{")) {
        if (inside) {
          stack.push_back({ScopeKind::block, stack.back().function, k});
        } else if (!stack.empty() && stack.back().kind == ScopeKind::other) {
          stack.push_back({ScopeKind::other, -1, k});
        } else {
          Function function;
          const ScopeKind kind = classify(head, k, function);
          if (kind == ScopeKind::function) {
            function.body_open = k;
            function.body_close = match_[k] > 0 ? static_cast<std::size_t>(match_[k]) : size() - 1;
            functions_.push_back(function);
            stack.push_back({kind, static_cast<int>(functions_.size() - 1), k});
          } else {
            stack.push_back({kind, -1, k});
          }
        }
        head = k + 1;
      } else if (is(k, "}")) {
        if (!stack.empty()) {
          if (stack.back().kind == ScopeKind::function || stack.back().kind == ScopeKind::block) {
            // The closing brace belongs to the scope outside it.
            function_of_[k] = stack.back().kind == ScopeKind::block ? stack.back().function : -1;
            enclosing_[k] = -1;
            if (stack.back().kind == ScopeKind::block && stack.size() > 1) enclosing_[k] = static_cast<long>(stack[stack.size() - 2].open);
          }
          stack.pop_back();
        }
        head = k + 1;
      } else if (is(k, ";") && !inside) {
        head = k + 1;
      } else if (!inside && is(k, ":") && k > 0 && (is(k - 1, "public") || is(k - 1, "private") || is(k - 1, "protected"))) {
        head = k + 1;
      }
    }
  }

  /// Marks where the statements of function f start, and how each is placed.
  void statements(std::size_t f) {
    if (statement_start_.empty()) {
      statement_start_.assign(size(), false);
      controlled_.assign(size(), false);
      after_label_.assign(size(), false);
    }
    const Function& fn = functions_[f];
    int depth = 0;  // parentheses and brackets
    std::set<std::size_t> control_close;  // the `)` of if/for/while/switch headers
    bool label = false;                   // inside case/default ... ':'
    for (std::size_t k = fn.body_open + 1; k < fn.body_close; ++k) {
      const Token& prev = t_[k - 1];
      if (depth == 0) {
        if (prev.text == "{" || prev.text == "}" || prev.text == ";") {
          statement_start_[k] = true;
        } else if (prev.text == "else" || prev.text == "do" || control_close.count(k - 1)) {
          statement_start_[k] = controlled_[k] = true;
        } else if (prev.text == ":" && label) {
          statement_start_[k] = after_label_[k] = true;
          label = false;
        } else if (prev.text == ":" && k >= 2 && plain_ident(k - 2) && statement_start_[k - 2]) {  // a goto label
          statement_start_[k] = after_label_[k] = true;
        }
      }
      if (statement_start_[k] && (is(k, "case") || is(k, "default"))) label = true;
      const std::string& x = t_[k].text;
      if (t_[k].kind == TokenKind::punct && (x == "(" || x == "[")) {
        if (x == "(" && k > 0 && (is(k - 1, "if") || is(k - 1, "for") || is(k - 1, "while") || is(k - 1, "switch") ||
                                  (is(k - 1, "constexpr") && is(k - 2, "if"))) &&
            match_[k] > 0) {
          // `while (...)` of a do-while ends in ';', which is no body: harmless.
          control_close.insert(static_cast<std::size_t>(match_[k]));
        }
        ++depth;
      } else if (t_[k].kind == TokenKind::punct && (x == ")" || x == "]")) {
        if (depth > 0) --depth;
      }
    }
  }

  /// The normal form of a base type: qualifiers and `std::` dropped, `unsigned int` as `unsigned`.
  static std::string normal_type(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words) {
      if (w == "const" || w == "volatile" || w == "__restrict__" || w == "typename" || w == "struct" || w == "class")
        continue;
      out += (out.empty() || w == "::" || (out.size() >= 2 && out.compare(out.size() - 2, 2, "::") == 0) ? "" : " ") + w;
    }
    if (out.rfind("std::", 0) == 0) out = out.substr(5);
    if (out == "unsigned int") out = "unsigned";
    if (out == "signed int" || out == "signed") out = "int";
    return out;
  }

  /// The parameters of function f and its local declarations (those a statement starts with).
  void declarations(std::size_t f) {
    if (variables_.size() < functions_.size()) variables_.resize(functions_.size());
    const Function& fn = functions_[f];
    auto& vars = variables_[f];
    // Parameters: each up to a top-level comma.
    std::size_t start = fn.params_open + 1;
    int depth = 0;
    for (std::size_t k = fn.params_open + 1; k <= fn.params_close; ++k) {
      const bool end = k == fn.params_close || (depth == 0 && is(k, ","));
      if (!end) {
        if (is(k, "(") || is(k, "[") || is(k, "{") || (is(k, "<") && template_close_[k] >= 0)) ++depth;
        if (is(k, ")") || is(k, "]") || is(k, "}") || (is(k, ">") && in_template_[k] && depth > 0)) --depth;
        continue;
      }
      std::size_t last = k;  // one past the parameter, before any default value
      for (std::size_t q = start; q < k; ++q)
        if (is(q, "=")) {
          last = q;
          break;
        }
      if (last > start) {
        std::size_t name = last - 1;
        if (is(name, "]") && match_[name] > 0) name = static_cast<std::size_t>(match_[name]) - 1;
        if (plain_ident(name) && name > start) {
          Variable v;
          v.name = t_[name].text;
          v.parameter = true;
          v.array = name != last - 1;
          std::vector<std::string> words;
          bool reference = false;
          for (std::size_t q = start; q < name; ++q) {
            if (is(q, "*")) ++v.pointers;
            else if (is(q, "&") || is(q, "&&")) reference = true;
            else words.push_back(t_[q].text);
            if (is(q, "const") && v.pointers == 0) v.constant = true;
          }
          v.base = normal_type(words);
          v.declared = name;
          v.visible_until = fn.body_close;
          if (!reference && !v.base.empty()) vars.push_back(v);
        }
      }
      start = k + 1;
    }
    // Local declarations.
    for (std::size_t k = fn.body_open + 1; k < fn.body_close; ++k) {
      if (!statement_start_[k]) continue;
      std::size_t j = k;
      bool shared = false, constant = false;
      while (j < fn.body_close && (is(j, "__shared__") || is(j, "static") || is(j, "const") || is(j, "constexpr") ||
                                   is(j, "volatile") || is(j, "register") || is(j, "typename") || is(j, "extern"))) {
        shared = shared || is(j, "__shared__");
        constant = constant || is(j, "const") || is(j, "constexpr");
        ++j;
      }
      std::vector<std::string> words;
      if (ident(j) && builtin_types().count(t_[j].text)) {
        while (ident(j) && (builtin_types().count(t_[j].text) || is(j, "const"))) {
          constant = constant || is(j, "const");
          words.push_back(t_[j++].text);
        }
      } else if (plain_ident(j) || is(j, "::")) {
        if (is(j, "::")) words.push_back(t_[j++].text);
        if (!plain_ident(j)) continue;
        words.push_back(t_[j++].text);
        while (is(j, "::") && ident(j + 1)) {
          words.push_back("::");
          words.push_back(t_[j + 1].text);
          j += 2;
        }
        if (is(j, "<") && template_close_[j] >= 0) {
          words.push_back(text(j, static_cast<std::size_t>(template_close_[j])));
          j = static_cast<std::size_t>(template_close_[j]) + 1;
        }
      } else {
        continue;
      }
      Variable v;
      while (is(j, "const") || is(j, "volatile") || is(j, "__restrict__") || is(j, "*")) {
        if (is(j, "*")) ++v.pointers;
        if (is(j, "const") && v.pointers == 0) constant = true;
        ++j;
      }
      v.constant = constant;
      if (!plain_ident(j)) continue;
      const std::size_t name = j;
      if (!(is(name + 1, "=") || is(name + 1, ";") || is(name + 1, "[") || is(name + 1, "{") || is(name + 1, ",") ||
            is(name + 1, "(")))
        continue;
      v.name = t_[name].text;
      v.base = normal_type(words);
      if (v.base == "auto" || v.base.empty()) continue;
      v.array = is(name + 1, "[");
      v.shared = shared;
      v.declared = name;
      v.visible_until = enclosing_[k] >= 0 && match_[static_cast<std::size_t>(enclosing_[k])] > 0
                            ? static_cast<std::size_t>(match_[static_cast<std::size_t>(enclosing_[k])])
                            : fn.body_close;
      vars.push_back(v);
    }
  }

  // ----- the operators ------------------------------------------------------------------------

  void relational() {
    static const std::map<std::string, std::pair<std::string, std::string>> ops = {
        {"<", {"rel-lt-le", "<="}}, {"<=", {"rel-le-lt", "<"}},  {">", {"rel-gt-ge", ">="}},
        {">=", {"rel-ge-gt", ">"}}, {"==", {"rel-eq-ne", "!="}}, {"!=", {"rel-ne-eq", "=="}}};
    for (std::size_t k = 0; k < size(); ++k) {
      if (t_[k].kind != TokenKind::punct || !site(k) || in_template_[k] || in_config_[k] || in_attribute_[k]) continue;
      const auto found = ops.find(t_[k].text);
      if (found == ops.end()) continue;
      if (k > 0 && is(k - 1, "operator")) continue;
      add(found->second.first, k, k, found->second.second);
    }
  }

  void literals() {
    for (std::size_t k = 0; k < size(); ++k) {
      if (t_[k].kind != TokenKind::number || !site(k) || in_template_[k] || in_config_[k] || in_attribute_[k]) continue;
      std::string digits = t_[k].text;
      digits.erase(std::remove(digits.begin(), digits.end(), '\''), digits.end());
      int base = 10;
      std::size_t at = 0;
      if (digits.size() > 1 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
        base = 16;
        at = 2;
      } else if (digits.size() > 1 && digits[0] == '0' && (digits[1] == 'b' || digits[1] == 'B')) {
        base = 2;
        at = 2;
      } else if (digits.size() > 1 && digits[0] == '0' && std::isdigit(static_cast<unsigned char>(digits[1]))) {
        base = 8;
        at = 1;
      }
      std::size_t stop = at;
      while (stop < digits.size() &&
             (base == 16 ? std::isxdigit(static_cast<unsigned char>(digits[stop])) : std::isdigit(static_cast<unsigned char>(digits[stop]))))
        ++stop;
      const std::string suffix = digits.substr(stop);
      if (stop == at || suffix.find_first_not_of("uUlLzZ") != std::string::npos) continue;  // a float, or odd
      unsigned long long value = 0;
      try {
        value = std::stoull(digits.substr(at, stop - at), nullptr, base);
      } catch (const std::exception&) {
        continue;
      }
      const auto spell = [&](unsigned long long v) {
        std::string out;
        if (base == 10 || base == 8 || v == 0) {
          out = std::to_string(v);
        } else if (base == 16) {
          const bool upper = digits.find_first_of("ABCDEF", at) != std::string::npos;
          const char* hex = upper ? "0123456789ABCDEF" : "0123456789abcdef";
          for (; v > 0; v /= 16) out.insert(out.begin(), hex[v % 16]);
          out = digits.substr(0, 2) + out;
        } else {
          for (; v > 0; v /= 2) out.insert(out.begin(), static_cast<char>('0' + v % 2));
          out = digits.substr(0, 2) + out;
        }
        return out + suffix;
      };
      if (value != ~0ull) add("const-inc", k, k, spell(value + 1));
      const bool index = k > 0 && is(k - 1, "[") && is(k + 1, "]");
      const bool is_unsigned = suffix.find_first_of("uU") != std::string::npos;
      if (value > 0) add("const-dec", k, k, spell(value - 1));
      else if (!index && !is_unsigned) add("const-dec", k, k, "(-1)");
    }
  }

  void logical() {
    for (std::size_t k = 0; k < size(); ++k) {
      if (t_[k].kind != TokenKind::punct || !site(k) || in_template_[k] || in_config_[k] || in_attribute_[k]) continue;
      if (is(k, "&&")) {
        // Not an rvalue reference (auto&& x, T&& x).
        if (k > 0 && (is(k - 1, "auto") || (is(k - 1, ">") && in_template_[k - 1]) ||
                      (ident(k - 1) && builtin_types().count(t_[k - 1].text))))
          continue;
        add("logic-and-or", k, k, "||");
      } else if (is(k, "||")) {
        add("logic-or-and", k, k, "&&");
      }
    }
  }

  void narrowing() {
    std::vector<bool> used(size(), false);
    for (std::size_t k = 0; k < size(); ++k) {
      if (!ident(k) || used[k] || !site(k) || in_attribute_[k]) continue;
      const std::string& x = t_[k].text;
      std::size_t last = k, first = k;
      std::string to;
      if (x == "unsigned" && is(k + 1, "long")) {
        last = k + 1;
        if (is(k + 2, "long")) last = k + 2;
        if (is(last + 1, "int")) ++last;
        to = "unsigned";
      } else if (x == "long" && !(k > 0 && (is(k - 1, "unsigned") || is(k - 1, "signed") || is(k - 1, "long")))) {
        if (is(k + 1, "double")) continue;
        if (is(k + 1, "long")) last = k + 1;
        if (is(last + 1, "int")) ++last;
        to = "int";
      } else if (x == "size_t" || x == "uint64_t" || x == "int64_t") {
        to = x == "int64_t" ? "int" : "unsigned";
        if (k >= 2 && is(k - 1, "::") && is(k - 2, "std")) first = k - 2;
        else if (k >= 1 && is(k - 1, "::")) first = k - 1;
      } else {
        continue;
      }
      for (std::size_t q = first; q <= last; ++q) used[q] = true;
      if (!site(first)) continue;
      add("narrow-64", first, last, to);
    }
  }

  /// A statement that is only a call (or a launch), whose value is unused: removed.
  void calls(std::size_t f) {
    const Function& fn = functions_[f];
    static const std::set<std::string> not_calls = {
        "return", "if", "else", "for", "while", "do", "switch", "case", "default", "break", "continue", "goto",
        "throw", "delete", "new", "sizeof", "static_assert", "using", "typedef", "typename", "template", "co_return",
        "co_await", "co_yield", "asm", "const", "constexpr", "static", "auto", "void", "try", "catch", "operator",
        "namespace", "struct", "class", "enum", "union", "extern", "volatile", "register", "__shared__"};
    for (std::size_t k = fn.body_open + 1; k < fn.body_close; ++k) {
      if (!statement_start_[k] || !code_site(k)) continue;
      std::size_t j = k;
      bool launch = false, last_call = false;
      std::size_t calls_seen = 0, segment = 0;
      std::string last_name, first_name;
      std::size_t first_call_open = 0;
      bool ok = true;
      while (ok) {
        if (is(j, "::")) ++j;
        if (!ident(j) || (not_calls.count(t_[j].text)) || (segment == 0 && builtin_types().count(t_[j].text))) {
          ok = false;
          break;
        }
        std::string name = t_[j].text;
        ++j;
        while (is(j, "::") && ident(j + 1)) {
          name = t_[j + 1].text;
          j += 2;
        }
        if (is(j, "<") && template_close_[j] >= 0) j = static_cast<std::size_t>(template_close_[j]) + 1;
        last_call = false;
        if (is(j, "<<<") && segment == 0 && match_[j] > 0) {
          j = static_cast<std::size_t>(match_[j]) + 1;
          if (!is(j, "(")) {
            ok = false;
            break;
          }
          launch = true;
        }
        while (is(j, "(") || is(j, "[")) {
          if (match_[j] < 0) {
            ok = false;
            break;
          }
          if (is(j, "(")) {
            if (calls_seen++ == 0) {
              first_name = name;
              first_call_open = j;
            }
            last_name = name;
            last_call = true;
          } else {
            last_call = false;
          }
          j = static_cast<std::size_t>(match_[j]) + 1;
        }
        if (!ok) break;
        if ((is(j, ".") || is(j, "->")) && !launch) {
          ++j;
          ++segment;
          continue;
        }
        break;
      }
      if (!ok || !last_call || !is(j, ";")) continue;
      std::string op = "call-removed";
      if (launch) {
        op = "launch-removed";
      } else {
        std::string name = last_name;
        const bool wrapper = first_name == last_name && calls_seen == 1 && name != "CDPLAB_CHECK_LAUNCH" &&
                             name.find("CHECK") != std::string::npos &&
                             name.find_first_of("abcdefghijklmnopqrstuvwxyz") == std::string::npos;
        if (wrapper) {  // CDPLAB_CHECK(inner(...)): named after the call it checks
          std::size_t q = first_call_open + 1;
          if (is(q, "::")) ++q;
          std::string inner;
          while (ident(q)) {
            inner = t_[q].text;
            if (is(q + 1, "::")) q += 2;
            else break;
          }
          if (!inner.empty() && is(q + 1, "(")) name = inner;
          if (name == "cudaGetLastError" || name == "cudaPeekAtLastError") name = "CDPLAB_CHECK_LAUNCH";
        }
        if (name == "__syncthreads" || name == "__syncwarp" || name.rfind("__syncthreads_", 0) == 0 || name == "sync" ||
            name == "__barrier_sync")
          op = "sync-removed";
        else if (name.rfind("__threadfence", 0) == 0 || name == "atomic_thread_fence")
          op = "fence-removed";
        else if (name == "cudaDeviceSetLimit")
          op = "set-limit-removed";
        else if (name == "CDPLAB_CHECK_LAUNCH")
          op = "launch-check-removed";
      }
      if (!is_ordering_operator(op) && !student(k)) continue;
      // A controlled statement keeps a body; one after a label keeps a statement.
      const std::string replacement = controlled_[k] ? "{}" : after_label_[k] ? ";" : "";
      add(op, k, j, replacement);
    }
  }

  /// The top-level pieces of [first, last), split at commas: (first, last) token pairs, inclusive.
  std::vector<std::pair<std::size_t, std::size_t>> split(std::size_t first, std::size_t last) const {
    std::vector<std::pair<std::size_t, std::size_t>> parts;
    std::size_t start = first;
    for (std::size_t k = first; k < last; ++k) {
      if ((is(k, "(") || is(k, "[") || is(k, "{") || is(k, "<<<")) && match_[k] > 0) {
        k = static_cast<std::size_t>(match_[k]);
        continue;
      }
      if (is(k, "<") && template_close_[k] >= 0) {
        k = static_cast<std::size_t>(template_close_[k]);
        continue;
      }
      if (is(k, ",")) {
        if (k > start) parts.emplace_back(start, k - 1);
        start = k + 1;
      }
    }
    if (last > start) parts.emplace_back(start, last - 1);
    return parts;
  }

  /// The variable `name` as function f sees it at token `at` (the innermost declaration).
  const Variable* lookup(std::size_t f, const std::string& name, std::size_t at) const {
    if (f >= variables_.size()) return nullptr;
    const auto& vars = variables_[f];
    for (std::size_t i = vars.size(); i-- > 0;) {
      const Variable& v = vars[i];
      if (v.name == name && v.declared < at && at < v.visible_until) return &v;
    }
    return nullptr;
  }

  /// The variable whose element a launch argument points to, when the argument is a pointer of a
  /// form the operators read (see the README); nullptr otherwise.
  const Variable* pointee(std::size_t f, std::size_t first, std::size_t last, std::size_t at) const {
    const auto pointer_to = [&](const Variable* v) -> const Variable* {
      if (v == nullptr) return nullptr;
      if (v->pointers == 1 && !v->array) return v;
      if (v->pointers == 0 && v->array) return v;
      return nullptr;
    };
    if (first == last && plain_ident(first)) return pointer_to(lookup(f, t_[first].text, at));
    if (is(first, "&") && plain_ident(first + 1)) {
      const Variable* v = lookup(f, t_[first + 1].text, at);
      if (v == nullptr) return nullptr;
      if (first + 1 == last) return v->pointers == 0 && !v->array ? v : nullptr;
      if (is(first + 2, "[") && match_[first + 2] == static_cast<long>(last)) return pointer_to(v);
      return nullptr;
    }
    if (plain_ident(first) && first < last && (is(first + 1, "+") || is(first + 1, "-")))
      return pointer_to(lookup(f, t_[first].text, at));
    return nullptr;
  }

  void launches() {
    for (std::size_t k = 0; k < size(); ++k) {
      if (!is(k, "<<<") || match_[k] < 0 || !site(k)) continue;
      const std::size_t close = static_cast<std::size_t>(match_[k]);
      const auto config = split(k + 1, close);
      if (config.size() < 2) continue;
      const int f = function_of_[k];
      const bool device = functions_[static_cast<std::size_t>(f)].device;
      const auto expression = [&](std::pair<std::size_t, std::size_t> part) {
        const std::string code = text(part.first, part.second);
        return part.first == part.second ? code : "(" + code + ")";
      };
      add("launch-grid-dec", config[0].first, config[0].second, expression(config[0]) + " - 1");
      add("launch-grid-inc", config[0].first, config[0].second, expression(config[0]) + " + 1");
      add("launch-block-dec", config[1].first, config[1].second, expression(config[1]) + " - 1");
      if (config.size() >= 4) {
        const auto& stream = config[3];
        const std::string now = text(stream.first, stream.second);
        const bool null = now == "0" || now == "nullptr" || now == "NULL" || now == "cudaStreamLegacy";
        if (!null) add("launch-stream-null", stream.first, stream.second, "0");
        if (device && now != "cudaStreamFireAndForget")
          add("launch-stream-faf", stream.first, stream.second, "cudaStreamFireAndForget");
        if (device && now != "cudaStreamTailLaunch")
          add("launch-stream-tail", stream.first, stream.second, "cudaStreamTailLaunch");
      } else if (device) {
        // No stream: the NULL stream. Given one after the configuration's last part.
        const auto& tail = config.back();
        const std::string kept = text(tail.first, tail.second);
        const std::string shared = config.size() == 2 ? ", 0" : "";
        add("launch-stream-faf", tail.first, tail.second, kept + shared + ", cudaStreamFireAndForget");
        add("launch-stream-tail", tail.first, tail.second, kept + shared + ", cudaStreamTailLaunch");
      }
      // Private addresses in place of a pointer argument, in device code.
      if (!device || !is(close + 1, "(") || match_[close + 1] < 0) continue;
      const std::size_t args_close = static_cast<std::size_t>(match_[close + 1]);
      for (const auto& arg : split(close + 2, args_close)) {
        const Variable* target = pointee(static_cast<std::size_t>(f), arg.first, arg.second, k);
        if (target == nullptr) continue;
        const std::string now = text(arg.first, arg.second);
        // One of each kind per argument: the __shared__ variable, and the local one (a parameter
        // only when no local declaration fits), declared nearest before the launch, of the
        // pointee's type; a const one only where the argument points to const.
        const Variable* shared = nullptr;
        const Variable* local = nullptr;
        const Variable* parameter = nullptr;
        for (const Variable& v : variables_[static_cast<std::size_t>(f)]) {
          if (v.pointers != 0 || v.base != target->base || !(v.declared < k && k < v.visible_until)) continue;
          if (v.constant && !target->constant) continue;
          if (lookup(static_cast<std::size_t>(f), v.name, k) != &v) continue;  // shadowed
          if ((v.array ? v.name : "&" + v.name) == now) continue;
          (v.shared ? shared : v.parameter ? parameter : local) = &v;
        }
        if (local == nullptr) local = parameter;
        if (shared != nullptr) add("shared-address-to-child", arg.first, arg.second, shared->array ? shared->name : "&" + shared->name);
        if (local != nullptr) add("local-address-to-child", arg.first, arg.second, local->array ? local->name : "&" + local->name);
      }
    }
  }
};

}  // namespace

std::vector<Mutant> generate(const std::string& source) {
  Reader reader(source);
  const auto edits = reader.edits();
  const auto& functions = reader.functions();
  std::map<std::pair<std::string, std::string>, int> counters;  // (op, function) -> sites so far
  std::vector<Mutant> out;
  for (const Edit& e : edits) {
    if (e.function < 0) continue;
    Mutant m;
    m.op = e.op;
    m.function = functions[static_cast<std::size_t>(e.function)].name;
    m.occurrence = ++counters[{m.op, m.function}];
    m.begin = e.begin;
    m.end = e.end;
    m.replacement = e.replacement;
    m.line = reader.line_of(e.begin);
    out.push_back(std::move(m));
  }
  return out;
}

std::string apply(const std::string& source, const Mutant& mutant) {
  if (mutant.begin > mutant.end || mutant.end > source.size()) throw std::out_of_range("mutant outside its source");
  return source.substr(0, mutant.begin) + mutant.replacement + source.substr(mutant.end);
}

std::pair<std::string, std::string> changed_lines(const std::string& source, const Mutant& mutant) {
  const std::size_t start = source.rfind('\n', mutant.begin == 0 ? 0 : mutant.begin - 1);
  const std::size_t first = mutant.begin == 0 || start == std::string::npos ? 0 : start + 1;
  std::size_t last = source.find('\n', mutant.end);
  if (last == std::string::npos) last = source.size();
  const std::string before = source.substr(first, last - first);
  const std::string after =
      source.substr(first, mutant.begin - first) + mutant.replacement + source.substr(mutant.end, last - mutant.end);
  return {before, after};
}

std::vector<int> duplicates(const std::string& source, const std::vector<Mutant>& mutants) {
  std::vector<int> out(mutants.size(), -1);
  std::map<std::string, int> seen;
  for (std::size_t i = 0; i < mutants.size(); ++i) {
    const std::string text = apply(source, mutants[i]);
    if (text == source) {
      out[i] = -2;
      continue;
    }
    const auto [it, fresh] = seen.emplace(text, static_cast<int>(i));
    if (!fresh) out[i] = it->second;
  }
  return out;
}

std::uint64_t hash_text(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

bool is_ordering_operator(const std::string& op) { return op == "sync-removed" || op == "fence-removed"; }

std::vector<std::size_t> stratified_order(const std::vector<Mutant>& mutants, const std::vector<bool>& excluded) {
  std::map<std::string, std::size_t> rank;
  for (std::size_t i = 0; i < operators().size(); ++i) rank[operators()[i].name] = i;
  std::vector<std::vector<std::size_t>> groups(operators().size() + 1);
  for (std::size_t i = 0; i < mutants.size(); ++i) {
    if (i < excluded.size() && excluded[i]) continue;
    const auto found = rank.find(mutants[i].op);
    groups[found == rank.end() ? operators().size() : found->second].push_back(i);
  }
  for (auto& group : groups) {
    std::sort(group.begin(), group.end(), [&](std::size_t a, std::size_t b) {
      const auto ha = hash_text(mutants[a].id()), hb = hash_text(mutants[b].id());
      return ha != hb ? ha < hb : mutants[a].id() < mutants[b].id();
    });
  }
  std::vector<std::size_t> order;
  // The lessons' ordering musts first, all of them: every barrier or fence a reference has must
  // lose points when it is removed (is_ordering_operator).
  for (std::size_t g = 0; g < operators().size(); ++g) {
    if (!is_ordering_operator(operators()[g].name)) continue;
    order.insert(order.end(), groups[g].begin(), groups[g].end());
    groups[g].clear();
  }
  for (std::size_t round = 0;; ++round) {
    bool any = false;
    for (const auto& group : groups) {
      if (round < group.size()) {
        order.push_back(group[round]);
        any = true;
      }
    }
    if (!any) break;
  }
  return order;
}

}  // namespace cdplab::sweep
