/// @file launch_delay.h
/// @brief Ordering bugs made visible: in a GPU check, CDPLAB_CHECK_LAUNCH() holds the launching
///        thread a little after each successful launch (cdplab::set_launch_delay), so that the
///        child usually starts before the parent's next statements. A write the parent makes
///        after the launch, which the child was never promised to see (a workspace zeroed after
///        the launch of the grid that reads it), then loses the race it would win on a fast GPU
///        by luck. Timed runs (speed.h) turn the delay off.
#pragma once

namespace cdplab::harness {

/// How long a launching thread waits after each checked launch in a check: longer than a child
/// grid takes to start on current GPUs (a few microseconds), short enough that a thread's
/// launches in a row cost little.
inline constexpr unsigned kCheckLaunchDelayNs = 20000;

/// Sets the delay to kCheckLaunchDelayNs (`on`) or 0. Leaves no CUDA error behind.
void set_check_launch_delay(bool on) noexcept;

}  // namespace cdplab::harness
