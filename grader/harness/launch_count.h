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

/// CHECKs that the exercise's last run (since its reset_device_report()) made no more than
/// `expected` device-side launches, as the grader's device-runtime hooks counted them
/// (device_code/device_code.h): every launch the device code asked for, checked or not, failed or
/// not. `one_per` names what the lesson launches one child for ("non-empty item", "level after the
/// first"), for the message. Fewer is not judged here: a missing launch costs the output.
void expect_launches_at_most(unsigned long long expected, const std::string& one_per);

}  // namespace cdplab::harness
