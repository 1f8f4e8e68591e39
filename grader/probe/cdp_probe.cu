// cdp-probe: measures, on the GPU present, the CDP2 facts the lessons state, and prints them as a
// Markdown table (fact | measured) under the device name and the CUDA driver and runtime versions.
//
// Usage: cdp-probe [--timeout S]
//
// Every measurement runs in a process of its own (an "attempt"), forked before this process
// makes any CUDA call. The attempt does the CUDA work and sends its rows back through a pipe;
// when it has not finished after S seconds (default 10), the probe kills it and reports the
// attempt as stalled. The host cannot cancel a grid that never ends, but it can end the process
// that owns it. The attempt most likely to stall (launches past the pending-launch pool into
// named streams) runs last, so a stuck GPU cannot spoil the other measurements.
//
// Exit status: 0 when every attempt finished (a stall of a launch-pool attempt is a finding, not
// an error), 1 when an attempt failed or another one stalled, 2 on a wrong command line,
// 77 when there is no usable GPU.
#include "cdplab/bench.h"
#include "cdplab/check.h"
#include "launch_kernels.cuh"

#include <cuda_runtime.h>

#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace {

using cdplab::probe::code_text;
using cdplab::probe::fan_parent;
using cdplab::probe::histogram_text;
using cdplab::probe::idle_parent;
using cdplab::probe::kCodeSlots;
using cdplab::probe::overflow_parent;
using cdplab::probe::OverflowCounters;
using cdplab::probe::serial_parent;
using cdplab::probe::StreamKind;
using cdplab::probe::stream_label;

// ---------------------------------------------------------------------------------------------
// What is measured, and with how much.

constexpr int kOverflowLaunches = 3000;           // children launched past the default pool
constexpr int kOverflowBlocks = 12;               // 12 blocks of 250 threads, one launch each
constexpr int kOverflowThreads = kOverflowLaunches / kOverflowBlocks;
constexpr unsigned long long kHoldCapNs = 200'000'000;  // a held child waits at most 0.2 s
constexpr int kSerialChildren = 1000;             // one thread launching children one by one
constexpr int kFanThreads = 1024;                 // one block; each thread launches one child
constexpr int kWarmupRuns = 2;
constexpr int kTimedRuns = 7;
constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr int kMaxHeapChunks = 4096;              // 1 MiB device allocations tried at most
constexpr int kSyncDepthAsked = 4;
constexpr unsigned kChildThreads = 1;             // every child of the probe is one thread

const char* const kUsage =
    "usage: cdp-probe [--timeout S]\n"
    "  --timeout S  seconds each attempt may run before it is killed and reported as stalled\n"
    "               (default 10)\n"
    "Measures the CDP2 facts the workbook states on the GPU present and prints them as a\n"
    "Markdown table. Exit status: 0 done, 1 an attempt failed, 2 wrong command line, 77 no GPU.\n";

// ---------------------------------------------------------------------------------------------
// Device code (the launch-cost kernels and held children are in launch_kernels.cuh).

/// What device-side allocation returns past the heap.
struct HeapResults {
  int big_code;       ///< device cudaMalloc of more than the heap: its result
  int big_null;       ///< ... and whether the pointer came back null
  int malloc_null;    ///< device malloc of more than the heap returned null
  int chunks;         ///< 1 MiB device cudaMallocs that succeeded one after another
  int chunk_code;     ///< the result of the first one that did not (cudaSuccess: none failed)
};

__global__ void heap_probe(std::size_t beyond, void** chunks, int max_chunks, HeapResults* out) {
  void* big = nullptr;
  const cudaError_t big_code = cudaMalloc(&big, beyond);
  out->big_code = static_cast<int>(big_code);
  out->big_null = big == nullptr;
  if (big != nullptr) (void)cudaFree(big);

  void* plain = malloc(beyond);
  out->malloc_null = plain == nullptr;
  if (plain != nullptr) free(plain);

  int count = 0;
  cudaError_t code = cudaSuccess;
  while (count < max_chunks) {
    void* chunk = nullptr;
    code = cudaMalloc(&chunk, kMiB);
    if (code != cudaSuccess || chunk == nullptr) break;
    chunks[count++] = chunk;
  }
  out->chunks = count;
  out->chunk_code = static_cast<int>(code);
  for (int c = 0; c < count; ++c) (void)cudaFree(chunks[c]);
}

// ---------------------------------------------------------------------------------------------
// Attempt side: what a forked process does, and how it reports.

/// Writes the lines of an attempt into the pipe: "kind<TAB>text[<TAB>text]".
class Reporter {
 public:
  explicit Reporter(int fd) : fd_(fd) {}
  void device(const std::string& text) { send({"device", text}); }
  void no_gpu(const std::string& why) { send({"nogpu", why}); }
  void row(const std::string& fact, const std::string& measured) { send({"row", fact, measured}); }
  void error(const std::string& text) { send({"error", text}); }

 private:
  void send(const std::vector<std::string>& fields) {
    std::string line;
    for (std::size_t f = 0; f < fields.size(); ++f) {
      if (f > 0) line += '\t';
      for (char c : fields[f]) line += (c == '\t' || c == '\n' || c == '\r') ? ' ' : c;
    }
    line += '\n';
    const char* data = line.data();
    std::size_t left = line.size();
    while (left > 0) {
      const ssize_t written = write(fd_, data, left);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) return;  // the probe is gone; nobody to tell
      data += written;
      left -= static_cast<std::size_t>(written);
    }
  }
  int fd_;
};

std::string code_with_message(cudaError_t code) {
  return code_text(static_cast<int>(code)) + ": \"" + cudaGetErrorString(code) + "\"";
}

std::string bytes_text(std::size_t bytes) {
  char text[64];
  if (bytes % kMiB == 0) {
    std::snprintf(text, sizeof text, "%zu MiB", bytes / kMiB);
  } else {
    std::snprintf(text, sizeof text, "%.2f MiB (%zu bytes)", static_cast<double>(bytes) / kMiB, bytes);
  }
  return text;
}

/// Device memory that is freed when the attempt leaves its scope (or its process ends).
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    CDPLAB_CHECK(cudaMalloc(&data_, count * sizeof(T)));
    CDPLAB_CHECK(cudaMemset(data_, 0, count * sizeof(T)));
  }
  ~DeviceBuffer() { (void)cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return data_; }
  void zero() { CDPLAB_CHECK(cudaMemset(data_, 0, count_ * sizeof(T))); }
  std::vector<T> read() const {
    std::vector<T> host(count_);
    CDPLAB_CHECK(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* data_ = nullptr;
  std::size_t count_;
};

/// The device, and the limits the device runtime starts with.
int attempt_limits(Reporter& out) {
  const cdplab::bench::DeviceLine line = cdplab::bench::describe_device();
  if (!line.available) {
    out.no_gpu(line.text);
    return 0;
  }
  out.device(line.text);

  std::size_t pending = 0;
  CDPLAB_CHECK(cudaDeviceGetLimit(&pending, cudaLimitDevRuntimePendingLaunchCount));
  out.row("default `cudaLimitDevRuntimePendingLaunchCount`", std::to_string(pending));

  // Whether the limit exists on this architecture is the finding, so the results are reported,
  // not checked.
  std::size_t depth = 0;
  const cudaError_t get_code = cudaDeviceGetLimit(&depth, cudaLimitDevRuntimeSyncDepth);
  (void)cudaGetLastError();
  out.row("`cudaDeviceGetLimit(cudaLimitDevRuntimeSyncDepth)`",
          get_code == cudaSuccess ? "cudaSuccess, value " + std::to_string(depth) : code_with_message(get_code));
  const cudaError_t set_code = cudaDeviceSetLimit(cudaLimitDevRuntimeSyncDepth, kSyncDepthAsked);
  (void)cudaGetLastError();
  out.row("`cudaDeviceSetLimit(cudaLimitDevRuntimeSyncDepth, " + std::to_string(kSyncDepthAsked) + ")`",
          code_with_message(set_code));
  return 0;
}

/// The default device heap, and what device-side allocation beyond it returns.
int attempt_heap(Reporter& out) {
  std::size_t heap = 0;
  CDPLAB_CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  out.row("default device heap (`cudaLimitMallocHeapSize`)", bytes_text(heap));

  const std::size_t beyond = heap + kMiB;
  const int max_chunks = static_cast<int>(std::min<std::size_t>(kMaxHeapChunks, 2 * heap / kMiB + 1));
  DeviceBuffer<void*> chunks(static_cast<std::size_t>(max_chunks));
  DeviceBuffer<HeapResults> results(1);
  heap_probe<<<1, 1>>>(beyond, chunks.get(), max_chunks, results.get());
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());
  const HeapResults r = results.read()[0];

  out.row("device `cudaMalloc` of heap + 1 MiB (" + bytes_text(beyond) + ")",
          "returns " + code_text(r.big_code) + (r.big_null ? ", pointer null" : ", pointer not null"));
  out.row("device `malloc` of heap + 1 MiB", r.malloc_null ? "returns NULL" : "returns a pointer");
  const std::string chunks_found = std::to_string(r.chunks) + " succeeded (" + std::to_string(r.chunks) + " MiB)";
  out.row("device `cudaMalloc` of 1 MiB, again and again",
          r.chunk_code == cudaSuccess ? chunks_found + ", all that were tried"
                                      : chunks_found + ", then " + code_text(r.chunk_code));
  return 0;
}

/// Times one parent grid: the median of kTimedRuns after kWarmupRuns.
template <typename Launch>
double median_parent_ms(Launch&& launch) {
  return cdplab::probe::median_parent_ms(launch, kWarmupRuns, kTimedRuns);
}

/// "2.41 us per child (parent 2.512 ms, empty parent 0.004 ms; median of 7)", or the failures.
std::string cost_text(double parent_ms, double empty_ms, int children, const std::vector<int>& codes) {
  const int failed = children * (kWarmupRuns + kTimedRuns) - codes[cudaSuccess];
  if (failed != 0) return "launches failed: " + histogram_text(codes.data());
  char text[160];
  std::snprintf(text, sizeof text, "%.2f us per child (parent %.3f ms, empty parent %.3f ms; median of %d runs)",
                (parent_ms - empty_ms) * 1000.0 / children, parent_ms, empty_ms, kTimedRuns);
  return text;
}

/// What a device-side launch costs, per stream kind.
int attempt_costs(Reporter& out) {
  DeviceBuffer<int> codes(kCodeSlots);

  const double empty_one = median_parent_ms([] { idle_parent<<<1, 1>>>(); });
  const double serial =
      median_parent_ms([&] { serial_parent<<<1, 1>>>(kSerialChildren, kChildThreads, codes.get()); });
  out.row("launch cost: one thread, " + std::to_string(kSerialChildren) + " children one after another, NULL stream",
          cost_text(serial, empty_one, kSerialChildren, codes.read()));

  const double empty_fan = median_parent_ms([] { idle_parent<<<1, kFanThreads>>>(); });
  for (StreamKind kind : {StreamKind::kNull, StreamKind::kNamed, StreamKind::kFireAndForget, StreamKind::kTail}) {
    codes.zero();
    const double fan = median_parent_ms([&] { fan_parent<<<1, kFanThreads>>>(kind, kChildThreads, codes.get()); });
    out.row("launch cost: " + std::to_string(kFanThreads) + " threads (one block), one child each, into " +
                stream_label(kind),
            cost_text(fan, empty_fan, kFanThreads, codes.read()));
  }
  return 0;
}

/// kOverflowLaunches children from one grid, with the default pool, into streams of `kind`.
int attempt_overflow(Reporter& out, StreamKind kind) {
  std::size_t pending = 0;
  CDPLAB_CHECK(cudaDeviceGetLimit(&pending, cudaLimitDevRuntimePendingLaunchCount));
  DeviceBuffer<OverflowCounters> counters(1);
  overflow_parent<<<kOverflowBlocks, kOverflowThreads>>>(kind, kOverflowLaunches, kChildThreads, kHoldCapNs,
                                                         counters.get());
  CDPLAB_CHECK(cudaGetLastError());
  // A fault here is a finding: report it, then stop (the context is unusable after it).
  const cudaError_t synced = cudaDeviceSynchronize();
  const std::string fact = std::to_string(kOverflowLaunches) + " launches from one grid (pool " +
                           std::to_string(pending) + ") into " + stream_label(kind);
  if (synced != cudaSuccess) {
    out.row(fact, "the parent grid ended with " + code_with_message(synced));
    return 0;
  }
  const OverflowCounters c = counters.read()[0];
  std::string measured;
  if (kind == StreamKind::kNamed) measured = "stream creation: " + histogram_text(c.create_codes) + "; ";
  measured += "launches: " + histogram_text(c.launch_codes) + "; children that ran: " + std::to_string(c.ran);
  out.row(fact, measured);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Probe side: runs each attempt in a child process with a deadline.

struct Attempt {
  const char* name;
  bool may_stall;  ///< a stall is a finding (launches past the pool), not a failure of the probe
  int (*body)(Reporter&);
};

struct Outcome {
  enum class Status { kFinished, kFailed, kStalled } status = Status::kFinished;
  std::vector<std::vector<std::string>> lines;  ///< the fields of every line the attempt sent
  std::string detail;                           ///< how it ended, when not kFinished
};

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields(1);
  for (char c : line) {
    if (c == '\t') fields.emplace_back();
    else fields.back() += c;
  }
  return fields;
}

/// Runs one attempt in a forked process; kills it once `timeout_s` have passed.
Outcome run_isolated(const Attempt& attempt, double timeout_s) {
  Outcome outcome;
  int fds[2];
  if (pipe(fds) != 0) {
    outcome.status = Outcome::Status::kFailed;
    outcome.detail = std::string("pipe: ") + std::strerror(errno);
    return outcome;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    outcome.status = Outcome::Status::kFailed;
    outcome.detail = std::string("fork: ") + std::strerror(errno);
    return outcome;
  }
  if (pid == 0) {  // the attempt: the only process that touches the GPU
    close(fds[0]);
    Reporter out(fds[1]);
    int status = 1;
    try {
      status = attempt.body(out);
    } catch (const std::exception& error) {
      out.error(error.what());
    }
    close(fds[1]);
    _exit(status);  // no atexit handlers of the probe in the attempt's process
  }

  close(fds[1]);
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  const auto ms_left = [&] {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return static_cast<int>(std::max<long long>(0, left));
  };
  std::string received;
  bool eof = false;
  while (!eof && ms_left() > 0) {
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, ms_left());
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    char buffer[4096];
    const ssize_t got = read(fds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) eof = true;
    else received.append(buffer, static_cast<std::size_t>(got));
  }
  close(fds[0]);

  // The pipe may close before the process is gone (a stalled teardown), so wait with the deadline too.
  int wait_status = 0;
  pid_t done = 0;
  while ((done = waitpid(pid, &wait_status, WNOHANG)) == 0 && ms_left() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &wait_status, 0);
    outcome.status = Outcome::Status::kStalled;
    char text[128];
    std::snprintf(text, sizeof text, "stalled: no result within %g s; the probe killed it", timeout_s);
    outcome.detail = text;
  } else if (WIFSIGNALED(wait_status)) {
    outcome.status = Outcome::Status::kFailed;
    outcome.detail = std::string("crashed: ") + strsignal(WTERMSIG(wait_status));
  } else if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) != 0) {
    outcome.status = Outcome::Status::kFailed;
    outcome.detail = "failed: exit status " + std::to_string(WEXITSTATUS(wait_status));
  }

  std::size_t begin = 0;
  for (std::size_t end; (end = received.find('\n', begin)) != std::string::npos; begin = end + 1) {
    outcome.lines.push_back(split_tabs(received.substr(begin, end - begin)));
  }
  return outcome;
}

/// A cell of the Markdown table: a '|' would end it early.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

void print_row(const std::string& fact, const std::string& measured) {
  std::printf("| %s | %s |\n", cell(fact).c_str(), cell(measured).c_str());
}

/// Prints what an attempt found; returns false when it failed (or stalled where it must not).
bool print_outcome(const Attempt& attempt, const Outcome& outcome) {
  for (const auto& fields : outcome.lines) {
    if (fields[0] == "row" && fields.size() == 3) print_row(fields[1], fields[2]);
    if (fields[0] == "error" && fields.size() == 2) print_row(attempt.name, "error: " + fields[1]);
  }
  if (outcome.status != Outcome::Status::kFinished) print_row(attempt.name, outcome.detail);
  if (outcome.status == Outcome::Status::kStalled) return attempt.may_stall;
  return outcome.status == Outcome::Status::kFinished;
}

// Overflow attempts need a plain function per stream kind.
int overflow_null(Reporter& out) { return attempt_overflow(out, StreamKind::kNull); }
int overflow_fire_and_forget(Reporter& out) { return attempt_overflow(out, StreamKind::kFireAndForget); }
int overflow_named(Reporter& out) { return attempt_overflow(out, StreamKind::kNamed); }

bool parse_timeout(const char* text, double& seconds) {
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !(value > 0.0) || value > 3600.0) return false;
  seconds = value;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // Unbuffered: nothing is lost or printed twice when an attempt is killed, and rows appear as
  // they are measured. Set before the first fork.
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::setvbuf(stderr, nullptr, _IONBF, 0);

  double timeout_s = 10.0;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--timeout" && a + 1 < argc && parse_timeout(argv[a + 1], timeout_s)) {
      ++a;
      continue;
    }
    std::fprintf(stderr, "cdp-probe: cannot use '%s'\n%s", arg.c_str(), kUsage);
    return 2;
  }

  // This process makes no CUDA call at all: every attempt forks from a process without a CUDA context.
  const Attempt limits{"device and limits", false, attempt_limits};
  const Outcome first = run_isolated(limits, timeout_s);
  for (const auto& fields : first.lines) {
    if (fields[0] == "nogpu" && fields.size() == 2) {
      std::fprintf(stderr, "cdp-probe: no usable GPU (%s); nothing to measure\n", fields[1].c_str());
      return cdplab::bench::kNoGpuExitCode;
    }
  }
  bool device_named = false;
  for (const auto& fields : first.lines) {
    if (fields[0] == "device" && fields.size() == 2) {
      std::printf("%s\n\n", fields[1].c_str());
      device_named = true;
    }
  }
  if (!device_named) std::printf("device: unknown (the first attempt did not name it)\n\n");
  std::printf("| fact | measured |\n| --- | --- |\n");
  bool all_ok = print_outcome(limits, first);

  // The attempt that may stall the GPU comes last.
  const Attempt rest[] = {
      {"device heap", false, attempt_heap},
      {"launch costs", false, attempt_costs},
      {"launches past the pool, NULL stream", true, overflow_null},
      {"launches past the pool, fire-and-forget", true, overflow_fire_and_forget},
      {"launches past the pool, named streams", true, overflow_named},
  };
  for (const Attempt& attempt : rest) {
    std::fprintf(stderr, "cdp-probe: %s ...\n", attempt.name);
    all_ok = print_outcome(attempt, run_isolated(attempt, timeout_s)) && all_ok;
  }
  std::printf("\nEach row comes from its own process; a stalled one was killed after %g s.\n", timeout_s);
  return all_ok ? 0 : 1;
}
