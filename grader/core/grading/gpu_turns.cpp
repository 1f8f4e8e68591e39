#include "grading/gpu_turns.h"

namespace cdplab::grading {

void GpuTurns::share() {
  std::unique_lock<std::mutex> lock(mutex_);
  ++waiting_to_share_;
  changed_.wait(lock, [&] { return !alone_ && waiting_alone_ == 0; });
  --waiting_to_share_;
  ++sharing_;
}

void GpuTurns::end_share() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --sharing_;
  }
  changed_.notify_all();
}

void GpuTurns::take_alone() {
  std::unique_lock<std::mutex> lock(mutex_);
  ++waiting_alone_;
  changed_.wait(lock, [&] { return !alone_ && sharing_ == 0; });
  --waiting_alone_;
  alone_ = true;
}

void GpuTurns::end_alone() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    alone_ = false;
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
