// What a check's runs left behind (lifetimes.h).
#include "lifetimes.h"

#include "device_code.h"

#include <cuda_runtime.h>

namespace cdplab::harness {
namespace {

bool& judged() {
  static bool value = true;
  return value;
}

bool& heap_judged() {
  static bool value = true;
  return value;
}

}  // namespace

void set_lifetimes_judged(bool value) noexcept {
  judged() = value;
  heap_judged() = value;
}

void skip_heap_lifetime() noexcept { heap_judged() = false; }

std::vector<std::string> lifetime_problems() {
  if (!judged() || !device_code_problem().empty()) return {};
  DeviceRuntimeCounts c{};
  try {
    c = check_device_runtime_counts();
  } catch (...) {  // nothing loaded, or a context a fault has ended: nothing to judge here
    (void)cudaGetLastError();
    return {};
  }
  std::vector<std::string> problems;
  if (c.streams_created != c.streams_destroyed) {
    problems.push_back("the check's runs created " + std::to_string(c.streams_created) +
                       " streams in device code and destroyed " + std::to_string(c.streams_destroyed) +
                       " (counted by the grader as the device code made the calls): destroy every stream you create "
                       "with cudaStreamDestroy once its launches are made; the launches already in it still run. A "
                       "stream never destroyed holds its resources until the program ends, one more with every run");
  }
  const auto taken = c.heap_cuda_mallocs + c.heap_mallocs;
  const auto freed = c.heap_cuda_frees + c.heap_frees;
  if (taken != freed && heap_judged()) {
    problems.push_back("the check's runs took " + std::to_string(taken) +
                       " buffers from the device heap (cudaMalloc or malloc in device code) and freed " +
                       std::to_string(freed) +
                       ": device-heap memory is freed in device code (cudaFree or free), or it is lost until the "
                       "program ends and the next run finds the heap that much smaller");
  }
  if (c.into_destroyed > 0) {
    problems.push_back(std::to_string(c.into_destroyed) +
                       " device-side launches went into a stream the device code had destroyed already: destroy a "
                       "stream after the last launch into it (by every thread that uses it: a barrier first, when "
                       "the threads of a block share one)");
  }
  return problems;
}

}  // namespace cdplab::harness
