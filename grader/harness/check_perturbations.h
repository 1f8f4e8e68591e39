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

namespace cdplab::harness {

/// How long a launching thread waits after each launch in a check: longer than a child grid
/// takes to start on current GPUs (a few microseconds), short enough that a thread's launches in a
/// row cost little.
inline constexpr unsigned kCheckLaunchDelayNs = 20000;

/// The most a block of the exercise's kernels waits before it starts, in a check: about what a
/// small block's work takes, so that a block that starts late usually finds its neighbours done.
inline constexpr unsigned kCheckBlockDelayNs = 10000;

/// Turns both perturbations on (`on`) or off, and with them the recording of the exercise's grids
/// for the timeline where it was asked for (device_code.h: grid_recording_asked,
/// check_grid_timeline). Leaves no CUDA error behind.
void set_check_perturbations(bool on) noexcept;

}  // namespace cdplab::harness
