/// @file starters.h
/// @brief Generates the student's starter files from the reference solutions.
///
/// The marker convention (docs/authoring.md): lines from `// BEGIN SOLUTION` to `// END SOLUTION`
/// are left out; a line whose first non-blank characters are `//|` becomes code (the marker and
/// one space after it are removed); everything else is copied. In a .toml file (a quiz's answers)
/// the markers are `# BEGIN SOLUTION`, `# END SOLUTION` and `#|`.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace cdplab::starters {

/// The starter text for one solution file; throws std::runtime_error with the line number on
/// an unbalanced or nested marker. `name` is used in messages and, by its extension, picks the
/// comment syntax of the markers.
std::string generate(const std::string& solution_text, const std::string& name = "solution");

/// A starter in chapters/ and whether it matches what its solution generates.
struct Pair {
  std::filesystem::path solution;
  std::filesystem::path starter;
  bool up_to_date = false;
  std::string problem;  ///< why it is out of date: "missing", "differs at line 12", a marker error
};

/// Every solutions/<chapter>/*.cu and *.toml below `project_root` and its starter in chapters/<chapter>/.
std::vector<Pair> compare_all(const std::filesystem::path& project_root);

/// Rewrites the starters that differ; returns the ones written.
std::vector<std::filesystem::path> write_all(const std::filesystem::path& project_root);

}  // namespace cdplab::starters
