// CUB's radix sort of ints: the fast quicksort's speed baseline (radix_sort.h).
#include "radix_sort.h"

#include "cdplab/check.h"

#include <cub/device/device_radix_sort.cuh>

namespace cdplab::support::streams {

CubRadixSort::CubRadixSort(const int* in, int* out, std::size_t n) : in_(in), out_(out), n_(n) {
  CDPLAB_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes_, in_, out_, n_));
  CDPLAB_CHECK(cudaMalloc(&temp_, temp_bytes_ > 0 ? temp_bytes_ : 1));
}

CubRadixSort::~CubRadixSort() { cudaFree(temp_); }

void CubRadixSort::sort() { CDPLAB_CHECK(cub::DeviceRadixSort::SortKeys(temp_, temp_bytes_, in_, out_, n_)); }

}  // namespace cdplab::support::streams
