/// @file file_lock.h
/// @brief Lock files (flock) held while an object lives: the remote server's slots and queues,
///        and one `cdplab check` at a time per project.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <vector>

namespace cdplab::files {

/// A lock file held (flock, exclusive) while it lives; closing it releases the lock.
class HeldLock {
 public:
  HeldLock() = default;
  HeldLock(int fd, std::size_t index) : fd_(fd), index_(index) {}
  HeldLock(HeldLock&& other) noexcept;
  HeldLock& operator=(HeldLock&& other) noexcept;
  HeldLock(const HeldLock&) = delete;
  HeldLock& operator=(const HeldLock&) = delete;
  ~HeldLock();
  bool held() const { return fd_ >= 0; }
  /// Which of the files asked for is held.
  std::size_t index() const { return index_; }

 private:
  int fd_ = -1;
  std::size_t index_ = 0;
};

/// One of `files` locked without waiting (each created if missing); an empty HeldLock when every
/// one is held by another process. Throws where a file cannot be opened or locked at all (a file
/// system without locks).
HeldLock try_any(const std::vector<std::filesystem::path>& files);

/// Waits for one of `files`, asking `stop` every 200 ms; an empty HeldLock when it said stop.
/// `on_first_wait` is called once, when the first try finds them all held.
HeldLock wait_for_any(const std::vector<std::filesystem::path>& files, const std::function<bool()>& stop,
                      const std::function<void()>& on_first_wait);

}  // namespace cdplab::files
