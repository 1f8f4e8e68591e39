/// @file counter_fences.h
/// @brief The fences of a last-block pattern: a global counter that the blocks of a grid add to,
///        whose returned value tells a block whether it is the last (`atomicAdd(&done, 1) ==
///        blocks - 1`), needs a device-scope fence on each side.
///
/// Before the counter: each block's writes must be visible before another block can see its
/// count, so a fence (`__threadfence()`, a `fence` or `membar` at device or system scope) lies
/// between the block's last write to global memory and the atomic, or the atomic has release
/// semantics itself (`cuda::atomic_ref::fetch_add` with `memory_order_release` or `acq_rel`).
/// After it: the last block reads what the others wrote only after a fence (or an acquire
/// atomic). On an H100 the writes land long before anyone reads them, so the checks pass without
/// either fence; the rule grades what the memory model promises instead.
///
/// Read in text order within one function. A counter is an `atom` on memory that is not
/// `__shared__` whose result register a `setp` reads. A write is a store or atomic on memory
/// that is not `__shared__`, local or a parameter, or a call of a function defined in the module
/// (it may write); a read is such a load, such a call, or a device-side launch (the child reads
/// through the launching thread's view of memory). Known limit: a write or read made in
/// a function that is not inlined, before or after the one holding the counter, is not seen.
#pragma once

#include "rules/ptx_reader.h"

#include <vector>

namespace cdplab::rules {

/// A counter atomic without the fence on one side.
struct UnfencedCounter {
  int atomic_line = 0;  ///< PTX line of the counter's atomic
  int access_line = 0;  ///< the write before it (release) or the read after it (acquire)
  bool before = true;   ///< true: no fence between the write and the atomic; false: after it
};

/// What the rule found in one function.
struct CounterFences {
  int counters = 0;                        ///< counter atomics seen
  std::vector<UnfencedCounter> unfenced;   ///< the sides without a fence
};

/// The counters of `function` and the sides left without a fence; `module` tells which calls
/// are of functions defined in it.
CounterFences counter_fences(const ptx::Function& function, const ptx::Module& module);

}  // namespace cdplab::rules
