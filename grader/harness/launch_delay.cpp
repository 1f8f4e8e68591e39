// The launch delay of checks (launch_delay.h).
#include "launch_delay.h"

#include "cdplab/check.h"

namespace cdplab::harness {

namespace {
bool delay_on = false;  // what this process last set; the device's value starts at 0
}  // namespace

void set_check_launch_delay(bool on) noexcept {
  // Nothing to change, no CUDA call: a process that never turned the delay on (a test of the
  // harness on the host) gets no CUDA context from turning it off.
  if (on == delay_on) return;
  try {
    cdplab::set_launch_delay(on ? kCheckLaunchDelayNs : 0);
    delay_on = on;
  } catch (...) {
    (void)cudaGetLastError();
  }
}

}  // namespace cdplab::harness
