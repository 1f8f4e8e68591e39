// Host parts of exercise quicksort (cdplab/host_part.h): the host functions of the file that are
// graded as the student's. Compiled into the grading suite as proxies and into the process that runs
// the student's copies (grader/harness/host_parts/host_parts.h).
#include "host_parts.h"

#include "cdplab/streams.h"

#include <cstddef>
#include <vector>

namespace cdplab::streams {
CDPLAB_GRADED_HOST_PART(void, reserve_sort_launches, (std::size_t))
}  // namespace cdplab::streams
