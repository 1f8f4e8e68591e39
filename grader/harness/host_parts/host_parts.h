/// @file host_parts.h
/// @brief An exercise's host parts (cdplab/host_part.h) called across a process boundary: the
///        grader's check process runs the workbook's host code, and each call of a host part goes
///        to the student's own function, run in a process of its own that has no GPU; only the
///        values it chose come back.
///
/// Each exercise that has host parts lists them once, in grader/suites/<chapter>/<stem>_host_parts.cpp:
///
///     namespace cdplab::streams {
///     CDPLAB_GRADED_HOST_PART(void, reserve_sort_launches, (std::size_t))
///     }
///
/// The build compiles that file twice (cmake/CdplabExercises.cmake):
///  - into the grading suite (CDPLAB_HOST_PARTS_PROXY): each line defines the function itself, and
///    that definition replaces the workbook's weak one (CDPLAB_HOST_PART). It sends the arguments
///    and the device's limits to the host parts' process, applies what the student's function set
///    there (limits, the file's __constant__ and __device__ variables) and returns its result or
///    throws its exception (call());
///  - into the host parts' process of a submission (CDPLAB_HOST_PARTS_SERVE), linked with the
///    student's exercise file: each line registers the student's function under its name. That
///    process (host_part_server.cpp) answers the check process's calls one after another; it runs
///    in a box of its own, without a GPU, and its CUDA calls that matter (cudaDeviceGetLimit,
///    cudaDeviceSetLimit, cudaMemcpyToSymbol, the error reads) are answered and recorded by the
///    grader's stand-ins (link-time wrapped), the others fail for want of a GPU.
/// The two talk through two FIFOs in the folder CDPLAB_HOST_PARTS names ("requests", "replies"),
/// which the grader makes for each check process and binds into both boxes.
#pragma once

#include "wire.h"

#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace cdplab::harness::host_parts {

/// The device's state a host part may read, as the check process finds it before the call.
struct DeviceState {
  std::uint64_t pending_launches = 0;  ///< cudaLimitDevRuntimePendingLaunchCount
  std::uint64_t heap_bytes = 0;        ///< cudaLimitMallocHeapSize
  std::uint64_t stack_bytes = 0;       ///< cudaLimitStackSize
  std::uint64_t printf_bytes = 0;      ///< cudaLimitPrintfFifoSize
  std::uint8_t heap_resizable = 1;     ///< 0 once a kernel that used the device heap has run
};

/// One thing a host part did to the device, in the order it did it.
struct Effect {
  std::uint8_t kind = 0;     ///< kLimit or kSymbol
  std::uint32_t limit = 0;   ///< kLimit: the cudaLimit
  std::uint64_t value = 0;   ///< kLimit: the value set
  std::string symbol;        ///< kSymbol: the variable's mangled name
  std::uint64_t offset = 0;  ///< kSymbol: where in it
  std::string bytes;         ///< kSymbol: what was written
};
inline constexpr std::uint8_t kLimit = 1;
inline constexpr std::uint8_t kSymbol = 2;

struct Request {
  std::string part;       ///< the host part's name
  DeviceState state;      ///< the device's limits before the call
  std::string arguments;  ///< wire::encode of the arguments' tuple
};

struct Reply {
  std::uint8_t threw = 0;            ///< 1: the function threw (exception_kind, exception)
  std::string result;                ///< wire::encode of its result (empty for void)
  std::uint8_t exception_kind = 0;   ///< wire::ExceptionKind
  std::string exception;             ///< wire::encode_exception's payload
  std::vector<Effect> effects;       ///< what it did to the device, in order
};

/// The most bytes one request or reply may take: the largest arguments of a workbook host part (a
/// vector of a few hundred thousand sizes) fit many times over.
inline constexpr std::uint64_t kMostMessageBytes = std::uint64_t{1} << 28;
/// The most bytes of symbol writes and effects one call may make (constant memory is 64 KiB).
inline constexpr std::size_t kMostEffectBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMostEffects = 256;

/// The check process's side: sends `part`'s encoded arguments, waits for the reply (at most
/// CDPLAB_HOST_PART_SECONDS, 30 by default), applies its effects to the device and returns the
/// encoded result, or throws the exception the function threw. Throws std::runtime_error with a
/// message for the student when there is no answer (no such function in the file, the process
/// crashed or hung, a reply that does not decode, an effect the grader refuses).
std::string call_encoded(const std::string& part, const std::string& arguments);

template <class R, class... A>
R call(const char* part, const A&... arguments) {
  const std::string result = call_encoded(part, wire::encode(std::make_tuple(arguments...)));
  if constexpr (std::is_void_v<R>) {
    return;
  } else {
    return wire::decode<R>(result);
  }
}

/// The host parts' process's side: a function registered under its name.
using Invoker = std::string (*)(void* function, const std::string& arguments);
void serve(const char* part, void* function, Invoker invoke);

template <class R, class... A>
std::string invoke(void* function, const std::string& arguments) {
  auto tuple = wire::decode<std::tuple<std::decay_t<A>...>>(arguments);
  auto* f = reinterpret_cast<R (*)(A...)>(function);
  if constexpr (std::is_void_v<R>) {
    std::apply(f, tuple);
    return std::string();
  } else {
    return wire::encode(std::apply(f, tuple));
  }
}

/// Registers a host part at static initialisation (CDPLAB_HOST_PARTS_SERVE).
struct Served {
  template <class R, class... A>
  Served(const char* part, R (*function)(A...)) {
    serve(part, reinterpret_cast<void*>(function), &invoke<R, A...>);
  }
};

}  // namespace cdplab::harness::host_parts

#define CDPLAB_HP_CONCAT_(a, b) a##b
#define CDPLAB_HP_CONCAT(a, b) CDPLAB_HP_CONCAT_(a, b)
#define CDPLAB_HP_COUNT_(a, b, c, d, n, ...) n
#define CDPLAB_HP_COUNT(...) CDPLAB_HP_COUNT_(__VA_ARGS__, 4, 3, 2, 1, 0)
#define CDPLAB_HP_PARAMS_1(a) a p1
#define CDPLAB_HP_PARAMS_2(a, b) a p1, b p2
#define CDPLAB_HP_PARAMS_3(a, b, c) a p1, b p2, c p3
#define CDPLAB_HP_PARAMS_4(a, b, c, d) a p1, b p2, c p3, d p4
#define CDPLAB_HP_NAMES_1 p1
#define CDPLAB_HP_NAMES_2 p1, p2
#define CDPLAB_HP_NAMES_3 p1, p2, p3
#define CDPLAB_HP_NAMES_4 p1, p2, p3, p4
#define CDPLAB_HP_PARAMS(...) CDPLAB_HP_CONCAT(CDPLAB_HP_PARAMS_, CDPLAB_HP_COUNT(__VA_ARGS__))(__VA_ARGS__)
#define CDPLAB_HP_NAMES(...) CDPLAB_HP_CONCAT(CDPLAB_HP_NAMES_, CDPLAB_HP_COUNT(__VA_ARGS__))
#define CDPLAB_HP_UNPAREN(...) __VA_ARGS__

#if defined(CDPLAB_HOST_PARTS_PROXY)
/// A host part of one to four parameters, `params` their types in parentheses (see the file's comment).
#define CDPLAB_GRADED_HOST_PART(result, name, params)                                                  \
  result name(CDPLAB_HP_PARAMS params) {                                                              \
    return ::cdplab::harness::host_parts::call<result>(#name, CDPLAB_HP_NAMES(CDPLAB_HP_UNPAREN params)); \
  }
#elif defined(CDPLAB_HOST_PARTS_SERVE)
#define CDPLAB_GRADED_HOST_PART(result, name, params) \
  result name params;                                 \
  static const ::cdplab::harness::host_parts::Served CDPLAB_HP_CONCAT(cdplab_served_, __LINE__)(#name, &name);
#endif  // a table compiled with neither has no CDPLAB_GRADED_HOST_PART: it does not compile
