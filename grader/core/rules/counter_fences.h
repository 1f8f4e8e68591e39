/// @file counter_fences.h
/// @brief The fences of a last-block pattern: a global counter that the blocks of a grid add to,
///        whose returned value tells a block whether it is the last (`atomicAdd(&done, 1) ==
///        blocks - 1`), needs a device-scope fence on each side.
///
/// Before the counter: each block's writes must be visible before another block can see its
/// count, so a fence (`__threadfence()`, a `fence` or `membar` at device or system scope) lies
/// between the block's last write to global memory and the atomic, or the atomic has release
/// semantics itself (`cuda::atomic_ref::fetch_add` with `memory_order_release` or `acq_rel`);
/// and a block barrier (`__syncthreads()`) lies there too, since the one thread that counts the
/// block must come after every other thread's writes.
/// After it: the last block reads what the others wrote only after a fence (or an acquire
/// atomic). On an H100 the writes land long before anyone reads them, so the checks pass without
/// either fence; the rule grades what the memory model promises instead.
///
/// Within one function: before the atomic along every path of the control flow; after it in
/// text order (the fence sits in the branch the last block takes, and which branch that is
/// depends on a value the analysis does not follow). A counter is an `atom` on memory that is not
/// `__shared__` whose result register a `setp` reads. A write is a store or atomic on memory
/// that is not `__shared__`, local or a parameter, or a call of a function defined in the module
/// (it may write); a read is such a load, such a call, or a device-side launch (the child reads
/// through the launching thread's view of memory). Known limit: a write or read made in
/// a function that is not inlined, before or after the one holding the counter, is not seen.
#pragma once

#include "rules/ptx_reader.h"

#include <vector>

namespace cdplab::rules {

/// What a counter lacks.
enum class CounterGap {
  fence_before,    ///< no fence between the block's last write and the atomic
  barrier_before,  ///< no block barrier there: one thread counts the block before the others wrote
  fence_after,     ///< no fence between the atomic and the reads (or launches) after it
};

/// A counter atomic without the fence (or barrier) on one side.
struct UnfencedCounter {
  int atomic_line = 0;  ///< PTX line of the counter's atomic
  int access_line = 0;  ///< the write before it, or the read after it
  CounterGap gap = CounterGap::fence_before;
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
