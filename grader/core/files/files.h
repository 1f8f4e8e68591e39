/// @file files.h
/// @brief Whole-file reading, shared by the grader core, the command line and the tests.
#pragma once

#include <filesystem>
#include <string>

namespace cdplab::files {

/// The whole file, byte for byte; empty when it cannot be read.
std::string read_text(const std::filesystem::path& path);

}  // namespace cdplab::files
