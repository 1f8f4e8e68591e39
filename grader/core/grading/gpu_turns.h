/// @file gpu_turns.h
/// @brief One GPU shared by the gradings of several submissions (a class): checks that may run
///        beside other work take a shared turn, checks whose timings need the GPU to themselves
///        (speed checks, suites marked CDPLAB_SUITE_RUNS_ALONE, suites timing a baseline) take it
///        alone.
///
/// A grading waiting for the GPU alone keeps new shared turns out until it had its turn, so a
/// steady stream of shared work never starves it. A grading holds one turn at a time.
///
/// Gradings in several processes (checks sent to the course's GPU server, `cdplab serve`) share
/// the turns through a lock file per GPU (set_lock_file): a process holds it shared while any of
/// its gradings shares the GPU, and alone while one has it alone; a second file beside it (the
/// gate) keeps new shared turns of other processes out while a process waits for the GPU alone.
/// A process whose own shared turns overlap without a gap keeps its hold, so the waiting one has
/// its turn when they pause (each grading on the server holds one turn at a time: a suite's run).
#pragma once

#include <condition_variable>
#include <filesystem>
#include <mutex>

namespace cdplab::grading {

class GpuTurns {
 public:
  GpuTurns() = default;
  ~GpuTurns();
  GpuTurns(const GpuTurns&) = delete;
  GpuTurns& operator=(const GpuTurns&) = delete;
  GpuTurns(GpuTurns&& other) noexcept;

  /// Shares the turns with every process that uses `file` (made if missing, with `file`.gate
  /// beside it). Throws std::runtime_error when it cannot be opened.
  void set_lock_file(const std::filesystem::path& file);

  /// Waits until nobody has the GPU alone and nobody waits for it, then shares it.
  void share();
  void end_share();
  /// Waits until nobody else holds a turn, then has the GPU alone.
  void take_alone();
  void end_alone();

  /// How many gradings wait for a shared turn, and for an alone one: what a test waits on to
  /// order its threads by the state of the turns rather than by sleeping.
  int waiting_to_share();
  int waiting_alone();

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int sharing_ = 0;
  int waiting_to_share_ = 0;
  int waiting_alone_ = 0;
  bool alone_ = false;
  int turn_fd_ = -1;  ///< the lock file, or -1
  int gate_fd_ = -1;  ///< the gate beside it, or -1
};

/// A shared turn for one scope; nothing when `turns` is null (the GPU is this grading's own).
class SharedTurn {
 public:
  explicit SharedTurn(GpuTurns* turns) : turns_(turns) {
    if (turns_) turns_->share();
  }
  ~SharedTurn() {
    if (turns_) turns_->end_share();
  }
  SharedTurn(const SharedTurn&) = delete;
  SharedTurn& operator=(const SharedTurn&) = delete;

 private:
  GpuTurns* turns_;
};

/// The GPU alone for one scope; nothing when `turns` is null.
class AloneTurn {
 public:
  explicit AloneTurn(GpuTurns* turns) : turns_(turns) {
    if (turns_) turns_->take_alone();
  }
  ~AloneTurn() {
    if (turns_) turns_->end_alone();
  }
  AloneTurn(const AloneTurn&) = delete;
  AloneTurn& operator=(const AloneTurn&) = delete;

 private:
  GpuTurns* turns_;
};

}  // namespace cdplab::grading
