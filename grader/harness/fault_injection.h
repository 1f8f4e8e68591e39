/// @file fault_injection.h
/// @brief Failures the grader makes happen: a device-side launch that fails as it would with the
///        pending launch pool full, so that the code every lesson asks for (check each launch and
///        hand its error to the host) is run, not only written. A launch error read and dropped, or
///        never read, gives the right output on every ordinary run; here it loses the check.
#pragma once

#include <functional>
#include <string>

namespace cdplab::harness {

/// Calls `run` (the exercise, once, through its host code) twice: first as it is, to count its
/// device-side launches (L, over every run it makes; a run that throws fails the check as any
/// check would), then with the launch of index L / 2 of a run (counted in the order the device code
/// made them: a launch from the middle of the run, deep in a recursion where there is one; `run`
/// should make one run that launches) failing with
/// cudaErrorLaunchPendingCountExceeded, as a full pending launch pool would. CHECKs that the
/// failure reached the host as the lessons say: the second call throws cdplab::DeviceLaunchError
/// with that error. `run` frees what it allocated on either path (the second call throws). The
/// check's lifetimes are not judged (lifetimes.h). The suites judge a run of the same size first,
/// in the same check: a point for reporting errors goes only to code whose output is right.
void expect_failed_launch_reported(const std::function<void()>& run);

/// The same for the device heap: calls `run` to count its device-heap allocations (A, cudaMalloc
/// and malloc in device code; none fails the check), then calls `failing_run` with allocation
/// A / 2 of the run made to fail as on a full heap, and with the words that say so for its
/// messages. `failing_run` runs the exercise and CHECKs what the lesson asks for then (the line
/// left empty, a report to the host). Fails the check too when the injected allocation was never
/// asked for. Lifetimes are not judged. The index counts from the start of a device run (each
/// reset_device_report() starts one) while A counts every run of `run`: `run` should make one run
/// that allocates.
void expect_failed_allocation_handled(const std::function<void()>& run,
                                      const std::function<void(const std::string& made)>& failing_run);

}  // namespace cdplab::harness
