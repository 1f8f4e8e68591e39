/// @file streams.h
/// @brief Chapter 05 (streams and pools): the entry points of the five programming exercises,
///        the child kernel exercise a launches, and the grader-side kernels exercise b launches.
///
/// A block's launches into the NULL stream run one after the other; named non-blocking streams
/// and cudaStreamFireAndForget let them run side by side. Every launch that has not finished
/// holds an entry of the pending launch pool (2048 by default); in CDP2 a launch that finds the
/// pool full fails with cudaErrorLaunchPendingCountExceeded (69) instead of slowing down.
#pragma once

#include "cdplab/device_array.h"
#include "cdplab/timeline.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

namespace cdplab::streams {

/// How each parent thread of exercise a launches its child.
enum class LaunchStrategy : int {
  null_stream = 0,      ///< the default (NULL) stream: `child<<<g, b>>>`
  named_streams = 1,    ///< a cudaStreamNonBlocking stream the thread creates (and destroys)
  fire_and_forget = 2,  ///< cudaStreamFireAndForget
};

/// The strategy's name as the lesson writes it ("null stream", ...).
const char* to_string(LaunchStrategy strategy);

/// Exercise a (concurrency.cu): a parent grid of `blocks` x `threads` threads; every thread
/// launches concurrency_child (below, given in the exercise file) once, into the stream
/// `strategy` names, with the slot blockIdx.x * blockDim.x + threadIdx.x. Each child works about
/// `child_ns` nanoseconds. Returns one span per parent thread, as the children measured them
/// (group: its block, lane: its thread). The grader judges the run from its own record of when
/// each child grid ran, not from these.
std::vector<timeline::Span> launch_timed_children(LaunchStrategy strategy, unsigned blocks, unsigned threads,
                                                  unsigned child_ns);

/// What one run of exercise b did.
struct PoolRun {
  unsigned children = 0;           ///< children the workload asked for
  unsigned children_ran = 0;       ///< children that ran (each marks its own slot)
  unsigned launch_failures = 0;    ///< launches the parent reported as failed
  int first_error = 0;             ///< the cudaError_t of the first failed launch (0: none)
  bool children_gave_up = false;   ///< some child stopped waiting for the launch reports
  std::size_t pool_limit = 0;      ///< cudaLimitDevRuntimePendingLaunchCount during the run
};

/// Exercise b (pools.cu): sizes the pending launch pool from the workload, then a parent of
/// `children` threads launches one grader::held_child each and reports every launch's result
/// with grader::report_launch. The children wait until every launch has been reported, so all
/// of them are pending at the same time.
PoolRun launch_many_children(unsigned children);

/// Exercise c (quicksort.cu): the deepest recursion level a grid of the sort may reach (the
/// first grid is level 0). At this level a range is sorted in place by one block, however long.
constexpr int kQuicksortMaxDepth = 16;
/// Exercise c: ranges of at most this many elements are sorted by one block in shared memory.
constexpr unsigned kBlockSortSize = 1024;

/// What one run of exercise c did.
struct SortRun {
  std::vector<int> sorted;  ///< the data, sorted ascending
  int max_depth = 0;        ///< the deepest recursion level a grid reached
  unsigned grids = 0;       ///< how many grids the sort ran, the first one included
};

/// Exercise c: quicksort with dynamic parallelism. A grid partitions its range around a pivot
/// and launches the left and right parts as children, each in its own cudaStreamNonBlocking
/// stream; ranges of at most kBlockSortSize elements, and every range at depth
/// kQuicksortMaxDepth, are sorted by one block instead.
SortRun quicksort(const std::vector<int>& data);

/// Exercise fast-quicksort (fast_quicksort.cu): ranges of at most this many values are sorted by
/// one block, without a further partition. Chosen by measurement on an H100: from 8192 to 32768
/// the sort of 10 million ints took 2.7 ms down to 1.6 ms, each partition level saved being
/// launches saved; beyond it 1 million ints get too few ranges to fill the GPU.
constexpr unsigned kFastSortBlockMax = 32768;
/// Exercise fast-quicksort: the deepest partition level (the whole array is level 0). A range
/// still longer than kFastSortBlockMax at this level is sorted by one block however long it is.
/// 2^10 ranges give each of an H100's 132 SMs several to sort; deeper levels cost more in
/// launches than they save (measured: 16.6 ms instead of 10.5 ms for 100 million ints at 12).
constexpr int kFastSortMaxDepth = 10;
/// Exercise fast-quicksort: the longest input it sorts (indices and counts are 32-bit unsigned).
constexpr std::size_t kFastSortMaxValues = std::size_t{1} << 31;

/// What the grids of one fast sort recorded (in global memory; read with last_stats()).
struct FastSortStats {
  unsigned partitions;   ///< partition grids that ran: one per range partitioned
  unsigned block_sorts;  ///< ranges sorted by one block
  unsigned fallbacks;    ///< of those, ranges longer than kFastSortBlockMax (the depth limit's)
  int max_depth;         ///< the deepest level a partition grid or block sort ran at
  unsigned long long memory_values;  ///< values the grids read and wrote in global memory, added up
};

/// The device memory a fast sort needs besides the data, allocated once and reused by every sort
/// of at most `capacity` values, so that allocation stays out of the sort's time.
struct FastSortWorkspace {
  /// Allocates for sorts of up to `capacity` values (about 4 bytes per value).
  explicit FastSortWorkspace(std::size_t capacity);

  std::size_t capacity = 0;             ///< the most values one sort may hold
  DeviceArray<int> scratch;             ///< `capacity` values: the other side of every partition
  DeviceArray<unsigned long long> counts;  ///< one slot per partition in flight: its two counts
  DeviceArray<FastSortStats> stats;     ///< what the last sort recorded

  /// Downloads what the last sort recorded.
  FastSortStats last_stats() const { return stats.download().front(); }
};

/// Exercise fast-quicksort, the device-resident entry point: sorts data[0 .. n) (global memory)
/// ascending in place and returns once the device is synchronised; n <= workspace.capacity. A
/// range is partitioned by a grid sized to it, three ways (below, equal to, above the pivot),
/// into the workspace's scratch and back; a kernel tail-launched by the partition grid launches
/// the two halves, each into a stream of its own, without a round trip to the host. Throws
/// DeviceLaunchError when a device-side launch failed.
void fast_quicksort_device(int* data, std::size_t n, FastSortWorkspace& workspace);

/// What one host-side fast sort returns.
struct FastSortRun {
  std::vector<int> sorted;  ///< the data, sorted ascending
  FastSortStats stats{};    ///< what the grids recorded
};

/// Exercise fast-quicksort, for host data: uploads, sorts with fast_quicksort_device, downloads.
FastSortRun fast_quicksort(const std::vector<int>& data);

/// Exercise d (aggregation.cu): who launches the child grids that expand the items.
enum class Aggregation : int {
  per_thread = 0,  ///< every parent thread launches a child for its own item (given)
  per_warp = 1,    ///< lane 0 of every warp launches one child for the warp's items
  per_block = 2,   ///< thread 0 of every block launches one child for the block's items
};

/// The aggregation's name as the lesson writes it ("per thread", ...).
const char* to_string(Aggregation aggregation);

/// Exercise d: the most outputs one item may have.
constexpr unsigned kMaxOutputsPerItem = 64;

/// What one run of exercise d produced.
struct ExpandRun {
  std::vector<float> out;   ///< kMaxOutputsPerItem slots per item
  unsigned child_grids = 0; ///< child grids launched (each child grid counts itself once)
};

/// Exercise d: item i has counts[i] <= kMaxOutputsPerItem outputs. The parent (one thread per
/// item, 256 per block) launches children as `how` says; the children write
/// out[i * kMaxOutputsPerItem + k] = values[i] * (k + 1) for every k < counts[i], and nothing else
/// (the other slots stay 0).
ExpandRun expand_items(const std::vector<unsigned>& counts, const std::vector<float>& values, Aggregation how);

}  // namespace cdplab::streams

#ifdef __CUDACC__  // kernel declarations mean something to device code only
namespace cdplab::streams {

/// Exercise a: the threads of one concurrency_child grid (launch it as
/// `<<<1, kConcurrencyChildThreads>>>`).
constexpr unsigned kConcurrencyChildThreads = 32;

/// Exercise a, the child (given in concurrency.cu): records its start in spans[slot].start_ns,
/// works about `work_ns` nanoseconds, records its end in spans[slot].end_ns.
__global__ void concurrency_child(timeline::Span* spans, unsigned slot, unsigned work_ns);

}  // namespace cdplab::streams

namespace cdplab::streams::grader {

/// Exercise b: what the parent reports and the children wait for (the grader allocates it).
struct LaunchBoard {
  unsigned expected;    ///< launches the parent will make
  unsigned reported;    ///< launches reported so far, failed or not
  unsigned failed;      ///< launches that failed
  int first_error;      ///< the error of the first failed launch
  unsigned gave_up;     ///< children that stopped waiting (reports missing)
  unsigned* ran;        ///< one flag per child: set when child `slot` ran
};

/// Exercise b, device side: the parent calls it right after each launch with that launch's
/// result (`cudaGetLastError()`).
__device__ void report_launch(LaunchBoard* board, cudaError_t result);

/// Exercise b, the grader's child (launch it as `<<<1, 32>>>`): waits until every launch of
/// the parent has been reported (or about half a second has passed: then it gives up), then
/// marks board->ran[slot].
__global__ void held_child(LaunchBoard* board, unsigned slot);

}  // namespace cdplab::streams::grader
#endif
