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
/// | `barrier_before_shared_atomics` | `kernel` | no shared-memory atomic of `kernel` follows a store to `__shared__` memory (or an atomic that sets a value: exchange, and, compare-and-swap, as zeroing with atomics does) without a barrier in between (in PTX text order); a `__syncwarp()` counts only where the stores before it and the atomic address the warp's own entries; fails when the kernel has no shared-memory atomic, unless the rule deducts |
/// | `barrier_before_shared_reads` | `kernel` | no load of `__shared__` memory by `kernel` may read what another thread wrote there between the same two block barriers: a value one thread publishes for the block (a store at an address the same in every thread: the variable itself, or an entry at a constant offset), another thread's entry of an array, a counter the block's atomics update; a load of an address the loading thread itself stores to there (its own entry) is not one, nor a load by the thread that alone made the store; a `__syncwarp()` counts only between a warp's writes and reads of entries of its own (made from `threadIdx.x / 32`); fails when the kernel publishes no value for the block, unless the rule deducts |
/// | `barrier_before_launch` | `kernel` | no store or atomic on global or `__shared__` memory reaches a launch of `kernel` along the control flow without a barrier in between, so the child sees what every thread wrote; stores in code that only the launching thread runs need none (barrier_flow.h) |
/// | `fenced_counter` | `kernel` | the kernel's last-block counter (a global atomic whose result it compares) has a device-scope fence between the block's writes and the atomic, and one between the atomic and the reads after it, or the atomic's own release/acquire semantics (counter_fences.h) |
/// | `barrier_lines` | `kernel`, `at_least`; `given = true` | `kernel` (with the device functions it calls) has a block barrier (`__syncthreads()`) on at least `at_least` lines of the exercise file: the given code's barriers are all there |
/// | `launch_checked` | `kernel` | every launch of `kernel` is followed, on every path to its end, by `cudaGetLastError()` or `cudaPeekAtLastError()` (what `CDPLAB_CHECK_LAUNCH()` calls) or a call of another device function (launch_check_flow.h) |
///
/// Every rule may carry `points` (default 0) and a `message`: advice shown when it fails. A rule
/// with `given = true` guards code handed out with the starter (which meets it): it is worth
/// nothing when kept and takes its `points` off the exercise when broken. A rule with
/// `deduct = true` deducts the same way for code the student writes where the exercise does not
/// ask for what it guards (a barrier for data a student chose to stage in `__shared__` memory).
/// A barrier rule on `__shared__` memory that deducts (`given` or `deduct`) passes a kernel with
/// nothing to guard: no published value, no shared atomic.
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
  /// Only deducts, like a given rule, for the student's own code: worth nothing when met, its
  /// `points` taken off when broken.
  bool deduct = false;
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
/// broken. A `given` rule (code the starter hands out meets it), a `deduct` rule, and a rule of a
/// kind that code doing nothing meets as well (`shared_in_bounds`: a starter touches no array at all).
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
