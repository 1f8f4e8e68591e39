/// @file lifetimes.h
/// @brief What a check's runs left behind on the device, from the grader's counts of the device
///        code's calls (device_code/device_code.h): streams created in device code and never
///        destroyed, device-heap memory taken and never freed, launches into a stream that was
///        already destroyed. The harness judges them at the end of every GPU check that passed
///        otherwise, on every exercise: a leak gives the right output and fails the check.
#pragma once

#include <string>
#include <vector>

namespace cdplab::harness {

/// What the current check's runs left behind, one sentence each; empty when nothing, when no
/// device code is loaded, or when the check asked not to be judged (set_lifetimes_judged).
std::vector<std::string> lifetime_problems();

/// Whether the current check's lifetimes are judged; the harness sets true as each check starts.
/// A check that makes a run fail on purpose sets false: the run stops early, and what it leaves
/// is no fault of the code.
void set_lifetimes_judged(bool judged) noexcept;

/// The current check's device-heap balance is not judged: the exercise's own release (the function
/// that frees what a run allocated) could not run, because the student has not written it yet or it
/// failed. The check that judges the release says so; every other check keeps its verdict.
void skip_heap_lifetime() noexcept;

}  // namespace cdplab::harness
