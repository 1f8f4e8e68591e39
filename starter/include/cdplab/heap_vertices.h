/// @file heap_vertices.h
/// @brief Chapter 02 helpers of the starter kit: reading vertices out of the device heap, and
///        the device limits the demo and the checks set or report.
///
/// Device-heap memory (cudaMalloc in a kernel) cannot be read with cudaMemcpy from the host:
/// gather_vertices() copies it into ordinary global memory with a kernel first.
#pragma once

#include <cmath>  // before cdplab/bezier.h: its inline functions call sqrtf and fabsf
#include <cstddef>

#include "cdplab/bezier.h"

#include <vector>

namespace cdplab::heap_vertices {

using cdplab::bezier::LineVertices;
using cdplab::bezier::Point;

/// Copies the vertices that `out` (n records in global memory, from an exercise) points to.
/// Line i comes back with `out[i].count` vertices when its pointer is not null and its count
/// lies in [1, max_vertices]; otherwise it comes back empty (the records say why).
/// Throws cdplab::CudaError when the copy faults (a record pointing to memory it does not own).
std::vector<std::vector<Point>> gather_vertices(const LineVertices* out, int n, int max_vertices);

/// Sets cudaLimitMallocHeapSize to `bytes` and returns the limit the driver reports after it.
/// Call it before any kernel that uses the device heap has run in this process.
std::size_t set_heap_limit(std::size_t bytes);

/// The current cudaLimitMallocHeapSize, in bytes.
std::size_t heap_limit();

/// The current cudaLimitDevRuntimePendingLaunchCount.
std::size_t pending_launch_limit();

/// A device heap that holds `lines` buffers of at most `max_vertices` points each, with the
/// margin the chapter's lesson gives: each buffer rounded up to 16 bytes plus 64 bytes of
/// allocator bookkeeping, doubled, plus 1 MiB.
std::size_t heap_bytes_for(std::size_t lines, int max_vertices);

}  // namespace cdplab::heap_vertices
