#include "04-memory-visibility.h"

#include <cmath>
#include <sstream>
#include <string>

namespace cdplab::oracle::visibility {

// ----- private-pointers ----------------------------------------------------------------

float segment_scale(std::size_t segment) { return 0.5f * static_cast<float>(segment % 4); }

namespace {

/// The exact (double) sum of every segment of `in`.
std::vector<double> segment_sums(const std::vector<float>& in) {
  std::vector<double> sums((in.size() + kSegmentSize - 1) / kSegmentSize, 0.0);
  for (std::size_t i = 0; i < in.size(); ++i) sums[i / kSegmentSize] += in[i];
  return sums;
}

}  // namespace

std::vector<double> expected_segment_scaling(const std::vector<float>& in) {
  const auto sums = segment_sums(in);
  std::vector<double> out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::size_t s = i / kSegmentSize;
    out[i] = static_cast<double>(in[i]) * sums[s] + segment_scale(s);
  }
  return out;
}

Verdict judge_segment_scaling(const std::vector<float>& in, const std::vector<float>& found) {
  if (found.size() != in.size()) {
    std::ostringstream out;
    out << "scale_by_segment_sums returned " << found.size() << " values for " << in.size()
        << " inputs; expected one output per input";
    return fail(out.str());
  }
  const auto sums = segment_sums(in);
  const auto expected = expected_segment_scaling(in);
  std::size_t first = in.size();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    // A float sum of 256 values in any order is off by far less than 1e-4 of the sum of their
    // magnitudes; the inputs the suite uses are non-negative, so that is the sum itself.
    const double sum_error = 1e-4 * std::fabs(sums[i / kSegmentSize]) * std::fabs(in[i]);
    if (std::fabs(found[i] - expected[i]) > 1e-5 + 1e-6 * std::fabs(expected[i]) + sum_error && wrong++ == 0) first = i;
  }
  if (wrong == 0) return pass();
  const std::size_t s = first / kSegmentSize;
  std::ostringstream out;
  out.precision(9);
  out << "out[" << first << "] (segment " << s << ", whose sum is " << sums[s] << " and scale " << segment_scale(s)
      << "): expected in[" << first << "] * " << sums[s] << " + " << segment_scale(s) << " = " << expected[first]
      << ", found " << found[first] << " (" << wrong << " of " << in.size()
      << " elements differ). The child must read the segment's sum and scale from global memory that the "
         "parent wrote before the launch";
  return fail(out.str());
}

// ----- tail-consumer -------------------------------------------------------------------

int child_value(int in) { return in * 3 + 1; }

std::vector<int> expected_consumption(const std::vector<int>& seed) {
  std::vector<int> result(seed.size());
  for (std::size_t i = 0; i < seed.size(); ++i) result[i] = child_value(seed[i]) + seed[i];
  return result;
}

Verdict judge_consumption(const std::vector<int>& seed, unsigned delay_ns, const std::vector<int>& found) {
  if (found.size() != seed.size()) {
    std::ostringstream out;
    out << "consume_after_child returned " << found.size() << " values for " << seed.size() << " seeds";
    return fail(out.str());
  }
  const auto expected = expected_consumption(seed);
  std::size_t first = seed.size();
  std::size_t wrong = 0;
  std::size_t stale = 0;  // result[i] == in[i]: computed while out[i] was still 0
  for (std::size_t i = 0; i < seed.size(); ++i) {
    if (found[i] == expected[i]) continue;
    if (wrong++ == 0) first = i;
    if (found[i] == seed[i]) ++stale;
  }
  if (wrong == 0) return pass();
  std::ostringstream out;
  out << "result[" << first << "] with seed[" << first << "] = " << seed[first] << " and a child that takes "
      << delay_ns << " ns: expected out + in = " << child_value(seed[first]) << " + " << seed[first] << " = "
      << expected[first] << ", found " << found[first] << " (" << wrong << " of " << seed.size()
      << " results differ";
  if (stale > 0) out << ", " << stale << " of them equal to in[i] alone";
  out << "). ";
  if (stale > 0) {
    out << "Those were computed before the child had written out[i] (still 0): the parent cannot wait for its "
           "child, so launch the consumer into cudaStreamTailLaunch, which starts after the child has finished";
  } else {
    out << "The consumer writes result[i] = out[i] + in[i] for every i of its segment";
  }
  return fail(out.str());
}

// ----- constant-params -----------------------------------------------------------------

double polynomial(const std::vector<float>& coefficients, double x) {
  double value = 0.0;
  for (std::size_t k = coefficients.size(); k-- > 0;) value = value * x + coefficients[k];
  return value;
}

Verdict judge_polynomial(const std::vector<float>& x, const std::vector<float>& coefficients,
                         const std::vector<float>& found) {
  if (found.size() != x.size()) {
    std::ostringstream out;
    out << "evaluate_polynomial returned " << found.size() << " values for " << x.size() << " points";
    return fail(out.str());
  }
  std::size_t first = x.size();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    double magnitude = 0.0;  // sum |c_k| |x|^k: the scale of the rounding errors
    double power = 1.0;
    for (float c : coefficients) {
      magnitude += std::fabs(c) * power;
      power *= std::fabs(x[i]);
    }
    if (std::fabs(found[i] - polynomial(coefficients, x[i])) > 1e-6 + 1e-5 * magnitude && wrong++ == 0) first = i;
  }
  if (wrong == 0) return pass();
  std::ostringstream out;
  out.precision(9);
  out << "p(x[" << first << "]) with x[" << first << "] = " << x[first] << " and " << coefficients.size()
      << " coefficients: expected " << polynomial(coefficients, x[first]) << ", found " << found[first] << " ("
      << wrong << " of " << x.size() << " values differ). ";
  if (found[first] == 0.0f) {
    out << "It was never written: every segment needs its child, covering the whole segment";
  } else {
    out << "coefficients[k] multiplies x^k; the host copies all of them, and their count, into constant memory "
           "before the launch";
  }
  return fail(out.str());
}

// ----- device-heap ---------------------------------------------------------------------

unsigned long long expected_scratch_sum(unsigned size) {
  return static_cast<unsigned long long>(size) * (static_cast<unsigned long long>(size) + 1) / 2;
}

Verdict judge_scratch_sums(const std::vector<unsigned>& sizes, const cdplab::visibility::HeapRun& found) {
  if (found.sums.size() != sizes.size()) {
    std::ostringstream out;
    out << "heap_scratch_sums returned " << found.sums.size() << " sums for " << sizes.size() << " items";
    return fail(out.str());
  }
  std::size_t first = sizes.size();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (found.sums[i] != expected_scratch_sum(sizes[i]) && wrong++ == 0) first = i;
  }
  if (wrong == 0) return pass();
  std::ostringstream out;
  out << "sums[" << first << "] for a buffer of " << sizes[first] << " values: expected 1 + 2 + ... + "
      << sizes[first] << " = " << expected_scratch_sum(sizes[first]) << ", found " << found.sums[first] << " ("
      << wrong << " of " << sizes.size() << " sums differ). ";
  if (found.sums[first] == 0) {
    out << "Nothing was stored: each thread allocates its buffer, fills it, sums it into sums[i] and frees it";
  } else {
    out << "Fill the buffer with 1 .. size (not 0 .. size - 1) and add into an unsigned long long";
  }
  return fail(out.str());
}

}  // namespace cdplab::oracle::visibility
