/// @file device_array.h
/// @brief A typed, owning array in GPU global memory (cudaMalloc/cudaFree), with copies
///        to and from std::vector. Global memory is the memory a parent may hand to a child.
#pragma once

#include "cdplab/check.h"

#include <cstddef>
#include <utility>
#include <vector>

namespace cdplab {

/// Owns `size()` elements of T in global memory; moves, never copies.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  /// Allocates `count` elements, zero-filled.
  explicit DeviceArray(std::size_t count) : size_(count) {
    if (count > 0) {
      CDPLAB_CHECK(cudaMalloc(&data_, count * sizeof(T)));
      CDPLAB_CHECK(cudaMemset(data_, 0, count * sizeof(T)));
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
  /// Copies the array to a new host vector.
  std::vector<T> download() const {
    std::vector<T> host(size_);
    if (size_ > 0) CDPLAB_CHECK(cudaMemcpy(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace cdplab
