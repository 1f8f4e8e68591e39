/// @file launch_check_flow.h
/// @brief Which device-side launches of a kernel may reach its end with no error check after
///        them, followed along the control flow (branches and loops).
///
/// A launch from device code can fail (a full pending launch pool, a bad configuration), and the
/// kernel learns of it only from `cudaGetLastError()` or `cudaPeekAtLastError()`, which
/// `CDPLAB_CHECK_LAUNCH()` calls. The error stays until it is read, so one check after several
/// launches sees any of them. A launch counts as checked when every path from it to the end of
/// the kernel passes such a call, or a call of a device function that may read the error (one
/// defined here that calls cudaGetLastError(), directly or through the functions it calls; one
/// defined elsewhere, or called through a pointer), or ends in a trap.
///
/// Paths are followed with what they tell of the predicates that guard branches: code that
/// launches under a condition and, after a barrier, checks under the same one (`if (tid == 0)
/// launch; __syncthreads(); if (tid == 0) check;`, or a flag set next to the launch) has no
/// path that skips the check. Conditions on different values are not compared (a launch behind
/// `n > 0`, the check behind `begin != end`), and a function whose paths are too many to follow
/// is reported clean.
///
/// Known limits. On the side of passing: the launches of a device function that is not inlined
/// are not judged (its caller's call of it counts as a possible check), and a call of a device
/// function defined elsewhere counts as a check whether it reads the error or not. On the side of failing:
/// the conditions on different values above, and a launch through `cudaLaunchDevice()` whose
/// returned error is tested, which still needs `cudaGetLastError()` after it.
#pragma once

#include "rules/ptx_reader.h"

#include <vector>

namespace cdplab::rules {

/// The PTX lines of the launches of `function` (`launches[i]` for `function.body[i]`) from which
/// some path reaches the function's end (a `ret`, an `exit`, or the end of its body) without
/// passing an error check (`checks[i]`).
std::vector<int> unchecked_launches(const ptx::Function& function, const std::vector<bool>& launches,
                                    const std::vector<bool>& checks);

}  // namespace cdplab::rules
