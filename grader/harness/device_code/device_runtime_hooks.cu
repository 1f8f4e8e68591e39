// The grader's device library: every call the exercise's device code makes to the device runtime
// (launches, streams, the device heap, events, error reads) comes here, because the loader renames
// those call targets in the exercise's PTX (device_code.cpp), and every block of the exercise's
// kernels starts here (block_start). Compiled to PTX only; the loader gives every name that starts
// with cdplab_hook_ a suffix drawn per process before it links, so that no exercise can name
// these functions.
//
// What the hooks count lives in a HookState the host maps in device memory of its own, between
// wide unmapped guards: the module holds only its address XOR a key that is an immediate operand
// of the hooks' code (the loader writes it in the PTX), so a scan from the exercise's globals finds
// neither the counts nor a pointer to them, and faults if it walks far.
#include "device_runtime_counts.h"

#include <cuda_runtime.h>

using cdplab::harness::DeviceRuntimeControl;
using cdplab::harness::DeviceRuntimeCounts;
using cdplab::harness::HookState;

extern "C" {
/// The address of the hooks' state XOR the key (written by the host after loading).
__device__ unsigned long long cdplab_hook_state;
}

namespace {

/// The hooks' state. The key's text is replaced per grading by hooks_ptx (ptx_instrument.h).
__device__ __forceinline__ HookState& state() {
  unsigned long long key;
  asm volatile("mov.b64 %0, 0x0cd91ab0c0ffee00;" : "=l"(key));
  return *reinterpret_cast<HookState*>(cdplab_hook_state ^ key);
}

__device__ void count(unsigned long long& field) { atomicAdd(&field, 1ull); }

__device__ unsigned long long global_time_ns() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

/// Holds the calling thread for `nanoseconds` (the global timer's steps are about a microsecond).
__device__ void hold(unsigned long long nanoseconds) {
  const unsigned long long start = global_time_ns();
  while (global_time_ns() - start < nanoseconds) __nanosleep(500);
}

/// This grid's id (%gridid: unique while the program runs).
__device__ unsigned long long this_grid() {
  unsigned long long grid = 0;
  asm volatile("mov.u64 %0, %%gridid;" : "=l"(grid));
  return grid;
}

/// This block's linear index in its grid.
__device__ unsigned long long linear_block() {
  return (static_cast<unsigned long long>(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
}

/// This thread's linear index in its block.
__device__ unsigned long long linear_thread() {
  return (static_cast<unsigned long long>(threadIdx.z) * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
}

/// The slot of a table of `slots` that a search for `key` looks at `probe` places after its home.
__device__ unsigned probe_slot(unsigned long long key, int probe, unsigned slots) {
  return (static_cast<unsigned>((key * 0x9e3779b97f4a7c15ull) >> 40) + static_cast<unsigned>(probe)) % slots;
}

/// This thread in this grid: the grid's id and the thread's linear index in it, folded into one
/// key that is never 0.
__device__ unsigned long long thread_key() {
  const unsigned long long thread = linear_block() * blockDim.x * blockDim.y * blockDim.z + linear_thread();
  return (this_grid() << 40) ^ (thread + 1);
}

__device__ void owe_error() {
  const unsigned long long key = thread_key();
  for (auto& slot : state().owed)
    if (atomicCAS(&slot, 0ull, key) == 0ull) return;
}

/// The injected error this thread is owed, if any; `take` clears it (cudaGetLastError does, the
/// peek does not).
__device__ cudaError_t owed_error(bool take) {
  const unsigned long long key = thread_key();
  for (auto& slot : state().owed) {
    if (slot != key) continue;
    if (!take || atomicCAS(&slot, key, 0ull) == key) return cudaErrorLaunchPendingCountExceeded;
  }
  return cudaSuccess;
}

constexpr unsigned long long kForgotten = ~0ull;
constexpr int kProbes = 64;  ///< slots looked at from a handle's home slot

/// A stream as the destroyed-stream table keeps it: its handle in the block of this thread. A
/// device-side stream belongs to the block that created it, and the CUDA Programming Guide does
/// not promise its handle is unique between blocks: another block's stream of the same handle,
/// destroyed, must not make a launch into this block's live one look like a launch into a
/// destroyed stream. Never 0 (a free slot) or kForgotten.
__device__ unsigned long long block_stream(cudaStream_t stream) {
  unsigned long long key = reinterpret_cast<unsigned long long>(stream) ^ (this_grid() * 0x9e3779b97f4a7c15ull) ^
                           ((linear_block() + 1) * 0xc2b2ae3d27d4eb4full);
  if (key == 0ull || key == kForgotten) key = 1ull;
  return key;
}

/// The table slot a stream key's search looks at `probe` places after its home slot.
__device__ unsigned long long& destroyed_slot(unsigned long long key, int probe) {
  return state().destroyed[probe_slot(key, probe, cdplab::harness::kDestroyedStreamSlots)];
}

/// Whether this call added the stream (false: it was there already, from an earlier destroy, or
/// no slot was free).
__device__ bool remember_destroyed(cudaStream_t stream) {
  const unsigned long long key = block_stream(stream);
  for (int probe = 0; probe < kProbes; ++probe) {
    unsigned long long& slot = destroyed_slot(key, probe);
    const unsigned long long seen = atomicCAS(&slot, 0ull, key);
    if (seen == 0ull) return true;
    if (seen == key) return false;
    if (seen == kForgotten && atomicCAS(&slot, kForgotten, key) == kForgotten) return true;
  }
  return false;
}

/// A create that returns a handle destroyed before in this block: that handle names a live stream
/// again.
__device__ void forget_destroyed(cudaStream_t stream) {
  const unsigned long long key = block_stream(stream);
  for (int probe = 0; probe < kProbes; ++probe) {
    const unsigned long long seen = atomicCAS(&destroyed_slot(key, probe), key, kForgotten);
    if (seen == 0ull) return;
  }
}

__device__ bool destroyed(cudaStream_t stream) {
  const unsigned long long key = block_stream(stream);
  for (int probe = 0; probe < kProbes; ++probe) {
    const unsigned long long seen = *static_cast<volatile unsigned long long*>(&destroyed_slot(key, probe));
    if (seen == key) return true;
    if (seen == 0ull) return false;
  }
  return false;
}

using cdplab::harness::kLaunchEdgeSlots;
using cdplab::harness::kPendingLaunchSlots;
using cdplab::harness::LaunchEdgeCounts;

/// The launches whose edge could not be told: slot 0, kept for them.
__device__ LaunchEdgeCounts* unknown_edge() {
  LaunchEdgeCounts& slot = state().edges[0];
  if (atomicCAS(&slot.key, 0ull, cdplab::harness::kUnknownEdge) == 0ull) {
    slot.child = 0;
    slot.caller = cdplab::harness::kUnknownCaller;
  }
  return &slot;
}

/// The slot of edge caller -> child (slots 1 on), claimed on first use; nullptr when every one is taken.
__device__ LaunchEdgeCounts* edge_slot(unsigned long long key, unsigned long long child, unsigned long long caller) {
  const unsigned home = static_cast<unsigned>((key * 0x9e3779b97f4a7c15ull) >> 58);
  for (int probe = 0; probe < kLaunchEdgeSlots - 1; ++probe) {
    LaunchEdgeCounts& slot = state().edges[1 + (home + probe) % (kLaunchEdgeSlots - 1)];
    const unsigned long long seen = atomicCAS(&slot.key, 0ull, key);
    if (seen == 0ull) {  // claimed: the host reads child and caller once the run is over
      slot.child = child;
      slot.caller = caller;
    }
    if (seen == 0ull || seen == key) return &slot;
  }
  return nullptr;
}

__device__ unsigned long long& pending_slot(const void* buffer, int probe) {
  return state().pending[probe_slot(reinterpret_cast<unsigned long long>(buffer), probe, kPendingLaunchSlots)];
}

/// The buffer will be launched by this thread: its edge and its kernel wait for it here.
__device__ void remember_pending(const void* buffer, unsigned edge, unsigned long long child) {
  const unsigned long long address = reinterpret_cast<unsigned long long>(buffer);
  for (int probe = 0; probe < kProbes; ++probe) {
    unsigned long long& slot = pending_slot(buffer, probe);
    const unsigned long long seen = atomicCAS(&slot, 0ull, address);
    if (seen == 0ull || (seen == kForgotten && atomicCAS(&slot, kForgotten, address) == kForgotten)) {
      state().pending_edge[&slot - state().pending] = edge;
      state().pending_child[&slot - state().pending] = child;
      return;
    }
  }
}

/// The edge slot the buffer's request chose (and the buffer forgotten), or the unknown edge's;
/// *child: the kernel the request named (0 where the buffer was not remembered).
__device__ LaunchEdgeCounts* take_pending(const void* buffer, unsigned long long* child) {
  const unsigned long long address = reinterpret_cast<unsigned long long>(buffer);
  *child = 0;
  for (int probe = 0; probe < kProbes; ++probe) {
    unsigned long long& slot = pending_slot(buffer, probe);
    const unsigned long long seen = *static_cast<volatile unsigned long long*>(&slot);
    if (seen == 0ull) break;
    if (seen != address) continue;
    const unsigned edge = state().pending_edge[&slot - state().pending];
    *child = state().pending_child[&slot - state().pending];
    atomicExch(&slot, kForgotten);
    return edge < kLaunchEdgeSlots ? &state().edges[edge] : unknown_edge();
  }
  return unknown_edge();
}

using cdplab::harness::GridRecord;
using cdplab::harness::kTimelineGrids;
using cdplab::harness::kTimelineLaunches;
using cdplab::harness::kTimelineLaunchIndex;
using cdplab::harness::LaunchRecord;

/// This grid's id as GridRecord keeps it (never 0, which marks a free slot).
__device__ unsigned long long grid_id() { return this_grid() ^ cdplab::harness::kGridIdMark; }

/// This grid's record: claimed on first use with `claim` (*claimed says whether this call did);
/// nullptr where it is not there, or no slot was free.
__device__ GridRecord* grid_record(bool claim, bool* claimed = nullptr) {
  const unsigned long long id = grid_id();
  for (int probe = 0; probe < kProbes; ++probe) {
    GridRecord& slot = state().timeline.grids[probe_slot(id, probe, kTimelineGrids)];
    const unsigned long long seen = claim ? atomicCAS(&slot.grid, 0ull, id) : *static_cast<volatile unsigned long long*>(&slot.grid);
    if (seen == id) return &slot;
    if (seen == 0ull) {
      if (!claim) return nullptr;
      if (claimed != nullptr) *claimed = true;
      return &slot;
    }
  }
  return nullptr;
}

/// The launch record of `key` that no grid has taken yet (taken now), as its index + 1; 0: none.
__device__ unsigned long long take_launch(unsigned long long key) {
  if (key == 0) return 0;
  for (int probe = 0; probe < kProbes; ++probe) {
    const unsigned at =
        *static_cast<volatile unsigned*>(&state().timeline.launch_index[probe_slot(key, probe, kTimelineLaunchIndex)]);
    if (at == 0) return 0;
    LaunchRecord& launch = state().timeline.launches[at - 1];
    if (*static_cast<volatile unsigned long long*>(&launch.key) == key && atomicCAS(&launch.taken, 0ull, 1ull) == 0ull)
      return at;
  }
  return 0;
}

/// The first thread of each block of the exercise's kernels: the grid's first block claims its
/// record and finds the launch that made it (by `key`, what the launch's parameters and the
/// kernel hash to: ptx_instrument.h); every block moves the start earlier if it came first.
__device__ void record_block_start(unsigned kernel, unsigned long long key) {
  const unsigned long long now = global_time_ns();
  bool claimed = false;
  GridRecord* grid = grid_record(true, &claimed);
  if (grid == nullptr) {
    if (linear_block() == 0) count(state().timeline.grids_left_out);
    return;
  }
  if (claimed) {
    count(state().timeline.grids_recorded);
    grid->kernel = kernel + 1ull;
    grid->launch = take_launch(key);
  }
  atomicMax(&grid->not_start, ~now);
  count(grid->blocks);
}

}  // namespace

/// What a launch of `child` with the parameters in `buffer` hashes to, as the launched grid's
/// blocks compute it from their own parameters (the instrumented PTX defines it: ptx_instrument.h).
extern "C" __device__ unsigned long long cdplab_hook_launch_key(unsigned long long child, const void* buffer);

namespace {

/// A record of this launch for the timeline, published before the launch (its grid's first block
/// looks for it); nullptr where every record is taken.
__device__ LaunchRecord* record_launch(unsigned long long child, const void* parameters, int into,
                                       cudaStream_t stream) {
  const unsigned long long at = atomicAdd(&state().timeline.launches_recorded, 1ull);
  if (at >= static_cast<unsigned long long>(kTimelineLaunches)) return nullptr;
  LaunchRecord& launch = state().timeline.launches[at];
  const unsigned long long key = child != 0 ? cdplab_hook_launch_key(child, parameters) : 0ull;
  launch.child = child;
  launch.parent_grid = grid_id() ^ cdplab::harness::kGridIdMark;
  launch.parent_block = linear_block();
  launch.parent_thread = linear_thread();
  launch.stream = static_cast<unsigned long long>(into);
  launch.stream_handle = reinterpret_cast<unsigned long long>(stream);
  launch.launched = global_time_ns();
  launch.key = key;
  __threadfence();
  if (key == 0) return &launch;
  bool indexed = false;
  for (int probe = 0; probe < kProbes && !indexed; ++probe) {
    unsigned& slot = state().timeline.launch_index[probe_slot(key, probe, kTimelineLaunchIndex)];
    indexed = atomicCAS(&slot, 0u, static_cast<unsigned>(at + 1)) == 0u;
  }
  if (!indexed) count(state().timeline.launches_unindexed);  // its grid will not find it: said so
  __threadfence();
  return &launch;
}

}  // namespace

/// Stands in for the parameter-buffer request of a launch, with the index of the function that
/// makes it (the instrumentation adds it: ptx_instrument.h), so that the launch counts into its
/// edge of the launch tree.
extern "C" __device__ void* cdplab_hook_GetParameterBufferFrom(void* child, dim3 grid, dim3 block, unsigned shared,
                                                                unsigned caller) {
  void* buffer = cudaGetParameterBufferV2(child, grid, block, shared);
  if (buffer != nullptr) {
    const unsigned long long address = reinterpret_cast<unsigned long long>(child);
    const unsigned long long key = (static_cast<unsigned long long>(caller + 1) << 56) ^ (address & ((1ull << 56) - 1));
    LaunchEdgeCounts* edge = edge_slot(key, address, caller);
    remember_pending(buffer, edge != nullptr ? static_cast<unsigned>(edge - state().edges) : ~0u, address);
  }
  return buffer;
}

extern "C" __device__ cudaError_t cdplab_hook_LaunchDeviceV2(void* parameters, cudaStream_t stream) {
  const unsigned long long index = atomicAdd(&state().counts.launches, 1ull);
  unsigned long long child = 0;  // the kernel this thread asked the buffer for
  LaunchEdgeCounts* edge = take_pending(parameters, &child);
  int into = 3;
  if (stream == nullptr) into = 0;
  else if (stream == cudaStreamTailLaunch) into = 1;
  else if (stream == cudaStreamFireAndForget) into = 2;
  unsigned long long* kinds[4] = {&state().counts.null_stream, &state().counts.tail_launch,
                                  &state().counts.fire_and_forget, &state().counts.named_stream};
  count(*kinds[into]);
  if (into == 3 && destroyed(stream)) count(state().counts.into_destroyed);
  if (edge != nullptr) {
    count(edge->grids);
    count(edge->into[into]);
  }
  const long long fail = state().control.fail_launch;
  if (fail >= 0 && static_cast<unsigned long long>(fail) == index) {
    count(state().counts.launches_injected);
    count(state().counts.launches_failed);
    if (edge != nullptr) count(edge->failed);
    owe_error();
    return cudaErrorLaunchPendingCountExceeded;
  }
  LaunchRecord* record = state().control.record_grids != 0 ? record_launch(child, parameters, into, stream) : nullptr;
  const cudaError_t status = cudaLaunchDeviceV2(parameters, stream);
  if (status != cudaSuccess) {
    count(state().counts.launches_failed);
    if (edge != nullptr) count(edge->failed);
    if (record != nullptr) atomicCAS(&record->taken, 0ull, 2ull);  // unless a grid of the same key took it
    return status;
  }
  // In a check the child usually starts before the launching thread's next statement: a write the
  // parent makes after the launch, which the child was never promised to see, loses its race.
  const unsigned long long delay = state().control.launch_delay_ns;
  if (delay != 0 && index < state().control.perturbed_launches) hold(delay);
  return status;
}

/// The first call of every block of the exercise's kernels (instrument_ptx): in a check, the block
/// waits a time drawn from the seed, its grid and its place in the grid, below block_delay_ns, so
/// that a race between blocks that the GPU's usual order hides (one block storing where another
/// has still to read) shows up.
extern "C" __device__ void cdplab_hook_block_start(unsigned kernel, unsigned long long key) {
  const DeviceRuntimeControl& control = state().control;
  if (control.record_grids != 0 && threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)
    record_block_start(kernel, key);
  const unsigned long long most = control.block_delay_ns;
  if (most == 0 || *static_cast<volatile unsigned long long*>(&state().counts.launches) >= control.perturbed_launches) return;
  unsigned long long x = control.block_seed ^ (this_grid() * 0x9e3779b97f4a7c15ull) ^ linear_block();
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;  // splitmix64's finaliser
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  hold(x % most);
}

/// Where every thread of the exercise's kernels ends (instrument_ptx): the first thread of each
/// warp that ends together records the time as its grid's end, if later than the one recorded.
extern "C" __device__ void cdplab_hook_block_end() {
  if (state().control.record_grids == 0) return;
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  if (lane != static_cast<unsigned>(__ffs(__activemask()) - 1)) return;
  if (GridRecord* grid = grid_record(false)) atomicMax(&grid->end, global_time_ns());
}

extern "C" __device__ cudaError_t cdplab_hook_GetLastError() {
  count(state().counts.error_reads);
  const cudaError_t owed = owed_error(true);
  const cudaError_t real = cudaGetLastError();
  return owed != cudaSuccess ? owed : real;
}

extern "C" __device__ cudaError_t cdplab_hook_PeekAtLastError() {
  count(state().counts.error_reads);
  const cudaError_t owed = owed_error(false);
  const cudaError_t real = cudaPeekAtLastError();
  return owed != cudaSuccess ? owed : real;
}

extern "C" __device__ cudaError_t cdplab_hook_StreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  const cudaError_t status = cudaStreamCreateWithFlags(stream, flags);
  if (status == cudaSuccess) {
    count(state().counts.streams_created);
    forget_destroyed(*stream);
  }
  return status;
}

extern "C" __device__ cudaError_t cdplab_hook_StreamDestroy(cudaStream_t stream) {
  // Remembered before the real destroy: once that returns, another thread's create may hand out the
  // same handle, and its forget_destroyed must find it already here.
  const bool added = remember_destroyed(stream);
  __threadfence();
  const cudaError_t status = cudaStreamDestroy(stream);
  if (status == cudaSuccess) count(state().counts.streams_destroyed);
  else if (added) forget_destroyed(stream);  // not destroyed after all (a second destroy keeps the first's record)
  return status;
}

namespace {

/// Whether this allocation request is the one the host armed to fail.
__device__ bool allocation_fails() {
  const unsigned long long index = atomicAdd(&state().counts.heap_requests, 1ull);
  const long long fail = state().control.fail_allocation;
  if (fail < 0 || static_cast<unsigned long long>(fail) != index) return false;
  count(state().counts.heap_injected);
  return true;
}

}  // namespace

extern "C" __device__ cudaError_t cdplab_hook_Malloc(void** pointer, size_t bytes) {
  if (allocation_fails()) {
    *pointer = nullptr;
    return cudaErrorMemoryAllocation;
  }
  const cudaError_t status = cudaMalloc(pointer, bytes);
  if (status == cudaSuccess && *pointer != nullptr) count(state().counts.heap_cuda_mallocs);
  return status;
}

extern "C" __device__ cudaError_t cdplab_hook_Free(void* pointer) {
  const cudaError_t status = cudaFree(pointer);
  if (status == cudaSuccess && pointer != nullptr) count(state().counts.heap_cuda_frees);  // cudaFree(nullptr) frees nothing
  return status;
}

extern "C" __device__ cudaError_t cdplab_hook_EventRecord(cudaEvent_t event, cudaStream_t stream) {
  count(state().counts.events_recorded);
  return cudaEventRecord(event, stream);
}

extern "C" __device__ cudaError_t cdplab_hook_EventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                                                   unsigned flags) {
  count(state().counts.events_recorded);
  return cudaEventRecordWithFlags(event, stream, flags);
}

extern "C" __device__ void* cdplab_hook_malloc(size_t bytes) {
  if (allocation_fails()) return nullptr;
  void* memory = malloc(bytes);
  if (memory != nullptr) count(state().counts.heap_mallocs);
  return memory;
}

/// __nv_aligned_device_malloc, which nvcc writes as a call of __cuda_syscall_aligned_malloc.
extern "C" __device__ void* cdplab_hook_aligned_malloc(size_t bytes, size_t alignment) {
  if (allocation_fails()) return nullptr;
  void* memory = __nv_aligned_device_malloc(bytes, alignment);
  if (memory != nullptr) count(state().counts.heap_mallocs);
  return memory;
}

extern "C" __device__ void cdplab_hook_free(void* memory) {
  if (memory != nullptr) count(state().counts.heap_frees);
  free(memory);
}
