/// @file compare.h
/// @brief Comparisons that explain themselves: expected against found, in words.
#pragma once

#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

namespace cdplab::oracle {

/// The outcome of comparing a result with its oracle; `message` says what differed.
struct Verdict {
  bool ok = true;
  std::string message;
  explicit operator bool() const { return ok; }
};

inline Verdict pass() { return {}; }
inline Verdict fail(std::string message) { return {false, std::move(message)}; }

/// |found - expected| <= abs_tol + rel_tol * |expected|
inline bool close(double found, double expected, double abs_tol, double rel_tol) {
  return std::fabs(found - expected) <= abs_tol + rel_tol * std::fabs(expected);
}

/// Compares element by element within tolerances; reports the first mismatch and the count.
template <typename T>
Verdict compare_arrays(const std::vector<T>& found, const std::vector<T>& expected, const char* what,
                       double abs_tol = 0.0, double rel_tol = 0.0) {
  if (found.size() != expected.size()) {
    std::ostringstream out;
    out << what << ": expected " << expected.size() << " elements, found " << found.size();
    return fail(out.str());
  }
  std::size_t first = found.size();
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < found.size(); ++i) {
    if (!close(static_cast<double>(found[i]), static_cast<double>(expected[i]), abs_tol, rel_tol)) {
      if (mismatches++ == 0) first = i;
    }
  }
  if (mismatches == 0) return pass();
  std::ostringstream out;
  out.precision(9);  // enough digits that two floats outside the tolerance never print alike
  out << what << "[" << first << "]: expected " << expected[first] << ", found " << found[first];
  if (mismatches > 1) out << " (" << mismatches << " of " << found.size() << " elements differ)";
  return fail(out.str());
}

}  // namespace cdplab::oracle
