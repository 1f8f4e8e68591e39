#include "grading/gpu_turns.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace cdplab::grading {
namespace {

void lock_file(int fd, int operation) {
  if (fd < 0) return;
  while (flock(fd, operation) != 0 && errno == EINTR) {
  }
}

}  // namespace

GpuTurns::~GpuTurns() {
  if (turn_fd_ >= 0) close(turn_fd_);
  if (gate_fd_ >= 0) close(gate_fd_);
}

GpuTurns::GpuTurns(GpuTurns&& other) noexcept
    : sharing_(other.sharing_), waiting_to_share_(other.waiting_to_share_), waiting_alone_(other.waiting_alone_),
      alone_(other.alone_), turn_fd_(std::exchange(other.turn_fd_, -1)), gate_fd_(std::exchange(other.gate_fd_, -1)) {}

void GpuTurns::set_lock_file(const std::filesystem::path& file) {
  const auto open_lock = [](const std::filesystem::path& path) {
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) throw std::runtime_error("cannot open the GPU's lock file " + path.string() + ": " + std::strerror(errno));
    return fd;
  };
  std::lock_guard<std::mutex> lock(mutex_);
  if (turn_fd_ >= 0) close(turn_fd_);
  if (gate_fd_ >= 0) close(gate_fd_);
  turn_fd_ = open_lock(file);
  gate_fd_ = open_lock(file.string() + ".gate");
}

// The other processes' turns are taken under the mutex by the first sharer, or the one that
// has the GPU alone, of this process: no other turn of this process is held meanwhile.
void GpuTurns::share() {
  std::unique_lock<std::mutex> lock(mutex_);
  ++waiting_to_share_;
  changed_.wait(lock, [&] { return !alone_ && waiting_alone_ == 0; });
  --waiting_to_share_;
  if (sharing_ == 0 && turn_fd_ >= 0) {
    lock_file(gate_fd_, LOCK_SH);  // waits while another process waits for the GPU alone
    lock_file(turn_fd_, LOCK_SH);
    lock_file(gate_fd_, LOCK_UN);
  }
  ++sharing_;
}

void GpuTurns::end_share() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --sharing_;
    if (sharing_ == 0) lock_file(turn_fd_, LOCK_UN);
  }
  changed_.notify_all();
}

void GpuTurns::take_alone() {
  std::unique_lock<std::mutex> lock(mutex_);
  ++waiting_alone_;
  changed_.wait(lock, [&] { return !alone_ && sharing_ == 0; });
  --waiting_alone_;
  if (turn_fd_ >= 0) {
    lock_file(gate_fd_, LOCK_EX);  // new shared turns of other processes wait from here on
    lock_file(turn_fd_, LOCK_EX);
    lock_file(gate_fd_, LOCK_UN);
  }
  alone_ = true;
}

void GpuTurns::end_alone() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    alone_ = false;
    lock_file(turn_fd_, LOCK_UN);
  }
  changed_.notify_all();
}

int GpuTurns::waiting_to_share() {
  std::lock_guard<std::mutex> lock(mutex_);
  return waiting_to_share_;
}

int GpuTurns::waiting_alone() {
  std::lock_guard<std::mutex> lock(mutex_);
  return waiting_alone_;
}

}  // namespace cdplab::grading
