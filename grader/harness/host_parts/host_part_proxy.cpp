// The check process's side of the host parts (host_parts.h): a call sent to the student's
// function in its own process, and what that function set applied to the device here.
#include "host_parts.h"

#include "device_code.h"
#include "frames.h"

#include "cdplab/check.h"

#include <cuda_runtime.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace cdplab::harness::host_parts {
namespace {

/// The FIFOs to the host parts' process, opened at the first call and kept.
struct Channel {
  int requests = -1;
  int replies = -1;
};

std::string folder() {
  const char* dir = std::getenv("CDPLAB_HOST_PARTS");
  return dir != nullptr ? dir : "";
}

int call_seconds() {
  const char* text = std::getenv("CDPLAB_HOST_PART_SECONDS");
  const int seconds = text != nullptr ? std::atoi(text) : 0;
  return seconds > 0 ? seconds : 30;
}

[[noreturn]] void fail(const std::string& part, const std::string& why) {
  throw std::runtime_error("host part " + part + " (graded as yours, run in a process of its own): " + why);
}

/// The text of a note the grader left in the host parts' folder ("" when there is none).
std::string note(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char text[4096];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  return n > 0 ? std::string(text, static_cast<std::size_t>(n)) : std::string();
}

Channel& channel(const std::string& part) {
  static Channel open;
  if (open.requests >= 0) return open;
  const std::string dir = folder();
  if (dir.empty()) fail(part, "no process of the student's host parts was started for this check (CDPLAB_HOST_PARTS)");
  // The grader leaves a note there instead when the student's host parts could not be built.
  if (::access((dir + "/problem").c_str(), F_OK) == 0) {
    const std::string problem = note(dir + "/problem");
    fail(part, problem.empty() ? std::string("they could not be built") : problem);
  }
  open.replies = ::open((dir + "/replies").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  // The other process opens the requests as it starts: wait for it a little.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(call_seconds());
  while (open.replies >= 0) {
    open.requests = ::open((dir + "/requests").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (open.requests >= 0 || errno != ENXIO || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (open.requests < 0 || open.replies < 0) fail(part, "the process that runs them did not start");
  // Writes block from here on: a message is written whole.
  ::fcntl(open.requests, F_SETFL, ::fcntl(open.requests, F_GETFL) & ~O_NONBLOCK);
  return open;
}

DeviceState device_state() {
  DeviceState state;
  std::size_t value = 0;
  const auto limit = [&](cudaLimit which) {
    value = 0;
    if (cudaDeviceGetLimit(&value, which) != cudaSuccess) (void)cudaGetLastError();
    return static_cast<std::uint64_t>(value);
  };
  state.pending_launches = limit(cudaLimitDevRuntimePendingLaunchCount);
  state.heap_bytes = limit(cudaLimitMallocHeapSize);
  state.stack_bytes = limit(cudaLimitStackSize);
  state.printf_bytes = limit(cudaLimitPrintfFifoSize);
  // A kernel that used the device heap fixes its size for the process: resizing it then fails.
  const bool resizable =
      cudaDeviceSetLimit(cudaLimitMallocHeapSize, state.heap_bytes + (std::size_t{1} << 20)) == cudaSuccess &&
      cudaDeviceSetLimit(cudaLimitMallocHeapSize, state.heap_bytes) == cudaSuccess;
  (void)cudaGetLastError();
  state.heap_resizable = resizable ? 1 : 0;
  return state;
}

/// The most a host part may set each limit to: far above what any exercise needs (the largest
/// heap of the workbook's checks is about a gigabyte, the largest pool a few tens of thousands),
/// and low enough that one submission cannot take a GPU that others share.
std::uint64_t most_allowed(cudaLimit limit) {
  switch (limit) {
    case cudaLimitMallocHeapSize: return std::uint64_t{16} << 30;
    case cudaLimitDevRuntimePendingLaunchCount: return std::uint64_t{1} << 20;
    case cudaLimitStackSize: return std::uint64_t{64} << 10;
    case cudaLimitPrintfFifoSize: return std::uint64_t{256} << 20;
    default: return 0;
  }
}

const char* limit_name(std::uint32_t limit) {
  switch (static_cast<cudaLimit>(limit)) {
    case cudaLimitDevRuntimePendingLaunchCount: return "cudaLimitDevRuntimePendingLaunchCount";
    case cudaLimitMallocHeapSize: return "cudaLimitMallocHeapSize";
    case cudaLimitStackSize: return "cudaLimitStackSize";
    case cudaLimitPrintfFifoSize: return "cudaLimitPrintfFifoSize";
    default: return nullptr;
  }
}

void apply(const std::string& part, const Effect& effect) {
  if (effect.kind == kLimit) {
    const char* name = limit_name(effect.limit);
    if (name == nullptr) fail(part, "it set a device limit the grader does not apply (" + std::to_string(effect.limit) + ")");
    const std::uint64_t most = most_allowed(static_cast<cudaLimit>(effect.limit));
    if (effect.value > most) {
      throw CudaError(cudaErrorInvalidValue, "host part " + part + " set " + name + " to " +
                                                 std::to_string(effect.value) + ", more than the grader allows (" +
                                                 std::to_string(most) + ")");
    }
    const cudaError_t status = cudaDeviceSetLimit(static_cast<cudaLimit>(effect.limit), effect.value);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      throw CudaError(status, "host part " + part + " set " + name + " to " + std::to_string(effect.value) +
                                  ", which the GPU refused: " + explain_cuda_error(status));
    }
    return;
  }
  if (effect.kind == kSymbol) {
    write_exercise_variable(effect.symbol, effect.offset, effect.bytes);
    return;
  }
  fail(part, "its process sent an effect of unknown kind");
}

}  // namespace

std::string call_encoded(const std::string& part, const std::string& arguments) {
  Channel& pipe = channel(part);
  const std::string request = wire::encode(Request{part, device_state(), arguments});
  if (!write_frame(pipe.requests, request)) fail(part, "the process that runs them ended (it crashed?)");
  const Frame frame = read_frame(pipe.replies, call_seconds() * 1000, kMostMessageBytes);
  switch (frame.status) {
    case Frame::Status::ok: break;
    case Frame::Status::timed_out: {
      const std::string why = note(folder() + "/ended");
      fail(part, why.empty() ? "no answer within " + std::to_string(call_seconds()) + " s (a loop that never ends?)"
                             : "the process that runs them ended before it answered (" + why + ")");
    }
    case Frame::Status::closed:
    case Frame::Status::broken: {
      // The grader notes why that process ended (a limit it reached, a signal), at once when it
      // ends it, a moment after the end otherwise.
      std::string why = note(folder() + "/ended");
      for (int wait = 0; wait < 20 && why.empty(); ++wait) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        why = note(folder() + "/ended");
      }
      fail(part, "the process that runs them ended before it answered (" + (why.empty() ? "it crashed?" : why) + ")");
    }
    case Frame::Status::too_long: fail(part, "its answer is longer than the grader accepts");
  }
  Reply reply;
  try {
    reply = wire::decode<Reply>(frame.bytes);
  } catch (const wire::DecodeError& error) {
    fail(part, std::string("its answer does not decode (") + error.what() + ")");
  }
  if (reply.effects.size() > kMostEffects) fail(part, "it made more changes to the device than the grader applies");
  for (const auto& effect : reply.effects) apply(part, effect);
  if (reply.threw != 0)
    wire::rethrow_encoded(static_cast<wire::ExceptionKind>(reply.exception_kind), reply.exception, "host part " + part);
  return reply.result;
}

}  // namespace cdplab::harness::host_parts
