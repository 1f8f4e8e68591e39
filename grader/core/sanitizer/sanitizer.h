/// @file sanitizer.h
/// @brief The optional compute-sanitizer stage of grading: a suite run again under memcheck
///        (with leak checking), its findings turned into graded items.
///
/// The items are worth no points: they are feedback on faults that the checks' results may not
/// show (an out-of-bounds write that happened to hit nothing, memory never freed, a race on
/// shared memory). They need a GPU; without one they are reported skipped.
#pragma once

#include "process/process.h"

#include "results/results.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace cdplab::sanitizer {

/// One tool run of compute-sanitizer.
struct Tool {
  std::string name;               ///< "memcheck", "racecheck"
  std::vector<std::string> args;  ///< its options
  /// Options added for a second run when the first did not finish in time (empty: no second
  /// run), and what that second run leaves unchecked, for the feedback.
  std::vector<std::string> fallback_args;
  std::string fallback_leaves_out;
};

/// The tools the stage runs: memcheck with leak checking. (racecheck refuses CDP programs.)
const std::vector<Tool>& tools();

/// memcheck as a graded check runs under it (`memcheck = true` in a manifest): the device heap
/// checked too, and no second run without that when it is slow (the check is kept small).
const Tool& graded_memcheck();

/// A check marked `memcheck = true` that passed, once its run under graded_memcheck() gave
/// `found`: it stays passed when the tool found nothing, fails with the findings (and no points)
/// when the tool found something, and is skipped with the reason (and no points) when the tool
/// could not tell: its results alone do not earn the check.
void require_clean(grading::Item& check, const grading::Item& found);

/// The item of `tool`, skipped because of `why` (worth no points, like every sanitizer item).
grading::Item skipped_item(const Tool& tool, const std::string& why);

/// The item of one tool run from what compute-sanitizer printed and how it ended.
/// An error summary of 0 errors passes, whatever the program's own exit status
/// (its checks are graded without the tools), unless it is the tools' error exit status (86);
/// a run that did not finish is skipped (the tool reported nothing; the check itself is graded
/// in the run without the tools); anything else fails with the findings (at most `max_lines`
/// lines of them).
grading::Item item_from_output(const Tool& tool, const std::string& output, int exit_code, bool timed_out,
                               std::size_t max_lines = 40);

/// Runs one check of `suite` (`check`, a name the suite's doctest filter matches exactly) under
/// `tool`, with `env`, within `seconds`, and returns its item. Each check runs in a process of
/// its own, as in the graded run: a check may rely on a fresh CUDA context (a device heap that
/// can still be raised, say). `sanitizer` is the compute-sanitizer program; when it cannot be
/// started the item is skipped with the reason. When the run does not finish within `seconds`
/// and the tool has fallback options, the check runs once more with them, within `seconds`,
/// and the item says what that run left unchecked. `run` runs each command line (compute-sanitizer,
/// its options, then the suite and its arguments; a grading runs it as a check process, in its
/// box: grading/check_process.h); empty: process::run, as it is.
using CommandRunner = std::function<process::Result(const std::vector<std::string>& argv, const process::Options&)>;
grading::Item run_check(const std::string& sanitizer, const Tool& tool, const std::string& suite,
                        const std::string& check, const std::map<std::string, std::string>& env, double seconds,
                        const CommandRunner& run = {});

/// One tool's item for a whole suite from the items of its checks: failed when one failed
/// (with each such check's findings, named), passed when none failed and one passed (with what
/// the other checks said of their runs: why one was skipped, what a second run left out), else
/// skipped.
grading::Item merge(const Tool& tool, const std::vector<std::pair<std::string, grading::Item>>& per_check);

/// compute-sanitizer beside the CUDA compiler `nvcc`, or from PATH.
std::string find_sanitizer(const std::string& nvcc);

}  // namespace cdplab::sanitizer
