#include "frames.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace cdplab::harness::host_parts {
namespace {

/// Reads exactly `size` bytes by `deadline`; the status says why not.
Frame::Status read_exact(int fd, char* out, std::size_t size, std::chrono::steady_clock::time_point deadline,
                         bool forever) {
  std::size_t done = 0;
  while (done < size) {
    int wait = -1;
    if (!forever) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return Frame::Status::timed_out;
      wait = static_cast<int>(left.count());
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, wait);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Frame::Status::broken;
    if (ready == 0) return Frame::Status::timed_out;
    const ssize_t got = ::read(fd, out + done, size - done);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got < 0) return Frame::Status::broken;
    if (got == 0) return Frame::Status::closed;  // every writer closed its end
    done += static_cast<std::size_t>(got);
  }
  return Frame::Status::ok;
}

}  // namespace

bool write_frame(int fd, const std::string& bytes) {
  const std::uint64_t size = bytes.size();
  std::string out(reinterpret_cast<const char*>(&size), sizeof size);
  out += bytes;
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t wrote = ::write(fd, out.data() + done, out.size() - done);
    if (wrote < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (wrote <= 0) return false;
    done += static_cast<std::size_t>(wrote);
  }
  return true;
}

Frame read_frame(int fd, int timeout_ms, std::uint64_t most_bytes) {
  const bool forever = timeout_ms < 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(forever ? 0 : timeout_ms);
  Frame frame;
  std::uint64_t size = 0;
  frame.status = read_exact(fd, reinterpret_cast<char*>(&size), sizeof size, deadline, forever);
  if (frame.status != Frame::Status::ok) return frame;
  if (size > most_bytes) {
    frame.status = Frame::Status::too_long;
    return frame;
  }
  frame.bytes.resize(size);
  frame.status = read_exact(fd, frame.bytes.data(), frame.bytes.size(), deadline, forever);
  if (frame.status == Frame::Status::closed) frame.status = Frame::Status::broken;  // cut off in the middle
  return frame;
}

}  // namespace cdplab::harness::host_parts
