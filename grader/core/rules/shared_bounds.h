/// @file shared_bounds.h
/// @brief Accesses past the end of a `__shared__` array at a constant place: an array one entry
///        too short (`__shared__ int cursors[3]` for four quadrants). The access lands in the
///        next shared variable or in padding, where no output may show it.
///
/// nvcc unrolls loops over small arrays and addresses their entries directly
/// (`st.shared.u32 [cursors+12]`), so the PTX holds the byte offset of each such access and the
/// array's declared size. An access through a register (an index computed at run time) is not
/// judged.
#pragma once

#include "rules/ptx_reader.h"

#include <cstddef>
#include <string>
#include <vector>

namespace cdplab::rules {

/// One access past the end of a `__shared__` array.
struct SharedOverrun {
  int line = 0;             ///< PTX line of the load, store or atomic
  std::string symbol;       ///< the array's PTX symbol
  std::size_t offset = 0;   ///< the access's first byte within the array
  std::size_t width = 0;    ///< the bytes it reads or writes
  std::size_t size = 0;     ///< the bytes the array was declared with
};

/// The accesses of `function` at a constant offset past the end of a sized `__shared__` array of
/// `module`.
std::vector<SharedOverrun> shared_overruns(const ptx::Function& function, const ptx::Module& module);

}  // namespace cdplab::rules
