/// @file flat_tessellation.h
/// @brief Bezier lines tessellated without dynamic parallelism: a count kernel, a scan of the
///        counts (CUB), and one thread per vertex of all lines. The baseline of
///        aggregated-tessellation's speed check (grader/harness/speed.h) and the chapter's
///        benchmark's flat version.
#pragma once

#include "cdplab/bezier.h"
#include "cdplab/device_array.h"

#include <vector>

namespace cdplab::support::bezier {

/// The flat version's GPU buffers for `n` lines. The vertex buffer grows to the largest total
/// it has seen and is reused after that (so a warm-up call allocates it).
class FlatTessellator {
 public:
  explicit FlatTessellator(int n);

  /// Tessellates the `n` lines at `lines` (GPU memory) and waits; returns the total vertex count.
  int run(const cdplab::bezier::Line* lines, const cdplab::bezier::Tessellation& t);

  /// The n + 1 line starts of the last run (the last one is the total).
  std::vector<int> offsets() const { return offsets_.download(); }

  /// The first `total` vertices of the last run, line after line.
  std::vector<cdplab::bezier::Point> vertices(int total) const;

 private:
  int n_;
  DeviceArray<int> counts_;
  DeviceArray<int> offsets_;
  DeviceArray<unsigned char> scan_space_;
  DeviceArray<cdplab::bezier::Point> vertices_;
};

}  // namespace cdplab::support::bezier
