// Assertions on oracle verdicts, shared by the oracle tests of every chapter.
#pragma once

#include "compare.h"

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The verdict passes (its message is shown when it does not).
inline void expect_pass(const cdplab::oracle::Verdict& verdict) { CHECK_MESSAGE(verdict.ok, verdict.message); }

/// The verdict fails, and its message holds every one of `parts`.
inline void expect_failure(const cdplab::oracle::Verdict& verdict, std::initializer_list<std::string> parts) {
  INFO("message: " << verdict.message);
  CHECK_FALSE(verdict.ok);
  for (const std::string& part : parts) {
    INFO("missing from the message: " << part);
    CHECK(contains(verdict.message, part));
  }
}
