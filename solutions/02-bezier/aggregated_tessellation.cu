// Exercise aggregated-tessellation: one child grid per parent block, its memory claimed once.
//
// Exercises b and c pay for every line twice: a device-side launch and a device-side cudaMalloc
// (and later a cudaFree). With the course's short lines that overhead is nearly all the time
// they take: at 100 000 lines, hundreds of times what a flat kernel needs for the same vertices.
// Aggregation pays it once per parent block instead of once per line:
//  1. every thread computes its line's vertex count, and an exclusive scan over the block
//     numbers the vertices of the block's lines one after the other: line i's vertices are
//     numbers offset(i) .. offset(i) + count(i) - 1 of its block, and the scan also gives the
//     block's total;
//  2. one thread claims room for the block's total from the caller's buffer, one atomicAdd on
//     the buffer's counter: one allocation per block instead of one per line;
//  3. every thread records where its line's vertices go (count, claimed start + offset);
//  4. after a barrier, one thread launches one child grid with a thread per vertex of the block.
//     Each child thread finds its line by a binary search over the records (given).
//
// Why no device heap: a device-side cudaMalloc per block would aggregate the allocations too,
// but the heap must still be reserved for the worst case before the first kernel runs
// (exercise c), every block's buffer must be freed again by a kernel, and the host cannot copy
// from it. Handing out consecutive ranges of one buffer is all the allocator would do here: a
// counter does it with one atomic per block, the caller owns the memory (nothing to free on the
// device, cudaMemcpy can read it), and the vertices come out packed, with no gaps. Measured on an
// H100 with blocks of 256 lines, 100 000 lines: 0.86 ms with a device-side cudaMalloc per block
// (and 2.0 ms more for the kernel that freed them), 0.16 ms with the counter.
#include "cdplab/bezier.h"
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/launch_pool.h"

#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace cdplab::bezier {

/// Threads per block of every child grid, one thread per vertex.
inline constexpr unsigned kAggregatedChildThreads = 256;

/// The child grid of one parent block's lines [first, first + count), whose `total` vertices are
/// numbered one after the other from `points` (the block's claimed room): thread g writes the
/// vertex at points + g. Its line is the last line j whose vertices start at or before that
/// point: the lines' records hold ascending pointers into the block's room. The grid counts
/// itself once in *child_grids when that is not null. (Given.)
__global__ void aggregated_child(const Line* lines, const LineVertices* out, int first, int count,
                                 const Point* points, int total, unsigned* child_grids) {
  if (child_grids != nullptr && blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(child_grids, 1u);
  const int g = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (g >= total) return;
  const Point* target = points + g;
  int lo = first;          // out[lo].vertices <= target
  int hi = first + count;  // the lines from hi on start after target (or do not exist)
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    if (out[mid].vertices <= target) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  const LineVertices line = out[lo];
  const int k = static_cast<int>(target - line.vertices);
  line.vertices[k] = vertex(lines[lo], k, line.count);
}

/// The parent grid, blocks of kLinesPerAggregate threads, one per line: every block claims room
/// for its lines' vertices from `buffer`, records each line's share of it in out[i], and
/// launches one child grid for all of them.
__global__ void __launch_bounds__(kLinesPerAggregate)
    aggregated_parent(const Line* lines, LineVertices* out, int n, Tessellation t, VertexBuffer buffer,
                      unsigned* child_grids) {
  const int first = static_cast<int>(blockIdx.x) * kLinesPerAggregate;  // the block's first line
  const int i = first + static_cast<int>(threadIdx.x);
  // No early return: every thread takes part in the scan and reaches every barrier. A thread
  // past the last line counts 0 vertices.
  const int count = i < n ? vertex_count(lines[i], t) : 0;
  // BEGIN SOLUTION
  using BlockScan = cub::BlockScan<int, kLinesPerAggregate>;
  __shared__ typename BlockScan::TempStorage scan_space;
  __shared__ Point* block_points;  // the block's claimed room, or nullptr when it did not fit
  int offset = 0;                  // the vertices of the block's lines before line i
  int total = 0;                   // the vertices of all the block's lines
  BlockScan(scan_space).ExclusiveSum(count, offset, total);

  if (threadIdx.x == 0) {
    // One allocation for the block: the first `total` unclaimed points of the buffer. A claim
    // past the end fails, as a cudaMalloc on a full heap would, and the lines stay empty.
    const unsigned long long start = atomicAdd(buffer.claimed, static_cast<unsigned long long>(total));
    block_points = start + static_cast<unsigned long long>(total) <= buffer.capacity ? buffer.points + start : nullptr;
  }
  __syncthreads();
  Point* const room = block_points;  // global memory: its address may be handed to the child
  if (i < n) out[i] = room != nullptr ? LineVertices{count, room + offset} : LineVertices{0, nullptr};
  // Every record is written before thread 0 launches the child that reads them.
  __syncthreads();
  if (threadIdx.x == 0 && room != nullptr && total > 0) {
    const int lines_here = n - first < kLinesPerAggregate ? n - first : kLinesPerAggregate;
    const unsigned blocks = (static_cast<unsigned>(total) + kAggregatedChildThreads - 1) / kAggregatedChildThreads;
    aggregated_child<<<blocks, kAggregatedChildThreads, 0, cudaStreamFireAndForget>>>(lines, out, first, lines_here,
                                                                                      room, total, child_grids);
    CDPLAB_CHECK_LAUNCH();
  }
  // END SOLUTION
  //| // TODO(aggregated-tessellation): one allocation and one child grid for the block's lines.
  //| // - Scan: the exclusive sum of `count` over the block gives line i's offset (the vertices
  //| //   of the block's lines before it) and the block's total. cub::BlockScan<int,
  //| //   kLinesPerAggregate> does it (its TempStorage in __shared__ memory, then ExclusiveSum(count,
  //| //   offset, total)); chapter 05's aggregation exercise writes the same scan with shuffles.
  //| // - Claim: thread 0 takes the block's room from the buffer with one atomicAdd of total on
  //| //   buffer.claimed, which returns where the room starts. If start + total is more than
  //| //   buffer.capacity, the claim failed. It shares the room's address (or nullptr) through a
  //| //   __shared__ variable; __syncthreads().
  //| // - Record: out[i] = count and room + offset, for every thread with a line (count 0 and
  //| //   nullptr when the claim failed); __syncthreads(), so that the child sees every record.
  //| // - Launch: thread 0, when the claim succeeded and total > 0, launches aggregated_child
  //| //   with enough blocks of kAggregatedChildThreads threads for total vertices, into
  //| //   cudaStreamFireAndForget, over lines [first, first + the block's lines that exist), and
  //| //   checks the launch with CDPLAB_CHECK_LAUNCH(). The room is global memory, so its
  //| //   address may go to the child; the address of a __shared__ variable may not.
  //| CDPLAB_TODO();
}

namespace {

/// Pending launches to allow beyond one per parent block.
constexpr std::size_t kPendingLaunchMargin = 64;

/// Throws std::invalid_argument unless the arguments keep the contract of bezier.h.
void check_arguments(const Line* lines, LineVertices* out, int n, const VertexBuffer& buffer, const Tessellation& t) {
  const std::string function = "tessellate_aggregated";
  if (n < 0) throw std::invalid_argument(function + ": n must not be negative");
  if (n > 0 && (lines == nullptr || out == nullptr)) {
    throw std::invalid_argument(function + ": lines and out must point to n elements of global memory");
  }
  if (t.min_vertices < 2 || t.max_vertices < t.min_vertices) {
    throw std::invalid_argument(function + ": the tessellation needs 2 <= min_vertices <= max_vertices");
  }
  if (buffer.claimed == nullptr || (n > 0 && buffer.points == nullptr)) {
    throw std::invalid_argument(function + ": the buffer needs its points and its claimed counter in global memory");
  }
  const std::size_t worst = static_cast<std::size_t>(n) * static_cast<std::size_t>(t.max_vertices);
  if (buffer.capacity < worst) {
    throw std::invalid_argument(function + ": the buffer holds " + std::to_string(buffer.capacity) + " points, and " +
                                std::to_string(n) + " lines may need " + std::to_string(worst) +
                                " (n * t.max_vertices)");
  }
}

}  // namespace

void tessellate_aggregated(const Line* lines, LineVertices* out, int n, const VertexBuffer& buffer,
                           const Tessellation& t, unsigned* child_grids) {
  check_arguments(lines, out, n, buffer, t);
  CDPLAB_CHECK(cudaMemsetAsync(buffer.claimed, 0, sizeof *buffer.claimed));
  if (n == 0) {
    CDPLAB_CHECK(cudaDeviceSynchronize());
    return;  // a grid of zero blocks is a launch error
  }
  const unsigned blocks = (static_cast<unsigned>(n) + kLinesPerAggregate - 1) / kLinesPerAggregate;
  // One child per block, all of which may be pending at once.
  reserve_pending_launches(blocks + kPendingLaunchMargin);
  reset_device_report();
  aggregated_parent<<<blocks, kLinesPerAggregate>>>(lines, out, n, t, buffer, child_grids);
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());  // the parent grid and every child grid
  throw_if_device_reported();
}

AggregatedRun tessellate_aggregated(const std::vector<Line>& lines, const Tessellation& t) {
  if (lines.size() >= (std::size_t{1} << 31)) throw std::invalid_argument("tessellate_aggregated: at most 2^31 - 1 lines");
  const int n = static_cast<int>(lines.size());
  DeviceArray<Line> device_lines(lines);
  DeviceArray<LineVertices> out(lines.size());
  DeviceArray<Point> points(lines.size() * static_cast<std::size_t>(t.max_vertices > 0 ? t.max_vertices : 0));
  DeviceArray<unsigned long long> claimed(1);
  DeviceArray<unsigned> child_grids(1);
  const VertexBuffer buffer{points.data(), points.size(), claimed.data()};
  tessellate_aggregated(device_lines.data(), out.data(), n, buffer, t, child_grids.data());

  AggregatedRun run;
  run.child_grids = child_grids.download().front();
  const unsigned long long used = claimed.download().front();
  const std::size_t readable = used < points.size() ? static_cast<std::size_t>(used) : points.size();
  std::vector<Point> host_points(readable);
  if (readable > 0) {
    CDPLAB_CHECK(cudaMemcpy(host_points.data(), points.data(), readable * sizeof(Point), cudaMemcpyDeviceToHost));
  }
  const std::vector<LineVertices> records = out.download();
  // The records hold device addresses: compare them as numbers, never dereference them here.
  const auto base = reinterpret_cast<std::uintptr_t>(points.data());
  run.lines.resize(lines.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (records[i].vertices == nullptr || records[i].count <= 0) continue;  // an empty line
    const auto address = reinterpret_cast<std::uintptr_t>(records[i].vertices);
    const std::size_t start = (address - base) / sizeof(Point);
    if (address < base || (address - base) % sizeof(Point) != 0 ||
        start + static_cast<std::size_t>(records[i].count) > readable) {
      throw std::runtime_error("tessellate_aggregated: line " + std::to_string(i) +
                               "'s record points outside the claimed part of the vertex buffer");
    }
    const auto begin = host_points.begin() + static_cast<std::ptrdiff_t>(start);
    run.lines[i].assign(begin, begin + records[i].count);
  }
  return run;
}

}  // namespace cdplab::bezier
