// Checks of exercise child-grids: expand_ranges and its kernels expand_parent / expand_child.
#include "harness.h"

#include "01-fundamentals.h"
#include "cdplab/fundamentals.h"
#include "cdplab/random.h"

#include <vector>

namespace {

namespace oracle = cdplab::oracle::fundamentals;

/// Runs expand_ranges over ranges of the given sizes, filled with random values, and judges it.
void expect_expansion(cdplab::Random& rng, const std::vector<unsigned>& sizes) {
  const auto offsets = oracle::offsets_from_sizes(sizes);
  const auto values = cdplab::uniform_floats(rng, offsets.back(), -1.0f, 1.0f);
  const auto found = cdplab::fundamentals::expand_ranges(offsets, values);
  const auto verdict = oracle::judge_expansion(offsets, values, found);
  CHECK_MESSAGE(verdict.ok, verdict.message);
}

}  // namespace

GPU_CHECK("uniform ranges") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // 777 is no multiple of any block size: every child grid ends with a partial block.
  expect_expansion(rng, std::vector<unsigned>(1000, 777));
}

GPU_CHECK("skewed ranges") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // Mostly short ranges, some empty, a few of up to 10000 elements.
  expect_expansion(rng, cdplab::skewed_sizes(rng, 1024, 10000));
}

GPU_CHECK("empty ranges") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // About nine items in ten own nothing, the first and the last among them.
  std::vector<unsigned> sizes(1024, 0);
  for (auto& size : sizes) {
    if (rng.uniform() < 0.1) size = static_cast<unsigned>(rng.integer(1, 2000));
  }
  sizes.front() = 0;
  sizes.back() = 0;
  sizes[static_cast<std::size_t>(rng.integer(1, 1022))] = 1;  // never all empty
  expect_expansion(rng, sizes);
}

GPU_CHECK("one huge range") {
  cdplab::Random rng = cdplab::harness::check_rng();
  // One item owns more than a million elements (a child grid of thousands of blocks).
  std::vector<unsigned> sizes(64);
  for (auto& size : sizes) size = static_cast<unsigned>(rng.integer(0, 300));
  sizes[static_cast<std::size_t>(rng.integer(0, 63))] = (1u << 20) + static_cast<unsigned>(rng.integer(1, 100000));
  expect_expansion(rng, sizes);
}
