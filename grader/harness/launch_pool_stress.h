/// @file launch_pool_stress.h
/// @brief A small pending launch pool before a check: an exercise that must size the pool for
///        its own launches (cudaLimitDevRuntimePendingLaunchCount) shows whether it does, even on
///        inputs whose launches the default pool of 2048 would happen to hold.
#pragma once

#include <cstddef>

namespace cdplab::harness {

/// The pool a check starts with after shrink_pending_launch_pool().
constexpr std::size_t kShrunkLaunchPool = 32;

/// Sets the pending launch pool to `launches`, as another part of a program may have left it
/// (say so in the check's advice on a pool error). Leaves no CUDA error behind; returns false
/// when the GPU refused (the check then runs with the pool it had).
bool shrink_pending_launch_pool(std::size_t launches = kShrunkLaunchPool);

}  // namespace cdplab::harness
