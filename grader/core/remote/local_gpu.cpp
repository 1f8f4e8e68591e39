#include "remote/local_gpu.h"

#include "process/process.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace cdplab::remote {
namespace {

/// The value CUDA_VISIBLE_DEVICES takes to hide every device: empty, or a list whose first entry
/// is no device (the runtime stops at the first invalid entry).
bool hides_every_gpu(const char* visible) {
  if (visible == nullptr) return false;
  std::string first = visible;
  first = first.substr(0, first.find(','));
  while (!first.empty() && first.front() == ' ') first.erase(first.begin());
  if (first.empty() || first == "-1" || first == "NoDevFiles") return true;
  return false;
}

}  // namespace

int gpu_probe_main() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) {
    std::printf("no NVIDIA driver here (libcuda.so.1 cannot be loaded)\n");
    return 1;
  }
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  const auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  const auto count = reinterpret_cast<Count>(dlsym(driver, "cuDeviceGetCount"));
  if (init == nullptr || count == nullptr) {
    std::printf("the NVIDIA driver here has no cuInit\n");
    return 1;
  }
  if (const int status = init(0); status != 0) {
    // 100: CUDA_ERROR_NO_DEVICE; 999 and others: a driver that cannot start.
    std::printf(status == 100 ? "the CUDA driver finds no GPU\n" : "the CUDA driver cannot start (error %d)\n", status);
    return 1;
  }
  int devices = 0;
  if (count(&devices) != 0 || devices == 0) {
    std::printf("the CUDA driver finds no GPU\n");
    return 1;
  }
  return 0;
}

std::string local_gpu_problem(const std::string& executable) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (hides_every_gpu(visible)) return "CUDA_VISIBLE_DEVICES hides every GPU";
  // A GPU found is found once per process (for each executable and CUDA_VISIBLE_DEVICES): a check
  // with a remote configured asks twice, whether to go there and then what to skip, and each probe
  // starts a process that starts the driver. A failed probe is asked again (a watch outlives a
  // GPU busy in exclusive mode).
  static std::mutex mutex;
  static std::map<std::string, std::string> answered;
  const std::lock_guard<std::mutex> lock(mutex);
  const std::string asked = executable + '\n' + (visible != nullptr ? visible : "(unset)");
  if (const auto known = answered.find(asked); known != answered.end()) return known->second;
  process::Options options;
  options.timeout_seconds = 60;  // a driver's first start can take seconds; a hang must not block check
  const auto probe = process::run({executable, kGpuProbeArgument}, options);
  std::string why = probe.ok() ? "" : probe.output;
  while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
  if (!probe.ok() && (why.empty() || why.find('\n') != std::string::npos)) why = "the GPU probe " + probe.describe();
  if (why.empty()) answered[asked] = why;
  return why;
}

}  // namespace cdplab::remote
