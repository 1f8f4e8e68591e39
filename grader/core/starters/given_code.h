/// @file given_code.h
/// @brief The parts of an exercise file that a grading runs as the workbook gives them, and the
///        ones graded as the student's.
///
/// Under `cdplab grade` a student's kernels, device functions and host parts (CDPLAB_HOST_PART,
/// starter/include/cdplab/host_part.h) are graded as theirs; every other function of the file is
/// the workbook's: the grading suite runs its own copy. A student who changes one of those sees it
/// work under `cdplab check` and then not count; `cdplab check` says so (given_host_changes()).
#pragma once

#include <string>
#include <vector>

namespace cdplab::starters {

/// A function defined at namespace scope in a source file: its header (the text before its
/// body's brace, whitespace collapsed) and its body (comments left out, whitespace collapsed).
struct SourceFunction {
  std::string header;
  std::string body;
  int line = 0;      ///< where its header ends (its body's opening brace)
  int end_line = 0;  ///< where its body's closing brace is
  /// Graded as the student's: a kernel, a device function or a host part.
  bool students() const;
};

/// The functions of `source` defined at namespace scope (braces counted outside comments and
/// literals; a function inside a class or another function is part of its enclosing one).
std::vector<SourceFunction> namespace_functions(const std::string& source);

/// The lines (from 1) of `source` that still call CDPLAB_TODO() outside a comment: the places a
/// starter marks as the student's to write.
std::vector<int> todo_lines(const std::string& source);

/// The headers of the given host functions of `starter` (those not graded as the student's) that
/// `student` changed or left out, in the starter's order.
std::vector<std::string> given_host_changes(const std::string& starter, const std::string& student);

}  // namespace cdplab::starters
