/// @file gpu_present.h
/// @brief Whether the machine running the project's tests has an NVIDIA GPU: the tests that grade
///        on one report themselves skipped (CDPLAB_TEST_SKIPPED) without it.
#pragma once

#include "process/process.h"

#include <string>

namespace cdplab::testing {

/// `nvidia-smi -L` lists at least one GPU.
inline bool gpu_present() {
  process::Options options;
  options.timeout_seconds = 30;
  const auto listed = process::run({"nvidia-smi", "-L"}, options);
  return listed.ok() && listed.output.find("GPU") != std::string::npos;
}

}  // namespace cdplab::testing
