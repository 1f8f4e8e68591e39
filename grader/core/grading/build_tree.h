/// @file build_tree.h
/// @brief A CMake build tree of the workbook that the grader configures, builds target by
///        target, and whose CTest tests it runs. The grader drives CMake; it does not replace it.
#pragma once

#include "process/process.h"
#include "sandbox/sandbox.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cdplab::grading {

/// How to call CMake the way this cdplab was built (same generator, compilers, prefix path).
struct Toolchain {
  std::string cmake = "cmake";
  std::string ctest = "ctest";
  std::string generator;                 ///< empty: CMake's default
  std::vector<std::string> cache_args;   ///< "-DCMAKE_CUDA_COMPILER=...", ...
  int jobs = 0;                          ///< parallel build jobs; 0: the generator's default
  /// A configured tree with these compilers (this cdplab's own): a new tree takes its compiler
  /// checks instead of running them again (seed_compiler_checks); empty: CMake runs them.
  std::filesystem::path compilers_from;
};

/// Gives the unconfigured tree `to` what CMake found out about the compilers when it configured
/// `from` (CMakeFiles/<version>/CMake*Compiler.cmake, CMakeSystem.cmake, and the cache entries
/// that say the platform was checked, which compilers, generator and build tool, and the threads
/// check), so that configuring `to` skips the compiler checks: about two seconds of every
/// submission's tree, most of its configure. No setting of `from` (flags, launchers) is copied.
/// Only when `from` was configured by the same CMake with the compilers, the generator and the
/// CUDA architectures `tools` names, with the compiler flags and CUDA host compiler the new tree
/// gets too, and without a toolchain file; returns whether it did (and, in `why_not`, why not).
/// A compiler replaced in place
/// since `from` was configured goes unnoticed, as in `from` itself.
bool seed_compiler_checks(const std::filesystem::path& from, const std::filesystem::path& to, const Toolchain& tools,
                          std::string* why_not = nullptr);

/// How much lower than the grader's own a build's scheduling priority is (nice(2)).
inline constexpr int kBuildNiceness = 10;

/// One exercise as a build tree holds it (from <build>/cdplab-index.json).
struct IndexEntry {
  std::string chapter, stem;
  std::string source;       ///< the exercise file the tree was configured with
  std::string suite_target, suite_executable;
  std::string ptx;          ///< the exercise's PTX, kept from its compile, for the rule checker
  std::string library;      ///< the exercise compiled alone (a static library), for what it calls
  /// The suite `cdplab grade` runs: the checks linked against solutions/, which load the student's
  /// device code (harness/device_code/device_code.h); empty: none (a copy without solutions/)
  std::string grading_suite;
  std::string grading_suite_target;  ///< its target when this tree builds it (not the kit's); empty otherwise
  std::string library_target; ///< the target of `library`
  /// The process of the exercise's host parts, built from this tree's exercise file
  /// (harness/host_parts/host_parts.h); empty when the exercise has none
  std::string host_parts;
  std::string host_parts_target;  ///< its target
  bool present() const { return !suite_target.empty(); }
  /// The PTX file to read: `ptx` or, when the build compiled for architectures CMake could not
  /// name in advance ("all-major": nvcc -keep then names one file per architecture), the first
  /// PTX file of its folder by name. `ptx` itself when there is none.
  std::filesystem::path kept_ptx() const;
};

/// A CTest test of a build tree, as `ctest --show-only=json-v1` describes it.
struct TestInfo {
  std::string name;               ///< "<chapter>/<stem>/<check>" for a check
  std::string working_directory;  ///< empty: CTest's default
  bool run_serial = false;        ///< the test needs the GPU to itself (RUN_SERIAL)
};

class BuildTree {
 public:
  BuildTree(std::filesystem::path project_root, std::filesystem::path binary_dir, Toolchain toolchain)
      : root_(std::move(project_root)), dir_(std::move(binary_dir)), tools_(std::move(toolchain)) {}

  const std::filesystem::path& dir() const { return dir_; }
  const std::filesystem::path& project_root() const { return root_; }
  const Toolchain& toolchain() const { return tools_; }

  /// Runs this tree's student-code commands (build(), test(), and every command given to
  /// in_box()) inside `box` (sandbox/submission.h makes a submission's); std::nullopt: as they are.
  /// configure() always runs outside: CMake reads no student file's content, only whether the
  /// exercise files exist.
  void set_sandbox(std::optional<sandbox::Box> box) { box_ = std::move(box); }
  const std::optional<sandbox::Box>& sandbox() const { return box_; }
  /// The boxes of a grading's check processes and of its host parts' processes
  /// (sandbox::check_box, sandbox::host_parts_box); std::nullopt: they run as they are.
  void set_check_boxes(std::optional<sandbox::Box> checks, std::optional<sandbox::Box> host_parts) {
    check_box_ = std::move(checks);
    host_parts_box_ = std::move(host_parts);
  }
  const std::optional<sandbox::Box>& check_box() const { return check_box_; }
  const std::optional<sandbox::Box>& host_parts_box() const { return host_parts_box_; }
  /// Whether the programs of a submission run within a budget (sandbox::Budget: files, memory,
  /// processes, the build tree's size): every grading's tree, boxed or not; never a student's own.
  void set_budgeted(bool budgeted) { budgeted_ = budgeted; }
  bool budgeted() const { return budgeted_; }
  /// Called while a build runs, at most every few seconds: "41 of 312 steps, 35 s" (from the
  /// build tool's own count; Ninja's "[41/312]"). A student's tree shows it; a class's does not.
  void set_build_progress(std::function<void(const std::string& line)> progress) { build_progress_ = std::move(progress); }
  /// `argv` as it runs in the tree's box (a bwrap command line starting in `working_directory`,
  /// or where the caller is when that is empty); `argv` unchanged when the tree has no box.
  std::vector<std::string> in_box(std::vector<std::string> argv, const std::string& working_directory = "") const;

  /// Configures (or re-configures) the tree for the exercises in `exercise_dir`, with extra
  /// cache arguments. Returns CMake's result; the index is re-read on success.
  process::Result configure(const std::filesystem::path& exercise_dir, const std::vector<std::string>& extra_args);
  /// Whether the tree has been configured before.
  bool configured() const;
  /// Re-reads cdplab-index.json; throws std::runtime_error when it is missing or broken.
  void load_index();
  std::optional<IndexEntry> find(const std::string& chapter, const std::string& stem) const;
  /// The exercise folder the tree was configured with (from the index).
  const std::string& exercise_dir() const { return exercise_dir_; }
  /// A chapter's program of a kind ("drivers": the demo, "benches": the benchmark) from the
  /// index: its executable and target; empty when it has none.
  std::pair<std::string, std::string> program(const std::string& kind, const std::string& chapter) const;

  /// Builds one or more targets; with `keep_going`, a target that fails does not stop the others;
  /// `jobs` (> 0) replaces the toolchain's number of parallel jobs for this build.
  process::Result build(const std::vector<std::string>& targets, double timeout_seconds = 0,
                        bool keep_going = false, int jobs = 0) const;
  /// Builds this tree's grading kit (target cdplab_grading_kit, cmake/CdplabGradingKit.cmake)
  /// under a lock other cdplab processes share, and returns the cache argument that makes the
  /// tree of a submission link it instead of compiling the grader again. When the tree has no
  /// kit or it does not build, returns the argument that turns the kit off and says why in
  /// `problem`.
  std::string prepare_grading_kit(std::string& problem) const;
  /// Runs the CTest tests carrying any of `labels` exactly, `jobs` at a time, with extra
  /// environment variables; with `names`, only the tests of those exact names among them.
  process::Result test(const std::vector<std::string>& labels, const std::map<std::string, std::string>& env,
                       double timeout_seconds, int jobs = 1, const std::vector<std::string>& names = {}) const;
  /// The CTest tests carrying any of `labels` exactly; empty when CTest cannot list them.
  std::vector<TestInfo> list_tests(const std::vector<std::string>& labels) const;

 private:
  std::filesystem::path root_;
  std::filesystem::path dir_;
  Toolchain tools_;
  std::vector<IndexEntry> index_;
  std::string exercise_dir_;
  nlohmann::json programs_;  ///< {"drivers": {...}, "benches": {...}}
  std::optional<sandbox::Box> box_;
  std::optional<sandbox::Box> check_box_;
  std::optional<sandbox::Box> host_parts_box_;
  bool budgeted_ = false;
  std::function<void(const std::string&)> build_progress_;
};

/// Escapes a string for use inside a CTest regular expression.
std::string regex_escape(const std::string& text);

/// What is missing of the configured build tree `dir` ("" when nothing is): the folder itself,
/// its CMakeCache.txt, or its build tool's file (build.ninja or Makefile), which a configure that
/// failed half-way, or a folder deleted during a run, leaves out. A tree in that state fails every
/// build with the build tool's words ("could not load cache"), which are no fault of an exercise.
std::string build_tree_problem(const std::filesystem::path& dir);

}  // namespace cdplab::grading
