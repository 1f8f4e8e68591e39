/// @file generator.h
/// @brief The mechanical mutants of one CUDA source: every applicable site of every operator
///        (relational, constants, logical, removed calls, narrowed types, launch streams and
///        configurations, private addresses handed to a child), each with a stable id.
///
/// The generator works on tokens: comments, string and character literals and preprocessor lines
/// are never touched. Only the student's code is mutated: the lines between `// BEGIN SOLUTION`
/// and `// END SOLUTION` (docs/authoring.md), or the whole file when it has no markers, and there
/// only what lies inside a function body. An id names the operator, the function and the
/// occurrence of that operator in that function, counted in the order of the source:
/// `rel-lt-le@expand_child#2`. It does not change when code elsewhere changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cdplab::sweep {

enum class TokenKind { identifier, number, string, character, punct, comment, preprocessor };

struct Token {
  TokenKind kind = TokenKind::punct;
  std::size_t begin = 0;  ///< byte offset of the first character
  std::size_t end = 0;    ///< byte offset one past the last character
  std::string text;
  int line = 1;  ///< 1-based line of the first character
};

/// The tokens of a C++/CUDA source, comments and preprocessor lines included (one token each).
/// `<<<` is one token, and so is `>>>` while a `<<<` is open.
std::vector<Token> tokenize(const std::string& source);

/// One operator: its name (the first part of an id) and what it does.
struct Operator {
  const char* name;
  const char* what;
};

/// Every operator, in the order the reports list them.
const std::vector<Operator>& operators();

/// One mutant: the bytes [begin, end) of the source replaced by `replacement`.
struct Mutant {
  std::string op;        ///< the operator's name, e.g. "rel-lt-le"
  std::string function;  ///< the function whose body holds the site
  int occurrence = 0;    ///< 1-based: the site's rank among this operator's sites in this function
  std::size_t begin = 0;
  std::size_t end = 0;
  std::string replacement;
  int line = 0;  ///< 1-based line of `begin` in the source

  /// "rel-lt-le@expand_child#2"
  std::string id() const;
  /// The id as a file name: "rel-lt-le.expand_child.2".
  std::string safe_id() const;
};

/// The byte ranges of the student's code: between the solution markers, or the whole source when
/// it has none.
std::vector<std::pair<std::size_t, std::size_t>> student_regions(const std::string& source);

/// Every mutant of the source, ordered by position (and by operator at one position). Ids are
/// unique. Never throws for odd code: a site the generator cannot read is left alone.
std::vector<Mutant> generate(const std::string& source);

/// The source with the mutant applied.
std::string apply(const std::string& source, const Mutant& mutant);

/// The whole lines the mutant changes, before and after (several lines when its site spans them).
std::pair<std::string, std::string> changed_lines(const std::string& source, const Mutant& mutant);

/// For each mutant, -1 when its text is unique, -2 when it equals the source, or the index of an
/// earlier mutant with the same text (a duplicate).
std::vector<int> duplicates(const std::string& source, const std::vector<Mutant>& mutants);

/// A stable 64-bit hash (FNV-1a) of a text.
std::uint64_t hash_text(const std::string& text);

/// Whether `op` removes a barrier or a fence (sync-removed, fence-removed): a sample takes every
/// such mutant, since every one of them must lose points.
bool is_ordering_operator(const std::string& op);

/// The indices of `mutants` in the order a sample takes them: first every mutant of an ordering
/// operator, then round robin over the other operators (in the order of operators()), each
/// operator's mutants in an order fixed by their ids' hashes. The first N of this order are an
/// operator-stratified sample that is the same on every run and does not change when an unrelated
/// site is added. Skips the indices in `excluded`.
std::vector<std::size_t> stratified_order(const std::vector<Mutant>& mutants, const std::vector<bool>& excluded = {});

}  // namespace cdplab::sweep
