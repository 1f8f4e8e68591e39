/// @file speed.h
/// @brief Graded speed checks: an exercise timed beside the reference solution, in the same run.
///
/// A speed workload is a function that runs the exercise on device-resident data made from a
/// generator, times that call alone with CUDA events and returns the milliseconds; when asked to
/// judge, it also checks the output (a wrong one throws). A suite registers it by name; a speed
/// check then compares this build's exercise with the reference solution on that workload.
///
/// The reference cannot share a process with the exercise (they define the same symbols), so
/// the build links the same suite a second time against solutions/ (the "reference twin"), and
/// the check runs the twin as a child process with `--speed-workload NAME`: the reference
/// first, then this build, each a warm-up and several timed runs on the same input; the best
/// times are compared (other work on the GPU only ever adds time). Each side judges the output
/// of its first timed run: the checks of the suite judge correctness, the speed check only
/// makes sure that what it timed is right, and judging a large output on the host takes far
/// longer than the call it timed. Without a reference twin (a student release has no
/// solutions/) the check is reported skipped, never passed.
///
/// That is direct mode (observe.h), what `cdplab check` runs. Under `cdplab grade` the two sides
/// run in different processes. The student's process (record mode) times only its own code, with
/// time_workload(), and records the times as the observed step "speed <name>"; it does not run the
/// reference and decides nothing. The judge, which is the suite linked against the reference
/// solutions, reads those times, runs its own executable with `--speed-workload NAME` to time the
/// reference (that child gets the GPU back: CUDA_VISIBLE_DEVICES is set to CDPLAB_JUDGE_GPUS, or
/// unset when that is absent, and it runs in direct mode), and compares the two as above, with the
/// same messages and note. A known limit: the student's times are still taken in the student's
/// process, which could report other times than it measured; what the judge guarantees is that
/// the comparison and the verdict are the grader's, and that the reference is timed by the grader.
#pragma once

#include "cdplab/random.h"

#include <string>
#include <vector>

namespace cdplab::harness {

/// One timed run of a workload: input from `rng`, the exercise's device time in milliseconds.
/// With `judge`, it checks the output and throws (std::runtime_error, say) with a message when
/// it is wrong. Every run of a process gets the same generator, so a workload may make its host
/// input on the first run and keep it (a function-local static) for the others.
using TimedRun = double (*)(Random& rng, bool judge);

/// Registers a workload at static initialisation; use CDPLAB_SPEED_WORKLOAD.
struct SpeedWorkload {
  SpeedWorkload(const char* name, TimedRun run);
};

/// Times workload `name` on this build's exercise and on the reference solution's; the check
/// passes when this build's best time is at most `max_ratio` times the reference's best. The
/// message gives both and their ratio either way. In record mode it only times and records this
/// build's side; in judge mode it times only the reference's (see above).
void expect_speed(const char* name, double max_ratio);

/// The times of `runs` timed runs of workload `name` in this process, after `warmups`
/// untimed ones, each with the generator speed_rng(name); the first timed run is judged.
std::vector<double> time_workload(const std::string& name, int warmups, int runs);

/// The generator of workload `name`: the same in every run and every process of one seed.
Random speed_rng(const std::string& name);

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
