#include "grading/build_tree.h"

#include "sandbox/submission.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace cdplab::grading {

namespace fs = std::filesystem;

fs::path IndexEntry::kept_ptx() const {
  std::error_code ignored;
  if (ptx.empty() || fs::is_regular_file(ptx, ignored)) return ptx;
  std::vector<fs::path> found;
  for (const auto& file : fs::directory_iterator(fs::path(ptx).parent_path(), ignored))
    if (file.path().extension() == ".ptx") found.push_back(file.path());
  std::sort(found.begin(), found.end());
  return found.empty() ? fs::path(ptx) : found.front();
}

bool BuildTree::configured() const { return fs::exists(dir_ / "CMakeCache.txt"); }

std::vector<std::string> BuildTree::in_box(std::vector<std::string> argv, const std::string& working_directory) const {
  if (!box_) return argv;
  sandbox::Box box = *box_;
  if (!working_directory.empty()) box.working_directory = working_directory;
  return sandbox::wrap(box, argv);
}

namespace {

/// The entries of a CMakeCache.txt: name -> "TYPE=value".
std::map<std::string, std::string> cache_entries(const fs::path& cache) {
  std::map<std::string, std::string> entries;
  std::ifstream in(cache);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line[0] == '/') continue;
    const auto colon = line.find(':');
    const auto equals = line.find('=');
    if (colon == std::string::npos || equals == std::string::npos || colon > equals) continue;
    entries[line.substr(0, colon)] = line.substr(colon + 1);
  }
  return entries;
}

/// The value a "-DNAME=value" (or "-DNAME:TYPE=value") of `args` gives NAME; nullopt if none.
std::optional<std::string> cache_arg(const std::vector<std::string>& args, const std::string& name) {
  for (const auto& arg : args) {
    if (arg.rfind("-D" + name, 0) != 0) continue;
    const auto rest = arg.substr(2 + name.size());
    if (!rest.empty() && (rest[0] == '=' || rest[0] == ':')) return rest.substr(rest.find('=') + 1);
  }
  return std::nullopt;
}

/// The cache entries a seed copies: what the compiler checks found, never a setting (flags, a
/// toolchain file, a launcher), which the new tree gets from the toolchain's arguments alone.
constexpr const char* kSeededEntries[] = {"CMAKE_PLATFORM_INFO_INITIALIZED", "CMAKE_GENERATOR", "CMAKE_MAKE_PROGRAM",
                                          "CMAKE_CXX_COMPILER", "CMAKE_CUDA_COMPILER", "CMAKE_HAVE_LIBC_PTHREAD"};

}  // namespace

bool seed_compiler_checks(const fs::path& from, const fs::path& to, const Toolchain& tools, std::string* why_not) {
  const auto no = [&](const std::string& why) {
    if (why_not != nullptr) *why_not = why;
    return false;
  };
  std::error_code error;
  if (from.empty()) return no("no tree to seed from");
  if (fs::exists(to / "CMakeCache.txt", error)) return no("the tree is configured already");
  if (fs::equivalent(from, to, error)) return no("the tree is the grader's own");
  auto entries = cache_entries(from / "CMakeCache.txt");
  const auto value = [&](const std::string& name) {
    const auto it = entries.find(name);
    return it == entries.end() ? std::string() : it->second.substr(it->second.find('=') + 1);
  };
  // The same compilers, generator and CMake, or nothing: a wrong seed would build with them.
  for (const char* compiler : {"CMAKE_CXX_COMPILER", "CMAKE_CUDA_COMPILER"}) {
    const auto wanted = cache_arg(tools.cache_args, compiler);
    if (!wanted || value(compiler) != *wanted)
      return no(std::string(compiler) + " is \"" + value(compiler) + "\" there, \"" + wanted.value_or("") + "\" here");
  }
  // CMake's own default architectures come from the checks skipped here: the toolchain names them.
  if (!cache_arg(tools.cache_args, "CMAKE_CUDA_ARCHITECTURES")) return no("no CMAKE_CUDA_ARCHITECTURES given");
  if (value("CMAKE_GENERATOR") != tools.generator) return no("another generator");
  if (value("CMAKE_PLATFORM_INFO_INITIALIZED") != "1") return no("its checks did not finish");
  // A toolchain file shapes the checks themselves (a sysroot, other search paths).
  if (!value("CMAKE_TOOLCHAIN_FILE").empty() || cache_arg(tools.cache_args, "CMAKE_TOOLCHAIN_FILE"))
    return no("a toolchain file");
  const std::string version = value("CMAKE_CACHE_MAJOR_VERSION") + "." + value("CMAKE_CACHE_MINOR_VERSION") + "." +
                              value("CMAKE_CACHE_PATCH_VERSION");
  const fs::path checks = fs::path("CMakeFiles") / version;
  // So do the flags and the CUDA host compiler (which the copied CMakeCUDACompiler.cmake names):
  // `from`'s must be those the new tree gets, from the arguments or else from the environment.
  // A host compiler given by CUDAHOSTCXX alone is in no cache entry (CMake 4 keeps it in
  // CMakeCUDACompiler.cmake only): what `from` used is read there then.
  const auto used = [&](const std::string& name) {
    if (!value(name).empty() || name != "CMAKE_CUDA_HOST_COMPILER") return value(name);
    std::ifstream recorded(from / checks / "CMakeCUDACompiler.cmake");
    const std::string prefix = "set(CMAKE_CUDA_HOST_COMPILER \"";
    for (std::string line; std::getline(recorded, line);)
      if (line.rfind(prefix, 0) == 0 && line.size() >= prefix.size() + 2) return line.substr(prefix.size(), line.size() - prefix.size() - 2);
    return std::string();
  };
  for (const auto& [name, variable] : {std::pair{"CMAKE_CXX_FLAGS", "CXXFLAGS"}, std::pair{"CMAKE_CUDA_FLAGS", "CUDAFLAGS"},
                                       std::pair{"CMAKE_CUDA_HOST_COMPILER", "CUDAHOSTCXX"}}) {
    const char* environment = std::getenv(variable);
    const std::string wanted = cache_arg(tools.cache_args, name).value_or(environment != nullptr ? environment : "");
    const std::string there = used(name);
    if (there != wanted) return no(std::string(name) + " is \"" + there + "\" there, \"" + wanted + "\" here");
  }
  const auto cmake_version = process::run({tools.cmake, "--version"});
  if (!cmake_version.ok() || cmake_version.output.find("version " + version + "\n") == std::string::npos)
    return no("CMake " + version + " made it; " + tools.cmake + " --version says: " + cmake_version.output.substr(0, 80));
  const std::vector<std::string> files = {"CMakeSystem.cmake", "CMakeCXXCompiler.cmake", "CMakeCUDACompiler.cmake"};
  for (const auto& file : files)
    if (!fs::is_regular_file(from / checks / file, error)) return no("no " + (checks / file).string());
  fs::create_directories(to / checks, error);
  for (const auto& file : files)
    if (!fs::copy_file(from / checks / file, to / checks / file, fs::copy_options::overwrite_existing, error))
      return no("cannot copy " + file);
  std::ofstream cache(to / "CMakeCache.txt");
  cache << "# The compiler checks of " << from.string() << " (the grader's own tree, same compilers)\n";
  for (const char* name : kSeededEntries)
    if (const auto it = entries.find(name); it != entries.end()) cache << name << ':' << it->second << '\n';
  return cache ? true : no("cannot write the cache");
}

process::Result BuildTree::configure(const fs::path& exercise_dir, const std::vector<std::string>& extra_args) {
  const bool fresh = !configured();
  const bool seeded = fresh && seed_compiler_checks(tools_.compilers_from, dir_, tools_);
  std::vector<std::string> argv = {tools_.cmake, "-S", root_.string(), "-B", dir_.string()};
  if (!tools_.generator.empty() && fresh) argv.insert(argv.end(), {"-G", tools_.generator});
  argv.insert(argv.end(), tools_.cache_args.begin(), tools_.cache_args.end());
  argv.push_back("-DCDPLAB_EXERCISE_DIR=" + fs::absolute(exercise_dir).lexically_normal().string());
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  process::Options options;
  options.timeout_seconds = 600;
  // Never in the box (set_sandbox): configuring reads the project's CMake files and asks only
  // whether each exercise file exists, never what a student's file holds, and runs none of it.
  auto result = process::run(argv, options);
  if (!result.ok() && seeded) {  // the seed did not serve: start again without it, as CMake alone would
    std::error_code ignored;
    fs::remove(dir_ / "CMakeCache.txt", ignored);
    fs::remove_all(dir_ / "CMakeFiles", ignored);
    result = process::run(argv, options);
  }
  if (result.ok()) load_index();
  return result;
}

void BuildTree::load_index() {
  const fs::path file = dir_ / "cdplab-index.json";
  std::ifstream in(file);
  if (!in) throw std::runtime_error("no " + file.string() + ": the build tree is not configured");
  nlohmann::json index;
  try {
    in >> index;
  } catch (const std::exception& error) {
    throw std::runtime_error(file.string() + " is not valid JSON: " + error.what());
  }
  index_.clear();
  exercise_dir_ = index.value("exercise_dir", "");
  programs_ = nlohmann::json::object();
  for (const char* kind : {"drivers", "benches"})
    if (index.contains(kind) && index[kind].is_object()) programs_[kind] = index[kind];
  for (const auto& e : index.at("exercises")) {
    IndexEntry entry;
    entry.chapter = e.value("chapter", "");
    entry.stem = e.value("stem", "");
    entry.source = e.value("source", "");
    entry.suite_target = e.value("target", "");
    entry.suite_executable = e.value("executable", "");
    entry.ptx = e.value("ptx", "");
    entry.library = e.value("library", "");
    entry.grading_suite = e.value("grading_suite", "");
    entry.grading_suite_target = e.value("grading_suite_target", "");
    entry.library_target = e.value("library_target", "");
    entry.host_parts = e.value("host_parts", "");
    entry.host_parts_target = e.value("host_parts_target", "");
    index_.push_back(entry);
  }
}

std::optional<IndexEntry> BuildTree::find(const std::string& chapter, const std::string& stem) const {
  for (const auto& e : index_)
    if (e.chapter == chapter && e.stem == stem) return e;
  return std::nullopt;
}

std::pair<std::string, std::string> BuildTree::program(const std::string& kind, const std::string& chapter) const {
  if (!programs_.contains(kind) || !programs_[kind].contains(chapter)) return {};
  const auto& p = programs_[kind][chapter];
  return {p.value("executable", ""), p.value("target", "")};
}

namespace {

/// Reads a build's output for the build tool's step count ("[41/312] Building CUDA object ...")
/// and passes on "41 of 312 steps, 35 s" every 5 s, and once more at the last step.
std::function<void(const std::string&)> build_progress_reader(std::function<void(const std::string&)> progress) {
  struct State {
    std::string partial;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(), shown = start;
  };
  auto state = std::make_shared<State>();
  return [state, progress](const std::string& piece) {
    state->partial += piece;
    std::size_t done = 0, total = 0;
    for (std::size_t at = state->partial.find('['); at != std::string::npos; at = state->partial.find('[', at + 1)) {
      std::size_t n = 0, of = 0;
      char slash = 0, close = 0;
      std::istringstream step(state->partial.substr(at + 1, 24));
      if (step >> n >> slash >> of >> close && slash == '/' && close == ']' && of > 0) {
        done = n;
        total = of;
      }
    }
    if (const auto last = state->partial.rfind('\n'); last != std::string::npos) state->partial.erase(0, last + 1);
    if (total == 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - state->shown < std::chrono::seconds(5) && done < total) return;
    state->shown = now;
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - state->start).count();
    progress(std::to_string(done) + " of " + std::to_string(total) + " steps, " + std::to_string(seconds) + " s");
  };
}

}  // namespace

process::Result BuildTree::build(const std::vector<std::string>& targets, double timeout_seconds,
                                 bool keep_going, int jobs) const {
  std::vector<std::string> argv = {tools_.cmake, "--build", dir_.string()};
  if (jobs <= 0) jobs = tools_.jobs;
  if (jobs > 0) argv.insert(argv.end(), {"--parallel", std::to_string(jobs)});
  argv.push_back("--target");
  argv.insert(argv.end(), targets.begin(), targets.end());
  if (keep_going) {  // the native tool's own flag
    const bool ninja = tools_.generator.find("Ninja") != std::string::npos;
    argv.insert(argv.end(), {"--", ninja ? "-k0" : "-k"});
  }
  process::Options options;
  options.timeout_seconds = timeout_seconds;
  // Builds yield the cores to the checks: in a class, other submissions' checks hold the GPU
  // while these compile, and a check's host side starved by compilers keeps the GPU waiting.
  options.nice = kBuildNiceness;
  if (budgeted_) options = sandbox::budgeted(options, sandbox::build_budget(dir_));
  if (build_progress_) options.on_output = build_progress_reader(build_progress_);
  return process::run(in_box(argv), options);
}

std::string BuildTree::prepare_grading_kit(std::string& problem) const {
  const std::string off = "-DCDPLAB_GRADING_KIT=";
  const fs::path kit = dir_ / "cdplab-grading-kit.cmake";
  if (!fs::exists(kit)) {
    problem = "the build tree " + dir_.string() + " offers no grading kit";
    return off;
  }
  // Several cdplab processes (a class graded in parallel, tests) may ask at once: one builds.
  const int lock = ::open((dir_ / "cdplab-grading-kit.lock").c_str(), O_CREAT | O_RDWR, 0644);
  if (lock >= 0) ::flock(lock, LOCK_EX);
  const auto built = build({"cdplab_grading_kit"}, 3600);
  if (lock >= 0) ::close(lock);
  if (!built.ok()) {
    const auto& out = built.output;
    problem = "the grading kit does not build (" + built.describe() + "):\n" +
              out.substr(out.size() > 3000 ? out.size() - 3000 : 0);
    return off;
  }
  return off + kit.string();
}

namespace {

/// A CTest regular expression matching exactly one of `texts`.
std::string exactly_one_of(const std::vector<std::string>& texts) {
  std::string any;
  for (const auto& text : texts) any += (any.empty() ? "" : "|") + regex_escape(text);
  return "^(" + any + ")$";
}

}  // namespace

process::Result BuildTree::test(const std::vector<std::string>& labels, const std::map<std::string, std::string>& env,
                                double timeout_seconds, int jobs, const std::vector<std::string>& names) const {
  std::vector<std::string> argv = {tools_.ctest, "--test-dir", dir_.string(), "-L", exactly_one_of(labels),
                                   "-j", std::to_string(jobs < 1 ? 1 : jobs), "--output-on-failure"};
  if (!names.empty()) argv.insert(argv.end(), {"-R", exactly_one_of(names)});
  process::Options options;
  options.env = env;
  options.timeout_seconds = timeout_seconds;
  return process::run(in_box(argv), options);
}

std::vector<TestInfo> BuildTree::list_tests(const std::vector<std::string>& labels) const {
  process::Options options;
  options.timeout_seconds = 60;
  options.output_limit = 64 << 20;
  // In the box: CTest evaluates the tree's CTestTestfile.cmake files, which the submission's
  // programs (run by the build to list each suite's checks) could have rewritten.
  const auto listed = process::run(
      in_box({tools_.ctest, "--test-dir", dir_.string(), "-L", exactly_one_of(labels), "--show-only=json-v1"}), options);
  std::vector<TestInfo> tests;
  if (!listed.ok()) return tests;
  try {
    // CTest may print warnings around the JSON: the document runs from the first '{' to the last '}'.
    const auto start = listed.output.find('{');
    const auto end = listed.output.rfind('}');
    const auto document = nlohmann::json::parse(
        start == std::string::npos || end < start ? "" : listed.output.substr(start, end - start + 1), nullptr, false);
    if (!document.is_object() || !document.contains("tests") || !document["tests"].is_array()) return tests;
    for (const auto& t : document["tests"]) {
      TestInfo info;
      info.name = t.value("name", "");
      if (t.contains("properties") && t["properties"].is_array()) {
        for (const auto& p : t["properties"]) {
          const std::string property = p.value("name", "");
          if (property == "RUN_SERIAL" && p.contains("value")) info.run_serial = p["value"] == true;
          if (property == "WORKING_DIRECTORY" && p.contains("value") && p["value"].is_string())
            info.working_directory = p["value"].get<std::string>();
        }
      }
      if (!info.name.empty()) tests.push_back(info);
    }
  } catch (const nlohmann::json::exception&) {  // not the document expected: run every test alone
    tests.clear();
  }
  return tests;
}

std::string regex_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string build_tree_problem(const std::filesystem::path& dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) return "the build folder " + dir.string() + " is missing";
  if (!std::filesystem::exists(dir / "CMakeCache.txt", error))
    return "the build folder " + dir.string() + " is not configured (it has no CMakeCache.txt)";
  if (!std::filesystem::exists(dir / "build.ninja", error) && !std::filesystem::exists(dir / "Makefile", error))
    return "the build folder " + dir.string() + " is broken (its configure did not finish: no build.ninja)";
  return "";
}

}  // namespace cdplab::grading
