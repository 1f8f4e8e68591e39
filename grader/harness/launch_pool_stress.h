/// @file launch_pool_stress.h
/// @brief A small pending launch pool before a check: an exercise that must size the pool for
///        its own launches (cudaLimitDevRuntimePendingLaunchCount) shows whether it does, even on
///        inputs whose launches the default pool of 2048 would happen to hold.
#pragma once

#include <cstddef>
#include <string>

namespace cdplab::harness {

/// The pool a check starts with after shrink_pending_launch_pool().
constexpr std::size_t kShrunkLaunchPool = 32;

/// Sets the pending launch pool to `launches`, as another part of a program may have left it
/// (say so in the check's advice on a pool error). Leaves no CUDA error behind; returns false
/// when the GPU refused (the check then runs with the pool it had).
bool shrink_pending_launch_pool(std::size_t launches = kShrunkLaunchPool);

/// CHECKs that the pending launch pool now in effect holds every device-side launch of the last
/// run, as the grader's hooks counted them: where the lesson sizes the pool for every launch the
/// work can make (how many wait at once depends on timing), a pool the run outgrew was sized
/// short, even when this run's timing let every launch through. The pool only grows, so call it
/// after runs whose pool the check shrank first, or whose input is the largest of the process.
/// `sized_by` names what sizes the pool, for the message.
void expect_pool_holds_every_launch(const std::string& sized_by);

}  // namespace cdplab::harness
