/// @file files.h
/// @brief Whole-file reading and writing, shared by the grader core, the command line and the tests.
#pragma once

#include <filesystem>
#include <string>

namespace cdplab::files {

/// The whole file, byte for byte; empty when it cannot be read.
std::string read_text(const std::filesystem::path& path);

/// Writes a file whole or not at all, through a file of its own beside it and a rename: a
/// reader never sees half of it, and two processes writing the same file leave one of the two
/// whole. Throws std::runtime_error (or std::filesystem::filesystem_error) when it cannot.
void write_whole(const std::filesystem::path& path, const std::string& text);

/// The last `count` lines of `text`, each ending in a line break.
std::string last_lines(const std::string& text, int count);

/// A folder removed, with what it holds, when this goes out of scope (whatever ends the scope),
/// unless `keep` was set meanwhile; an empty path removes nothing.
struct RemovedAtEnd {
  std::filesystem::path dir;
  bool keep = false;
  ~RemovedAtEnd();
};

}  // namespace cdplab::files
