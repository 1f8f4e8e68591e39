// The perturbations of checks (check_perturbations.h).
#include "check_perturbations.h"

#include "device_code.h"

#include <cuda_runtime.h>

namespace cdplab::harness {

void set_check_perturbations(bool on) noexcept {
  try {
    set_device_perturbations(on ? kCheckLaunchDelayNs : 0, on ? kCheckBlockDelayNs : 0, on);
  } catch (...) {
    (void)cudaGetLastError();
  }
}

}  // namespace cdplab::harness
