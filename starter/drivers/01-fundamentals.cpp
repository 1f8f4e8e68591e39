// Demo of chapter 01: runs the four exercises of this checkout on small seeded inputs and
// prints what they produced, beside what the CPU expects.
//
// Usage: demo-01-fundamentals [--out FOLDER] [seed]   (this demo prints; it draws no picture)
#include "cdplab/check.h"
#include "cdplab/demo.h"
#include "cdplab/fundamentals.h"
#include "cdplab/random.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace {

using cdplab::run_demo;

namespace fx = cdplab::fundamentals;

/// a. A dozen ranges of skewed lengths: each item's range and the first outputs of its child.
void demo_child_grids(cdplab::Random& rng) {
  const std::vector<unsigned> sizes = cdplab::skewed_sizes(rng, 12, 40);
  std::vector<unsigned> offsets(1, 0);
  for (unsigned size : sizes) offsets.push_back(offsets.back() + size);
  const std::vector<float> values = cdplab::uniform_floats(rng, offsets.back(), -1.0f, 1.0f);

  const std::vector<float> out = fx::expand_ranges(offsets, values);
  std::size_t as_expected = 0;
  for (std::size_t item = 0; item < sizes.size(); ++item) {
    const unsigned begin = offsets[item];
    const unsigned end = offsets[item + 1];
    std::printf("  item %2zu  range [%3u, %3u)  %2u elements  out:", item, begin, end, end - begin);
    if (begin == end) std::printf(" (empty: no child grid)");
    for (unsigned j = begin; j < end; ++j) {
      const float expected = values[j] * 2.0f + static_cast<float>(item);
      if (std::fabs(out[j] - expected) <= 1e-3f) ++as_expected;
      if (j < begin + 5) std::printf(" %7.3f", out[j]);
    }
    if (end - begin > 5) std::printf(" ...");
    std::printf("\n");
  }
  std::printf("  %zu of %zu elements equal values[j] * 2 + item\n", as_expected, values.size());
}

/// b. The pipeline on ten values: every step's output and the expected result.
void demo_tail_continuation(cdplab::Random& rng) {
  const std::vector<float> input = cdplab::uniform_floats(rng, 10, -1.0f, 1.0f);
  const fx::PipelineStages stages = fx::run_pipeline(input);
  const std::size_t n = input.size();
  std::printf("  %2s %8s %8s %8s %8s %8s %10s\n", "i", "input", "x", "y", "z", "result", "expected");
  for (std::size_t i = 0; i < n; ++i) {
    const auto x = [&](std::size_t k) { return 2.0f * input[k] + 1.0f; };
    const auto y = [&](std::size_t k) { return x(n - 1 - k) - x(k); };
    const float expected = x(i) + y(i) + 0.5f * y((i + 1) % n);
    std::printf("  %2zu %8.3f %8.3f %8.3f %8.3f %8.3f %10.3f\n", i, input[i], stages.x[i], stages.y[i], stages.z[i],
                stages.result[i], expected);
  }
}

/// c. A million integers summed with at most 4 levels, then with a single level.
void demo_recursive_reduction(cdplab::Random& rng) {
  std::vector<int> values(1000000);
  for (auto& v : values) v = static_cast<int>(rng.integer(-1000, 1000));
  long long cpu_sum = 0;
  for (int v : values) cpu_sum += v;
  for (unsigned max_depth : {4u, 1u}) {
    const fx::ReductionResult gpu = fx::recursive_sum(values, max_depth);
    std::printf("  %zu values, max_depth %u: GPU sum %lld at depth %u; CPU sum %lld: %s\n", values.size(), max_depth,
                gpu.sum, gpu.depth, cpu_sum, gpu.sum == cpu_sum ? "equal" : "DIFFERENT");
  }
}

/// d. 20000 keys, most of them small, in 10 buckets, drawn as a bar chart.
void demo_shared_histogram(cdplab::Random& rng) {
  const unsigned buckets = 10;
  std::vector<unsigned> keys(20000);
  for (auto& k : keys) {
    const double u = rng.uniform();
    k = static_cast<unsigned>(buckets * u * u);  // more small keys than large ones
  }
  std::vector<unsigned> cpu(buckets, 0);
  for (unsigned k : keys) ++cpu[k % buckets];

  const std::vector<unsigned> gpu = fx::histogram(keys, buckets);
  const unsigned largest = std::max(1u, *std::max_element(gpu.begin(), gpu.end()));
  for (unsigned b = 0; b < buckets; ++b) {
    const int width = static_cast<int>(50.0 * gpu[b] / largest);
    std::printf("  bucket %u | %-50s %6u  (CPU: %u)\n", b, std::string(static_cast<std::size_t>(width), '#').c_str(),
                gpu[b], cpu[b]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  cdplab::DemoOptions options;
  if (const int status = cdplab::start_demo("01", argc, argv, options); status >= 0) return status;

  cdplab::Random rng(options.seed);
  run_demo("a. child-grids: one child grid per parent thread", [&] { demo_child_grids(rng); });
  run_demo("b. tail-continuation: three steps and a tail launch", [&] { demo_tail_continuation(rng); });
  run_demo("c. recursive-reduction: a reduction that launches itself", [&] { demo_recursive_reduction(rng); });
  run_demo("d. shared-histogram: shared-memory counters", [&] { demo_shared_histogram(rng); });
  return 0;
}
