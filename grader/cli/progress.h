/// @file progress.h
/// @brief What a student has done so far: last check results and hints seen, kept in the
///        build tree (never in the student's files).
#pragma once

#include "results/results.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace cdplab::cli {

class Progress {
 public:
  explicit Progress(std::filesystem::path build_dir);

  /// Records the last check of an exercise and a fingerprint of its source file; "gpu_pending":
  /// nothing failed, but GPU checks were skipped (no GPU).
  void record(const grading::ExerciseResult& result, const std::string& source_text);
  /// The last recorded result, or nullptr; `source_changed` says whether the file changed since.
  const nlohmann::json* last(const std::string& id) const;
  bool source_changed(const std::string& id, const std::string& source_text) const;

  int hints_seen(const std::string& id) const;
  void set_hints_seen(const std::string& id, int count);

  void save() const;

 private:
  std::filesystem::path file_;
  nlohmann::json data_;
};

/// A short fingerprint of a text (FNV-1a), to notice edits.
std::string fingerprint(const std::string& text);

}  // namespace cdplab::cli
