// Failures the grader makes happen (fault_injection.h).
#include "fault_injection.h"

#include "device_code.h"
#include "launch_count.h"
#include "lifetimes.h"

#include "cdplab/check.h"

#include <doctest/doctest.h>

#include <exception>
#include <string>

namespace cdplab::harness {
namespace {

/// Disarms an injection however the check leaves (a run that throws included).
struct Disarm {
  void (*arm)(long long index);
  ~Disarm() {
    try {
      arm(-1);
    } catch (...) {
      (void)cudaGetLastError();
    }
  }
};

}  // namespace

void expect_failed_launch_reported(const std::function<void()>& run) {
  set_lifetimes_judged(false);
  clear_launch_count();
  run();
  // Every run of `run` counts (one that frees what the launching run allocated makes none).
  const unsigned long long launches = check_device_runtime_counts().launches;
  if (launches == 0) {
    FAIL_CHECK("the run made no device-side launch (counted by the grader as the device code made them): the "
               "lesson's model launches child grids");
    return;
  }
  const auto index = static_cast<long long>(launches / 2);
  clear_launch_count();
  fail_device_launch(index);
  const Disarm disarm{&fail_device_launch};
  const std::string made = "the grader made device-side launch #" + std::to_string(index + 1) + " of the run's " +
                           std::to_string(launches) +
                           " fail with cudaErrorLaunchPendingCountExceeded, as a full pending launch pool would";
  try {
    run();
  } catch (const cdplab::DeviceLaunchError& e) {
    CHECK_MESSAGE(e.code() == cudaErrorLaunchPendingCountExceeded,
                  made << "; the host was told of another error: " << e.what());
    return;
  } catch (const std::exception& e) {
    FAIL_CHECK(made << "; instead of that launch error, the run ended with: " << e.what()
                    << ". Check each launch with CDPLAB_CHECK_LAUNCH() right after it, and let the parent go on "
                       "(or return) without touching what the failed child would have made");
    return;
  }
  const DeviceRuntimeCounts counts = check_device_runtime_counts();
  if (counts.launches_injected == 0) {
    FAIL_CHECK(made << ", but this time the run made only " << counts.launches
                    << " device-side launches: the same input gave fewer launches than before");
    return;
  }
  FAIL_CHECK(made << "; the run returned as if nothing had happened (" << counts.error_reads
                  << " error reads in device code). Check each launch with CDPLAB_CHECK_LAUNCH() on the line after "
                     "it: it reads the error with cudaGetLastError() and hands it to the host, which reports it "
                     "after the parent grid as cdplab::DeviceLaunchError. A launch error read and dropped is a "
                     "silently missing result");
}

void expect_failed_allocation_handled(const std::function<void()>& run,
                                      const std::function<void(const std::string& made)>& failing_run) {
  set_lifetimes_judged(false);
  clear_launch_count();
  run();
  const unsigned long long allocations = check_device_runtime_counts().heap_requests;
  if (allocations == 0) {
    FAIL_CHECK("the run made no device-heap allocation (cudaMalloc or malloc in device code, counted by the "
               "grader): the lesson's model takes each buffer from the device heap");
    return;
  }
  const auto index = static_cast<long long>(allocations / 2);
  clear_launch_count();
  fail_device_allocation(index);
  const Disarm disarm{&fail_device_allocation};
  const std::string made = "the grader made device-heap allocation #" + std::to_string(index + 1) + " of the run's " +
                           std::to_string(allocations) + " fail, as on a full heap (cudaMalloc returned "
                           "cudaErrorMemoryAllocation and a null pointer)";
  failing_run(made);
  DeviceRuntimeCounts counts{};
  try {
    counts = check_device_runtime_counts();
  } catch (const std::exception&) {  // the run broke the GPU: failing_run has said how
    (void)cudaGetLastError();
    return;
  }
  if (counts.heap_injected == 0) {
    FAIL_CHECK(made << ", but this time the run asked for fewer allocations: the same input gave "
                    << counts.heap_requests << " instead of " << allocations);
  }
}

}  // namespace cdplab::harness
