/// @file submissions.h
/// @brief A class's submissions: finding them in a folder, unpacking archives safely, and the
///        clean copy each one is graded from.
///
/// A submission is a folder laid out like chapters/ (`01-fundamentals/child_grids.cu`, ...),
/// or a .zip, .tar.gz, .tgz or .tar archive of one. The layout may sit up to three folders deep
/// inside it (a student who zipped `chapters/` or `alice/chapters/` is graded all the same).
/// Only the files the manifests name are copied into the clean copy, and only regular files:
/// links, build outputs and anything else a submission carries never reach the build.
#pragma once

#include "batch/archive.h"
#include "manifest/manifest.h"

#include <filesystem>
#include <string>
#include <vector>

namespace cdplab::batch {

/// One student's submission as found in the class folder.
struct Submission {
  std::string name;              ///< the student: the folder or archive name without its extension
  std::filesystem::path source;  ///< the folder or archive
  bool archive = false;
};

/// The folder a student's results and work are kept in (students/<folder>, work/<folder>): the
/// name itself when it is plain (letters, digits, '.', '_' and '-', not starting with '.' or '-',
/// at most 64 bytes), otherwise its plain characters and a hash of the whole name ("a_b-1f2e3d4c"):
/// a name may hold any byte a file system allows (quotes, ';', '$', line breaks, invalid UTF-8),
/// and none of it reaches a path, a CMake list or a shell. The name itself goes only into the
/// reports, escaped for each format.
std::string student_folder(const std::string& name);

/// Whether `dir` is itself a submission: it holds a folder named like one of the chapters.
bool is_submission_folder(const std::filesystem::path& dir, const manifest::Workbook& book);

/// The submissions of a class folder (each subfolder and each archive), sorted by name. Other
/// files are ignored; two entries of the same student name are an error (std::runtime_error).
std::vector<Submission> find_submissions(const std::filesystem::path& folder);

/// The clean copy of a submission.
struct CleanCopy {
  std::filesystem::path dir;        ///< laid out like chapters/; graded from here
  std::string problem;              ///< why nothing could be copied (a broken or unsafe archive)
  std::vector<std::string> notes;   ///< what was left out and why (files too large, links)
};

/// The largest exercise file copied (bytes); a larger one is left out with a note.
constexpr std::uintmax_t kMaxExerciseFileBytes = 1 << 20;

/// Unpacks (archives, by the grader's rules: batch/archive.h) and copies the exercise files of
/// `exercises` from `submission` into `work_dir`/submission, replacing what an earlier run left
/// there.
CleanCopy make_clean_copy(const Submission& submission, const std::vector<const manifest::Exercise*>& exercises,
                          const manifest::Workbook& book, const std::filesystem::path& work_dir,
                          const UnpackLimits& limits = {});

/// Whether an archive member's path stays inside the folder it is unpacked into (no absolute
/// path, no `..` part).
bool is_safe_member(const std::string& path);

}  // namespace cdplab::batch
