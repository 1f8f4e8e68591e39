/// @file device_calls.h
/// @brief Default deny on the exercise's device code: every function or variable its PTX names
///        but does not define must be one the grader observes (a hook stands in for it), one that
///        cannot change what is graded, or the starter kit's own. Anything else (the device
///        runtime's undocumented or PTX-level entry points, `cudaLaunchDeviceV2` called by name,
///        a variable of the runtime's) is refused before any check runs, in `check` and `grade`
///        alike, and again by the loader.
///
/// Pure text work on the PTX nvcc wrote, with no GPU: the grader core and the check process both
/// run it, and the project's tests run it on every name libcudadevrt exports.
#pragma once

#include <string>
#include <vector>

namespace cdplab::harness::device_code {

/// A device-runtime entry point the hooks stand in for, as nvcc's PTX names it
/// (`__cudaCDP2<name>`, the device heap's `malloc`, `free` and `__cuda_syscall_aligned_malloc`),
/// and the hook's name without the tag.
struct HookedCall {
  std::string ptx_name;
  std::string hook;
};
const std::vector<HookedCall>& hooked_runtime_calls();

/// One header of a function in PTX text: ".entry NAME", ".func NAME" or ".func (retval) NAME".
struct PtxFunctionHeader {
  std::size_t at = 0;  ///< where its keyword starts
  std::string name;
  bool kernel = false;    ///< `.entry`
  bool external = false;  ///< declared `.extern`: defined in another module
  /// Just after the `{` that opens its body; npos for a declaration (ended by `;`).
  std::size_t body = std::string::npos;
};

/// A PTX symbol as C++ reads it (`_ZN6cdplab...` -> `cdplab::...`); the symbol itself when it is
/// not a mangled C++ name.
std::string demangled(const std::string& name);

/// Every function header of `ptx`, in text order (a function declared and then defined has two).
std::vector<PtxFunctionHeader> ptx_function_headers(const std::string& ptx);

/// What the grader does with a name the exercise's PTX declares and does not define.
enum class DeviceCallVerdict {
  hooked,    ///< renamed to the grader's hook of the same job (device_runtime_hooks.cu)
  harmless,  ///< reaches the device runtime or a system call that cannot change what is graded
  kit,       ///< the starter kit's or the chapter's device library (namespace cdplab, not the grader's)
  refused,   ///< everything else
};

/// The verdict on `name`, a function (`is_function`) or a variable the PTX declares `.extern`
/// (dynamic `.shared` arrays are not asked about: they are the block's own memory).
DeviceCallVerdict judge_device_name(const std::string& name, bool is_function);

/// One name of the exercise's PTX that the grader refuses, and where it is used.
struct RefusedDeviceName {
  std::string name;   ///< as the PTX writes it (mangled)
  bool is_function = true;
  int ptx_line = 0;   ///< the first use, or the declaration when there is no use
  std::string place;  ///< "file.cu:42" from the nearest `.loc` before that line (-lineinfo); may be empty
};

/// The names of `ptx` that judge_device_name refuses, in the order the PTX declares them.
std::vector<RefusedDeviceName> refused_device_names(const std::string& ptx);

/// One line for the student when `ptx` uses refused names, naming each and where; empty otherwise.
std::string refused_device_names_problem(const std::string& ptx);

}  // namespace cdplab::harness::device_code
