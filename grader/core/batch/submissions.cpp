#include "batch/submissions.h"

#include "batch/archive.h"


#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

namespace cdplab::batch {
namespace {

namespace fs = std::filesystem;

/// The archive kinds a submission may come as, longest suffix first.
const char* const kArchiveSuffixes[] = {".tar.gz", ".tgz", ".tar", ".zip"};

std::string archive_suffix(const std::string& file_name) {
  for (const char* suffix : kArchiveSuffixes) {
    const std::string s = suffix;
    if (file_name.size() > s.size() && file_name.compare(file_name.size() - s.size(), s.size(), s) == 0) return s;
  }
  return "";
}

/// The folder below `top` (itself included, at most `depth` levels down) that is a submission.
fs::path find_layout(const fs::path& top, const manifest::Workbook& book, int depth) {
  if (is_submission_folder(top, book)) return top;
  if (depth == 0) return {};
  std::vector<fs::path> children;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(top, error))
    if (entry.is_directory() && !entry.is_symlink()) children.push_back(entry.path());
  std::sort(children.begin(), children.end());
  for (const auto& child : children) {
    // Archives made on macOS carry a __MACOSX folder of resource forks: never the work.
    if (child.filename() == "__MACOSX") continue;
    if (auto found = find_layout(child, book, depth - 1); !found.empty()) return found;
  }
  return {};
}

}  // namespace

bool is_safe_member(const std::string& path) {
  if (path.empty() || path[0] == '/' || path[0] == '\\' || path.find(':') != std::string::npos) return false;
  std::string part;
  std::istringstream in(path);
  while (std::getline(in, part, '/'))
    if (part == ".." || part.find('\\') != std::string::npos) return false;
  return true;
}

std::string student_folder(const std::string& name) {
  const auto plain = [](unsigned char c) { return std::isalnum(c) || c == '.' || c == '_' || c == '-'; };
  const bool as_is = !name.empty() && name.size() <= 64 && name[0] != '.' && name[0] != '-' &&
                     std::all_of(name.begin(), name.end(), [&](char c) { return plain(static_cast<unsigned char>(c)); });
  if (as_is) return name;
  std::string folder;
  for (const char c : name) {
    if (folder.size() >= 40) break;
    folder += plain(static_cast<unsigned char>(c)) ? c : '_';
  }
  while (!folder.empty() && (folder[0] == '.' || folder[0] == '-')) folder.erase(0, 1);
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a 64 of the whole name
  for (const char c : name) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char digits[17];
  std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(hash));
  return (folder.empty() ? "student" : folder) + "-" + std::string(digits, 8);
}

bool is_submission_folder(const fs::path& dir, const manifest::Workbook& book) {
  for (const auto& chapter : book.chapters)
    if (fs::is_directory(dir / chapter.id)) return true;
  return false;
}

std::vector<Submission> find_submissions(const fs::path& folder) {
  std::map<std::string, Submission> by_name;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string file_name = entry.path().filename().string();
    if (file_name.empty() || file_name[0] == '.') continue;
    Submission s;
    s.source = entry.path();
    if (entry.is_directory()) {
      s.name = file_name;
    } else if (const std::string suffix = archive_suffix(file_name); entry.is_regular_file() && !suffix.empty()) {
      s.name = file_name.substr(0, file_name.size() - suffix.size());
      s.archive = true;
    } else {
      continue;
    }
    if (by_name.count(s.name) != 0)
      throw std::runtime_error("two submissions of '" + s.name + "': " + by_name[s.name].source.string() + " and " +
                               s.source.string());
    by_name[s.name] = s;
  }
  std::vector<Submission> out;
  for (auto& [name, s] : by_name) out.push_back(s);
  return out;
}

CleanCopy make_clean_copy(const Submission& submission, const std::vector<const manifest::Exercise*>& exercises,
                          const manifest::Workbook& book, const fs::path& work_dir, const UnpackLimits& limits) {
  CleanCopy copy;
  copy.dir = work_dir / "submission";
  const fs::path unpacked = work_dir / "unpacked";
  fs::remove_all(copy.dir);
  fs::remove_all(unpacked);
  fs::create_directories(copy.dir);

  fs::path layout;
  if (submission.archive) {
    // Unpacked by the grader's rules (batch/archive.h), never by a tool that follows links.
    if (const std::string problem = unpack_archive(fs::absolute(submission.source), unpacked, limits); !problem.empty()) {
      copy.problem = problem;
      fs::remove_all(unpacked);
      return copy;
    }
    layout = find_layout(unpacked, book, 3);
  } else {
    layout = find_layout(submission.source, book, 3);
  }
  if (layout.empty()) {
    copy.problem = "no chapter folder found in " + submission.source.filename().string() +
                   " (a submission is laid out like chapters/, e.g. 01-fundamentals/child_grids.cu)";
    return copy;
  }

  for (const auto* e : exercises) {
    const fs::path from = layout / e->chapter / e->file;
    const fs::path to = copy.dir / e->chapter / e->file;
    fs::create_directories(to.parent_path());  // a chapter folder, even when its files are missing
    if (fs::is_symlink(fs::symlink_status(layout / e->chapter))) {
      copy.notes.push_back(e->chapter + " is a link, not a folder: its files were left out");
      continue;
    }
    const auto status = fs::symlink_status(from);
    if (!fs::exists(status)) continue;  // missing: the grader reports it per exercise
    if (fs::is_symlink(status) || !fs::is_regular_file(status)) {
      copy.notes.push_back(e->path() + " is not a regular file (a link?): left out");
      continue;
    }
    if (fs::file_size(from) > kMaxExerciseFileBytes) {
      copy.notes.push_back(e->path() + " is larger than " + std::to_string(kMaxExerciseFileBytes >> 10) +
                           " KiB: left out");
      continue;
    }
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  }
  fs::remove_all(unpacked);
  return copy;
}

}  // namespace cdplab::batch
