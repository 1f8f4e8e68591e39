/// @file radix_sort.h
/// @brief CUB's radix sort of ints, without dynamic parallelism: the baseline of the fast
///        quicksort's speed check (grader/harness/speed.h) and the benchmark's yardstick.
#pragma once

#include <cstddef>

namespace cdplab::support::streams {

/// CUB's radix sort of `n` ints from `in` into `out` (GPU memory); its temporary storage is
/// allocated once, in the constructor.
class CubRadixSort {
 public:
  CubRadixSort(const int* in, int* out, std::size_t n);
  ~CubRadixSort();
  CubRadixSort(const CubRadixSort&) = delete;
  CubRadixSort& operator=(const CubRadixSort&) = delete;

  /// Sorts on the NULL stream; does not wait.
  void sort();

 private:
  const int* in_;
  int* out_;
  std::size_t n_;
  void* temp_ = nullptr;
  std::size_t temp_bytes_ = 0;
};

}  // namespace cdplab::support::streams
