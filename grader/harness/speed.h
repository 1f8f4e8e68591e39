/// @file speed.h
/// @brief Graded speed checks: an exercise timed beside a baseline that ships with the grader, in
///        the same run, on the same GPU and the same input.
///
/// A speed workload is a function that runs the exercise on device-resident data made from a
/// generator, times that call alone with CUDA events and returns the milliseconds; when asked to
/// judge, it also checks the output (a wrong one throws). Its baseline solves the same input, made
/// from the same generator, with code of the grader's that uses no dynamic parallelism (CUB's
/// radix sort, a flat kernel balanced by a scan, a sort-based build): a bar that every copy of the
/// workbook carries, a student release included, where the reference solutions do not ship. A
/// suite registers both under one name (CDPLAB_SPEED_WORKLOAD, CDPLAB_SPEED_BASELINE); a speed
/// check then passes when the exercise's best time is at most `max_ratio` times the baseline's.
/// The ratio is chosen from the reference solution measured against the same baseline (the
/// instructor guide's speed table): a student gets the verdict the course gives, on the same GPU.
///
/// The baseline runs in a child process of the suite's executable (`--speed-workload NAME
/// --baseline`): the baseline first, then this process times the exercise, each a warm-up and
/// several timed runs; the best times are compared (other work on the GPU only ever adds time).
/// Each side judges the output of its first timed run: the checks of the suite judge
/// correctness, the speed check only makes sure that what it timed is right.
///
/// That is direct mode (observe.h), what `cdplab check` runs. Under `cdplab grade` the two sides
/// run in different processes. The student's process (record mode) times only its own code, with
/// time_workload(), and records the times as the observed step "speed <name>"; it does not run the
/// baseline and decides nothing. The judge, which is the suite linked against the reference
/// solutions, reads those times, runs its own executable with `--speed-workload NAME --baseline`
/// (that child gets the GPU back: CUDA_VISIBLE_DEVICES is set to CDPLAB_JUDGE_GPUS, or unset when
/// that is absent, and it runs in direct mode), and compares the two as above, with the same
/// messages and note. A known limit: the student's times are still taken in the student's
/// process, which could report other times than it measured; what the judge guarantees is that
/// the comparison and the verdict are the grader's, and that the baseline is timed by the grader.
///
/// A class (`cdplab grade` over a class folder) times each baseline once per GPU: the judges
/// keep its times in a folder of the grading's own (CDPLAB_BASELINE_CACHE), and every later
/// submission on that GPU is compared with them. The baseline then takes the GPU alone once per
/// class instead of once per submission; the ratio compares times taken minutes apart on the same
/// GPU, not seconds apart.
///
/// The grader times a GPU's baselines before it needs them, while submissions build and the GPU
/// is idle: it runs a judge with `--time-baselines`, which times every baseline of its suite that
/// the cache does not hold yet (run_time_baselines_mode). One submission graded alone gets a
/// cache of its own for that.
///
/// A judge that must not time anything (CDPLAB_BASELINE_CACHE_ONLY=1: the grader runs it beside
/// other work on the GPU) reads every baseline from that folder; when one is not there yet, it
/// ends at once with exit status kBaselineNotCached, and the grader runs it again with the GPU
/// alone, where it times the baseline and keeps it for the class (a baseline that failed to time
/// before is timed there again, and its check says why it fails).
#pragma once

#include "cdplab/random.h"

#include <string>
#include <vector>

namespace cdplab::harness {

/// The exit status of a judge run with CDPLAB_BASELINE_CACHE_ONLY that found a baseline missing
/// from the class's cache (the grader's grade.cpp knows it by the same value).
inline constexpr int kBaselineNotCached = 75;

/// One timed run of a workload: input from `rng`, the exercise's device time in milliseconds.
/// With `judge`, it checks the output and throws (std::runtime_error, say) with a message when
/// it is wrong. Every run of a process gets the same generator, so a workload may make its host
/// input on the first run and keep it (a function-local static) for the others.
using TimedRun = double (*)(Random& rng, bool judge);

/// Registers a workload at static initialisation; use CDPLAB_SPEED_WORKLOAD.
struct SpeedWorkload {
  SpeedWorkload(const char* name, TimedRun run);
};

/// Registers the baseline of workload `name` at static initialisation: `run` solves the same
/// input with the grader's own code, and `what` names it in the check's message ("CUB's radix
/// sort of the same values"); use CDPLAB_SPEED_BASELINE.
struct SpeedBaseline {
  SpeedBaseline(const char* name, TimedRun run, const char* what);
};

/// Times workload `name` on this build's exercise and its baseline; the check passes when this
/// build's best time is at most `max_ratio` times the baseline's best. The message gives both and
/// their ratio either way. In record mode it only times and records this build's side; in judge
/// mode it times only the baseline (see above).
void expect_speed(const char* name, double max_ratio);

/// The times of `runs` timed runs of workload `name` (or of its baseline) in this process, after
/// `warmups` untimed ones, each with the generator speed_rng(name); the first timed run is judged.
std::vector<double> time_workload(const std::string& name, int warmups, int runs, bool baseline = false);

/// The generator of workload `name`: the same in every run and every process of one seed.
Random speed_rng(const std::string& name);

/// The `--speed-workload NAME [--baseline] [--runs N] [--warmups W]` mode of a suite executable:
/// prints "speed-ms <ms>" per timed run of the workload (or of its baseline) and returns 0, or
/// prints "speed-error <message>" and returns 1.
int run_speed_workload_mode(int argc, char** argv);

/// The `--time-baselines` mode of a judge (CDPLAB_JUDGE_DIR set) with a cache
/// (CDPLAB_BASELINE_CACHE): times every baseline the suite registers that the cache does not hold
/// yet and keeps its times there. Prints "baseline-ready <name>" for each, or
/// "speed-error <name>: <why>"; returns 0 when every one is ready, 1 otherwise, 2 without a cache.
int run_time_baselines_mode();

}  // namespace cdplab::harness

#define CDPLAB_SPEED_CONCAT_(a, b) a##b
#define CDPLAB_SPEED_CONCAT(a, b) CDPLAB_SPEED_CONCAT_(a, b)
/// Registers `function` (a TimedRun) as the speed workload `name` (at namespace scope).
#define CDPLAB_SPEED_WORKLOAD(name, function)                                                  \
  static const ::cdplab::harness::SpeedWorkload CDPLAB_SPEED_CONCAT(cdplab_speed_workload_, \
                                                                    __LINE__)(name, function)
/// Registers `function` (a TimedRun) as the baseline of workload `name`, described as `what`.
#define CDPLAB_SPEED_BASELINE(name, function, what)                                            \
  static const ::cdplab::harness::SpeedBaseline CDPLAB_SPEED_CONCAT(cdplab_speed_baseline_, \
                                                                    __LINE__)(name, function, what)
