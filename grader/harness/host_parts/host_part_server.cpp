// The host parts' process (host_parts.h): the student's host parts, linked with this main(), answer
// the check process's calls one after another, in a box of their own without a GPU. The CUDA calls
// a host part may make are answered here from the device's state the check process sent, and what
// the function set is recorded and sent back; the program's own output goes nowhere the grader reads.
//
//   host-parts-server <folder>     reads <folder>/requests, answers into <folder>/replies
#include "frames.h"
#include "host_parts.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

namespace cdplab::harness::host_parts {
namespace {

struct Registered {
  void* function;
  Invoker invoke;
};

std::map<std::string, Registered>& registry() {
  static std::map<std::string, Registered> parts;
  return parts;
}

/// What the running call may read and what it did.
struct Call {
  DeviceState state;
  std::vector<Effect> effects;
  std::size_t effect_bytes = 0;
  cudaError_t last_error = cudaSuccess;  // the runtime's sticky error, as the stand-ins keep it
};

Call& running() {
  static Call call;
  return call;
}

std::uint64_t* limit_field(cudaLimit limit) {
  DeviceState& s = running().state;
  switch (limit) {
    case cudaLimitDevRuntimePendingLaunchCount: return &s.pending_launches;
    case cudaLimitMallocHeapSize: return &s.heap_bytes;
    case cudaLimitStackSize: return &s.stack_bytes;
    case cudaLimitPrintfFifoSize: return &s.printf_bytes;
    default: return nullptr;
  }
}

cudaError_t failed(cudaError_t error) {
  running().last_error = error;
  return error;
}

cudaError_t record_symbol_write(const void* symbol, const void* source, size_t count, size_t offset) {
  Dl_info info{};
  if (dladdr(symbol, &info) == 0 || info.dli_sname == nullptr || info.dli_saddr != symbol) return failed(cudaErrorInvalidSymbol);
  Call& call = running();
  if (count > kMostEffectBytes || call.effect_bytes + count > kMostEffectBytes || call.effects.size() >= kMostEffects)
    return failed(cudaErrorInvalidValue);
  Effect effect;
  effect.kind = kSymbol;
  effect.symbol = info.dli_sname;
  effect.offset = offset;
  effect.bytes.assign(static_cast<const char*>(source), count);
  call.effect_bytes += count;
  call.effects.push_back(std::move(effect));
  return cudaSuccess;
}

Reply answer(const Request& request) {
  Reply reply;
  const auto part = registry().find(request.part);
  if (part == registry().end()) {
    reply.threw = 1;
    const auto error = wire::encode_exception(std::make_exception_ptr(std::runtime_error(
        "the file has no host part " + request.part + " with the parameters the starter gives it")));
    reply.exception_kind = static_cast<std::uint8_t>(error.first);
    reply.exception = error.second;
    return reply;
  }
  running() = Call{request.state, {}, 0, cudaSuccess};
  try {
    reply.result = part->second.invoke(part->second.function, request.arguments);
  } catch (...) {
    reply.threw = 1;
    const auto error = wire::encode_exception(std::current_exception());
    reply.exception_kind = static_cast<std::uint8_t>(error.first);
    reply.exception = error.second;
  }
  reply.effects = std::move(running().effects);
  return reply;
}

}  // namespace

void serve(const char* part, void* function, Invoker invoke) { registry()[part] = Registered{function, invoke}; }

}  // namespace cdplab::harness::host_parts

// ----- the CUDA calls a host part may make, wrapped at link time (-Wl,--wrap=NAME) ------------
using cdplab::harness::host_parts::failed;
using cdplab::harness::host_parts::limit_field;
using cdplab::harness::host_parts::running;

extern "C" {
cudaError_t __wrap_cudaDeviceGetLimit(size_t* value, cudaLimit limit) {
  const std::uint64_t* field = limit_field(limit);
  if (field == nullptr || value == nullptr) return failed(cudaErrorUnsupportedLimit);
  *value = static_cast<size_t>(*field);
  return cudaSuccess;
}

cudaError_t __wrap_cudaDeviceSetLimit(cudaLimit limit, size_t value) {
  std::uint64_t* field = limit_field(limit);
  if (field == nullptr) return failed(cudaErrorUnsupportedLimit);
  auto& call = running();
  // As on the GPU: once a kernel that used the device heap has run, its size cannot change.
  if (limit == cudaLimitMallocHeapSize && call.state.heap_resizable == 0 && value != *field)
    return failed(cudaErrorInvalidValue);
  if (call.effects.size() >= cdplab::harness::host_parts::kMostEffects) return failed(cudaErrorInvalidValue);
  cdplab::harness::host_parts::Effect effect;
  effect.kind = cdplab::harness::host_parts::kLimit;
  effect.limit = static_cast<std::uint32_t>(limit);
  effect.value = value;
  call.effects.push_back(effect);
  *field = value;
  return cudaSuccess;
}

cudaError_t __wrap_cudaMemcpyToSymbol(const void* symbol, const void* source, size_t count, size_t offset,
                                      cudaMemcpyKind) {
  return cdplab::harness::host_parts::record_symbol_write(symbol, source, count, offset);
}

cudaError_t __wrap_cudaMemcpyToSymbolAsync(const void* symbol, const void* source, size_t count, size_t offset,
                                           cudaMemcpyKind, cudaStream_t) {
  return cdplab::harness::host_parts::record_symbol_write(symbol, source, count, offset);
}

cudaError_t __wrap_cudaGetLastError() {
  const cudaError_t error = running().last_error;
  running().last_error = cudaSuccess;
  return error;
}

cudaError_t __wrap_cudaPeekAtLastError() { return running().last_error; }
}  // extern "C"

int main(int argc, char** argv) {
  using namespace cdplab::harness::host_parts;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <folder with the FIFOs requests and replies>\n", argv[0]);
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);  // a check process that went away ends this one through write_frame
  const std::string dir = argv[1];
  const int requests = ::open((dir + "/requests").c_str(), O_RDONLY | O_CLOEXEC);  // waits for a writer
  if (requests < 0) return 1;
  // The replies are opened now when the check process holds them open for reading (it does before
  // it opens the requests): should this process be ended in the middle of a call (a limit), the
  // check then reads the end of its replies at once instead of waiting out its time. The grader
  // opens the requests without reading replies only to end a process no check called.
  int replies = ::open((dir + "/replies").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (replies >= 0) ::fcntl(replies, F_SETFL, ::fcntl(replies, F_GETFL) & ~O_NONBLOCK);
  for (;;) {
    const Frame frame = read_frame(requests, -1, kMostMessageBytes);
    if (frame.status != Frame::Status::ok) return frame.status == Frame::Status::closed ? 0 : 1;
    Reply reply;
    try {
      reply = answer(cdplab::harness::wire::decode<Request>(frame.bytes));
    } catch (const std::exception& error) {
      return 1;
    }
    if (replies < 0) replies = ::open((dir + "/replies").c_str(), O_WRONLY | O_CLOEXEC);
    if (replies < 0 || !write_frame(replies, cdplab::harness::wire::encode(reply))) return 1;
  }
}
