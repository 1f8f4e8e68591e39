// The PTX of the rule checker's fixture .cu files, compiled by nvcc during the test build.
#pragma once

#include "files/files.h"
#include "rules/launch_graph.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

inline std::string fixture_ptx(const std::string& stem) {
  const std::filesystem::path path = std::filesystem::path(CDPLAB_TEST_BINARY_DIR) / "fixtures/rules" / (stem + ".ptx");
  REQUIRE_MESSAGE(std::filesystem::exists(path), "missing fixture PTX " << path.string() << " (built by cdplab_rules_fixtures)");
  return cdplab::files::read_text(path);
}

inline cdplab::rules::LaunchGraph fixture(const std::string& stem) { return cdplab::rules::analyze_ptx(fixture_ptx(stem)); }
