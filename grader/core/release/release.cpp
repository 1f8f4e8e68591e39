#include "release/release.h"

#include "files/files.h"
#include "starters/starters.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace cdplab::release {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

/// What the students get, relative to the project root: whole folders and single files.
const char* const kIncluded[] = {
    "CMakeLists.txt", "CMakePresets.json", "README.md", "cdplab", ".gitignore", "course.toml", "cmake", "chapters", "docs",
    "starter", "grader/CMakeLists.txt", "grader/core", "grader/cli", "grader/harness", "grader/suites",
    "grader/oracles", "grader/probe", "grader/bench",
};

/// The instructor's pages: how the project is checked, graded and written, and the slide map.
/// The release's pages leave them out, and their links to them are project-only parts.
const char* const kInstructorPages[] = {"docs/instructor-guide.md", "docs/grading-a-class.md", "docs/authoring.md",
                                        "docs/slide-map.md"};

bool is_instructor_page(const fs::path& relative) {
  return std::find(std::begin(kInstructorPages), std::end(kInstructorPages), relative.generic_string()) !=
         std::end(kInstructorPages);
}

bool is_build_output(const fs::path& relative) {
  for (const auto& part : relative)
    if (part == "build" || part.string().rfind(".backup-", 0) == 0 || part == ".git") return true;
  return relative.filename().string().find(".backup-") != std::string::npos;
}

void copy_tree(const fs::path& root, const fs::path& item, const fs::path& target, Released& released) {
  const fs::path from = root / item;
  if (!fs::exists(from)) return;
  const auto copy_one = [&](const fs::path& file) {
    const fs::path relative = fs::relative(file, root);
    if (is_build_output(relative) || is_instructor_page(relative)) return;
    fs::create_directories((target / relative).parent_path());
    if (relative.extension() == ".md") {  // the students' text: the project-only parts left out
      std::ofstream(target / relative, std::ios::binary) << without_project_parts(files::read_text(file));
    } else {
      fs::copy_file(file, target / relative, fs::copy_options::overwrite_existing);
    }
    fs::permissions(target / relative, fs::status(file).permissions());
    released.copied.push_back(relative);
  };
  if (fs::is_regular_file(from)) {
    copy_one(from);
    return;
  }
  for (auto it = fs::recursive_directory_iterator(from); it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_directory() && is_build_output(fs::relative(it->path(), root))) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) copy_one(it->path());
  }
}

}  // namespace

std::string release_presets(const std::string& presets_json) {
  json presets = json::parse(presets_json);
  const auto uses_solutions = [](const json& preset) {
    const auto vars = preset.find("cacheVariables");
    if (vars == preset.end() || !vars->contains("CDPLAB_EXERCISE_DIR")) return false;
    return (*vars)["CDPLAB_EXERCISE_DIR"].get<std::string>().find("solutions") != std::string::npos;
  };
  std::vector<std::string> dropped;
  json configure = json::array();
  for (auto& preset : presets["configurePresets"]) {
    if (preset.value("name", "") == "test") {
      preset["displayName"] = "Tests: every check of the workbook on your work in chapters/ (GPU checks are skipped without a GPU)";
      preset["cacheVariables"]["CDPLAB_EXERCISE_DIR"] = "${sourceDir}/chapters";
      preset["cacheVariables"]["CDPLAB_BUILD_TESTS"] = "OFF";
    } else if (uses_solutions(preset)) {
      dropped.push_back(preset.value("name", ""));
      continue;
    }
    configure.push_back(preset);
  }
  presets["configurePresets"] = configure;
  for (const char* kind : {"buildPresets", "testPresets"}) {
    if (!presets.contains(kind)) continue;
    json kept = json::array();
    for (const auto& preset : presets[kind])
      if (std::find(dropped.begin(), dropped.end(), preset.value("configurePreset", "")) == dropped.end())
        kept.push_back(preset);
    presets[kind] = kept;
  }
  return presets.dump(2) + "\n";
}

std::string without_project_parts(const std::string& markdown) {
  std::istringstream in(markdown);
  std::string out;
  bool inside = false;
  bool last_blank = false;
  for (std::string line; std::getline(in, line);) {
    if (!inside && line.rfind("<!-- project-only", 0) == 0) {
      inside = true;
      continue;
    }
    // A release-only part is an HTML comment in the project's own page: the release keeps its lines.
    if (!inside && (line.rfind("<!-- release-only", 0) == 0 || line.rfind("/release-only -->", 0) == 0)) continue;
    if (inside) {
      if (line.rfind("<!-- /project-only -->", 0) == 0) inside = false;
      continue;
    }
    const bool blank = line.find_first_not_of(" \t") == std::string::npos;
    if (blank && last_blank) continue;
    out += line + "\n";
    last_blank = blank;
  }
  if (inside) throw std::runtime_error("a <!-- project-only --> part has no <!-- /project-only --> line after it");
  return out;
}

Released make_release(const fs::path& root, const fs::path& target) {
  if (fs::exists(target) && !(fs::is_directory(target) && fs::is_empty(target)))
    throw std::runtime_error(target.string() + " exists and is not empty; a release goes into a new folder");
  // The release ships the starters: every one must be what its solution generates. One that
  // differs may be an edit (an instructor trying an exercise), which `cdplab starters --write`
  // would overwrite: name the files, and say so.
  std::string stale;
  for (const auto& pair : starters::compare_all(root)) {
    if (!pair.up_to_date) stale += "\n  " + fs::relative(pair.starter, root).string() + ": " + pair.problem;
  }
  if (!stale.empty())
    throw std::runtime_error(
        "the release ships the starters, and these differ from what their solutions generate:" + stale +
        "\n`cdplab starters` lists them, `git diff` shows an edit of yours. Keep a copy of an edit you mean to"
        "\nkeep: `cdplab starters --write` overwrites these files with the generated starters.");

  // Build the copy next to the target and move it into place at the end: a failure leaves nothing.
  const fs::path staging = target.string() + ".partial";
  fs::remove_all(staging);
  Released released;
  try {
    for (const char* item : kIncluded) copy_tree(root, item, staging, released);
    // The starters as released, for `cdplab reset` (there are no solutions to generate them from).
    for (const auto& pair : starters::compare_all(root)) {
      const fs::path relative = fs::relative(pair.starter, root / "chapters");
      fs::create_directories((staging / kOriginals / relative).parent_path());
      fs::copy_file(pair.starter, staging / kOriginals / relative, fs::copy_options::overwrite_existing);
    }
    released.notes.push_back("starters kept under " + kOriginals.string() + " for cdplab reset");
    std::ofstream(staging / "CMakePresets.json", std::ios::binary)
        << release_presets(files::read_text(root / "CMakePresets.json"));
    released.notes.push_back("CMakePresets.json: the solution presets removed; the test preset runs the checks on chapters/");
    released.notes.push_back("README.md and the pages: the parts about solutions/, grading and the project's tests "
                             "left out, and the instructor's pages");
    if (fs::exists(target)) fs::remove(target);
    fs::rename(staging, target);
  } catch (...) {
    fs::remove_all(staging);
    throw;
  }
  return released;
}

}  // namespace cdplab::release
