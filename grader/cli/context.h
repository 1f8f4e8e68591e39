/// @file context.h
/// @brief What every cdplab command needs: the project, its manifests, this build's toolchain.
#pragma once

#include "files/files.h"
#include "grading/build_tree.h"
#include "manifest/manifest.h"
#include "results/results.h"

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace cdplab::cli {

using files::read_text;

/// Exit statuses of cdplab (documented in the README).
enum ExitCode : int {
  kAllPassed = 0,   ///< everything graded passed
  kSomeFailed = 1,  ///< the grade is complete and something failed
  kUsageError = 2,  ///< bad arguments or a setup problem: nothing was graded
  kIncomplete = 3,  ///< some checks were skipped (no GPU): the grade is not final
};

/// A mistake in how cdplab was called or set up; reported as one message and exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Context {
  std::filesystem::path root;         ///< the project (where chapters/ and solutions/ live)
  std::filesystem::path own_build;    ///< the build tree this cdplab was built in
  manifest::Workbook book;
  grading::Toolchain toolchain;
  bool color = false;                 ///< colour terminal output
};

Context make_context(int jobs);

/// Whether this cdplab belongs to a student copy (a release: no solutions/), where the
/// instructor's commands (grade, release) have nothing to grade against.
bool is_student_copy();

/// `name` as the workbook names it when it is a path to a file or folder below chapters/, relative
/// to the current directory or absolute ("../chapters/01-fundamentals/child_grids.cu" as
/// "01-fundamentals/child_grids.cu"); else `name` itself.
std::string name_of_path(const std::string& name);

/// The exercises named by chapter ("01-fundamentals", "01") or exercise ("child-grids", or the
/// path to its file); all when empty.
std::vector<const manifest::Exercise*> select_exercises(const manifest::Workbook& book,
                                                        const std::vector<std::string>& names);

/// What list and check say when chapters the grader knows have no folder in chapters/ (one line
/// each, and how to restore them); empty when none is missing.
std::string missing_chapters_note(const manifest::Workbook& book);

/// The name among `known` that `typed` is most likely a slip of (at most two letters added,
/// dropped or changed, or a prefix of it), else one that holds it ("fundamentals" of
/// "01-fundamentals"); empty when none is that near.
std::string nearest_name(const std::string& typed, const std::vector<std::string>& known);

/// Finds one exercise or throws UsageError listing the ids that exist.
const manifest::Exercise& find_exercise(const manifest::Workbook& book, const std::string& name);

/// The exit status a report earns.
int exit_code_for(const grading::GradeReport& report);

/// Builds `target` in `tree`, then replaces this process with `executable args...`. Returns
/// kSomeFailed (after printing the build output) when the target does not build.
int build_and_exec(const grading::BuildTree& tree, const std::string& target, const std::string& executable,
                   const std::vector<std::string>& args, const std::string& what);

/// `text` wrapped to the terminal's width (report::terminal_width: COLUMNS, the terminal, else
/// 100 columns), a line's pieces after its first indented by `hanging` more spaces; never splits
/// a word. Ends with a newline when `text` does.
std::string wrapped(const std::string& text, std::size_t hanging = 0);

/// Now, this machine's local time, as a name's part: "20261207-091530".
std::string local_timestamp();

/// Prints progress lines to stderr ("child-grids: compiling").
void print_progress(const manifest::Exercise& exercise, const std::string& stage);

}  // namespace cdplab::cli
