/// @file poison.h
/// @brief Shared memory that reads as garbage, not as luck: before each GPU check the harness
///        fills the shared memory of every SM with a pattern, so that a kernel that counts into
///        shared counters it never zeroed (or reads them before the barrier after zeroing) gets
///        wrong results every time instead of passing on fresh, zeroed memory.
#pragma once

namespace cdplab::harness {

/// The pattern every 32-bit word of shared memory holds after poison_shared_memory().
constexpr unsigned kSharedPoison = 0xA5A5A5A5u;

/// Runs a kernel whose blocks each take the most dynamic shared memory a block may have, two per
/// SM, and fill it with kSharedPoison; waits for it. Leaves no CUDA error behind, whatever
/// happens (a GPU that refuses is simply not poisoned).
void poison_shared_memory();

}  // namespace cdplab::harness
