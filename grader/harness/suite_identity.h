/// @file suite_identity.h
/// @brief Which suite an executable is. The build generates this function for each suite
///        (cdplab_add_suite in cmake/CdplabGradingKit.cmake), so that main() (suite_main.cpp) and
///        the checks are compiled once, not once per suite.
#pragma once

namespace cdplab::harness {

/// The suite's name, "<chapter>/<stem>" (the results log's "suite").
const char* suite_name();

/// The kept PTX of the exercise file whose host code this executable runs; empty for a suite of
/// the project's own tests that links no exercise (device_code/device_code.h).
const char* suite_host_code_ptx();

/// The device libraries the exercise's device code is linked with at run time, '|' between them:
/// the starter kit's, the chapter's (if it has one) and the device runtime.
const char* suite_device_libraries();

}  // namespace cdplab::harness
