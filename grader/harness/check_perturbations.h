/// @file check_perturbations.h
/// @brief Races made visible: in a GPU check the device-runtime hooks (device_code.h) hold each
///        thread a little after each of its successful device-side launches, whatever the code
///        writes after the launch, so that the child usually starts before the parent's next
///        statements: a write the parent makes after the launch, which the child was never
///        promised to see (a workspace zeroed after the launch of the grid that reads it), then
///        loses the race it would win on a fast GPU by luck. And every block of the exercise's
///        kernels starts after a time drawn per block, so that a race between blocks that the
///        GPU's usual order hides (a block storing where another block has still to read) shows
///        up. Timed runs (speed.h) turn both off.
#pragma once

#include <cstddef>

namespace cdplab::harness {

/// How long a launching thread waits after each launch in a check: longer than a child grid
/// takes to start on current GPUs (a few microseconds), short enough that a thread's launches in a
/// row cost little.
inline constexpr unsigned kCheckLaunchDelayNs = 20000;

/// The most a block of the exercise's kernels waits before it starts, in a check: about what a
/// small block's work takes, so that a block that starts late usually finds its neighbours done.
inline constexpr unsigned kCheckBlockDelayNs = 10000;

/// The device-side launches of a run that are perturbed: the first this many launches are held,
/// and blocks are delayed only while the run has launched fewer. On an H100, scaled-tessellation's
/// reference (ten thousand children, each in a named stream its parent thread creates and
/// destroys) never finished when every launch and every child block was held, while the races
/// the checks look for show within a few launches. A bound of the work the perturbations slow,
/// not a measured threshold; it did not end that stall on an H100 (docs/instructor-guide.md).
inline constexpr unsigned long long kPerturbedLaunches = 1024;

/// Which of the two perturbations a check applies.
struct PerturbationsAsked {
  bool launches = true;  ///< the hold after each launch
  bool blocks = true;    ///< the delay before each block
};

/// What CDPLAB_CHECK_PERTURBATIONS's value `setting` (nullptr: not set) asks for: "off" neither,
/// "launches" the launch hold alone, "blocks" the block delay alone, anything else both. It is for
/// an instructor who needs to tell whether (and which of) the perturbations stall a check. Only
/// the environment of the check processes counts: a grading runs them in the grader's, so a
/// student's setting changes only the student's own practice runs.
inline PerturbationsAsked perturbations_asked(const char* setting) {
  const auto is = [setting](const char* word) {
    if (setting == nullptr) return false;
    std::size_t at = 0;
    for (; word[at] != '\0'; ++at)
      if (setting[at] != word[at]) return false;
    return setting[at] == '\0';
  };
  if (is("off")) return {false, false};
  if (is("launches")) return {true, false};
  if (is("blocks")) return {false, true};
  return {};
}

/// Turns the perturbations on (`on`: those CDPLAB_CHECK_PERTURBATIONS asks for) or off, and the
/// recording of the exercise's grids for the timeline on where `record_grids` asks for it (in a
/// check, under compute-sanitizer too; never in a timed run) and the process was instrumented for it
/// (device_code.h: grid_recording_asked, check_records_grids). Leaves no CUDA error behind.
void set_check_perturbations(bool on, bool record_grids = false) noexcept;

}  // namespace cdplab::harness
