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
/// The suite's process times both sides itself, each a warm-up and several timed runs: first the
/// baseline, in a child process of the suite's own executable (`--speed-workload NAME
/// --baseline`, on the same GPUs), so that nothing the exercise left on the GPU or in the process
/// slows it down; then the exercise, in the process itself. The best times are compared (other
/// work on the GPU only ever adds time). Each side judges the output of its first timed run: the
/// checks of the suite judge correctness, the speed check only makes sure that what it timed is
/// right. Under `cdplab grade` that process is the grader's own build, which runs the workbook's
/// host code with the student's device code loaded into it (device_code.h): the grader's own
/// process times the student's kernels and the baseline, and compares them; nothing of the
/// student's process is involved (host parts the timed call reaches only answer its calls, from
/// a process of their own: host_parts.h).
///
/// A class (`cdplab grade` over a class folder) times each baseline once per GPU. With
/// CDPLAB_BASELINE_CACHE naming a folder (the grading's own), a speed check reads the baseline's
/// times from it when they are there, under the workload's name and the GPUs the process sees
/// (CUDA_VISIBLE_DEVICES, "all" when it is not set); otherwise it times the baseline as above and
/// stores its times there (a baseline that failed to time is not stored: the next check that
/// needs it times it again, and says why it fails). Every later submission on that GPU is
/// compared with them: the baseline takes the GPU alone once per class instead of once per
/// submission, and the ratio compares times taken minutes apart on the same GPU, not seconds apart.
///
/// The grader times a GPU's baselines before it needs them, while submissions build and the GPU
/// is idle: it runs a suite executable with `--time-baselines` and CDPLAB_BASELINE_CACHE, which
/// times every baseline of its suite that the cache does not hold yet (run_time_baselines_mode).
/// One submission graded alone gets a cache of its own for that.
///
/// A suite process that must not time anything (CDPLAB_BASELINE_CACHE_ONLY=1 beside the cache:
/// the grader runs it beside other work on the GPU) reads every baseline from the cache; when a
/// speed check finds its baseline missing, the process ends at once, before that check times
/// anything, with exit status kBaselineNotCached, and the grader runs it again with the GPU alone,
/// where it times the baseline and keeps it for the class.
#pragma once

#include "cdplab/random.h"

#include <string>
#include <vector>

namespace cdplab::harness {

/// The exit status of a suite process run with CDPLAB_BASELINE_CACHE_ONLY that found a baseline
/// missing from the cache (the grader's grade.cpp knows it by the same value).
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
/// their ratio either way. The baseline's times come from the cache when there is one (see above).
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

/// The `--time-baselines` mode of a suite executable with a cache (CDPLAB_BASELINE_CACHE): times
/// every baseline the suite registers that the cache does not hold yet and keeps its times there.
/// Prints "baseline-ready <name>" for each, or "speed-error <name>: <why>"; returns 0 when every
/// one is ready, 1 otherwise, 2 without a cache.
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
