// The exercise's device code in the check process (device_code.h): linking, loading, the
// redirection of the host code's launches and symbol copies, and the counts.
#include "device_code.h"

#include "device_calls.h"
#include "device_link.h"
#include "ptx_instrument.h"

#include "cdplab/check.h"

#include <cuda.h>  // the driver's virtual-memory types; its entry points are asked of the runtime
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace cdplab::harness {
namespace {

/// What the grader asked to record (device_code.h: grid_recording_asked), read once.
struct RecordingAsked {
  bool every = false;                     ///< CDPLAB_GRID_RECORDING=on
  bool none = false;                      ///< CDPLAB_GRID_RECORDING=off: not even the listed checks
  std::unordered_set<std::string> checks; ///< CDPLAB_RECORDED_CHECKS: "<suite>/<check>", one a line
};

const RecordingAsked& recording_asked() {
  static const RecordingAsked asked = [] {
    RecordingAsked a;
    const char* value = std::getenv("CDPLAB_GRID_RECORDING");
    a.every = value != nullptr && std::string(value) == "on";
    a.none = value != nullptr && std::string(value) == "off";
    const char* listed = std::getenv("CDPLAB_RECORDED_CHECKS");
    std::istringstream list(listed != nullptr ? listed : "");
    for (std::string line; std::getline(list, line);)
      if (!line.empty()) a.checks.insert(line);
    return a;
  }();
  return asked;
}

struct Loaded {
  cudaLibrary_t library = nullptr;
  std::string tag;      ///< the hooks' names' prefix in this process (fresh_hook_tag)
  std::string suite;    ///< the suite this process runs (DeviceCodeSources::suite)
  char* hook_state = nullptr;  ///< the hooks' HookState (device memory mapped apart: hook_state_memory)
  std::string problem;  ///< why nothing is loaded
  bool attempted = false;
  /// Host address -> mangled device name: the kernels and variables the host code reaches.
  std::unordered_map<const void*, std::string> kernels;
  std::unordered_map<const void*, std::string> variables;
  /// The host code's file's own variables by name (not the starter kit's): what a host part may write.
  std::unordered_set<std::string> exercise_variables;
  /// The instrumented PTX's functions (a launch's caller is an index among them) and kernels (what
  /// <tag>kernel_addresses writes), and those kernels by device address, once read.
  std::vector<std::string> functions;
  std::vector<std::string> kernel_names;
  std::unordered_map<unsigned long long, std::string> kernel_at;
  bool kernel_addresses_read = false;
};

Loaded& loaded() {
  static Loaded state;
  return state;
}

/// Set before main() by CDPLAB_SUITE_RECORDS_GRIDS (harness.h): a constant-initialised flag, so
/// that no order of static initialisation can lose it.
bool every_check_records = false;

}  // namespace

bool record_every_check_of_this_suite() noexcept {
  every_check_records = true;
  return true;
}

bool grid_recording_asked() {
  if (recording_asked().every || every_check_records) return true;
  if (recording_asked().none || loaded().suite.empty()) return false;
  const std::string own = loaded().suite + "/";
  return std::any_of(recording_asked().checks.begin(), recording_asked().checks.end(),
                     [&](const std::string& check) { return check.compare(0, own.size(), own) == 0; });
}

bool check_records_grids(const std::string& suite, const std::string& check) {
  if (every_check_records && suite == loaded().suite) return true;
  if (recording_asked().none) return false;
  return recording_asked().every || recording_asked().checks.count(suite + "/" + check) > 0;
}

namespace {

std::string read_file(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  *ok = static_cast<bool>(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

using device_code::demangled;

std::string gpu_architecture() {
  int device = 0;
  cudaDeviceProp properties{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&properties, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
  return "sm_" + std::to_string(properties.major) + std::to_string(properties.minor);
}

/// The linker's log, shortened to what a student can act on.
std::string shortened(const std::string& log) {
  constexpr std::size_t kMost = 4000;
  return log.size() <= kMost ? log : log.substr(0, kMost) + "\n... (more cut)";
}

/// A name for what a link is made of: the modules, the libraries (by path, size and time) and the
/// architecture, hashed (FNV-1a, 64 bits).
std::string link_key(const std::vector<device_code::PtxModule>& modules, const std::vector<std::string>& libraries,
                     const std::string& architecture) {
  std::uint64_t hash = 1469598103934665603ull;
  const auto mix = [&hash](const std::string& text) {
    for (const unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
    hash = (hash ^ 0xffu) * 1099511628211ull;  // ends each part, so that parts cannot run together
  };
  for (const auto& m : modules) mix(m.text);
  for (const auto& library : libraries) {
    std::error_code error;
    mix(library + "|" + std::to_string(std::filesystem::file_size(library, error)) + "|" +
        std::to_string(std::filesystem::last_write_time(library, error).time_since_epoch().count()));
  }
  mix(architecture);
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.cubin", static_cast<unsigned long long>(hash));
  return name;
}

/// Where sources.linked_cache keeps the cubin of this link; empty without a cache.
std::filesystem::path cached_cubin(const std::vector<device_code::PtxModule>& modules, const DeviceCodeSources& sources,
                                   const std::string& architecture) {
  if (sources.linked_cache.empty()) return {};
  return std::filesystem::path(sources.linked_cache) / link_key(modules, sources.libraries, architecture);
}

/// The linked cubin: kept in sources.linked_cache by the run's first process that links it (a
/// file written whole under a name of its own, then renamed into place, so that no process reads
/// half of one), and read from there by the others; `use_cache` false links anew (and keeps that).
device_code::Linked linked_or_cached(const std::vector<device_code::PtxModule>& modules,
                                     const DeviceCodeSources& sources, const std::string& architecture, bool use_cache) {
  const std::filesystem::path kept = cached_cubin(modules, sources, architecture);
  if (kept.empty()) return device_code::link_device_code(modules, sources.libraries, architecture);
  bool ok = false;
  const std::string cubin = use_cache ? read_file(kept.string(), &ok) : std::string();
  if (ok && !cubin.empty()) {
    device_code::Linked linked;
    linked.ok = true;
    linked.cubin.assign(cubin.begin(), cubin.end());
    return linked;
  }
  auto linked = device_code::link_device_code(modules, sources.libraries, architecture);
  if (!linked.ok) return linked;
  std::error_code error;
  std::filesystem::create_directories(sources.linked_cache, error);
  // Every check box has its own process ids (the same few in each): the part's name is drawn.
  std::random_device device;
  const std::filesystem::path part =
      kept.string() + "." + std::to_string((static_cast<unsigned long long>(device()) << 32) ^ device()) + ".part";
  {
    std::ofstream out(part, std::ios::binary);
    out.write(linked.cubin.data(), static_cast<std::streamsize>(linked.cubin.size()));
    ok = static_cast<bool>(out);
  }
  if (ok) std::filesystem::rename(part, kept, error);
  if (!ok || error) std::filesystem::remove(part, error);  // a cache that cannot be written only costs time
  return linked;
}

/// A driver entry point, asked of the runtime (the suites do not link the driver: a machine
/// without one still runs them, and reports the GPU checks skipped); nullptr when there is none.
template <class Function>
Function driver_entry(const char* name) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<Function>(function);
}

/// Device memory for the hooks' state, out of the exercise's reach: mapped at an offset drawn per
/// process inside a reservation of kHookReservation bytes of address space, with at least
/// kHookGuard bytes unmapped on each side, so that a scan that walks to it from any other memory
/// faults first. Without the driver's virtual-memory calls, plain device memory.
constexpr std::size_t kHookReservation = std::size_t{1} << 30;
constexpr std::size_t kHookGuard = std::size_t{256} << 20;

/// How the hooks' state was given memory, so that it can be given back at exit: compute-sanitizer
/// memcheck counts a mapping still held when the context ends as a leak of the program's.
struct HookMemory {
  CUdeviceptr reserved = 0;  ///< the reservation (0: plain cudaMalloc memory at `plain`)
  CUdeviceptr mapped = 0;
  std::size_t bytes = 0;
  void* plain = nullptr;
};

HookMemory& hook_memory() {
  static HookMemory memory;
  return memory;
}

/// Gives the hooks' memory back (at exit, before the runtime's own teardown, which was registered
/// earlier and so runs later).
void release_hook_memory() {
  HookMemory& memory = hook_memory();
  if (memory.plain != nullptr) (void)cudaFree(memory.plain);
  if (memory.reserved != 0) {
    const auto unmap = driver_entry<decltype(&cuMemUnmap)>("cuMemUnmap");
    const auto free_range = driver_entry<decltype(&cuMemAddressFree)>("cuMemAddressFree");
    if (unmap != nullptr) (void)unmap(memory.mapped, memory.bytes);
    if (free_range != nullptr) (void)free_range(memory.reserved, kHookReservation);
  }
  memory = HookMemory{};
  (void)cudaGetLastError();
}

char* hook_state_memory() {
  static const bool released_at_exit = std::atexit(release_hook_memory) == 0;
  (void)released_at_exit;
  const auto granularity_of = driver_entry<decltype(&cuMemGetAllocationGranularity)>("cuMemGetAllocationGranularity");
  const auto reserve = driver_entry<decltype(&cuMemAddressReserve)>("cuMemAddressReserve");
  const auto create = driver_entry<decltype(&cuMemCreate)>("cuMemCreate");
  const auto map = driver_entry<decltype(&cuMemMap)>("cuMemMap");
  const auto set_access = driver_entry<decltype(&cuMemSetAccess)>("cuMemSetAccess");
  const auto release = driver_entry<decltype(&cuMemRelease)>("cuMemRelease");
  const auto free_range = driver_entry<decltype(&cuMemAddressFree)>("cuMemAddressFree");
  const auto unmap = driver_entry<decltype(&cuMemUnmap)>("cuMemUnmap");
  int device = 0;
  if (granularity_of && reserve && create && map && set_access && release && free_range &&
      cudaGetDevice(&device) == cudaSuccess) {
    CUmemAllocationProp properties{};
    properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    properties.location.id = device;
    std::size_t granularity = 0;
    if (granularity_of(&granularity, &properties, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS && granularity != 0) {
      const std::size_t bytes = (sizeof(HookState) + granularity - 1) / granularity * granularity;
      const std::size_t slots = (kHookReservation - 2 * kHookGuard - bytes) / granularity;
      std::random_device drawn;
      const std::size_t offset = kHookGuard + (static_cast<std::size_t>(drawn()) % slots) * granularity;
      CUdeviceptr base = 0;
      if (reserve(&base, kHookReservation, granularity, 0, 0) == CUDA_SUCCESS) {
        CUmemGenericAllocationHandle memory = 0;
        bool mapped = false;
        if (create(&memory, bytes, &properties, 0) == CUDA_SUCCESS) {
          CUmemAccessDesc access{};
          access.location = properties.location;
          access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
          const bool map_made = map(base + offset, bytes, 0, memory, 0) == CUDA_SUCCESS;
          mapped = map_made && set_access(base + offset, bytes, &access, 1) == CUDA_SUCCESS;
          if (map_made && !mapped && unmap != nullptr) (void)unmap(base + offset, bytes);
          (void)release(memory);  // the mapping keeps the memory until it is unmapped
        }
        if (mapped) {
          hook_memory() = HookMemory{base, base + offset, bytes, nullptr};
          return reinterpret_cast<char*>(base + offset);
        }
        (void)free_range(base, kHookReservation);
      }
    }
  }
  (void)cudaGetLastError();
  void* plain = nullptr;
  if (cudaMalloc(&plain, sizeof(HookState)) != cudaSuccess) return nullptr;
  hook_memory() = HookMemory{0, 0, 0, plain};
  return static_cast<char*>(plain);
}

std::string map_hook_state() {
  Loaded& state = loaded();
  state.hook_state = hook_state_memory();
  const unsigned long long masked =
      reinterpret_cast<unsigned long long>(state.hook_state) ^ device_code::hook_state_key(state.tag);
  void* address = nullptr;
  std::size_t bytes = 0;
  if (state.hook_state == nullptr || cudaMemset(state.hook_state, 0, sizeof(HookState)) != cudaSuccess ||
      cudaMemcpy(state.hook_state + offsetof(HookState, control), &kNothingArmed, sizeof kNothingArmed,
                 cudaMemcpyHostToDevice) != cudaSuccess ||
      cudaLibraryGetGlobal(&address, &bytes, state.library, (state.tag + "state").c_str()) != cudaSuccess ||
      bytes != sizeof masked || cudaMemcpy(address, &masked, sizeof masked, cudaMemcpyHostToDevice) != cudaSuccess) {
    (void)cudaGetLastError();
    state.hook_state = nullptr;
    return "the grader could not set up the memory of its device-runtime hooks";
  }
  return "";
}

std::string load(const DeviceCodeSources& sources) {
  Loaded& state = loaded();
  bool ok = false;
  const std::string host_ptx = read_file(sources.host_code_ptx, &ok);
  if (!ok) return "the grader cannot read the PTX of the host code's exercise (" + sources.host_code_ptx + ")";
  const std::string device_ptx = read_file(sources.device_code_ptx, &ok);
  if (!ok) return "cannot read the device code to load (" + sources.device_code_ptx + ")";

  // Every kernel and variable of the host code's file must be reachable by its host address:
  // otherwise a launch would run the executable's own copy, not the loaded code.
  for (const auto& name : device_code::exported_device_names(host_ptx)) {
    void* host = dlsym(RTLD_DEFAULT, name.c_str());
    if (host == nullptr) {
      return "the suite does not export " + demangled(name) +
             " (a build problem: exercise files are compiled with --device-entity-has-hidden-visibility=false "
             "and suites linked with exported symbols)";
    }
    const bool kernel = host_ptx.find(".entry " + name) != std::string::npos;
    (kernel ? state.kernels : state.variables)[host] = name;
    if (!kernel) state.exercise_variables.insert(name);
  }
  for (const auto& symbol : cdplab::detail::kit_device_symbols()) state.variables[symbol.host] = symbol.name;

  state.tag = device_code::hook_tag_from(sources.hook_tag_digits);
  state.suite = sources.suite;  // before the instrumentation: whether it records depends on it
  if (state.tag.empty()) state.tag = device_code::fresh_hook_tag();
  if (std::string refused = device_code::refused_device_names_problem(device_ptx); !refused.empty()) return refused;
  const auto instrumented = device_code::instrument_ptx(device_ptx, state.tag, grid_recording_asked());
  state.functions = instrumented.functions;
  state.kernel_names = instrumented.kernels;
  const std::string architecture = gpu_architecture();
  if (architecture.empty()) return "the GPU's architecture could not be read";
  const std::vector<device_code::PtxModule> modules = {{"exercise", instrumented.ptx},
                                                       {"grader hooks", device_code::hooks_ptx(state.tag, device_code::hook_state_key(state.tag))}};
  auto linked = linked_or_cached(modules, sources, architecture, true);
  if (!linked.ok) {
    return "the device code could not be linked with the starter kit and the device runtime for " + architecture +
           ":\n" + shortened(linked.log);
  }
  cudaError_t status =
      cudaLibraryLoadData(&state.library, linked.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (status != cudaSuccess && !sources.linked_cache.empty()) {
    // A kept cubin that does not load (cut short, say): link again, and keep that instead.
    (void)cudaGetLastError();
    linked = linked_or_cached(modules, sources, architecture, false);
    if (linked.ok)
      status = cudaLibraryLoadData(&state.library, linked.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  }
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    state.library = nullptr;
    return "the linked device code could not be loaded: " + cdplab::explain_cuda_error(status);
  }
  return map_hook_state();
}

/// The loaded code's global `name`: its address and size; throws CudaError when it has none.
void* library_global(const std::string& name, std::size_t* size) {
  void* address = nullptr;
  std::size_t bytes = 0;
  const cudaError_t status = cudaLibraryGetGlobal(&address, &bytes, loaded().library, name.c_str());
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw CudaError(status, "the device code has no variable " + demangled(name) +
                                ": the workbook's host code reads or writes it; keep the file's __constant__ and "
                                "__device__ variables as the starter declares them");
  }
  if (size != nullptr) *size = bytes;
  return address;
}

/// The problem every redirected call reports while no device code is loaded.
[[noreturn]] void throw_not_loaded() {
  const std::string& problem = loaded().problem;
  throw CudaError(cudaErrorInvalidDeviceFunction,
                  problem.empty() ? std::string("the exercise's device code was never loaded") : problem);
}

/// The kernel of the loaded code that stands for host function `function`, when the host code's
/// file defines it; false for any other kernel (the grader's own: they run from the executable).
bool redirected_kernel(const void* function, cudaKernel_t* kernel) {
  Loaded& state = loaded();
  const auto it = state.kernels.find(function);
  if (it == state.kernels.end()) return false;
  if (state.library == nullptr) throw_not_loaded();
  const cudaError_t status = cudaLibraryGetKernel(kernel, state.library, it->second.c_str());
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw CudaError(cudaErrorInvalidDeviceFunction,
                    "the device code has no kernel " + demangled(it->second) +
                        ": the workbook's host code launches it; keep the kernel's name and parameters as the "
                        "starter declares them");
  }
  return true;
}

/// The loaded code's copy of variable `symbol` (a host shadow), when it is one the host code
/// reaches; nullptr for any other.
char* redirected_variable(const void* symbol, std::size_t offset, std::size_t count) {
  Loaded& state = loaded();
  const auto it = state.variables.find(symbol);
  if (it == state.variables.end()) return nullptr;
  if (state.library == nullptr) throw_not_loaded();
  std::size_t size = 0;
  char* address = static_cast<char*>(library_global(it->second, &size));
  if (offset > size || count > size - offset) {
    throw CudaError(cudaErrorInvalidValue, "a copy of " + std::to_string(count) + " bytes at offset " +
                                               std::to_string(offset) + " does not fit " + demangled(it->second) +
                                               " (" + std::to_string(size) + " bytes)");
  }
  return address + offset;
}

/// A field of the hooks' state, by its offset in HookState (device memory).
template <class T>
T* hook_field(std::size_t offset) {
  if (loaded().hook_state == nullptr) throw_not_loaded();
  return reinterpret_cast<T*>(loaded().hook_state + offset);
}

}  // namespace

const std::string& load_device_code(const DeviceCodeSources& sources) {
  Loaded& state = loaded();
  if (!state.attempted) {
    state.attempted = true;
    state.problem = load(sources);
    cdplab::detail::on_device_report_reset(&start_device_run);
  }
  return state.problem;
}

const std::string& device_code_problem() { return loaded().problem; }

DeviceRuntimeCounts device_runtime_counts() {
  if (loaded().library == nullptr) throw_not_loaded();
  DeviceRuntimeCounts counts{};
  CDPLAB_CHECK(cudaMemcpy(&counts, hook_field<DeviceRuntimeCounts>(offsetof(HookState, counts)), sizeof counts, cudaMemcpyDeviceToHost));
  return counts;
}

namespace {

/// The counts of the check's runs before the current one (start_device_run adds each run's in).
DeviceRuntimeCounts& earlier_runs() {
  static DeviceRuntimeCounts totals{};
  return totals;
}

void add_counts(DeviceRuntimeCounts& to, const DeviceRuntimeCounts& from) {
  static_assert(sizeof(DeviceRuntimeCounts) % sizeof(unsigned long long) == 0, "every field is a 64-bit count");
  constexpr std::size_t kFields = sizeof(DeviceRuntimeCounts) / sizeof(unsigned long long);
  unsigned long long to_fields[kFields];
  unsigned long long from_fields[kFields];
  std::memcpy(to_fields, &to, sizeof to);
  std::memcpy(from_fields, &from, sizeof from);
  for (std::size_t i = 0; i < kFields; ++i) to_fields[i] += from_fields[i];
  std::memcpy(&to, to_fields, sizeof to);
}

/// The launch-tree edges of the check's runs before the current one, by (caller, child).
std::map<std::pair<unsigned long long, unsigned long long>, LaunchEdgeCounts>& earlier_edges() {
  static std::map<std::pair<unsigned long long, unsigned long long>, LaunchEdgeCounts> edges;
  return edges;
}

/// Adds the current run's edges (device memory) to `into`.
void add_run_edges(std::map<std::pair<unsigned long long, unsigned long long>, LaunchEdgeCounts>& into) {
  std::vector<LaunchEdgeCounts> slots(kLaunchEdgeSlots);
  CDPLAB_CHECK(cudaMemcpy(slots.data(), hook_field<LaunchEdgeCounts>(offsetof(HookState, edges)), slots.size() * sizeof(LaunchEdgeCounts),
                          cudaMemcpyDeviceToHost));
  for (const auto& slot : slots) {
    if (slot.key == 0) continue;
    LaunchEdgeCounts& total = into[{slot.caller, slot.child}];
    total.caller = slot.caller;
    total.child = slot.child;
    total.grids += slot.grids;
    for (int i = 0; i < 4; ++i) total.into[i] += slot.into[i];
    total.failed += slot.failed;
  }
}

/// The device address of each kernel of the instrumented PTX, read once by running the kernel the
/// instrumentation added (ptx_instrument.h).
void read_kernel_addresses() {
  Loaded& state = loaded();
  if (state.kernel_addresses_read || state.kernel_names.empty()) return;
  cudaKernel_t kernel = nullptr;
  CDPLAB_CHECK(cudaLibraryGetKernel(&kernel, state.library, (state.tag + "kernel_addresses").c_str()));
  unsigned long long* out = nullptr;
  CDPLAB_CHECK(cudaMalloc(&out, state.kernel_names.size() * sizeof(unsigned long long)));
  std::vector<unsigned long long> addresses(state.kernel_names.size());
  void* arguments[] = {&out};
  cudaError_t status = cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(1), dim3(1), arguments, 0, nullptr);
  if (status == cudaSuccess)
    status = cudaMemcpy(addresses.data(), out, addresses.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
  (void)cudaFree(out);
  CDPLAB_CHECK(status);
  for (std::size_t i = 0; i < addresses.size(); ++i) state.kernel_at.emplace(addresses[i], state.kernel_names[i]);
  state.kernel_addresses_read = true;  // only once read: a failed try is tried again at the next check
}

}  // namespace

namespace {

/// One run's records, as read from the hooks' state.
struct RunRecords {
  std::vector<GridRecord> grids;  ///< the claimed slots
  std::vector<LaunchRecord> launches;
  unsigned long long left_out = 0;
  unsigned long long launches_handed_out = 0;
  unsigned long long launches_unindexed = 0;
};

struct TimelineCounters {  // the head of GridTimelineRecords
  unsigned long long grids_recorded, grids_left_out, launches_recorded, launches_unindexed;
};

TimelineCounters timeline_counters() {
  TimelineCounters counters{};
  CDPLAB_CHECK(cudaMemcpy(&counters, hook_field<char>(offsetof(HookState, timeline)), sizeof counters,
                          cudaMemcpyDeviceToHost));
  return counters;
}

RunRecords read_run_records(const TimelineCounters& counters) {
  RunRecords run;
  run.left_out = counters.grids_left_out;
  run.launches_handed_out = counters.launches_recorded;
  run.launches_unindexed = counters.launches_unindexed;
  if (counters.grids_recorded == 0 && counters.grids_left_out == 0) return run;
  std::vector<GridRecord> slots(kTimelineGrids);
  CDPLAB_CHECK(cudaMemcpy(slots.data(), hook_field<char>(offsetof(HookState, timeline.grids)), slots.size() * sizeof(GridRecord),
                          cudaMemcpyDeviceToHost));
  for (const auto& slot : slots)
    if (slot.grid != 0) run.grids.push_back(slot);
  run.launches.resize(std::min<unsigned long long>(counters.launches_recorded, kTimelineLaunches));
  if (!run.launches.empty())
    CDPLAB_CHECK(cudaMemcpy(run.launches.data(), hook_field<char>(offsetof(HookState, timeline.launches)),
                            run.launches.size() * sizeof(LaunchRecord), cudaMemcpyDeviceToHost));
  return run;
}

/// The check's last run that recorded grids, and how many did (start_device_run keeps them).
struct KeptTimeline {
  RunRecords last;
  int runs = 0;
};
KeptTimeline& kept_timeline() {
  static KeptTimeline kept;
  return kept;
}

void clear_timeline_records() {
  if (cudaMemset(hook_field<char>(offsetof(HookState, timeline)), 0, sizeof(GridTimelineRecords)) != cudaSuccess)
    (void)cudaGetLastError();
}

/// Keeps the finished run's records if it recorded grids, and clears whatever it recorded for the
/// next run (a speed check turns recording off after runs that recorded: their records must not
/// reach the next check's timeline). A process whose suite records nothing reads nothing here.
void keep_finished_run_timeline() {
  if (!grid_recording_asked()) return;
  const auto counters = timeline_counters();
  if (counters.grids_recorded == 0 && counters.grids_left_out == 0 && counters.launches_recorded == 0) return;
  auto run = read_run_records(counters);
  if (!run.grids.empty()) {
    kept_timeline().last = std::move(run);
    ++kept_timeline().runs;
  }
  clear_timeline_records();
}

}  // namespace

void start_check_counts() noexcept {
  earlier_runs() = DeviceRuntimeCounts{};
  earlier_edges().clear();
  kept_timeline() = KeptTimeline{};
}

std::vector<LaunchEdge> check_launch_edges() {
  Loaded& state = loaded();
  if (state.library == nullptr) throw_not_loaded();
  auto edges = earlier_edges();
  add_run_edges(edges);
  if (!edges.empty()) read_kernel_addresses();
  std::vector<LaunchEdge> named;
  for (const auto& [key, counts] : edges) {
    LaunchEdge edge{"", "", counts};
    // The instrumentation folds a caller's index into 8 bits: past 254 functions, 254 names none.
    const bool folded = counts.caller == 254 && state.functions.size() > 255;
    if (counts.caller < state.functions.size() && !folded) edge.caller = state.functions[counts.caller];
    const auto child = state.kernel_at.find(counts.child);
    if (child != state.kernel_at.end()) edge.child = child->second;
    named.push_back(edge);
  }
  return named;
}

RecordedTimeline check_grid_timeline() {
  Loaded& state = loaded();
  if (state.library == nullptr) throw_not_loaded();
  RecordedTimeline timeline;
  if (!grid_recording_asked()) return timeline;  // nothing recorded: runs 0
  RunRecords current = read_run_records(timeline_counters());
  const KeptTimeline& kept = kept_timeline();
  const bool current_has_grids = !current.grids.empty();
  const RunRecords& run = current_has_grids ? current : kept.last;
  timeline.runs = kept.runs + (current_has_grids ? 1 : 0);
  timeline.run = timeline.runs;
  timeline.left_out = run.left_out;
  timeline.every_launch_recorded =
      run.launches_handed_out <= static_cast<unsigned long long>(kTimelineLaunches) && run.launches_unindexed == 0;
  // A launch whose child the hooks could not tell may have made a grid of the exercise that then
  // looks launched by the host; a child of the grader's or the kit's libraries (key 0) makes none.
  for (const auto& launch : run.launches) {
    timeline.failed_launches += launch.taken == 2 ? 1 : 0;
    timeline.every_launch_recorded = timeline.every_launch_recorded && launch.child != 0;
  }
  std::unordered_map<unsigned long long, std::string> kernel_of;  // grid id -> kernel
  for (const auto& g : run.grids)
    if (g.kernel >= 1 && g.kernel <= state.kernel_names.size())
      kernel_of[g.grid ^ kGridIdMark] = state.kernel_names[g.kernel - 1];
  for (const auto& g : run.grids) {
    RecordedGrid grid;
    grid.id = g.grid ^ kGridIdMark;
    if (g.kernel >= 1 && g.kernel <= state.kernel_names.size()) grid.kernel = state.kernel_names[g.kernel - 1];
    grid.blocks = g.blocks;
    grid.start = ~g.not_start;
    grid.end = g.end;
    if (g.launch >= 1 && g.launch <= run.launches.size()) {
      const auto& launch = run.launches[g.launch - 1];
      grid.from_device = true;
      grid.parent = launch.parent_grid;
      const auto parent = kernel_of.find(launch.parent_grid);
      if (parent != kernel_of.end()) grid.parent_kernel = parent->second;
      grid.parent_block = launch.parent_block;
      grid.parent_thread = launch.parent_thread;
      grid.stream = static_cast<int>(launch.stream);
      grid.stream_handle = launch.stream_handle;
      grid.launched = launch.launched;
    }
    timeline.grids.push_back(grid);
  }
  std::sort(timeline.grids.begin(), timeline.grids.end(),
            [](const RecordedGrid& a, const RecordedGrid& b) { return a.start < b.start; });
  return timeline;
}

DeviceRuntimeCounts check_device_runtime_counts() {
  DeviceRuntimeCounts counts = device_runtime_counts();
  add_counts(counts, earlier_runs());
  return counts;
}

void start_device_run() noexcept {
  if (loaded().library == nullptr) return;
  try {
    DeviceRuntimeCounts finished{};
    const bool read = cudaMemcpy(&finished, hook_field<DeviceRuntimeCounts>(offsetof(HookState, counts)), sizeof finished,
                                 cudaMemcpyDeviceToHost) == cudaSuccess;
    if (read) add_counts(earlier_runs(), finished);
    const bool launched = !read || finished.launches > 0;
    if (launched) add_run_edges(earlier_edges());
    keep_finished_run_timeline();
    // The tables of owed errors and destroyed streams are cleared only where the finished run
    // wrote them (most runs make no such call, and skip the two memsets).
    const bool owed = !read || finished.launches_injected > 0;
    const bool streams = !read || finished.streams_created > 0 || finished.streams_destroyed > 0;
    const DeviceRuntimeCounts zero{};
    if (cudaMemcpy(hook_field<DeviceRuntimeCounts>(offsetof(HookState, counts)), &zero, sizeof zero, cudaMemcpyHostToDevice) != cudaSuccess ||
        (owed && cudaMemset(hook_field<unsigned long long>(offsetof(HookState, owed)), 0, 64 * sizeof(unsigned long long)) != cudaSuccess) ||
        (streams && cudaMemset(hook_field<unsigned long long>(offsetof(HookState, destroyed)), 0,
                               kDestroyedStreamSlots * sizeof(unsigned long long)) != cudaSuccess) ||
        (launched && cudaMemset(hook_field<LaunchEdgeCounts>(offsetof(HookState, edges)), 0, kLaunchEdgeSlots * sizeof(LaunchEdgeCounts)) !=
                         cudaSuccess) ||
        (launched && cudaMemset(hook_field<unsigned long long>(offsetof(HookState, pending)), 0,
                                kPendingLaunchSlots * sizeof(unsigned long long)) != cudaSuccess))
      (void)cudaGetLastError();
  } catch (...) {
    (void)cudaGetLastError();
  }
}

void write_exercise_variable(const std::string& name, std::size_t offset, const std::string& bytes) {
  if (loaded().exercise_variables.count(name) == 0) {
    throw CudaError(cudaErrorInvalidSymbol, "a host part wrote " + demangled(name) +
                                                ", which is no __constant__ or __device__ variable of the exercise file");
  }
  if (loaded().library == nullptr) throw_not_loaded();
  std::size_t size = 0;
  char* address = static_cast<char*>(library_global(name, &size));
  if (offset > size || bytes.size() > size - offset) {
    throw CudaError(cudaErrorInvalidValue, "a host part wrote " + std::to_string(bytes.size()) + " bytes at offset " +
                                               std::to_string(offset) + " of " + demangled(name) + " (" +
                                               std::to_string(size) + " bytes)");
  }
  CDPLAB_CHECK(cudaMemcpy(address + offset, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
}

namespace {

/// What the host armed (the device's copy is written whole each time).
DeviceRuntimeControl& armed() {
  static DeviceRuntimeControl control = kNothingArmed;
  return control;
}

void set_control(const DeviceRuntimeControl& control) {
  CDPLAB_CHECK(cudaMemcpy(hook_field<DeviceRuntimeControl>(offsetof(HookState, control)), &control, sizeof control,
                          cudaMemcpyHostToDevice));
  armed() = control;
}

void arm(long long DeviceRuntimeControl::*field, long long index) {
  if (loaded().library == nullptr || loaded().hook_state == nullptr) {
    if (index < 0) return;  // nothing armed where nothing is loaded
    throw_not_loaded();
  }
  DeviceRuntimeControl control = armed();
  control.*field = index;
  set_control(control);
}

}  // namespace

void fail_device_launch(long long index) { arm(&DeviceRuntimeControl::fail_launch, index); }

void fail_device_allocation(long long index) { arm(&DeviceRuntimeControl::fail_allocation, index); }

void set_device_perturbations(unsigned long long launch_delay_ns, unsigned long long block_delay_ns,
                              unsigned long long perturbed_launches, bool record_grids) {
  if (loaded().library == nullptr || loaded().hook_state == nullptr) return;  // nothing to perturb
  DeviceRuntimeControl control = armed();
  control.launch_delay_ns = launch_delay_ns;
  control.block_delay_ns = block_delay_ns;
  control.perturbed_launches = perturbed_launches;
  control.record_grids = record_grids ? 1 : 0;
  std::random_device drawn;
  control.block_seed = (static_cast<unsigned long long>(drawn()) << 32) ^ drawn();
  set_control(control);
}

}  // namespace cdplab::harness

// ----- the runtime's entry points, wrapped at link time (-Wl,--wrap=NAME) ----------------------
// nvcc's launch stubs (CUDA 13) ask __cudaGetKernel for the handle of the kernel behind a host
// function, once, and launch through it; older stubs call cudaLaunchKernel with the host function.

using cdplab::harness::redirected_kernel;
using cdplab::harness::redirected_variable;

extern "C" {
cudaError_t __real___cudaGetKernel(cudaKernel_t* kernel, const void* function);
cudaError_t __real_cudaLaunchKernel(const void* function, dim3 grid, dim3 block, void** args, size_t shared,
                                    cudaStream_t stream);
cudaError_t __real_cudaMemcpyToSymbol(const void* symbol, const void* source, size_t count, size_t offset,
                                      cudaMemcpyKind kind);
cudaError_t __real_cudaMemcpyFromSymbol(void* destination, const void* symbol, size_t count, size_t offset,
                                        cudaMemcpyKind kind);
cudaError_t __real_cudaMemcpyToSymbolAsync(const void* symbol, const void* source, size_t count, size_t offset,
                                           cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t __real_cudaMemcpyFromSymbolAsync(void* destination, const void* symbol, size_t count, size_t offset,
                                             cudaMemcpyKind kind, cudaStream_t stream);

cudaError_t __wrap___cudaGetKernel(cudaKernel_t* kernel, const void* function) {
  if (redirected_kernel(function, kernel)) return cudaSuccess;
  return __real___cudaGetKernel(kernel, function);
}

cudaError_t __wrap_cudaLaunchKernel(const void* function, dim3 grid, dim3 block, void** args, size_t shared,
                                    cudaStream_t stream) {
  cudaKernel_t kernel = nullptr;
  if (redirected_kernel(function, &kernel))
    return __real_cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, args, shared, stream);
  return __real_cudaLaunchKernel(function, grid, block, args, shared, stream);
}

cudaError_t __wrap_cudaMemcpyToSymbol(const void* symbol, const void* source, size_t count, size_t offset,
                                      cudaMemcpyKind kind) {
  if (char* address = redirected_variable(symbol, offset, count))
    return cudaMemcpy(address, source, count, kind == cudaMemcpyDeviceToDevice ? kind : cudaMemcpyDefault);
  return __real_cudaMemcpyToSymbol(symbol, source, count, offset, kind);
}

cudaError_t __wrap_cudaMemcpyFromSymbol(void* destination, const void* symbol, size_t count, size_t offset,
                                        cudaMemcpyKind kind) {
  if (char* address = redirected_variable(symbol, offset, count))
    return cudaMemcpy(destination, address, count, kind == cudaMemcpyDeviceToDevice ? kind : cudaMemcpyDefault);
  return __real_cudaMemcpyFromSymbol(destination, symbol, count, offset, kind);
}

cudaError_t __wrap_cudaMemcpyToSymbolAsync(const void* symbol, const void* source, size_t count, size_t offset,
                                           cudaMemcpyKind kind, cudaStream_t stream) {
  if (char* address = redirected_variable(symbol, offset, count))
    return cudaMemcpyAsync(address, source, count, kind == cudaMemcpyDeviceToDevice ? kind : cudaMemcpyDefault, stream);
  return __real_cudaMemcpyToSymbolAsync(symbol, source, count, offset, kind, stream);
}

cudaError_t __wrap_cudaMemcpyFromSymbolAsync(void* destination, const void* symbol, size_t count, size_t offset,
                                             cudaMemcpyKind kind, cudaStream_t stream) {
  if (char* address = redirected_variable(symbol, offset, count))
    return cudaMemcpyAsync(destination, address, count, kind == cudaMemcpyDeviceToDevice ? kind : cudaMemcpyDefault,
                           stream);
  return __real_cudaMemcpyFromSymbolAsync(destination, symbol, count, offset, kind, stream);
}
}  // extern "C"
