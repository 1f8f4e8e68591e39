/// @file device_array.h
/// @brief A typed, owning array in GPU global memory (cudaMalloc/cudaFree), with copies
///        to and from std::vector. Global memory is the memory a parent may hand to a child.
///
/// Behind its elements every array keeps a guard zone of kGuardBytes bytes filled with
/// kGuardByte; download() checks it and throws OutOfBoundsWrite when a kernel wrote past the
/// end (the classic `i <= n`). Without it, such a write lands in the allocation's padding and
/// nothing shows it.
#pragma once

#include "cdplab/check.h"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cdplab {

/// A kernel wrote past the end of a DeviceArray: its guard zone changed.
class OutOfBoundsWrite : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The bytes of guard zone behind every DeviceArray's elements.
inline constexpr std::size_t kGuardBytes = 256;
/// The value each guard byte holds until something writes past the array's end.
inline constexpr unsigned char kGuardByte = 0xFD;

/// Owns `size()` elements of T in global memory; moves, never copies.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  /// Allocates `count` elements, zero-filled, and the guard zone behind them.
  explicit DeviceArray(std::size_t count) : size_(count) {
    if (count > 0) {
      CDPLAB_CHECK(cudaMalloc(&data_, count * sizeof(T) + kGuardBytes));
      CDPLAB_CHECK(cudaMemset(data_, 0, count * sizeof(T)));
      CDPLAB_CHECK(cudaMemset(guard(), kGuardByte, kGuardBytes));
    }
  }
  /// Allocates and uploads a copy of `host`.
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { upload(host); }
  ~DeviceArray() {
    if (data_ != nullptr) cudaFree(data_);  // no throw from a destructor
  }
  /// Takes over `other`'s memory; `other` is left empty.
  DeviceArray(DeviceArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  /// Swaps memory with `other` (which frees this array's old memory when it is destroyed).
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  /// The device pointer (nullptr when empty).
  T* data() const { return data_; }
  /// The number of elements.
  std::size_t size() const { return size_; }

  /// Copies `host` (same size) into the array.
  void upload(const std::vector<T>& host) {
    if (host.size() != size_) throw std::invalid_argument("DeviceArray::upload: size mismatch");
    if (size_ > 0) CDPLAB_CHECK(cudaMemcpy(data_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  /// Copies the array to a new host vector. Throws OutOfBoundsWrite when the guard zone
  /// behind the elements was written.
  std::vector<T> download() const {
    std::vector<T> host(size_);
    if (size_ > 0) {
      CDPLAB_CHECK(cudaMemcpy(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost));
      check_guard();
    }
    return host;
  }

  /// Throws OutOfBoundsWrite when a kernel wrote into the guard zone behind the elements.
  void check_guard() const {
    if (size_ == 0) return;
    unsigned char bytes[kGuardBytes];
    CDPLAB_CHECK(cudaMemcpy(bytes, guard(), kGuardBytes, cudaMemcpyDeviceToHost));
    for (std::size_t b = 0; b < kGuardBytes; ++b) {
      if (bytes[b] != kGuardByte) {
        throw OutOfBoundsWrite("a kernel wrote past the end of an array of " + std::to_string(size_) +
                               " elements of " + std::to_string(sizeof(T)) + " bytes (byte " + std::to_string(b) +
                               " after the last element changed): check the bounds test of every write (i < n, not i <= n)");
      }
    }
  }

 private:
  void* guard() const { return reinterpret_cast<unsigned char*>(data_) + size_ * sizeof(T); }

  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace cdplab
