#include "cdplab/random.h"

#include <cmath>

namespace cdplab {

std::vector<float> uniform_floats(Random& rng, std::size_t count, float lo, float hi) {
  std::vector<float> values(count);
  for (auto& v : values) v = static_cast<float>(rng.uniform(lo, hi));
  return values;
}

std::vector<unsigned> skewed_sizes(Random& rng, std::size_t count, unsigned max_size) {
  std::vector<unsigned> sizes(count);
  for (auto& s : sizes) {
    const double u = rng.uniform();
    if (u < 0.1) {
      s = 0;  // items with no inner work: a child launch would have zero blocks
    } else {
      // Pareto-like tail: size ~ max_size * x^4 concentrates mass near 0, with rare giants.
      const double x = rng.uniform();
      s = static_cast<unsigned>(std::floor(1.0 + (max_size - 1.0) * x * x * x * x));
    }
  }
  return sizes;
}

std::uint64_t hash_name(const char* name) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (; *name != '\0'; ++name) h = (h ^ static_cast<unsigned char>(*name)) * 1099511628211ull;
  return h;
}

}  // namespace cdplab
