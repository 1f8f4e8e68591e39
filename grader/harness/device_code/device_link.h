/// @file device_link.h
/// @brief Links device code at run time (nvJitLink): the exercise's instrumented PTX, the hooks,
///        the starter kit's and the chapter's device code and the device runtime, into one cubin.
#pragma once

#include <string>
#include <vector>

namespace cdplab::harness::device_code {

/// One PTX module to link, and the name the linker's messages give it.
struct PtxModule {
  std::string name;
  std::string text;
};

struct Linked {
  bool ok = false;
  std::vector<char> cubin;
  std::string log;  ///< the linker's messages (its errors when not ok)
};

/// Links `modules` and the static libraries `libraries` (relocatable device code, as nvcc -rdc
/// archives hold it; the device runtime libcudadevrt.a among them) for the GPU architecture
/// `architecture` ("sm_90"). Needs no GPU.
Linked link_device_code(const std::vector<PtxModule>& modules, const std::vector<std::string>& libraries,
                        const std::string& architecture);

}  // namespace cdplab::harness::device_code
