/// @file suite_identity.h
/// @brief Which suite an executable is. The build generates this function for each suite
///        (cdplab_add_suite in cmake/CdplabGradingKit.cmake), so that main() (suite_main.cpp) and
///        the checks are compiled once, not once per suite.
#pragma once

namespace cdplab::harness {

/// The suite's name, "<chapter>/<stem>" (the results log's "suite").
const char* suite_name();

}  // namespace cdplab::harness
