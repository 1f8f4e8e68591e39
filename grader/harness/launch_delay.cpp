// The launch delay of checks (launch_delay.h).
#include "launch_delay.h"

#include "cdplab/check.h"

namespace cdplab::harness {

void set_check_launch_delay(bool on) noexcept {
  try {
    cdplab::set_launch_delay(on ? kCheckLaunchDelayNs : 0);
  } catch (...) {
    (void)cudaGetLastError();
  }
}

}  // namespace cdplab::harness
