/// @file archive.h
/// @brief A submission's archive (.tar, .tar.gz, .tgz, .zip) unpacked by the grader's own rules:
///        nothing in it can write outside its folder, link to a file of the grading machine or
///        another student's, or fill the disk.
///
/// Read with libarchive, member by member, and written by the grader itself: regular files and
/// folders only (a symbolic or hard link, a device, a FIFO or a socket refuses the archive), every
/// path relative and inside (no absolute path, no `..`, no drive letter), each file created anew
/// (never through a link, never twice), and limits on the members, each file's size and the total,
/// counted on the bytes actually read, not on what the archive claims. A refused archive is
/// unpacked no further; the reason names the member and the rule.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace cdplab::batch {

struct UnpackLimits {
  std::uint64_t members = 10000;                     ///< files and folders
  std::uint64_t file_bytes = std::uint64_t{64} << 20;  ///< one file, unpacked
  std::uint64_t total_bytes = std::uint64_t{512} << 20;  ///< every file together, unpacked
};

/// Unpacks `archive` into the folder `into` (made if missing; it should be empty). Returns an
/// empty string, or why the archive was refused or could not be read; what was written before a
/// refusal stays in `into` for the caller to remove.
std::string unpack_archive(const std::filesystem::path& archive, const std::filesystem::path& into,
                           const UnpackLimits& limits = {});

/// One file of an archive the grader writes: its path inside the archive and its text.
struct PackedFile {
  std::string name;       ///< relative, '/' between folders
  std::string contents;
  bool executable = false;
};

/// Writes `files` into a new archive at `archive`: a POSIX tar, or a zip when `zip` (as Gradescope
/// takes an autograder). Throws std::runtime_error when it cannot.
void pack_archive(const std::vector<PackedFile>& files, const std::filesystem::path& archive, bool zip = false);

}  // namespace cdplab::batch
