// Launches counted on the device (launch_count.h).
#include "launch_count.h"

#include "device_code.h"

#include "cdplab/check.h"

#include <doctest/doctest.h>

namespace cdplab::harness {

void clear_launch_count() noexcept {
  try {
    cdplab::reset_device_report();  // starts the device run too (device_code.h)
    fail_device_launch(-1);
  } catch (...) {
    (void)cudaGetLastError();
  }
}

void expect_launches_at_most(unsigned long long expected, const std::string& one_per) {
  const auto launches = device_runtime_counts().launches;
  CHECK_MESSAGE(launches <= expected,
                "the run made " << launches << " device-side launches (counted by the grader as the device code "
                                << "made them) where the lesson asks for " << expected << ": one per " << one_per
                                << ". A child launched twice, or by more than one thread, gives the same output at "
                                   "twice the cost, and holds twice the pending launch pool");
}

}  // namespace cdplab::harness
