/// @file frames.h
/// @brief Messages over a pipe: each one its length (8 bytes, the host's order), then its bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cdplab::harness::host_parts {

/// Writes one message to `fd`; false when the other end went away.
bool write_frame(int fd, const std::string& bytes);

/// Reads one message from `fd`, waiting at most `timeout_ms` for it (a negative value: for ever).
struct Frame {
  enum class Status { ok, closed, timed_out, too_long, broken } status = Status::broken;
  std::string bytes;
};
Frame read_frame(int fd, int timeout_ms, std::uint64_t most_bytes);

}  // namespace cdplab::harness::host_parts
