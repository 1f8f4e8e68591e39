// Exercise child-grids: one child grid per parent thread.
//
// Item i owns a range of elements whose length is known only at run time: most ranges are
// short, many are empty, a few are huge. One thread per item with a loop over its range
// leaves most threads idle while a few loop for a long time. Here the thread of item i
// launches a child grid sized to its range instead, and each thread of the child handles
// one element: the loop becomes a grid.
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/launch_pool.h"
#include "cdplab/fundamentals.h"

#include <cstddef>
#include <stdexcept>
#include <string>

namespace cdplab::fundamentals {

/// Threads per block of the parent grid (one thread per item). The launches of one block
/// into the NULL stream run one after another, so small parent blocks let the children of
/// more blocks run side by side.
inline constexpr unsigned kParentThreads = 32;
/// Threads per block of every child grid (one thread per element).
inline constexpr unsigned kChildThreads = 256;

/// The child grid of item `item`: thread t of the grid handles element `begin + t` of the
/// range [begin, end); the threads of the last block that fall past `end` do nothing.
__global__ void expand_child(const float* values, float* out, unsigned begin, unsigned end, unsigned item) {
  // TODO(child-grids): compute this thread's element j from begin, blockIdx.x, blockDim.x
  // and threadIdx.x. Only if j < end, write out[j] = values[j] * 2 + item.
  CDPLAB_TODO();
}

/// The parent grid: thread i launches the child grid of item i over
/// values[offsets[i] .. offsets[i+1]).
__global__ void expand_parent(const unsigned* offsets, unsigned items, const float* values, float* out) {
  const unsigned item = blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= items) return;
  // TODO(child-grids): read this item's range [begin, end) from offsets. If it is empty,
  // launch nothing: a grid of zero blocks fails to launch. Otherwise launch expand_child
  // with enough blocks of kChildThreads threads to cover end - begin elements, and check
  // the launch with CDPLAB_CHECK_LAUNCH() on the next line.
  CDPLAB_TODO();
}

namespace {

/// Throws std::invalid_argument unless `offsets` cuts `value_count` values into ranges.
void check_offsets(const std::vector<unsigned>& offsets, std::size_t value_count) {
  const std::size_t limit = std::size_t{1} << 31;
  if (offsets.empty()) throw std::invalid_argument("expand_ranges: offsets needs items + 1 entries, found none");
  if (value_count >= limit || offsets.size() > limit) {
    throw std::invalid_argument("expand_ranges: at most 2^31 - 1 values and items");
  }
  if (offsets.front() != 0) throw std::invalid_argument("expand_ranges: offsets[0] must be 0");
  for (std::size_t i = 0; i + 1 < offsets.size(); ++i) {
    if (offsets[i] > offsets[i + 1]) {
      throw std::invalid_argument("expand_ranges: offsets decrease at item " + std::to_string(i));
    }
  }
  if (offsets.back() != value_count) {
    throw std::invalid_argument("expand_ranges: the last offset is " + std::to_string(offsets.back()) +
                                " but there are " + std::to_string(value_count) + " values");
  }
}

}  // namespace

std::vector<float> expand_ranges(const std::vector<unsigned>& offsets, const std::vector<float>& values) {
  check_offsets(offsets, values.size());
  const auto items = static_cast<unsigned>(offsets.size() - 1);
  if (items == 0) return {};
  reserve_pending_launches(items);  // at most one child per item, all pending at once (launch_pool.h)

  DeviceArray<unsigned> device_offsets(offsets);
  DeviceArray<float> device_values(values);
  DeviceArray<float> device_out(values.size());

  reset_device_report();
  const unsigned blocks = (items + kParentThreads - 1) / kParentThreads;
  expand_parent<<<blocks, kParentThreads>>>(device_offsets.data(), items, device_values.data(), device_out.data());
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());  // the parent grid and every child grid
  throw_if_device_reported();
  return device_out.download();
}

}  // namespace cdplab::fundamentals
