/// @file barrier_flow.h
/// @brief Which stores reach a device-side launch with no barrier in between, followed along a
///        function's control flow (branches and loops), not only its text.
///
/// A child grid sees what its launching thread wrote before the launch, but not what the block's
/// other threads wrote unless a barrier (`__syncthreads()`) lies between their stores and the
/// launch. A store made in code that only one thread runs (behind a branch on `threadIdx.x ==
/// c`, or predicated on it, where c is a value the whole block shares) is that thread's own: a
/// launch by the same thread needs no barrier after it. Everything else is taken as possibly
/// made by other threads, and so is everything in a kernel that reads `threadIdx.y` or
/// `threadIdx.z` (a block of more dimensions, where `threadIdx.x == c` leaves a column).
/// `__syncwarp()` orders only a warp's stores: it is a barrier for a launch in code every thread
/// may run (each warp's own lane launching, say), not for one thread's launch after the whole
/// block's stores.
#pragma once

#include "rules/ptx_reader.h"

#include <vector>

namespace cdplab::rules {

/// The thread tag of code that every thread of a block may run. Other tags name the one thread
/// that runs it: its `%tid.x` value (0 or more), or a value computed at run time (below kAnyThread).
constexpr long kAnyThread = -1;

/// What one instruction means to the barrier analysis (the launch graph's reading of it).
enum class FlowEvent {
  none,
  store,    ///< a store to global or shared memory (not local, not a launch's parameter buffer)
  barrier,  ///< a barrier of the block, or a call of a device function that may hold one
  warp_barrier,  ///< `__syncwarp()`: orders the warp's stores, not the other warps
  launch,   ///< a device-side launch
};

/// A launch that a store of another thread may reach with no barrier in between.
struct UnguardedLaunchSite {
  int launch_line = 0;  ///< PTX line of the launch
  int store_line = 0;   ///< PTX line of the latest such store
};

/// What the analysis of one function's control flow finds.
struct BarrierFlow {
  /// The launches that a store of another thread may reach with no barrier in between. A launch
  /// in code that every thread may run counts every store since the last barrier.
  std::vector<UnguardedLaunchSite> unguarded_launches;
  /// For each instruction, the one thread of the block that runs it, when the branches and guards
  /// on the way to it (and its own guard) single one out (`threadIdx.x == 0`, also behind `&&`);
  /// kAnyThread otherwise, and for code never reached.
  std::vector<long> running_thread;
};

/// The analysis of `function`; `events` holds one entry per instruction of `function.body`.
BarrierFlow barrier_flow(const ptx::Function& function, const std::vector<FlowEvent>& events);

/// For one instruction: the block barriers (instruction indices) where the stretch of code it runs
/// in may begin (-1: the function's entry) and end (-2: the function's end), along the control
/// flow with no other block barrier in between. Sorted, each once.
struct Stretch {
  std::vector<int> begins;
  std::vector<int> ends;
};

/// The stretch of every instruction of `function`. CUDA asks that every thread of a block reach
/// the same barriers (a `__syncthreads()` under a condition needs the condition alike in the whole
/// block), so all threads run from one barrier to the same next one: two instructions whose
/// stretches may begin at a common barrier and end at a common barrier may run at the same time
/// in different threads, and a store in one and a load in the other are not ordered, even on the
/// two sides of one branch.
std::vector<Stretch> barrier_stretches(const ptx::Function& function, const std::vector<FlowEvent>& events);

/// Whether two instructions may run in one stretch (barrier_stretches): a common beginning and a
/// common end.
bool share_a_stretch(const Stretch& a, const Stretch& b);

}  // namespace cdplab::rules
