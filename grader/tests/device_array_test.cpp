// The kit's DeviceArray (starter/include/cdplab/device_array.h): its guard zone behind the
// elements turns a write one past the end, which would land in the allocation's padding
// unseen, into an OutOfBoundsWrite on download(). Needs a GPU; reports itself skipped without.
#include "cdplab/device_array.h"

#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <vector>

namespace {

bool cuda_device_present() {
  int count = 0;
  const bool present = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();  // leave no error behind for the next call
  return present;
}

}  // namespace

TEST_CASE("DeviceArray: a write one past the end fails the download, a write inside does not") {
  if (!cuda_device_present()) {
    MESSAGE("CDPLAB_TEST_SKIPPED: no GPU: the guard zone lives in GPU memory");
    return;
  }
  const std::vector<int> values = {1, 2, 3, 4, 5};
  cdplab::DeviceArray<int> inside(values);
  CHECK(inside.download() == values);
  CHECK_NOTHROW(inside.check_guard());

  // The last element written: still inside.
  const int last = 50;
  REQUIRE(cudaMemcpy(inside.data() + 4, &last, sizeof last, cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(inside.download().back() == 50);

  // One element past the end, as `i <= n` writes it.
  cdplab::DeviceArray<int> past(values);
  const int extra = 0;  // even a zero differs from the guard's bytes
  REQUIRE(cudaMemcpy(past.data() + values.size(), &extra, sizeof extra, cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK_THROWS_AS(past.download(), cdplab::OutOfBoundsWrite);
  CHECK_THROWS_WITH(past.check_guard(), doctest::Contains("past the end of an array of 5 elements"));

  // An empty array has no guard to break.
  cdplab::DeviceArray<int> empty(0);
  CHECK(empty.download().empty());
}
