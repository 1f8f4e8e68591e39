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
    fail_device_allocation(-1);
  } catch (...) {
    (void)cudaGetLastError();
  }
  start_check_counts();
}

void expect_launches_at_most(unsigned long long expected, const std::string& one_per) {
  const auto launches = device_runtime_counts().launches;
  CHECK_MESSAGE(launches <= expected,
                "the run made " << launches << " device-side launches (counted by the grader as the device code "
                                << "made them) where the lesson allows at most " << expected << ": one per "
                                << one_per << ". A child launched twice, or by more than one thread, gives the same output at "
                                   "twice the cost, and holds twice the pending launch pool");
}

void expect_launches_at_least(unsigned long long expected, const std::string& one_per) {
  const auto launches = device_runtime_counts().launches;
  CHECK_MESSAGE(launches >= expected,
                "the run made " << launches << " device-side launches (counted by the grader as the device code "
                                << "made them) where the lesson asks for at least " << expected << ": one per "
                                << one_per << ". Work the lesson gives to a child grid was done another way (by the parent "
                                   "thread itself, say): the output is right, but the exercise is the launch");
}

void expect_launches_exactly(unsigned long long expected, const std::string& one_per) {
  expect_launches_at_most(expected, one_per);
  expect_launches_at_least(expected, one_per);
}

std::string describe(LaunchStream stream) {
  switch (stream) {
    case LaunchStream::null_stream:
      return "the NULL stream";
    case LaunchStream::tail:
      return "cudaStreamTailLaunch";
    case LaunchStream::fire_and_forget:
      return "cudaStreamFireAndForget";
    case LaunchStream::named:
      return "streams the device code created";
  }
  return "?";
}

void expect_every_launch_into(LaunchStream stream, const std::string& strategy) {
  const DeviceRuntimeCounts counts = device_runtime_counts();
  const unsigned long long into[] = {counts.null_stream, counts.tail_launch, counts.fire_and_forget, counts.named_stream};
  const LaunchStream kinds[] = {LaunchStream::null_stream, LaunchStream::tail, LaunchStream::fire_and_forget,
                                LaunchStream::named};
  std::string found;
  for (int i = 0; i < 4; ++i) {
    if (into[i] == 0) continue;
    found += (found.empty() ? "" : ", ") + std::to_string(into[i]) + " into " + describe(kinds[i]);
  }
  const auto wanted = into[static_cast<int>(stream)];
  CHECK_MESSAGE((counts.launches > 0 && wanted == counts.launches),
                "asked for " << strategy << ", the run made " << counts.launches << " device-side launches ("
                             << (found.empty() ? "none" : found) << ", as the grader saw each launch made) where every "
                             << "one must go into " << describe(stream)
                             << ": the kind of stream decides what may run together, so the same output can hide "
                                "another timeline");
}

}  // namespace cdplab::harness
