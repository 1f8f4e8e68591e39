/// @file suite_identity.h
/// @brief Which suite an executable is, and where its reference twin is. The build generates
///        these two functions for each suite (cdplab_add_suite in cmake/CdplabGradingKit.cmake),
///        so that main() (suite_main.cpp) and the checks are compiled once, not once per suite.
#pragma once

namespace cdplab::harness {

/// The suite's name, "<chapter>/<stem>" (the results log's "suite").
const char* suite_name();

/// The executable of the suite linked against the reference solutions, which the speed checks
/// time (speed.h); empty when the build has none.
const char* reference_suite_path();

}  // namespace cdplab::harness
