/// @file launch_check_flow.h
/// @brief Which device-side launches of a kernel may reach its end with no error check after
///        them, followed along the control flow (branches and loops).
///
/// A launch from device code can fail (a full pending launch pool, a bad configuration), and the
/// kernel learns of it only from `cudaGetLastError()` or `cudaPeekAtLastError()`, which
/// `CDPLAB_CHECK_LAUNCH()` calls. The error stays until it is read, so one check after several
/// launches sees any of them. A launch counts as checked when every path from it to the end of
/// the kernel passes such a call, or a call of another device function (it may check), or ends
/// in a trap.
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
