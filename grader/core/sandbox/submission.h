/// @file submission.h
/// @brief What a submission's box shows (an allowlist), what its compiler may have read, and how
///        its feedback names the grading machine's paths.
///
/// A submission's build and every program of it run in a box (sandbox.h) that shows:
/// - the submission's exercise folder, read-only, and its build tree, writable;
/// - the grading kit, read-only: the project's CMakeLists.txt, cmake/, starter/ and grader/ (with
///   grader/tests hidden), the file cdplab-grading-kit.cmake of the kit's build tree and the
///   folders of the compiled pieces it lists (starter, harness, oracles, support kernels, checks),
///   nothing else of that tree: no reference twin, no suite, no exercise compiled there, no other
///   build tree or class work kept inside it;
/// - the toolchain (toolchain_paths) and the GPU devices.
/// Not solutions/, not grader/tests, not the home folder, not other students' work, no network.
/// The submission tree's build.ninja stats every CMake input when it checks whether to configure
/// again (the project's CMakeLists.txt files, cmake/*.cmake, the kit's .cmake file, and the folders
/// the CONFIGURE_DEPENDS globs list: grader/suites/<chapter>/ and its support/): each is shown, so
/// a build in the box never re-runs CMake.
#pragma once

#include "grading/build_tree.h"
#include "process/process.h"
#include "sandbox/sandbox.h"

#include <filesystem>
#include <string>
#include <vector>

namespace cdplab::sandbox {

/// The grading kit the submissions' build trees link.
struct Kit {
  std::filesystem::path root;   ///< the project
  /// The build tree whose cdplab-grading-kit.cmake the submissions' trees are configured with
  /// (BuildTree::prepare_grading_kit); empty: none (the box then shows no compiled piece).
  std::filesystem::path build;
};

/// The toolchain's folders outside /usr (the box shows /usr already), to bind read-only: the
/// install prefix (install_prefix) of cmake, ctest, the compilers and every CMAKE_PREFIX_PATH
/// entry of `tools`, and, when `build_dir` holds a CMakeCache.txt, of the build tool, compilers,
/// archiver and package folders (<Package>_DIR) it names. Each path counts as given and as its
/// real path. A prefix that would show too much (/, the home folder or a folder above it, a
/// folder holding the project or one of `keep_out`) is narrowed to the program's own folder.
std::vector<std::string> toolchain_paths(const grading::Toolchain& tools, const std::filesystem::path& build_dir = {},
                                         const std::vector<std::filesystem::path>& keep_out = {});

/// The box of one submission: `exercise_dir` read-only, `build_dir` writable, the kit, the
/// toolchain and the GPU devices (see the file comment). Call it once the tree is configured
/// (its CMakeCache.txt names the build tool). The bwrap program is bwrap_program().
Box submission_box(const Kit& kit, const grading::Toolchain& tools, const std::filesystem::path& exercise_dir,
                   const std::filesystem::path& build_dir);

/// The box of the check processes of a grading (grading/check_process.h): the grader's own suites
/// (the checks linked against solutions/), which run the student's device code on the GPU and
/// nothing else of the student's. It shows the project and the kit's build tree read-only (what
/// the suites load: the workbook's PTX, the device libraries), the toolchain and the GPU devices;
/// each run adds the folders it reads and writes (the student's taken PTX, its results, the
/// FIFOs to the host parts' process, the baseline cache). No submission's build tree: nothing of
/// the student's host code, and nothing any program of the submission wrote, is there.
Box check_box(const Kit& kit, const grading::Toolchain& tools);

/// The box of the process that runs a submission's host parts (harness/host_parts/host_parts.h):
/// its build tree read-only at /build (the program was built there; a generic path, since the
/// student's code runs here) and the toolchain; no GPU, no network, nothing of the grader's; each
/// run adds the folder of its FIFOs, writable, at /parts.
Box host_parts_box(const grading::Toolchain& tools, const std::filesystem::path& build_dir);

/// What one program of a submission may use, in whichever box it runs: the largest file it may
/// write, its address space (0: unbounded; CUDA programs need it so), the most processes it may
/// have at once, and for the build, the most its writable tree may hold.
struct Budget {
  std::size_t file_bytes = std::size_t{1} << 30;
  std::size_t address_bytes = 0;
  std::size_t processes = 512;
  std::filesystem::path tree;        ///< the folder it writes to; empty: not watched
  std::uintmax_t tree_bytes = std::uintmax_t{4} << 30;
};

/// The budget of a submission's build box (nvcc runs there: no address-space bound), its host
/// parts' box (no GPU: 4 GiB of address space) and its check box (CUDA: none).
Budget build_budget(const std::filesystem::path& build_dir);
Budget host_parts_budget();
Budget check_budget();

/// `options` with `budget` applied: the kernel's limits on files and address space, a bound on
/// the processes of this user a little above what it runs now (a fork bomb stops there), and a
/// watch that ends the program, naming the limit, once it has more processes than the budget or
/// its tree holds more bytes. Without the box the same limits hold (docs/grading-a-class.md).
process::Options budgeted(process::Options options, const Budget& budget);

/// The folders whose files an exercise's compiler may read: the submission's own folder, the
/// build tree, the project's starter/ and grader/suites/<chapter>/support/, /usr and the
/// toolchain's folders. Each as given and as its real path.
std::vector<std::string> allowed_compiler_roots(const grading::BuildTree& tree, const std::string& chapter);

/// Why an exercise may not be graded: its compiler read a file outside `allowed` (a header of
/// the grader, a solution, a file of the grading machine). `deps_listing` is what `ninja -t deps`
/// prints; only the objects of the exercise library (entry.library, entry.library_target) count. Files are named relative to `project_root` when they lie in it
/// ("solutions/05-streams-and-pools/fast_quicksort.cu"). Empty when every file is allowed, or
/// when the listing has no object of the exercise (nothing to judge).
std::string opened_outside_problem(const std::string& deps_listing, const grading::IndexEntry& entry,
                                   const std::vector<std::string>& allowed, const std::filesystem::path& project_root,
                                   const std::filesystem::path& build_dir);

/// What the build tool of a tree recorded of the files each compiler opened.
struct BuildToolRecord {
  std::string listing;  ///< `ninja -t deps`: every object of the tree at once
  std::string problem;  ///< why it could not be read; empty when it was (or needs no reading)
};

/// The record of `tree`: `ninja -t deps` with the Ninja generators; nothing to read with others,
/// whose compilers leave depfiles .d instead.
BuildToolRecord build_tool_dependencies(const grading::BuildTree& tree);

/// The same for an exercise that has just been built in `tree`: reads the files its compiler
/// opened from `record` (build_tool_dependencies(), read once for every exercise of a build) or
/// the compiler's depfiles, and judges them against allowed_compiler_roots(). Empty when fine; a
/// record that could not be read is a problem too (it could hide any file).
std::string opened_outside_problem(const grading::BuildTree& tree, const grading::IndexEntry& entry,
                                   const BuildToolRecord& record);

/// The same, reading build_tool_dependencies() itself.
std::string opened_outside_problem(const grading::BuildTree& tree, const grading::IndexEntry& entry);

/// How the feedback of `tree`'s submission names the grading machine's paths (scrub_paths): its
/// exercise folder, the tree, the project, the CUDA toolkit (beside the CUDA compiler) and $HOME.
PathNames path_names(const grading::BuildTree& tree);

}  // namespace cdplab::sandbox
