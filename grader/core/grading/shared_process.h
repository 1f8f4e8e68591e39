/// @file shared_process.h
/// @brief Several checks of a suite in one process: what to ask the suite, and what it settled.
///
/// Starting a suite process costs about as much as a short check (CUDA's start-up, serialised
/// across processes by the driver: 89 checks of the references took 22 s on an H100 run eight at
/// a time, 0.25 s each). So the grader first runs each suite's checks in one process
/// (CDPLAB_SHARED_PROCESS=1). The harness ends such a process after the first check that does
/// not pass, or that leaves device limits it cannot put back (harness/device_limits.h). Every
/// check that did not pass there then runs again alone, one process per check, and that run
/// decides its outcome. When every check such a process started passed (it ended on a change of
/// limits), the checks it never started run first, beside other work, a process each, queued as
/// soon as it ends (most suites that end one early change device limits in most of their checks).
/// A check that passes in a shared process started with the device limits it would have had
/// alone; what the code under test keeps in the process itself (static variables,
/// kernel attributes) does carry over, as in any program that calls it twice. The suites that
/// need the GPU to themselves (CDPLAB_SUITE_RUNS_ALONE) share a process the same way, one suite
/// at a time; only a speed check always has a process of its own (a warm one times differently).
/// Those processes start ahead, beside the checks that share the GPU, and wait at a start gate
/// until their turn alone (check_process.h, StartGate).
#pragma once

#include "grading/grade.h"

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace cdplab::grading {

/// doctest's --test-case value that selects exactly these checks (commas escaped; check names hold
/// no wildcards, which a project test enforces).
std::string test_case_filter(const std::vector<std::string>& checks);

/// The checks of `exercise` that `events` show passed or skipped, as check_items reads them (the
/// last run of a check decides): nothing is left to run for them.
std::set<std::string> settled_checks(const manifest::Exercise& exercise, const std::vector<CheckEvent>& events);

/// The checks that `events` show started in some process: a shared process that ended early (after
/// a check that failed or changed the device's limits) left the others unstarted.
std::set<std::string> started_checks(const std::vector<CheckEvent>& events);

/// Calls `work(i)` for every i below `count`, on up to `jobs` threads (run_work_list: an
/// exception one call throws reaches the caller once every thread has ended).
void parallel_for(std::size_t count, int jobs, const std::function<void(std::size_t)>& work);

/// A job of run_work_list: it does its work and returns the jobs that follow from it.
struct Job {
  std::function<std::vector<Job>()> run;
};

/// Runs every job of `first` on up to `jobs` threads, and every job one of them returns, queued
/// behind those still waiting: a follow-up starts as soon as a thread is free, not after the last
/// of `first` ends (a suite's leftover checks start while other suites' processes still run).
void run_work_list(std::vector<Job> first, int jobs);

}  // namespace cdplab::grading
