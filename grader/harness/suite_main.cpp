// main() of every exercise suite: GPU detection, the exercise's device code loaded, the wait at
// the grader's start gate, the results log, the watchdog, the speed-workload mode a speed
// baseline runs in, and the mode that times the suite's baselines ahead into the baseline cache
// (speed.h). Compiled once, into the harness library; each suite brings its identity
// (suite_identity.h).
#define DOCTEST_CONFIG_IMPLEMENT
#include "harness.h"
#include "results_log.h"
#include "speed.h"
#include "suite_identity.h"

#include "cdplab/gpu_info.h"
#include "device_code.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace cdplab::harness {

std::uint64_t run_seed() {
  const char* text = std::getenv("CDPLAB_SEED");
  if (text == nullptr || *text == '\0') return kPracticeSeed;
  return std::strtoull(text, nullptr, 10);
}

void advise_on_hang(const std::string& advice) { ResultsLog::advise_on_hang(advice); }

bool under_sanitizer() {
  const char* value = std::getenv("CDPLAB_UNDER_SANITIZER");
  return value != nullptr && std::string(value) == "1";
}

int tenth_under_sanitizer(int n) { return under_sanitizer() ? n / 10 : n; }

bool skip_under_sanitizer(const std::string& why) {
  if (!under_sanitizer()) return false;
  ResultsLog::skip_running_check("not run under compute-sanitizer: " + why);
  return true;
}

Random check_rng() {
  const auto* options = doctest::getContextOptions();
  const char* name = options != nullptr && options->currentTest != nullptr
                         ? options->currentTest->m_name
                         : "";
  return Random(run_seed() ^ hash_name(name));
}

namespace {

// True when no --test-case filter was given, or the name is one of them. Check names contain
// no doctest wildcards (a project test enforces it), so an exact comparison is enough; CTest
// passes names with commas escaped as "\,".
bool selected_by_command_line(const char* name) {
  const auto& filters = doctest::detail::g_cs->filters[4];
  if (filters.empty()) return true;
  for (const auto& filter : filters) {
    std::string unescaped;
    for (const char* c = filter.c_str(); *c != '\0'; ++c) {
      if (*c == '\\' && c[1] != '\0') ++c;
      unescaped += *c;
    }
    if (unescaped == name) return true;
  }
  return false;
}

/// The device code this suite loads: its own build's exercise, or the one CDPLAB_DEVICE_PTX names
/// (the student's, when the grader runs the workbook's host code).
DeviceCodeSources suite_device_code() {
  DeviceCodeSources sources;
  sources.host_code_ptx = suite_host_code_ptx();
  const char* device = std::getenv("CDPLAB_DEVICE_PTX");
  sources.device_code_ptx = device != nullptr && *device != '\0' ? device : sources.host_code_ptx;
  if (const char* tag = std::getenv("CDPLAB_HOOK_TAG")) sources.hook_tag_digits = tag;
  if (const char* cache = std::getenv("CDPLAB_DEVICE_CODE_CACHE")) sources.linked_cache = cache;
  sources.suite = suite_name();
  std::string libraries = suite_device_libraries();
  for (std::size_t at = 0; at <= libraries.size();) {
    std::size_t end = libraries.find('|', at);
    if (end == std::string::npos) end = libraries.size();
    if (end > at) sources.libraries.push_back(libraries.substr(at, end - at));
    at = end + 1;
  }
  return sources;
}

/// With CDPLAB_START_GATE naming a folder (the grader started this process ahead of its turn with
/// the GPU alone), says it is ready ("ready" in the folder: CUDA started, the device code loaded)
/// and waits until the grader opens the gate ("open" appears): true. False when it closes it
/// instead ("closed"), when the folder is gone, or when the grader is (this process's parent
/// changed): then no check runs.
bool wait_at_start_gate() {
  const char* gate = std::getenv("CDPLAB_START_GATE");
  if (gate == nullptr || *gate == '\0') return true;
  const std::string dir = gate;
  const std::string open = dir + "/open";
  const std::string closed = dir + "/closed";
  const pid_t parent = ::getppid();
  { std::ofstream(dir + "/ready") << "ready\n"; }
  for (;;) {
    if (::access(open.c_str(), F_OK) == 0) return true;
    if (::access(closed.c_str(), F_OK) == 0 || ::access(dir.c_str(), F_OK) != 0 || ::getppid() != parent) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace
}  // namespace cdplab::harness

int main(int argc, char** argv) {
  using namespace cdplab::harness;
  if (argc > 1 && std::string(argv[1]) == "--speed-workload") return run_speed_workload_mode(argc, argv);
  if (argc > 1 && std::string(argv[1]) == "--time-baselines") return run_time_baselines_mode();
  doctest::Context context;
  context.applyCommandLine(argc, argv);

  const bool listing = context.shouldExit();  // --help, --version and the like
  const cdplab::GpuInfo gpu = listing ? cdplab::GpuInfo{} : cdplab::query_gpu();
  std::string skip_reason;
  if (!listing && !gpu.available) {
    skip_reason = "no usable CUDA GPU: " + gpu.problem + "; GPU checks were skipped, not passed";  // as grading::skipped_without_gpu
    context.addFilter("test-suite-exclude", "gpu");
  }
  // The exercise's device code is linked and loaded before any check: a problem with it (a link
  // error, a kernel it lacks) fails each check that launches it, with the problem as its message.
  if (!listing && gpu.available && *suite_host_code_ptx() != '\0') load_device_code(suite_device_code());
  if (!listing && !wait_at_start_gate()) return 0;
  ResultsLog::open(suite_name(), run_seed(), gpu.name, skip_reason, selected_by_command_line);

  const int status = context.run();
  ResultsLog::close();
  if (context.shouldExit()) return status;
  if (status != 0) return status;
  // CTest treats 77 as "skipped" (SKIP_RETURN_CODE): nothing failed, but GPU checks did not run.
  return ResultsLog::skipped_count() > 0 && ResultsLog::ran_count() == 0 ? 77 : 0;
}
