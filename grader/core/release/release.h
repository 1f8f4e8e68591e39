/// @file release.h
/// @brief The student release: a copy of the workbook without the reference solutions and
///        the project's own tests, that builds and runs its two README commands.
///
/// What the copy holds: the chapters (lessons, manifests, starters), the starter kit, the
/// grader (its core, command line, harness, suites, oracles, probe and benchmarks), the CMake
/// files, the docs, README.md, the cdplab script and course.toml (where the course's GPUs are). What it leaves out: solutions/,
/// grader/tests/ (the project's tests and their fixtures), CI files and build trees.
/// Since there are no solutions to generate starters from, the copy keeps every starter as it
/// was released under starter/originals/, where `cdplab reset` finds it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace cdplab::release {

/// The folder of the released starters, relative to the project root.
inline const std::filesystem::path kOriginals = std::filesystem::path("starter") / "originals";

/// What make_release() did.
struct Released {
  std::vector<std::filesystem::path> copied;  ///< files, relative to the release
  std::vector<std::string> notes;             ///< what was changed for the students
};

/// Writes the student release of the project at `root` into `target`, which must not exist or
/// be empty. Throws std::runtime_error (nothing is left half-written in `target`'s place) when
/// it cannot, or when a starter in chapters/ differs from what its solution generates.
Released make_release(const std::filesystem::path& root, const std::filesystem::path& target);

/// The presets of the release: CMakePresets.json without the solution presets, its test preset
/// building chapters/ without the project's own tests. `presets_json` is the project's file.
std::string release_presets(const std::string& presets_json);

/// The release's text of a Markdown file: every part between a line that starts with
/// `<!-- project-only` and the next `<!-- /project-only -->` line (both included) left out; the
/// lines of a release-only part (an HTML comment in the project's page, from a line that starts
/// with `<!-- release-only` to one that starts with `/release-only -->`) kept without those two;
/// and the blank lines doubled by a removal made single. Throws std::runtime_error on a
/// project-only block that does not end.
std::string without_project_parts(const std::string& markdown);

}  // namespace cdplab::release
