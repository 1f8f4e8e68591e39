/// @file ptx_instrument.h
/// @brief The exercise's PTX made observable: its calls to the device runtime renamed to the
///        grader's hooks (device_runtime_hooks.cu), and the names its host code reaches.
///
/// Pure text work, with no GPU and no CUDA call: the grader's own tests run it on every exercise.
#pragma once

#include "device_calls.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cdplab::harness::device_code {

/// `ptx` with every call target listed by hooked_runtime_calls() renamed to its hook with `tag` as
/// its prefix (`__cudaCDP2LaunchDeviceV2` -> `<tag>LaunchDeviceV2`, `malloc` -> `<tag>malloc`),
/// declarations included. Identifiers are matched whole. Names the hooks do not know are judged
/// before (device_calls.h): the loader refuses code that uses one.
///
/// Every kernel the PTX defines calls `<tag>block_start(kernel, key)` first: in a check it holds
/// each block for a time drawn per block, so that the order blocks run in is not always the GPU's
/// usual one. `kernel` is the kernel's index in `kernels`. With `record_grids` (the timeline: asked
/// for with CDPLAB_GRID_RECORDING=on) each kernel also calls `<tag>block_end()` wherever it ends
/// (each `ret` and `exit`, and each `exit` in a device function it calls), and `key` mixes the
/// index with the kernel's parameters (their first 64 bytes); the module's
/// `<tag>launch_key(child, buffer)` mixes the same from a launch's parameter buffer: the launch
/// hook records each launch under its key, and the grid it made finds it by its own. Without it, key is 0 and launch_key always returns 0.
///
/// Each parameter-buffer request (`__cudaCDP2GetParameterBufferV2`, the first half of a `<<< >>>`
/// in device code) calls `<tag>GetParameterBufferFrom` instead, with one argument more: the index
/// in `functions` of the function the call is in, so that the hooks count every launch into its
/// edge of the launch tree (caller -> child). And the module gains a kernel,
/// `<tag>kernel_addresses(unsigned long long* out)`, that writes the device address of each kernel
/// of `kernels` (defined or declared) into out[i]: how the host names a launch's child.
struct InstrumentedPtx {
  std::string ptx;
  std::vector<std::string> functions;  ///< the PTX's functions (.entry and .func), mangled, in order
  std::vector<std::string> kernels;    ///< the kernels whose addresses <tag>kernel_addresses writes
};
InstrumentedPtx instrument_ptx(const std::string& ptx, const std::string& tag, bool record_grids = false);

/// The hooks' PTX with the prefix `cdplab_hook_` of every name replaced by `tag`, and `key` where
/// the hooks unmask the address of their state (device_code.cpp keeps the state out of the
/// exercise's reach: only the address XOR the key is in the module's memory).
std::string hooks_ptx(const std::string& tag, std::uint64_t key);

/// The key of the hooks' state for `tag` (a mix of its digits): the same for every process of one
/// exercise's grading, so that they share one linked cubin.
std::uint64_t hook_state_key(const std::string& tag);

/// The kernels and the global and constant variables a PTX module defines with external linkage
/// (`.visible .entry NAME`, `.visible .global ... NAME`, `.visible .const ... NAME`): the names
/// by which host code reaches device code.
std::vector<std::string> exported_device_names(const std::string& ptx);

/// A tag no other process draws: "cdplab_hook_" and 16 random hexadecimal digits and "_".
std::string fresh_hook_tag();

/// The tag made of `digits`, drawn by the grader for every process of one exercise's grading
/// (CDPLAB_HOOK_TAG), so that they can share one linked cubin; empty unless `digits` is exactly 16
/// lowercase hexadecimal digits.
std::string hook_tag_from(const std::string& digits);

}  // namespace cdplab::harness::device_code
