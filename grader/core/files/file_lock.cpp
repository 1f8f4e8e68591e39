#include "files/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace cdplab::files {

HeldLock::HeldLock(HeldLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)), index_(other.index_) {}

HeldLock& HeldLock::operator=(HeldLock&& other) noexcept {
  std::swap(fd_, other.fd_);
  index_ = other.index_;
  return *this;
}

HeldLock::~HeldLock() {
  if (fd_ >= 0) close(fd_);  // closing the last descriptor releases the lock
}

HeldLock try_any(const std::vector<std::filesystem::path>& files) {
  for (std::size_t i = 0; i < files.size(); ++i) {
    const int fd = open(files[i].c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) throw std::runtime_error("cannot open " + files[i].string() + ": " + std::strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return HeldLock(fd, i);
    const int error = errno;
    close(fd);
    // Only "another process holds it" is worth waiting for: a file system that cannot lock
    // (no lock daemon on NFS, Lustre without flock) would otherwise read as held for ever.
    if (error != EWOULDBLOCK)
      throw std::runtime_error("cannot lock " + files[i].string() + ": " + std::strerror(error));
  }
  return {};
}

HeldLock wait_for_any(const std::vector<std::filesystem::path>& files, const std::function<bool()>& stop,
                      const std::function<void()>& on_first_wait) {
  bool waited = false;
  for (;;) {
    if (HeldLock lock = try_any(files); lock.held()) return lock;
    if (stop()) return {};
    if (!waited && on_first_wait) on_first_wait();
    waited = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace cdplab::files
