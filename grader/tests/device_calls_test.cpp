// Default deny on the exercise's device code (grader/harness/device_code/device_calls.h): every
// name the PTX uses and does not define is hooked, harmless, the kit's, or refused, and the list
// of what the device runtime offers is read from the toolkit itself: its header, and the names
// libcudadevrt.a exports (where cuobjdump is installed to read them).
#include "device_calls.h"
#include "ptx_instrument.h"

#include "files/files.h"
#include "process/process.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace cdplab::harness::device_code;

namespace {

const std::string kHeader = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// A module that declares `name` as nvcc declares an external function, and calls it from a kernel
/// at source line 12 of student.cu.
std::string calling(const std::string& name) {
  return kHeader + ".extern .func  (.param .b32 func_retval0) " + name + "\n(\n\t.param .b64 " + name +
         "_param_0\n)\n;\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\t.reg .b32 %r<2>;\n\t.loc\t1 12 3\n"
         "\t{ // callseq 0, 0\n\t.param .b64 param0;\n\tst.param.b64 [param0], 0;\n\t.param .b32 retval0;\n"
         "\tcall.uni (retval0), \n\t" + name + ", \n\t(\n\tparam0\n\t);\n\t}\n\tret;\n}\n"
         "\t.file\t1 \"/home/student/cdp-lab/chapters/01-fundamentals/student.cu\"\n";
}

/// The CUDA toolkit's folder (nvcc's parent's parent), where its headers and libraries are.
fs::path toolkit() {
  const auto found = cdplab::process::run({"sh", "-c", "command -v nvcc"}, {});
  fs::path nvcc = found.ok() ? fs::path(found.output.substr(0, found.output.find('\n'))) : fs::path();
  if (nvcc.empty()) nvcc = "/usr/local/cuda/bin/nvcc";
  return fs::weakly_canonical(nvcc).parent_path().parent_path();
}

}  // namespace

TEST_CASE("device calls: what a correct answer uses is allowed, the rest refused with its place") {
  for (const char* allowed : {"__cudaCDP2LaunchDeviceV2", "__cudaCDP2GetParameterBufferV2", "__cudaCDP2GetLastError",
                              "malloc", "free", "__cuda_syscall_aligned_malloc", "__cudaCDP2EventRecordWithFlags",
                              "vprintf", "__assertfail", "__cudaCDP2GetErrorString", "__cudaCDP2DeviceGetAttribute",
                              "_ZN6cdplab20record_device_launchE9cudaErrorPKci"}) {
    CAPTURE(allowed);
    CHECK(refused_device_names(calling(allowed)).empty());
  }
  // The PTX-level launch API called by its own name, the runtime's internals, the first CDP2
  // launch pair, and the grader's own namespaces.
  for (const char* refused : {"cudaLaunchDeviceV2", "cudaGetParameterBufferV2", "cudaLaunchDevice",
                              "__cudaCDP2LaunchDevice", "__cudaCDP2GetParameterBuffer", "__cudaCDPInternalThing",
                              "_ZN6cdplab6oracle11fundamentals4peekEv", "_ZN6cdplab7harness4peekEv", "cudaCGSynchronize"}) {
    CAPTURE(refused);
    const auto names = refused_device_names(calling(refused));
    REQUIRE(names.size() == 1);
    CHECK(names.front().name == refused);
    CHECK(names.front().place == "student.cu:12");
    CHECK(refused_device_names_problem(calling(refused)).find("student.cu:12") != std::string::npos);
  }
}

TEST_CASE("device calls: variables of another module are refused, the block's dynamic shared memory is not") {
  const std::string runtime_variable = kHeader + ".extern .global .align 8 .b8 __cudaCDP2RuntimeState[64];\n";
  REQUIRE(refused_device_names(runtime_variable).size() == 1);
  CHECK_FALSE(refused_device_names(runtime_variable).front().is_function);
  CHECK(refused_device_names(kHeader + ".extern .shared .align 4 .b8 staging[];\n").empty());
  CHECK(refused_device_names(kHeader + ".extern .global .align 8 .b8 cdplab_device_report[128];\n").empty());
}

TEST_CASE("device calls: a function declared first and defined later in the module is the file's own") {
  const std::string ptx = kHeader + ".func helper\n(\n\t.param .b64 p\n)\n;\n.visible .entry k()\n{\n\tret;\n}\n"
                                    ".func helper(\n\t.param .b64 p\n)\n{\n\tret;\n}\n";
  CHECK(refused_device_names(ptx).empty());
}

TEST_CASE("device calls: every device-runtime call the toolkit's header declares is hooked, harmless or refused") {
  const fs::path header = toolkit() / "include" / "cuda_device_runtime_api.h";
  if (!fs::exists(header)) {
    MESSAGE("CDPLAB_TEST_SKIPPED: no cuda_device_runtime_api.h at " << header.string());
    return;
  }
  const std::string text = cdplab::files::read_text(header);
  static const std::regex name(R"(__cudaCDP2[A-Za-z0-9_]+)");
  std::set<std::string> names;
  for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it) names.insert(it->str());
  REQUIRE(names.size() >= 30);
  // Refused: the first CDP2 launch pair, which <<< >>> never writes, and the per-thread default
  // stream's variants (_ptsz), which the workbook's build never asks for.
  for (const auto& n : names) {
    CAPTURE(n);
    const bool first_pair = n == "__cudaCDP2GetParameterBuffer" || n == "__cudaCDP2LaunchDevice";
    const bool per_thread = n.size() > 5 && n.compare(n.size() - 5, 5, "_ptsz") == 0;
    CHECK((judge_device_name(n, true) == DeviceCallVerdict::refused) == (first_pair || per_thread));
  }
  // Every launch and every allocation is hooked.
  for (const char* must_be_hooked : {"__cudaCDP2LaunchDeviceV2", "__cudaCDP2GetParameterBufferV2", "__cudaCDP2Malloc",
                                     "__cudaCDP2Free", "__cudaCDP2StreamCreateWithFlags", "__cudaCDP2StreamDestroy"}) {
    CAPTURE(must_be_hooked);
    CHECK(judge_device_name(must_be_hooked, true) == DeviceCallVerdict::hooked);
  }
}

namespace {

/// The global and weak functions a `cuobjdump -symbols` listing defines. It writes one symbol per
/// line as "STT_FUNC  STB_GLOBAL  STV_DEFAULT  [U]  name", where "U" marks an undefined one.
std::set<std::string> defined_functions(const std::string& listing) {
  std::set<std::string> defined;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    const std::vector<std::string> word{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    if (word.size() < 3 || word[0] != "STT_FUNC" || (word[1] != "STB_GLOBAL" && word[1] != "STB_WEAK")) continue;
    if (std::find(word.begin() + 2, word.end() - 1, "U") != word.end() - 1) continue;
    defined.insert(word.back());
  }
  return defined;
}

}  // namespace

TEST_CASE("device calls: a cuobjdump symbol listing gives its defined global and weak functions") {
  const std::string listing =
      "\nFatbin elf code:\n================\narch = sm_90\n\nsymbols:\n"
      "STT_OBJECT       STB_LOCAL  STV_DEFAULT    $str\n"
      "STT_FUNC         STB_GLOBAL STO_ENTRY      kernel_one\n"
      "STT_FUNC         STB_GLOBAL STV_DEFAULT  U vprintf\n"
      "STT_FUNC         STB_WEAK   STV_DEFAULT    weak_helper\n"
      "STT_FUNC         STB_LOCAL  STV_DEFAULT    local_helper\n"
      "STT_FUNC         STB_GLOBAL STV_DEFAULT    cudaGetParameterBufferV2\n";
  CHECK(defined_functions(listing) == std::set<std::string>{"cudaGetParameterBufferV2", "kernel_one", "weak_helper"});
}

TEST_CASE("device calls: every function libcudadevrt exports is seen by a hook or refused") {
  const fs::path library = toolkit() / "lib64" / "libcudadevrt.a";
  const fs::path cuobjdump = toolkit() / "bin" / "cuobjdump";
  if (!fs::exists(library) || !fs::exists(cuobjdump)) {
    MESSAGE("CDPLAB_TEST_SKIPPED: reading libcudadevrt's exports needs cuobjdump beside nvcc (" << cuobjdump.string()
                                                                                                << ")");
    return;
  }
  cdplab::process::Options options;
  options.timeout_seconds = 120;
  const auto dumped = cdplab::process::run({cuobjdump.string(), "-symbols", library.string()}, options);
  REQUIRE_MESSAGE(dumped.ok(), dumped.output.substr(0, 2000));
  const std::set<std::string> exported = defined_functions(dumped.output);
  const std::string& text = dumped.output;
  REQUIRE_MESSAGE(exported.size() >= 4, text.substr(0, 4000));
  std::string listing;
  for (const auto& name : exported) {
    const DeviceCallVerdict verdict = judge_device_name(name, true);
    listing += name + ": " +
               (verdict == DeviceCallVerdict::hooked     ? "hooked"
                : verdict == DeviceCallVerdict::harmless ? "harmless"
                : verdict == DeviceCallVerdict::kit      ? "kit"
                                                         : "refused") +
               "\n";
    CAPTURE(name);
    CHECK(verdict != DeviceCallVerdict::kit);
    // Seen or refused: a call of it is either renamed to a hook, or refused before any link.
    const std::string ptx = calling(name);
    const bool renamed = instrument_ptx(ptx, "cdplab_hook_0123456789abcdef_").ptx.find("\t" + name + ", ") == std::string::npos;
    const bool refused = !refused_device_names(ptx).empty();
    // The parameter-buffer request is renamed where nvcc wrote it (with the caller added); written
    // otherwise it reaches the runtime, and the launch that uses the buffer is counted by its hook.
    if (verdict == DeviceCallVerdict::hooked && name != "__cudaCDP2GetParameterBufferV2") CHECK(renamed);
    if (verdict == DeviceCallVerdict::refused) CHECK(refused);
    if (verdict == DeviceCallVerdict::harmless) CHECK_FALSE(refused);
  }
  MESSAGE("libcudadevrt exports, as the grader judges them:\n" << listing);
}
