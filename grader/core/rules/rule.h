/// @file rule.h
/// @brief The CDP rules a chapter manifest lists (`[[exercise.rule]]` in chapter.toml), and
///        their verdicts on a launch graph (rules/launch_graph.h).
///
/// | kind | keys | passes when |
/// | --- | --- | --- |
/// | `launches` | `kernel`, `child` (optional), `stream` (optional list) | `kernel` launches `child` (any kernel if omitted); with `stream`, every such launch uses a listed stream kind |
/// | `recursion` | `kernel` | `kernel` launches itself, directly or through other kernels |
/// | `creates_stream` | `kernel`, `flags` (optional: `"non_blocking"`) | `kernel` creates a stream in device code, every one with those flags |
/// | `destroys_stream` | `kernel` | `kernel` calls `cudaStreamDestroy` in device code at least as many times (in the PTX) as it creates streams |
/// | `shared_in_bounds` | `kernel` | no load, store or atomic of `kernel` touches a sized `__shared__` array past its end at a constant offset (shared_bounds.h) |
/// | `device_malloc` | `kernel` (optional) | `kernel` (or some kernel) calls `cudaMalloc` or `malloc` in device code |
/// | `device_free` | `kernel` (optional) | likewise `cudaFree` or `free` |
/// | `shared_atomics` | `kernel` | `kernel` performs atomic operations on `__shared__` memory |
/// | `no_private_pointers` | `kernel` (optional) | no launch (from `kernel`, or from any kernel) hands a child an address of local or `__shared__` memory |
/// | `distinct_streams` | `kernel`, `child` (optional) | no two launch sites of `kernel` (of `child`) into named streams certainly use the same stream: the same stream variable, not written in between, or the same parameter |
/// | `barrier_before_shared_atomics` | `kernel` | no shared-memory atomic of `kernel` follows a store to `__shared__` memory (or an atomic that sets a value: exchange, and, compare-and-swap, as zeroing with atomics does) without a barrier in between (in PTX text order) |
/// | `barrier_before_shared_reads` | `kernel` | no load of a `__shared__` variable by `kernel` follows a store to it at an address that is the same in every thread (one thread publishing a value for the block: the variable itself, or an entry at a constant offset) without a block barrier in between (in PTX text order; a load by thread 0 in the stretch only thread 0 runs, after its own store, is not one); a `__syncwarp()` does not count; fails when the kernel makes no such store |
/// | `barrier_before_launch` | `kernel` | no store or atomic on global or `__shared__` memory reaches a launch of `kernel` along the control flow without a barrier in between, so the child sees what every thread wrote; stores in code that only the launching thread runs need none (barrier_flow.h) |
/// | `fenced_counter` | `kernel` | the kernel's last-block counter (a global atomic whose result it compares) has a device-scope fence between the block's writes and the atomic, and one between the atomic and the reads after it, or the atomic's own release/acquire semantics (counter_fences.h) |
/// | `barrier_lines` | `kernel`, `at_least`; `given = true` | `kernel` (with the device functions it calls) has a block barrier (`__syncthreads()`) on at least `at_least` lines of the exercise file: the given code's barriers are all there |
/// | `launch_checked` | `kernel` | every launch of `kernel` is followed, on every path to its end, by `cudaGetLastError()` or `cudaPeekAtLastError()` (what `CDPLAB_CHECK_LAUNCH()` calls) or a call of another device function (launch_check_flow.h) |
///
/// Every rule may carry `points` (default 0) and a `message`: advice shown when it fails. A rule
/// with `given = true` guards code handed out with the starter (which meets it): it is worth
/// nothing when kept and takes its `points` off the exercise when broken.
#pragma once

#include <string>
#include <vector>

#include <toml++/toml.h>

#include "rules/launch_graph.h"

namespace cdplab::rules {

/// The rule kinds a manifest may name.
const std::vector<std::string>& rule_kinds();

/// One rule of a manifest.
struct RuleSpec {
  std::string kind;                 ///< one of rule_kinds()
  std::string kernel;               ///< the kernel it is about; empty: any kernel (where allowed)
  std::string child;                ///< `launches`: the child; empty: any kernel
  std::vector<StreamKind> streams;  ///< `launches`: the allowed stream kinds; empty: any
  std::string flags;                ///< `creates_stream`: empty or "non_blocking"
  int at_least = 0;                 ///< `barrier_lines`: how many lines the given code has
  double points = 0;                ///< what passing it is worth; with `given`, what breaking it costs
  /// Guards code handed out with the starter (a barrier of the given code, say): the starter meets
  /// it, so keeping it earns nothing, and breaking it takes `points` off the exercise.
  bool given = false;
  std::string message;              ///< advice shown when it fails; may be empty
};

/// Reads one `[[exercise.rule]]` table. Throws std::runtime_error naming the key at fault and,
/// when the table knows it, its line: unknown kind, unknown key, a key the kind does not take,
/// a missing kernel, a value of the wrong type, an unknown stream kind or flag, negative points.
RuleSpec parse_rule(const toml::table& table);

/// What the rule asks for, in words: "expand_parent launches expand_child from device code";
/// a `given` rule's words start with "given code: ".
std::string describe(const RuleSpec& rule);

/// Whether the rule only ever takes points off: worth nothing when met, its points deducted when
/// broken. A `given` rule (code the starter hands out meets it), and a rule of a kind that code
/// doing nothing meets as well (`shared_in_bounds`: a starter touches no array at all).
bool deducts(const RuleSpec& rule);

/// describe() without the "given code: " of a given rule.
std::string describe_requirement(const RuleSpec& rule);

/// A rule's outcome on one exercise.
struct RuleVerdict {
  bool passed = false;
  std::string expected;  ///< describe(rule)
  std::string found;     ///< what the PTX shows, concretely, with PTX line numbers
};

/// Checks a rule against a launch graph. A rule naming a kernel that is not in the graph fails
/// with "no kernel named X in the exercise". Throws std::invalid_argument for a kind that
/// parse_rule() would have refused.
RuleVerdict evaluate(const RuleSpec& rule, const LaunchGraph& graph);

}  // namespace cdplab::rules
