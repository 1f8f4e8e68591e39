#include "device_link.h"

#include <nvJitLink.h>

namespace cdplab::harness::device_code {

Linked link_device_code(const std::vector<PtxModule>& modules, const std::vector<std::string>& libraries,
                        const std::string& architecture) {
  Linked linked;
  const std::string arch_option = "-arch=" + architecture;
  const char* options[] = {arch_option.c_str()};
  nvJitLinkHandle handle = nullptr;
  if (nvJitLinkCreate(&handle, 1, options) != NVJITLINK_SUCCESS) {
    linked.log = "the device linker (nvJitLink) could not start for " + architecture;
    return linked;
  }
  bool ok = true;
  for (const auto& module : modules) {
    if (!ok) break;
    ok = nvJitLinkAddData(handle, NVJITLINK_INPUT_PTX, module.text.c_str(), module.text.size() + 1,
                          module.name.c_str()) == NVJITLINK_SUCCESS;
  }
  for (const auto& library : libraries) {
    if (!ok) break;
    ok = nvJitLinkAddFile(handle, NVJITLINK_INPUT_LIBRARY, library.c_str()) == NVJITLINK_SUCCESS;
    if (!ok) linked.log += "cannot read the device library " + library + "\n";
  }
  ok = ok && nvJitLinkComplete(handle) == NVJITLINK_SUCCESS;
  std::size_t size = 0;
  if (nvJitLinkGetErrorLogSize(handle, &size) == NVJITLINK_SUCCESS && size > 1) {
    std::string log(size, '\0');
    if (nvJitLinkGetErrorLog(handle, log.data()) == NVJITLINK_SUCCESS) linked.log += log.c_str();
  }
  if (ok && nvJitLinkGetLinkedCubinSize(handle, &size) == NVJITLINK_SUCCESS) {
    linked.cubin.resize(size);
    ok = nvJitLinkGetLinkedCubin(handle, linked.cubin.data()) == NVJITLINK_SUCCESS;
  }
  nvJitLinkDestroy(&handle);
  linked.ok = ok && !linked.cubin.empty();
  return linked;
}

}  // namespace cdplab::harness::device_code
