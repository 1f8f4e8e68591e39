/// @file speed.h
/// @brief Graded speed checks: an exercise timed beside the reference solution, in the same run.
///
/// A speed workload is a function that makes an input from a generator, runs the exercise on
/// device-resident data, times that call alone with CUDA events, checks the output (a wrong one
/// throws) and returns the milliseconds. A suite registers it by name; a speed check then
/// compares this build's exercise with the reference solution on that workload.
///
/// The reference cannot share a process with the exercise (they define the same symbols), so
/// the build links the same suite a second time against solutions/ (the "reference twin"), and
/// the check runs the twin as a child process with `--speed-workload NAME`: the reference
/// first, then this build, each a warm-up and several timed runs on the same inputs; the best
/// times are compared (other work on the GPU only ever adds time). Without a reference twin (a student release has no solutions/) the check is
/// reported skipped, never passed.
#pragma once

#include "cdplab/random.h"

#include <string>
#include <vector>

namespace cdplab::harness {

/// One timed run of a workload: input from `rng`, the exercise's device time in milliseconds.
/// Throws (std::runtime_error, say) with a message when the output is wrong.
using TimedRun = double (*)(Random& rng);

/// Registers a workload at static initialisation; use CDPLAB_SPEED_WORKLOAD.
struct SpeedWorkload {
  SpeedWorkload(const char* name, TimedRun run);
};

/// Times workload `name` on this build's exercise and on the reference solution's; the check
/// passes when this build's best time is at most `max_ratio` times the reference's best. The
/// message gives both and their ratio either way.
void expect_speed(const char* name, double max_ratio);

/// The times of `runs` timed runs of workload `name` in this process, after `warmups`
/// untimed ones; run r (warm-ups counted) uses the generator speed_rng(name, r).
std::vector<double> time_workload(const std::string& name, int warmups, int runs);

/// The generator of run `run` of workload `name`: the same in every process of one seed.
Random speed_rng(const std::string& name, int run);

/// The `--speed-workload NAME [--runs N] [--warmups W]` mode of a suite executable: prints
/// "speed-ms <ms>" per timed run and returns 0, or prints "speed-error <message>" and returns 1.
int run_speed_workload_mode(int argc, char** argv);

}  // namespace cdplab::harness

#define CDPLAB_SPEED_CONCAT_(a, b) a##b
#define CDPLAB_SPEED_CONCAT(a, b) CDPLAB_SPEED_CONCAT_(a, b)
/// Registers `function` (a TimedRun) as the speed workload `name` (at namespace scope).
#define CDPLAB_SPEED_WORKLOAD(name, function)                                                  \
  static const ::cdplab::harness::SpeedWorkload CDPLAB_SPEED_CONCAT(cdplab_speed_workload_, \
                                                                    __LINE__)(name, function)
