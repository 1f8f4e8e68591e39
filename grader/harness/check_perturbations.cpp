// The perturbations of checks (check_perturbations.h).
#include "check_perturbations.h"

#include "device_code.h"

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>

namespace cdplab::harness {

void set_check_perturbations(bool on, bool record_grids) noexcept {
  try {
    // Recorded under compute-sanitizer too (`on` false there): a suite may read its verdicts from
    // the record, and the tools watch that run as any other.
    const bool record = record_grids && grid_recording_asked();
    static const PerturbationsAsked asked = perturbations_asked(std::getenv("CDPLAB_CHECK_PERTURBATIONS"));
    set_device_perturbations(on && asked.launches ? kCheckLaunchDelayNs : 0, on && asked.blocks ? kCheckBlockDelayNs : 0,
                             kPerturbedLaunches, record);
  } catch (...) {
    (void)cudaGetLastError();
  }
}

}  // namespace cdplab::harness
