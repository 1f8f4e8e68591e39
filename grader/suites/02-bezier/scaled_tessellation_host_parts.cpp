// Host parts of exercise scaled-tessellation (cdplab/host_part.h): the host functions of the file that are
// graded as the student's. Compiled into the grading suite as proxies and into the process that runs
// the student's copies (grader/harness/host_parts/host_parts.h).
#include "host_parts.h"

#include "cdplab/bezier.h"

#include <cstddef>
#include <vector>

namespace cdplab::bezier {
CDPLAB_GRADED_HOST_PART(void, reserve_tessellation_resources, (int, const Tessellation&))
}  // namespace cdplab::bezier
