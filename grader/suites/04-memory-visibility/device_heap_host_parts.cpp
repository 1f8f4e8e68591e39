// Host parts of exercise device-heap (cdplab/host_part.h): the host functions of the file that are
// graded as the student's. Compiled into the grading suite as proxies and into the process that runs
// the student's copies (grader/harness/host_parts/host_parts.h).
#include "host_parts.h"

#include "cdplab/visibility.h"

#include <cstddef>
#include <vector>

namespace cdplab::visibility {
CDPLAB_GRADED_HOST_PART(void, reserve_heap_for, (const std::vector<unsigned>&))
}  // namespace cdplab::visibility
