/// @file check_process.h
/// @brief One process of an exercise's checks, the one way `cdplab check` and `cdplab grade` run
///        them: which suite executable, in which box, with what environment, and, when the exercise
///        has host parts and is graded, the process of the student's host parts beside it.
///
/// Both run the grading suite (the checks linked against the workbook's host code), in the check
/// box where the tree has one (`grade`), with the student's PTX to load (CDPLAB_DEVICE_PTX) and,
/// for an exercise with host parts, a process of the student's host parts started for each check
/// process in a box of its own and joined to it by two FIFOs (CDPLAB_HOST_PARTS;
/// harness/host_parts/host_parts.h). Whatever the suite writes of its results is the grader's:
/// nothing of the student's runs in its process but device code.
#pragma once

#include "process/process.h"
#include "sandbox/sandbox.h"

#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cdplab::grading {

struct CheckProcess {
  std::string suite;                          ///< the suite executable
  std::optional<sandbox::Box> box;            ///< its box; std::nullopt: it runs as it is
  std::map<std::string, std::string> env;     ///< added to each run's environment
  std::vector<std::string> read_only;         ///< folders and files each run reads (bound into the box)
  std::vector<std::string> writable;          ///< folders each run writes (bound into the box)
  std::string host_parts;                     ///< the host parts' program; empty: the exercise has none
  std::optional<sandbox::Box> host_parts_box;  ///< its box
  /// Why the host parts could not be built: each call of one then fails with this (the suite
  /// finds it in the folder instead of the FIFOs).
  std::string host_parts_problem;
  std::filesystem::path scratch;  ///< where the FIFOs' folders are made (the grader's, outside every box)
  bool budgeted = false;          ///< runs within sandbox::check_budget() (a grading)
  /// Whether calls of host parts go to a process of their own (grading); false: the suite calls
  /// the host code it links (`cdplab check`, the student's own).
  bool calls_host_parts() const { return !host_parts.empty() || !host_parts_problem.empty(); }
};

/// The gate of a check process started ahead of its turn (CDPLAB_START_GATE: a folder of its own
/// under the grader's scratch folder, bound into the box). The suite starts up (CUDA, the device
/// code's link and load), says it is ready, and then waits, before its first check, until the
/// gate opens; once closed instead (or the folder gone) it ends without running one. Starting up
/// is most of a short check process's time: started beside other work, it is no longer spent in
/// a turn with the GPU alone.
class StartGate {
 public:
  explicit StartGate(const std::filesystem::path& scratch);
  ~StartGate();  ///< removes the folder
  StartGate(const StartGate&) = delete;
  StartGate& operator=(const StartGate&) = delete;
  /// Opens the gate; false when it could not say so (a full disk, a folder gone): the caller
  /// closes it instead, so that its process ends at once rather than at its time limit.
  bool open();
  void close();
  /// Whether the suite has started up and waits at the gate.
  bool ready() const;
  /// Seconds since open(); 0 before.
  double seconds_open() const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::atomic<double> opened_at_{0.0};
};

/// Runs `prefix` (a program to start the suite with, such as compute-sanitizer and its options;
/// empty: none), then the suite with `arguments`, with `options` (its environment added to the
/// process's own) and, for an exercise with host parts, their process beside it for as long as it
/// runs. With `gate`, the suite waits at it (StartGate) and `options.timeout_seconds` counts from
/// its opening. What the host parts printed (stdout and stderr, the last kHostPartsOutputBytes) is
/// added to `host_parts_output` when given: it goes to the student's feedback and nowhere else.
/// Never throws for the programs' own failures.
process::Result run_check_process(const CheckProcess& check, const std::vector<std::string>& prefix,
                                  const std::vector<std::string>& arguments, process::Options options,
                                  const StartGate* gate = nullptr, std::string* host_parts_output = nullptr);

/// The most of what a check's host parts printed that reaches the feedback.
inline constexpr std::size_t kHostPartsOutputBytes = 4096;

}  // namespace cdplab::grading
