/// @file device_runtime_counts.h
/// @brief What the exercise's device code asked of the device runtime, counted by the grader
///        (device_code.h): one layout for the device hooks that count and the host that reads.
#pragma once

namespace cdplab::harness {

/// Counts since the run started (cdplab::reset_device_report(), or the check's start). Every
/// field is a 64-bit count, so that the device side updates each with one atomicAdd.
struct DeviceRuntimeCounts {
  unsigned long long launches;           ///< device-side launches asked for, failed ones included
  unsigned long long launches_failed;    ///< launches that returned an error (injected ones included)
  unsigned long long launches_injected;  ///< launches the grader made fail on purpose
  unsigned long long null_stream;        ///< launches into the NULL stream (the block's implicit one)
  unsigned long long tail_launch;        ///< launches into cudaStreamTailLaunch
  unsigned long long fire_and_forget;    ///< launches into cudaStreamFireAndForget
  unsigned long long named_stream;       ///< launches into a stream the code created
  unsigned long long streams_created;    ///< cudaStreamCreateWithFlags that succeeded
  unsigned long long streams_destroyed;  ///< cudaStreamDestroy that succeeded
  unsigned long long heap_cuda_mallocs;  ///< device-side cudaMalloc that succeeded with memory
  unsigned long long heap_cuda_frees;    ///< device-side cudaFree of a non-null pointer that succeeded
  unsigned long long heap_mallocs;       ///< malloc in device code that returned memory
  unsigned long long heap_frees;         ///< free in device code of a non-null pointer
  unsigned long long events_recorded;    ///< cudaEventRecord in device code
  unsigned long long error_reads;        ///< cudaGetLastError and cudaPeekAtLastError in device code
  unsigned long long into_destroyed;     ///< launches into a stream the code had destroyed already
  unsigned long long heap_requests;      ///< device-heap allocations asked for (cudaMalloc and malloc), failed ones included
  unsigned long long heap_injected;      ///< allocations the grader made fail on purpose
};

/// How many destroyed streams the hooks remember in one run (a run that destroys more
/// forgets the oldest slots it cannot place: a launch into one of those goes unseen).
inline constexpr int kDestroyedStreamSlots = 4096;

/// Device-side launches from one function of the exercise (the caller) of one kernel (the
/// child), over a run: the launch tree's edges. A launch whose edge could not be told (its
/// parameter buffer was asked for where the grader could not see the caller, or every other slot
/// was taken) counts in slot 0, with key kUnknownEdge.
struct LaunchEdgeCounts {
  unsigned long long key;     ///< 0: a free slot; else the caller and child folded (device hooks)
  unsigned long long child;   ///< the child kernel's device address (0: not known)
  unsigned long long caller;  ///< the calling function's index among the PTX's functions (instrument_ptx)
  unsigned long long grids;   ///< launches asked for, failed ones included
  unsigned long long into[4]; ///< by stream: NULL, tail, fire-and-forget, a created one
  unsigned long long failed;  ///< launches that returned an error (injected ones included)
};
inline constexpr int kLaunchEdgeSlots = 64;
inline constexpr unsigned long long kUnknownEdge = 1;
inline constexpr unsigned long long kUnknownCaller = ~0ull;

/// Parameter buffers asked for and not launched yet, and the edge each will count into. Every
/// resident thread of an H200 may hold one at once (132 SMs x 2048): with 8192 slots, 147 of
/// 60000 launches of one run found no slot and counted as unknown.
inline constexpr int kPendingLaunchSlots = 1 << 18;

/// What the host sets for the hooks (device_code.h). The injections (-1 arms nothing): the launch
/// with index `fail_launch` (0 = the run's first) fails with cudaErrorLaunchPendingCountExceeded
/// instead of launching, and the device-heap allocation with index `fail_allocation` fails as on
/// a full heap (cudaMalloc returns cudaErrorMemoryAllocation and a null pointer, malloc a null
/// pointer). The perturbations of checks (0: none, as in timed runs): a thread that launched waits
/// `launch_delay_ns` after each successful launch, and each block of every kernel of the exercise
/// waits a time drawn from `block_seed` and its grid and block, below `block_delay_ns`, before it
/// starts.
struct DeviceRuntimeControl {
  long long fail_launch;
  long long fail_allocation;
  unsigned long long launch_delay_ns;
  unsigned long long block_delay_ns;
  unsigned long long block_seed;
  /// 1: the grids of the exercise's kernels are recorded (GridTimelineRecords), as in checks; 0:
  /// not, as in timed runs.
  unsigned long long record_grids;
  /// The device-side launches of a run that are perturbed (launch_delay_ns, block_delay_ns): past
  /// this many, launches are no longer held and blocks no longer delayed.
  unsigned long long perturbed_launches;
};

/// No failure armed, no perturbation, no recording: what the hooks start with.
inline constexpr DeviceRuntimeControl kNothingArmed{-1, -1, 0, 0, 0, 0, 0};

/// The grids one run of a check may record, and the device-side launches it may remember for
/// them; a run that starts more is recorded in part, and says how many it left out.
inline constexpr int kTimelineGrids = 4096;
inline constexpr int kTimelineLaunches = 8192;
inline constexpr int kTimelineLaunchIndex = 16384;  ///< open addressing over the launches' keys

/// How a grid's %gridid is kept in GridRecord::grid (XOR this): never 0 for the ids a GPU hands out
/// (an H100 counts device-launched grids down from 2^64 - 1, so `id + 1` would be 0 for the first).
inline constexpr unsigned long long kGridIdMark = 0x8000000000000001ull;

/// One grid of the exercise's kernels, recorded by its blocks (the hooks' block_start and
/// block_end, which the loader adds to every kernel of the exercise).
struct GridRecord {
  unsigned long long grid;         ///< %gridid XOR kGridIdMark; 0: a free slot
  unsigned long long kernel;       ///< the kernel's index among the instrumented PTX's kernels, + 1
  unsigned long long launch;       ///< the index of the device launch that made it, + 1; 0: none found
  unsigned long long not_start;    ///< ~(global timer when its first block started): the largest is the earliest
  unsigned long long end;          ///< global timer when its last warp ended
  unsigned long long blocks;       ///< blocks that started
};

/// One device-side launch that went to the device runtime (not one the grader made fail).
struct LaunchRecord {
  unsigned long long key;          ///< what its grid's first block finds it by (ptx_instrument.h); 0: not told
  unsigned long long child;        ///< the launched kernel's address; 0: the hooks could not tell
  unsigned long long parent_grid;  ///< %gridid of the launching thread
  unsigned long long parent_block; ///< the launching thread's block (linear index)
  unsigned long long parent_thread; ///< the launching thread in its block (linear index)
  unsigned long long stream;       ///< 0: the NULL stream, 1: tail, 2: fire-and-forget, 3: a created one
  unsigned long long stream_handle;
  unsigned long long launched;     ///< global timer just before the launch
  unsigned long long taken;        ///< 0: no grid found it yet; 1: a grid did; 2: the launch failed
};

/// The timeline of the current run (device_code.h: check_grid_timeline).
struct GridTimelineRecords {
  unsigned long long grids_recorded;   ///< grid slots claimed
  unsigned long long grids_left_out;   ///< grids that found no free slot (counted by their block 0)
  unsigned long long launches_recorded;  ///< launch records handed out (some past the end: left out)
  unsigned long long launches_unindexed; ///< records no grid can find (every slot near their key's home taken)
  GridRecord grids[kTimelineGrids];
  LaunchRecord launches[kTimelineLaunches];
  unsigned launch_index[kTimelineLaunchIndex];  ///< launch record + 1 by key; 0: free
};

/// Everything the hooks keep, in one block of device memory the host maps apart from every other
/// (device_code.cpp): the exercise's code learns its address only XOR a key it cannot read.
struct HookState {
  DeviceRuntimeCounts counts;
  DeviceRuntimeControl control;
  /// Threads owed an injected error by their next error read, as (grid, thread) keys; 0 is free.
  unsigned long long owed[64];
  /// Streams destroyed in this run and not handed out again by a later create in the same block,
  /// each as its handle mixed with its block (an open addressing table: 0 is free, kForgotten a
  /// handle created again).
  unsigned long long destroyed[kDestroyedStreamSlots];
  /// The launch tree of this run: one slot per (caller, child) edge.
  LaunchEdgeCounts edges[kLaunchEdgeSlots];
  /// Parameter buffers between their request and their launch (open addressing on the buffer's
  /// address: 0 is free, kForgotten a launched one), and the edge slot of each.
  unsigned long long pending[kPendingLaunchSlots];
  unsigned pending_edge[kPendingLaunchSlots];
  /// The kernel each pending buffer launches, as its own thread asked for the buffer: what the
  /// launch's record is keyed by (an edge's child, written by whichever thread claimed the edge,
  /// may not yet be visible to another SM).
  unsigned long long pending_child[kPendingLaunchSlots];
  /// When the exercise's grids ran, in this run (control.record_grids).
  GridTimelineRecords timeline;
};

}  // namespace cdplab::harness
