/// @file test_folders.h
/// @brief Folders and files that the project's tests make below their build folder.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace cdplab::testing {

/// `dir`, emptied (or made): what an earlier run of the test left there is gone. Its real path:
/// a build folder reached through a link (a cluster's scratch disk) is named as the grader names
/// it, with the links resolved.
inline std::filesystem::path empty_folder(const std::filesystem::path& dir) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return std::filesystem::canonical(dir);
}

/// Writes `text` into `file` as it is, making its folder first.
inline void write_file(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

}  // namespace cdplab::testing
