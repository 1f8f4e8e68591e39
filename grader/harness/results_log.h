/// @file results_log.h
/// @brief The machine-readable record of a suite run, read by the cdplab command line.
///
/// When CDPLAB_RESULTS_FILE names a file (where "{suite}" stands for the suite's name, its slashes
/// written as dots), every event is appended to it as one JSON object per
/// line, written with a single write(2) so that concurrent check processes never interleave
/// and a crash loses nothing already written:
///   {"event":"start","suite":S,"check":C,"seed":N,"device":D}
///   {"event":"end","suite":S,"check":C,"status":"passed"|"failed","seconds":T,"failures":[...],
///    "notes":[...]}
///   {"event":"skipped","suite":S,"check":C,"reason":R}
///   {"event":"stopped","suite":S,"check":C,"reason":R}   (time limit or crash)
/// Every record also carries {"pid": the process's id, "process": a number the process drew once}
/// (in the grader's box each process has a PID namespace of its own, so only "process" tells two
/// processes apart), and with CDPLAB_RESULTS_TOKEN set, {"token": that value}.
///
/// A watchdog ends a check that runs longer than CDPLAB_CHECK_SECONDS (default: the build's
/// CDPLAB_CHECK_TIMEOUT). With CDPLAB_SHARED_PROCESS=1 the checks selected share the process until
/// one does not pass or leaves the device unlike a fresh process's (device_limits.h); the process
/// then ends, and the grader runs the rest one process each.
#pragma once

#include <cstdint>
#include <string>

namespace cdplab::harness {

/// Whether the command line selected the check of that name (a --test-case filter).
using CaseSelected = bool (*)(const char* name);

class ResultsLog {
 public:
  /// Starts the log (and the watchdog and crash handlers) for one suite process. A non-empty
  /// `skip_reason` means GPU checks are skipped; those `selected` are logged as skipped.
  static void open(const std::string& suite, std::uint64_t seed, const std::string& device,
                   const std::string& skip_reason, CaseSelected selected);
  static void close();
  /// Adds advice to the "stopped" reason if the running check overruns its time limit.
  static void advise_on_hang(const std::string& advice);
  /// Reports the running check skipped for `reason` instead of passed or failed (a check that
  /// cannot run here); the check returns right after.
  static void skip_running_check(const std::string& reason);
  /// A line the running check's record carries whatever its outcome (a speed check's times).
  static void note(const std::string& text);
  /// Checks that ran (passed or failed) and checks skipped in this process.
  static int ran_count();
  static int skipped_count();
};

}  // namespace cdplab::harness
