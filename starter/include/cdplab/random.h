/// @file random.h
/// @brief Seeded input generators. The same seed gives the same input on every machine and
///        standard library (no std:: distributions, whose results differ between libraries).
#pragma once

#include <cstdint>
#include <vector>

namespace cdplab {

/// A small, fast, seedable generator (SplitMix64); portable across compilers.
class Random {
 public:
  /// A generator whose whole sequence is fixed by `seed`.
  explicit Random(std::uint64_t seed) : state_(seed) {}

  /// The next 64 random bits.
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [lo, hi] (inclusive).
  std::int64_t integer(std::int64_t lo, std::int64_t hi) {
    const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
    return lo + static_cast<std::int64_t>(span == 0 ? next() : next() % span);
  }
  /// A new generator whose stream depends on this seed and `salt` (for sub-inputs).
  Random derive(std::uint64_t salt) const { return Random(state_ ^ (salt * 0xD1B54A32D192ED03ull)); }

 private:
  std::uint64_t state_;
};

/// `count` floats uniform in [lo, hi).
std::vector<float> uniform_floats(Random& rng, std::size_t count, float lo, float hi);

/// `count` work sizes with a heavy tail: most are small, a few are `max_size` large, some are 0.
/// This is the skewed distribution that makes one-thread-per-item loops imbalanced.
std::vector<unsigned> skewed_sizes(Random& rng, std::size_t count, unsigned max_size);

/// Hashes a string (a test name, say) into a seed salt.
std::uint64_t hash_name(const char* name);

}  // namespace cdplab
