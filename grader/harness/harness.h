/// @file harness.h
/// @brief What an exercise test suite uses: GPU checks, the run's seed, per-check inputs.
///
/// A suite is a doctest file `grader/suites/<chapter>/<stem>_test.cpp`. Each GPU_CHECK is one
/// graded check; its name is the one chapter.toml gives points to. The harness supplies main():
/// it skips GPU checks (reporting them skipped, never passed) when no GPU is present, stops a
/// check that hangs, and records every result for the cdplab command line.
///
/// A check makes its inputs with check_rng(), calls the exercise and judges the results with the
/// CPU oracles. Under `cdplab grade` the suite process is the grader's own build: it runs the
/// workbook's host code with the student's device code loaded into it (device_code/device_code.h)
/// and the student's host parts called in a process of their own (host_parts/host_parts.h), so
/// every output it judges is one it read back itself.
#pragma once

#include "device_code.h"
#include "fault_injection.h"
#include "launch_count.h"
#include "lifetimes.h"

#include "cdplab/random.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

/// A graded check that needs a GPU. Use like TEST_CASE: GPU_CHECK("name") { ... }
#define GPU_CHECK(name) TEST_CASE(name * doctest::test_suite("gpu"))

/// Marks a suite whose checks time the GPU (timelines, children that wait for each other a
/// bounded time): the build has them run with the GPU to themselves, never beside other checks
/// (the grader runs them in one process per suite, one suite at a time, and what does not pass
/// there again one process per check). Write it once at namespace scope. Speed checks (speed.h)
/// are marked so on their own, and always get a process of their own.
#define CDPLAB_SUITE_RUNS_ALONE static_assert(true, "checks of this suite run alone")

/// Marks a suite whose checks judge when the exercise's grids ran from the grader's own record of
/// them (device_code/device_code.h: check_grid_timeline): every check of it records its grids, in
/// every run of the suite (the project's tests, a check, a grading, CDPLAB_GRID_RECORDING=off
/// too), not only where a grading lists the check. Write it once at namespace scope.
#define CDPLAB_SUITE_RECORDS_GRIDS \
  static const bool cdplab_suite_records_grids = ::cdplab::harness::record_every_check_of_this_suite()

namespace cdplab::harness {

/// The seed practice runs use when CDPLAB_SEED is not set.
constexpr std::uint64_t kPracticeSeed = 20260101;

/// The seed of this run: CDPLAB_SEED when set (the grader passes a fresh one), else kPracticeSeed.
std::uint64_t run_seed();

/// Advice added to the feedback if the running check hangs and is stopped: what a hang most
/// likely means for this check (call it before the exercise's entry point).
void advise_on_hang(const std::string& advice);

/// Whether the suite runs under compute-sanitizer (the grader's sanitizer stage sets
/// CDPLAB_UNDER_SANITIZER=1). The tools slow kernels down many times: timings mean nothing there,
/// and the largest inputs take minutes. Such checks skip themselves there, or use smaller inputs;
/// the run only looks for the tools' findings, the checks are graded without them.
bool under_sanitizer();

/// Under compute-sanitizer, reports the running check skipped because of `why` and returns true
/// (return from the check then); otherwise returns false.
bool skip_under_sanitizer(const std::string& why);

/// `n` in the graded run, a tenth of it under compute-sanitizer: the size of an input whose
/// device-side allocations (one per item) memcheck's device-heap checking can take minutes over.
/// Measured on an H100 (CUDA 13.0): 10,000 and 1,500 such allocations of seed-dependent sizes
/// ran past 60 s under memcheck with some seeds and took a few seconds with others; 1,000 took
/// 3 to 4 s with every seed tried.
int tenth_under_sanitizer(int n);

/// Runs `release`, the exercise's own function that frees what the check made it allocate (device-
/// heap buffers, say), once the check has judged the output, so that the check's heap balance
/// (lifetimes.h) and compute-sanitizer's leak check see them freed. A release the student has not
/// written yet, or one that fails, is ignored here and the check's heap balance is not judged: the
/// exercise's own check of the release reports it. A release that runs and frees too little
/// leaves the balance uneven, and the check fails. (A release that corrupts memory may still spoil
/// a later input of the same check.)
template <class Release>
void release_after_check(Release&& release) noexcept {
  try {
    release();
  } catch (...) {
    skip_heap_lifetime();
  }
}

/// A generator for the running check: depends on the run's seed and the check's name, so a
/// check sees the same input whatever other checks ran before it.
Random check_rng();

}  // namespace cdplab::harness
