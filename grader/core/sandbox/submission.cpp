#include "sandbox/submission.h"

#include "files/files.h"
#include "process/process.h"

#include <unistd.h>

#include <algorithm>
#include <thread>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace cdplab::sandbox {
namespace {

namespace fs = std::filesystem;

/// Whether `path` is `folder` or lies below it (lexically).
bool under(const std::string& path, const std::string& folder) {
  if (folder.empty()) return false;
  if (folder == "/") return !path.empty() && path[0] == '/';
  return path == folder || (path.size() > folder.size() && path.compare(0, folder.size(), folder) == 0 &&
                            path[folder.size()] == '/');
}

std::string normal(const fs::path& path) {
  std::string p = path.lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

/// The path as given and its real path (when it exists and differs).
std::vector<std::string> spellings(const fs::path& path) {
  std::vector<std::string> out = {normal(path)};
  std::error_code error;
  const auto real = fs::canonical(path, error);
  if (!error && normal(real) != out.front()) out.push_back(normal(real));
  return out;
}

/// A program named without a folder, as PATH finds it; empty when it does not.
std::string find_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const fs::path candidate = fs::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

/// NAME:TYPE=VALUE lines of a CMakeCache.txt, by NAME.
std::map<std::string, std::string> read_cache(const fs::path& file) {
  std::map<std::string, std::string> values;
  std::istringstream in(files::read_text(file));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line[0] == '/') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string name = line.substr(0, eq);
    std::string type;
    if (const auto colon = name.find(':'); colon != std::string::npos) {
      type = name.substr(colon + 1);
      name = name.substr(0, colon);
    }
    values[name] = line.substr(eq + 1);
    if (type == "PATH" && name.size() > 4 && name.compare(name.size() - 4, 4, "_DIR") == 0)
      values["package-dir:" + name] = line.substr(eq + 1);
  }
  return values;
}

/// The cache variables whose values are programs or folders of the toolchain.
const std::set<std::string>& toolchain_variables() {
  static const std::set<std::string> names = {
      "CMAKE_CUDA_COMPILER", "CMAKE_CXX_COMPILER", "CMAKE_C_COMPILER", "CMAKE_CUDA_HOST_COMPILER",
      "CMAKE_MAKE_PROGRAM",  "CMAKE_AR",           "CMAKE_RANLIB",     "CMAKE_LINKER",
      "CUDAToolkit_ROOT",    "CMAKE_COMMAND",      "CMAKE_CTEST_COMMAND"};
  return names;
}

bool system_path(const std::string& path) {
  for (const char* root : {"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"})
    if (under(path, root)) return true;
  return false;
}

/// The kit's compiled pieces: the CMakeFiles/<piece>.dir folders of the object files that
/// cdplab-grading-kit.cmake lists. Its REFERENCE lines (the reference twins) are left out, and so
/// is any piece that would hold compiled exercise or solution code.
std::vector<std::string> kit_piece_folders(const fs::path& kit_file) {
  std::vector<std::string> folders;
  std::istringstream in(files::read_text(kit_file));
  const std::string objects = "set(CDPLAB_KIT_OBJECTS_";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(objects, 0) != 0) continue;
    const auto open = line.find('"');
    const auto close = line.rfind('"');
    if (open == std::string::npos || close <= open) continue;
    std::istringstream list(line.substr(open + 1, close - open - 1));
    for (std::string object; std::getline(list, object, ';');) {
      const auto at = object.find("/CMakeFiles/");
      if (at == std::string::npos) continue;
      const auto end = object.find(".dir/", at);
      if (end == std::string::npos) continue;
      const std::string folder = normal(object.substr(0, end + 4));
      const std::string piece = fs::path(folder).filename().string();
      bool refused = false;
      for (const char* prefix : {"cdplab_reference_", "reference_suite_", "cdplab_exercise_", "suite_"})
        refused = refused || piece.rfind(prefix, 0) == 0;
      if (!refused && std::find(folders.begin(), folders.end(), folder) == folders.end()) folders.push_back(folder);
    }
  }
  return folders;
}

/// The target names whose objects are the exercise's: its static library (whose compile also
/// keeps the PTX the rules read).
std::vector<std::string> exercise_targets(const grading::IndexEntry& entry) {
  std::vector<std::string> targets;
  if (!entry.library_target.empty()) targets.push_back(entry.library_target);
  if (!entry.library.empty()) {
    std::string name = fs::path(entry.library).stem().string();  // libcdplab_exercise_x.a
    if (name.rfind("lib", 0) == 0) name = name.substr(3);
    targets.push_back(name);
  }
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
  return targets;
}

bool is_exercise_object(const std::string& object, const std::vector<std::string>& targets) {
  for (const auto& t : targets)
    if (object.find("CMakeFiles/" + t + ".dir/") != std::string::npos) return true;
  return false;
}

/// The prerequisites of a Makefile-style dependency file (what compilers write with -MD).
std::vector<std::string> depfile_prerequisites(const std::string& text) {
  std::vector<std::string> out;
  std::string joined;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;
      joined += ' ';
    } else if (text[i] == '\\' && i + 2 < text.size() && text[i + 1] == '\r' && text[i + 2] == '\n') {
      i += 2;
      joined += ' ';
    } else {
      joined += text[i];
    }
  }
  std::istringstream lines(joined);
  for (std::string line; std::getline(lines, line);) {
    const auto colon = line.find(": ");
    const auto rest = colon == std::string::npos ? (line.size() > 0 && line.back() == ':' ? line.size() : std::string::npos)
                                                 : colon + 1;
    if (rest == std::string::npos) continue;
    std::string word;
    for (std::size_t i = rest; i <= line.size(); ++i) {
      const char c = i < line.size() ? line[i] : ' ';
      if (c == '\\' && i + 1 < line.size() && line[i + 1] == ' ') {
        word += ' ';
        ++i;
      } else if (c == '$' && i + 1 < line.size() && line[i + 1] == '$') {
        word += '$';
        ++i;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        if (!word.empty()) out.push_back(word);
        word.clear();
      } else {
        word += c;
      }
    }
  }
  return out;
}

/// A `ninja -t deps`-like listing of the exercise's objects from their .d files (generators
/// that keep them: Unix Makefiles); empty when there are none.
std::string listing_from_depfiles(const fs::path& build_dir, const std::vector<std::string>& targets) {
  std::string listing;
  std::error_code error;
  for (const auto& target : targets) {
    const fs::path folder = build_dir / "CMakeFiles" / (target + ".dir");
    if (!fs::is_directory(folder, error)) continue;
    for (auto it = fs::recursive_directory_iterator(folder, error); !error && it != fs::recursive_directory_iterator();
         it.increment(error)) {
      if (!it->is_regular_file(error) || it->path().extension() != ".d") continue;
      const auto deps = depfile_prerequisites(files::read_text(it->path()));
      listing += fs::relative(it->path(), build_dir, error).replace_extension().string() + ": #deps " +
                 std::to_string(deps.size()) + "\n";
      for (const auto& d : deps) listing += "    " + d + "\n";
      listing += "\n";
    }
  }
  return listing;
}

std::string cuda_root(const grading::Toolchain& tools, const std::map<std::string, std::string>& cache) {
  std::string nvcc;
  const auto it = cache.find("CMAKE_CUDA_COMPILER");
  if (it != cache.end()) nvcc = it->second;
  for (const auto& arg : tools.cache_args) {
    const std::string key = "-DCMAKE_CUDA_COMPILER";
    if (nvcc.empty() && arg.rfind(key, 0) == 0 && arg.find('=') != std::string::npos) nvcc = arg.substr(arg.find('=') + 1);
  }
  if (nvcc.empty()) nvcc = find_in_path("nvcc");
  if (nvcc.empty() || nvcc[0] != '/') return "";
  const fs::path bin = fs::path(nvcc).parent_path();
  return bin.filename() == "bin" ? normal(bin.parent_path()) : "";
}

}  // namespace

std::vector<std::string> toolchain_paths(const grading::Toolchain& tools, const fs::path& build_dir,
                                         const std::vector<fs::path>& keep_out) {
  std::vector<std::string> candidates;
  const auto add_program = [&](const std::string& value) {
    const std::string found = find_in_path(value);
    if (!found.empty() && found[0] == '/') candidates.push_back(found);
  };
  const auto add_list = [&](const std::string& value) {
    std::istringstream list(value);
    for (std::string entry; std::getline(list, entry, ';');)
      if (!entry.empty() && entry[0] == '/') candidates.push_back(entry);
  };
  add_program(tools.cmake);
  add_program(tools.ctest);
  for (const auto& arg : tools.cache_args) {
    if (arg.rfind("-D", 0) != 0 || arg.find('=') == std::string::npos) continue;
    std::string name = arg.substr(2, arg.find('=') - 2);
    if (const auto colon = name.find(':'); colon != std::string::npos) name = name.substr(0, colon);
    const std::string value = arg.substr(arg.find('=') + 1);
    if (name == "CMAKE_PREFIX_PATH") add_list(value);
    else if (toolchain_variables().count(name) > 0) add_program(value);
  }
  if (!build_dir.empty() && fs::exists(build_dir / "CMakeCache.txt")) {
    for (const auto& [name, value] : read_cache(build_dir / "CMakeCache.txt")) {
      if (value.empty() || value.find("NOTFOUND") != std::string::npos) continue;
      if (name == "CMAKE_PREFIX_PATH" || name.rfind("package-dir:", 0) == 0) add_list(value);
      else if (toolchain_variables().count(name) > 0) add_program(value);
    }
  }

  // What no prefix may hold: the project, the submission's folders, the home folder.
  std::vector<std::string> guarded;
  for (const auto& p : keep_out)
    if (!p.empty()) for (const auto& s : spellings(fs::absolute(p))) guarded.push_back(s);
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home == '/')
    for (const auto& s : spellings(home)) guarded.push_back(s);
  const auto too_wide = [&](const std::string& folder) {
    if (folder.empty() || folder == "/") return true;
    for (const auto& g : guarded)
      if (under(g, folder)) return true;
    return false;
  };

  // A program that is a script (pip's cmake and ninja are Python scripts) needs its interpreter.
  for (std::size_t i = 0, n = candidates.size(); i < n; ++i) {
    std::ifstream file(candidates[i], std::ios::binary);
    std::string head(256, '\0');
    file.read(&head[0], static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(file.gcount()));
    if (head.rfind("#!", 0) != 0) continue;
    std::istringstream line(head.substr(2, head.find('\n') == std::string::npos ? std::string::npos : head.find('\n') - 2));
    std::string interpreter;
    line >> interpreter;
    if (!interpreter.empty() && interpreter[0] == '/') candidates.push_back(interpreter);
  }

  std::vector<std::string> out;
  std::error_code error;
  for (const auto& candidate : candidates) {
    for (const auto& path : spellings(candidate)) {
      if (system_path(path) || !fs::exists(path, error)) continue;
      const bool directory = fs::is_directory(path, error);
      std::string folder = install_prefix(path, directory);
      if (too_wide(folder)) folder = directory ? path : normal(fs::path(path).parent_path());
      if (too_wide(folder) || system_path(folder)) continue;
      out.push_back(folder);
    }
  }
  // Outer folders first; a folder inside another one is shown already.
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  std::vector<std::string> kept;
  for (const auto& p : out)
    if (kept.empty() || !under(p, kept.back())) kept.push_back(p);
  return kept;
}

Box submission_box(const Kit& kit, const grading::Toolchain& tools, const fs::path& exercise_dir,
                   const fs::path& build_dir) {
  Box box;
  box.bwrap = bwrap_program();
  const fs::path root = fs::absolute(kit.root).lexically_normal();
  // The project as the submission's build needs it; nothing else of it (solutions/, docs/,
  // chapters/, other build trees, a class kept inside it).
  for (const char* part : {"CMakeLists.txt", "cmake", "starter", "grader"})
    if (fs::exists(root / part)) box.read_only.push_back(normal(root / part));
  box.hidden.push_back(normal(root / "grader" / "tests"));  // the project's tests: mutants are solutions
  if (!kit.build.empty()) {
    const fs::path kit_file = fs::absolute(kit.build) / "cdplab-grading-kit.cmake";
    if (fs::exists(kit_file)) {
      box.read_only.push_back(normal(kit_file));
      for (const auto& folder : kit_piece_folders(kit_file))
        if (fs::exists(folder)) box.read_only.push_back(folder);
    }
  }
  box.read_only.push_back(normal(fs::absolute(exercise_dir)));
  box.writable.push_back(normal(fs::absolute(build_dir)));
  for (const auto& p : toolchain_paths(tools, build_dir, {root, exercise_dir, build_dir, kit.build}))
    box.read_only.push_back(p);
  box.devices = gpu_devices();
  return box;
}

Box check_box(const Kit& kit, const grading::Toolchain& tools) {
  Box box;
  box.bwrap = bwrap_program();
  const fs::path root = fs::absolute(kit.root).lexically_normal();
  box.read_only.push_back(normal(root));
  if (!kit.build.empty()) box.read_only.push_back(normal(fs::absolute(kit.build)));
  for (const auto& p : toolchain_paths(tools, kit.build, {root, kit.build})) box.read_only.push_back(p);
  box.devices = gpu_devices();
  return box;
}

Box host_parts_box(const grading::Toolchain& tools, const fs::path& build_dir) {
  Box box;
  box.bwrap = bwrap_program();
  // At a generic path: the student's code runs here, and could tell where the class is kept.
  box.read_only_at.emplace_back(normal(fs::absolute(build_dir)), "/build");
  for (const auto& p : toolchain_paths(tools, build_dir, {build_dir})) box.read_only.push_back(p);
  return box;
}

Budget build_budget(const fs::path& build_dir) {
  Budget budget;
  // nvcc's largest exercise (the fast quicksort, CUB) takes well under 2 GiB; an include of
  // /dev/zero or a template that never ends stops here, not at the machine's memory.
  budget.address_bytes = std::size_t{8} << 30;
  // A parallel build runs a few processes per nvcc, one nvcc per job, jobs up to the cores and a
  // quarter more (grade.cpp's build_all).
  budget.processes = std::max<std::size_t>(512, 16 * std::max(1u, std::thread::hardware_concurrency()));
  budget.tree = build_dir;
  return budget;
}

Budget host_parts_budget() {
  Budget budget;
  budget.file_bytes = std::size_t{64} << 20;
  budget.address_bytes = std::size_t{4} << 30;
  budget.processes = 16;
  return budget;
}

Budget check_budget() {
  Budget budget;
  budget.processes = 64;
  return budget;
}

namespace {

/// The bytes of the files below `dir`, stopping once past `most` (no need to count further).
std::uintmax_t bytes_below(const fs::path& dir, std::uintmax_t most) {
  std::uintmax_t total = 0;
  std::error_code error;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, error), end;
       it != end && total <= most; it.increment(error)) {
    if (error) break;
    std::error_code size_error;
    if (it->is_regular_file(size_error)) total += it->file_size(size_error);
  }
  return total;
}

}  // namespace

namespace {
/// Threads of the grading account above those it runs when a program starts (budgeted()).
constexpr std::size_t kTaskHeadroom = 16384;
}  // namespace

process::Options budgeted(process::Options options, const Budget& budget) {
  options.limits.file_bytes = budget.file_bytes;
  options.limits.address_bytes = budget.address_bytes;
  // RLIMIT_NPROC counts every thread of the user, in every process, and a class grades many
  // submissions at once: the bound sits far above what the user runs now, as a backstop for a
  // fork bomb between two looks of the watch, never near what honest work reaches.
  options.limits.processes = process::user_tasks() + kTaskHeadroom;
  options.watch_seconds = 0.5;
  options.watch = [budget](int pid) -> std::string {
    if (process::descendants(pid) > budget.processes)
      return "it started more than " + std::to_string(budget.processes) + " processes at once (the limit)";
    if (!budget.tree.empty() && bytes_below(budget.tree, budget.tree_bytes) > budget.tree_bytes)
      return "its build tree grew past " + std::to_string(budget.tree_bytes >> 20) + " MiB (the limit)";
    return "";
  };
  return options;
}

std::vector<std::string> allowed_compiler_roots(const grading::BuildTree& tree, const std::string& chapter) {
  const fs::path root = fs::absolute(tree.project_root()).lexically_normal();
  std::vector<fs::path> folders = {tree.exercise_dir(), fs::absolute(tree.dir()), root / "starter", "/usr"};
  if (!chapter.empty()) folders.push_back(root / "grader" / "suites" / chapter / "support");
  for (const auto& p : toolchain_paths(tree.toolchain(), tree.dir(), {root, tree.exercise_dir(), tree.dir()}))
    folders.emplace_back(p);
  std::vector<std::string> allowed;
  for (const auto& f : folders)
    if (!f.empty()) for (const auto& s : spellings(f)) allowed.push_back(s);
  return allowed;
}

std::string opened_outside_problem(const std::string& deps_listing, const grading::IndexEntry& entry,
                                   const std::vector<std::string>& allowed, const fs::path& project_root,
                                   const fs::path& build_dir) {
  const auto targets = exercise_targets(entry);
  const auto project = spellings(fs::absolute(project_root));
  std::vector<std::string> outside;
  bool relevant = false;
  // Line by line in place: the listing of a whole tree can run to megabytes, read by several
  // exercises at once.
  for (std::size_t at = 0; at < deps_listing.size();) {
    const std::size_t end = std::min(deps_listing.find('\n', at), deps_listing.size());
    std::string line = deps_listing.substr(at, end - at);
    at = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line[0] != ' ' && line[0] != '\t') {  // "<object>: #deps N, deps mtime M (VALID)"
      const auto colon = line.find(": #deps");
      relevant = colon != std::string::npos && is_exercise_object(line.substr(0, colon), targets);
      continue;
    }
    if (!relevant) continue;
    const std::string dep = line.substr(line.find_first_not_of(" \t"));
    fs::path path = dep;
    if (path.is_relative()) path = build_dir / path;
    path = path.lexically_normal();
    std::error_code error;
    const auto real = fs::canonical(path, error);
    const std::string read = normal(error ? path : real);  // what the compiler really opened
    const bool fine = std::any_of(allowed.begin(), allowed.end(), [&](const std::string& a) { return under(read, a); });
    if (fine) continue;
    std::string named = read;
    for (const auto& p : project)
      if (under(read, p) && read != p) {
        named = read.substr(p.size() + 1);
        break;
      }
    if (std::find(outside.begin(), outside.end(), named) == outside.end()) outside.push_back(named);
  }
  if (outside.empty()) return "";
  std::string problem = "the compiler read " + outside.front();
  if (outside.size() > 1) problem += " and " + std::to_string(outside.size() - 1) + " other file(s) (" + outside[1] +
                                     (outside.size() > 2 ? ", ..." : "") + ")";
  problem += ", outside the submission, the starter kit and the toolchain; a submission may include only its own "
             "files, the starter kit's headers and those of the CUDA toolkit and the system";
  return problem;
}

BuildToolRecord build_tool_dependencies(const grading::BuildTree& tree) {
  const auto cache = read_cache(tree.dir() / "CMakeCache.txt");
  const auto generator = cache.find("CMAKE_GENERATOR");
  const auto program = cache.find("CMAKE_MAKE_PROGRAM");
  if (generator == cache.end() || generator->second.find("Ninja") == std::string::npos) return {};
  process::Options options;
  options.timeout_seconds = 60;
  options.output_limit = std::size_t{64} << 20;
  const std::string ninja = program != cache.end() && !program->second.empty() ? program->second : "ninja";
  const auto listed = process::run({ninja, "-C", tree.dir().string(), "-t", "deps"}, options);
  if (!listed.ok()) return {"", "`ninja -t deps` " + listed.describe()};
  if (listed.dropped > 0)
    return {"", "`ninja -t deps` printed more than " + std::to_string(options.output_limit >> 20) + " MiB"};
  return {listed.output, ""};
}

std::string opened_outside_problem(const grading::BuildTree& tree, const grading::IndexEntry& entry,
                                   const BuildToolRecord& record) {
  // Unread, it could hide any file: the exercise is not graded rather than graded unchecked.
  if (!record.problem.empty())
    return "what the compiler read could not be checked: the build tool's record of it could not be read (" +
           record.problem + ")";
  // Ninja keeps what depfiles said in its log and deletes them; other generators keep them.
  const std::string depfiles = listing_from_depfiles(tree.dir(), exercise_targets(entry));
  return opened_outside_problem(depfiles.empty() ? record.listing : record.listing + depfiles, entry,
                                allowed_compiler_roots(tree, entry.chapter), tree.project_root(), tree.dir());
}

std::string opened_outside_problem(const grading::BuildTree& tree, const grading::IndexEntry& entry) {
  return opened_outside_problem(tree, entry, build_tool_dependencies(tree));
}

PathNames path_names(const grading::BuildTree& tree) {
  PathNames names;
  names.submission = tree.exercise_dir();
  names.build = normal(fs::absolute(tree.dir()));
  names.kit = normal(fs::absolute(tree.project_root()));
  names.cuda = cuda_root(tree.toolchain(), read_cache(tree.dir() / "CMakeCache.txt"));
  const char* home = std::getenv("HOME");
  if (home != nullptr) names.home = home;
  return names;
}

}  // namespace cdplab::sandbox
