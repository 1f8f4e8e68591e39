// The perturbations of checks (check_perturbations.h).
#include "check_perturbations.h"

#include "device_code.h"

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>

namespace cdplab::harness {

void set_check_perturbations(bool on, bool record_grids) noexcept {
  try {
    const bool record = on && record_grids && grid_recording_asked();
    set_device_perturbations(on ? kCheckLaunchDelayNs : 0, on ? kCheckBlockDelayNs : 0, kPerturbedLaunches, record);
  } catch (...) {
    (void)cudaGetLastError();
  }
}

}  // namespace cdplab::harness
