/// @file launch_count.h
/// @brief Launches counted on the device: a check compares the launches an exercise's run made
///        with the launches its lesson asks for (how many, into which kind of stream), so that a
///        thread that launches its child twice (the same output, twice the launches) or a strategy
///        launched into the wrong kind of stream (the same output, another timeline) loses the check.
#pragma once

#include <string>

namespace cdplab::harness {

/// Clears the device-side report (cdplab::reset_device_report()) before a GPU check, so that a run
/// that never resets it counts from zero, not from the check before, and starts the check's totals
/// (device_code/device_code.h). Leaves no CUDA error behind.
void clear_launch_count() noexcept;

/// CHECKs that the exercise's last run (since its reset_device_report()) made no more than
/// `expected` device-side launches, as the grader's device-runtime hooks counted them
/// (device_code/device_code.h): every launch the device code asked for, checked or not, failed or
/// not. `one_per` names what the lesson launches one child for ("non-empty item", "level after the
/// first"), for the message. Fewer is judged by expect_launches_at_least where the lesson's model
/// fixes the count; elsewhere a missing launch costs the output.
void expect_launches_at_most(unsigned long long expected, const std::string& one_per);

/// CHECKs that the last run made at least `expected` device-side launches: where the lesson's
/// model fixes the work each child does, a parent that does a child's work itself (for short
/// items, say) gives the same output with fewer launches and loses the check.
void expect_launches_at_least(unsigned long long expected, const std::string& one_per);

/// Both: the lesson's model fixes the number of launches.
void expect_launches_exactly(unsigned long long expected, const std::string& one_per);

/// The kinds of stream a device-side launch can go into.
enum class LaunchStream {
  null_stream,      ///< the block's NULL stream (no stream argument, or 0)
  tail,             ///< cudaStreamTailLaunch
  fire_and_forget,  ///< cudaStreamFireAndForget
  named,            ///< a stream the device code created
};

/// The words for a kind of stream in messages: "the NULL stream", "cudaStreamTailLaunch", ...
std::string describe(LaunchStream stream);

/// CHECKs that every device-side launch of the last run went into `stream`, as observed when
/// each launch was made; `strategy` names what the run was asked to do, for the message.
void expect_every_launch_into(LaunchStream stream, const std::string& strategy);

}  // namespace cdplab::harness
