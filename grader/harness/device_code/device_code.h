/// @file device_code.h
/// @brief The exercise's device code, linked and loaded by the check process itself, its
///        device-runtime calls counted, and the host code's launches sent to it.
///
/// A suite executable links the host code of one exercise file (the student's own under `cdplab
/// check`, the workbook's reference under `cdplab grade`). Its kernels never run from there. At
/// start-up the process links the exercise's device code from PTX (the student's, under grading:
/// CDPLAB_DEVICE_PTX) with the grader's hooks (device_runtime_hooks.cu), the starter kit's and the
/// chapter's device libraries and the device runtime, for the GPU present, and loads it
/// (cudaLibraryLoadData). From then on:
///  - a host-side launch of a kernel the host code's exercise file defines runs that kernel of the
///    loaded code, found by its mangled name; so do cudaMemcpyToSymbol and cudaMemcpyFromSymbol on
///    the file's `__constant__` and `__device__` variables and on the starter kit's device report.
///    The link step wraps the runtime's entry points for that (-Wl,--wrap: __cudaGetKernel and
///    cudaLaunchKernel, which nvcc's launch stubs call, and the symbol copies); a kernel or
///    variable the loaded code lacks fails the call with a CudaError that names it;
///  - every device-side launch (with its stream kind), stream creation and destruction, device
///    heap allocation and free, event record and error read of the exercise's device code is
///    counted into memory of the grader's (device_runtime_counts.h), under names drawn per process
///    that no exercise can declare; a launch can be made to fail on purpose.
/// Nothing of this needs the student's host code: under grading, the process that loads the code,
/// launches the kernels, reads every output and counts every call is the grader's.
#pragma once

#include "device_runtime_counts.h"

#include <string>
#include <vector>

namespace cdplab::harness {

/// Where a suite's device code comes from (the build writes the defaults into the suite).
struct DeviceCodeSources {
  std::string host_code_ptx;           ///< PTX of the file whose host code the executable links
  std::string device_code_ptx;         ///< PTX of the device code to load (the student's, graded)
  std::vector<std::string> libraries;  ///< the kit's and chapter's device libraries, libcudadevrt.a
  /// The hooks' tag's 16 digits, shared by every process of one exercise's run (CDPLAB_HOOK_TAG);
  /// empty: this process draws its own.
  std::string hook_tag_digits;
  /// A folder where the first process of the run keeps the linked cubin and the others load it
  /// (CDPLAB_DEVICE_CODE_CACHE): linking the PTX for the GPU is most of a process's start-up.
  /// Only the grader's check processes may write there. Empty: every process links.
  std::string linked_cache;
  /// The suite this process runs ("<chapter>/<stem>"): it records grids where a check of its own is
  /// asked to (grid_recording_asked).
  std::string suite;
};

/// Links and loads the device code once per process, for the GPU in use, and turns the
/// redirection on. Returns why it could not, or an empty string. Call it after the GPU is known
/// to be usable.
const std::string& load_device_code(const DeviceCodeSources& sources);

/// Why the device code is not loaded (empty once it is, or before load_device_code ran).
const std::string& device_code_problem();

/// What the device code asked of the device runtime since the run started.
DeviceRuntimeCounts device_runtime_counts();

/// A run starts: the counts go back to zero (the finished run's are kept for the check's totals),
/// and so do the errors owed and the streams remembered as destroyed; a launch armed to fail
/// (fail_device_launch) stays armed. The starter kit's reset_device_report() calls it (the given
/// host code resets the report before its first launch), and so does the harness before each
/// check. Leaves no CUDA error behind.
void start_device_run() noexcept;

/// A check starts: the totals of check_device_runtime_counts() go back to zero.
void start_check_counts() noexcept;

/// What the device code asked of the device runtime in every run since start_check_counts(), the
/// current one included: what a check's runs left behind (streams, heap memory) shows here even
/// when the host code ran the exercise more than once.
DeviceRuntimeCounts check_device_runtime_counts();

/// One edge of the launch tree: the function of the exercise that made the launches and the kernel
/// they launched (mangled PTX names; empty where the grader could not tell), with their counts.
struct LaunchEdge {
  std::string caller;
  std::string child;
  LaunchEdgeCounts counts;
};

/// The launch tree of every run since start_check_counts(), the current one included: each
/// (caller, child) edge once, with its counts added up.
std::vector<LaunchEdge> check_launch_edges();

/// Writes `bytes` at `offset` into the loaded code's copy of `name`, a `__constant__` or `__device__`
/// variable of the host code's exercise file (what a host part wrote there: host_parts.h). Throws
/// CudaError for any other name, or a write that does not fit.
void write_exercise_variable(const std::string& name, std::size_t offset, const std::string& bytes);

/// Makes the device-side launch with this index in the run (0: its first) fail with
/// cudaErrorLaunchPendingCountExceeded, as a full pending launch pool would; the thread's next
/// cudaGetLastError() reports it. -1: none.
void fail_device_launch(long long index);

/// Makes the device-heap allocation with this index in the run (0: its first; cudaMalloc and
/// malloc in device code, counted together) fail as on a full heap. -1: none.
void fail_device_allocation(long long index);

/// The perturbations of a check (device_runtime_counts.h, DeviceRuntimeControl): each successful
/// device-side launch holds the launching thread `launch_delay_ns`, and each block of the
/// exercise's kernels starts after a time drawn below `block_delay_ns` (a new draw each call).
/// Zeros turn both off (timed runs). Both stop once a run has made `perturbed_launches`
/// device-side launches. With `record_grids`, the grids of the exercise's kernels are recorded for
/// the timeline (check_grid_timeline). Nothing happens where no device code is loaded.
void set_device_perturbations(unsigned long long launch_delay_ns, unsigned long long block_delay_ns,
                              unsigned long long perturbed_launches,
                              bool record_grids);

/// Whether the grids of the exercise's kernels may be recorded for the timeline in this process
/// (the loader then instruments the kernels for it): where CDPLAB_GRID_RECORDING=on (`cdplab check
/// --timeline`, `--timelines`: every check records), or where CDPLAB_RECORDED_CHECKS names checks
/// of this process's suite ("<suite>/<check name>", one a line: a grading names those whose verdict
/// is the order of grids, chapter.toml's `timeline = true`; other suites, and their speed checks,
/// run uninstrumented), or where the suite is marked CDPLAB_SUITE_RECORDS_GRIDS (its verdicts are
/// read from the record). CDPLAB_GRID_RECORDING=off records nothing but those suites' grids (the
/// cost's baseline). Not every check: on an H100 one check (child-grids, "more children than the
/// pool holds") hung once with recording on (it passed in a later run).
bool grid_recording_asked();

/// What CDPLAB_SUITE_RECORDS_GRIDS (harness.h) calls before main(): every check of this
/// process's suite records its grids, whatever the environment asks. Returns true.
bool record_every_check_of_this_suite() noexcept;

/// Whether check `check` of suite `suite` ("<chapter>/<stem>") records its grids.
bool check_records_grids(const std::string& suite, const std::string& check);

/// One grid of the exercise's kernels, as the hooks recorded it (GridRecord, LaunchRecord), named.
struct RecordedGrid {
  unsigned long long id = 0;        ///< %gridid
  std::string kernel;               ///< mangled
  bool from_device = false;         ///< a device-side launch made it (found by its key)
  unsigned long long parent = 0;    ///< the launching grid's %gridid (from_device)
  std::string parent_kernel;        ///< its kernel, mangled; empty where that grid is not recorded
  unsigned long long parent_block = 0;
  unsigned long long parent_thread = 0;  ///< the launching thread in its block (from_device)
  int stream = -1;                  ///< LaunchRecord::stream (from_device)
  unsigned long long stream_handle = 0;
  unsigned long long blocks = 0;
  unsigned long long launched = 0, start = 0, end = 0;  ///< global timer (launched: from_device); end 0: not seen
};

/// When the exercise's grids ran in the check's last run that recorded any (since
/// start_check_counts): `runs` counts the runs that recorded grids.
struct RecordedTimeline {
  std::vector<RecordedGrid> grids;  ///< by start
  unsigned long long left_out = 0;  ///< grids the run could not record
  unsigned long long failed_launches = 0;
  bool every_launch_recorded = true;  ///< false: some grid's launch may not have been found
  int run = 0, runs = 0;
};
RecordedTimeline check_grid_timeline();

}  // namespace cdplab::harness
