/// @file launch_count.h
/// @brief Launches counted on the device: a check compares the launches an exercise's run made
///        with the launches its lesson asks for, so that a thread that launches its child twice
///        (the same output, twice the launches) loses the check.
#pragma once

#include <string>

namespace cdplab::harness {

/// Clears the device-side report (cdplab::reset_device_report()) before a GPU check, so that a run
/// that never resets it counts from zero, not from the check before. Leaves no CUDA error behind.
void clear_launch_count() noexcept;

/// CHECKs that the exercise's last run (since its reset_device_report()) checked no more than
/// `expected` device-side launches with CDPLAB_CHECK_LAUNCH() (cdplab/check.h). `one_per` names
/// what the lesson launches one child for ("non-empty item", "level after the first"), for the
/// message. Fewer is not judged here: a launch missing its check costs the launch_checked rule,
/// and a missing launch the output. An observed step (observe.h): a judge replays the count.
void expect_launches_at_most(unsigned long long expected, const std::string& one_per);

}  // namespace cdplab::harness
