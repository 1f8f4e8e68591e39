/// @file sanitizer.h
/// @brief The optional compute-sanitizer stage of grading: a suite run again under memcheck
///        (with leak checking), its findings turned into graded items.
///
/// The items are worth no points: they are feedback on faults that the checks' results may not
/// show (an out-of-bounds write that happened to hit nothing, memory never freed, a race on
/// shared memory). They need a GPU; without one they are reported skipped.
#pragma once

#include "results/results.h"

#include <map>
#include <string>
#include <vector>

namespace cdplab::sanitizer {

/// One tool run of compute-sanitizer.
struct Tool {
  std::string name;               ///< "memcheck", "racecheck"
  std::vector<std::string> args;  ///< its options
};

/// The tools the stage runs: memcheck with leak checking. (racecheck refuses CDP programs.)
const std::vector<Tool>& tools();

/// The item of one tool run from what compute-sanitizer printed and how it ended.
/// `exit_code` 0 with an error summary of 0 errors passes; anything else fails with the
/// findings (at most `max_lines` lines of them).
grading::Item item_from_output(const Tool& tool, const std::string& output, int exit_code, bool timed_out,
                               std::size_t max_lines = 40);

/// Runs `suite` under every tool (each with `env`, within `seconds`) and returns their items.
/// `sanitizer` is the compute-sanitizer program; when it cannot be started the items are
/// skipped with the reason.
std::vector<grading::Item> run(const std::string& sanitizer, const std::string& suite,
                               const std::map<std::string, std::string>& env, double seconds);

/// compute-sanitizer beside the CUDA compiler `nvcc`, or from PATH.
std::string find_sanitizer(const std::string& nvcc);

}  // namespace cdplab::sanitizer
