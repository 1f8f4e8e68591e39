// The device-code loader's parts that need no GPU (grader/harness/device_code): the exercise's
// PTX instrumented (its device-runtime calls renamed to the grader's hooks), the names its host
// code reaches, and every exercise of this build linked at run time with the hooks, the starter
// kit's and chapters' device libraries and the device runtime, as a check process links it.
#include "check_perturbations.h"
#include "device_calls.h"
#include "device_link.h"
#include "ptx_instrument.h"

#include "files/files.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace cdplab::harness::device_code;

namespace {

// What nvcc 13 writes for a parent that creates a stream, launches into it, reads the error,
// allocates and frees on the device heap (shortened: declarations and the calls).
const char* const kParentPtx = R"(
.extern .func  (.param .b32 func_retval0) __cudaCDP2GetLastError
()
;
.extern .func  (.param .b32 func_retval0) __cudaCDP2StreamCreateWithFlags
(
	.param .b64 __cudaCDP2StreamCreateWithFlags_param_0,
	.param .b32 __cudaCDP2StreamCreateWithFlags_param_1
)
;
.extern .func  (.param .b64 func_retval0) __cudaCDP2GetParameterBufferV2
(
	.param .b64 __cudaCDP2GetParameterBufferV2_param_0
)
;
.extern .func  (.param .b32 func_retval0) __cudaCDP2LaunchDeviceV2
(
	.param .b64 __cudaCDP2LaunchDeviceV2_param_0,
	.param .b64 __cudaCDP2LaunchDeviceV2_param_1
)
;
.extern .func  (.param .b64 func_retval0) malloc
(
	.param .b64 malloc_param_0
)
;
.extern .func free
(
	.param .b64 free_param_0
)
;
.visible .const .align 4 .b8 _ZN2ns4coefE[16];
.visible .global .align 4 .u32 _ZN2ns5countE = 0;
.global .align 1 .b8 $str[4] = {102, 114, 101, 101};
.visible .entry _ZN2ns5childEPi(
.visible .entry _ZN2ns6parentEPi(
	call.uni (retval0), 
	__cudaCDP2StreamCreateWithFlags, 
	call.uni (retval0), 
	__cudaCDP2GetParameterBufferV2, 
	call.uni (retval0), 
	__cudaCDP2LaunchDeviceV2, 
	call.uni (retval0), 
	__cudaCDP2GetLastError, 
	call.uni (retval0), 
	malloc, 
	call.uni 
	free, 
	mov.u64 	%rd9, my_malloc_pool;
)";

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

/// How often `name` occurs in `text` as a whole PTX identifier.
std::size_t identifier_count(const std::string& text, const std::string& name) {
  const auto part = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%'; };
  std::size_t n = 0;
  for (auto at = text.find(name); at != std::string::npos; at = text.find(name, at + name.size()))
    if ((at == 0 || !part(text[at - 1])) && (at + name.size() == text.size() || !part(text[at + name.size()]))) ++n;
  return n;
}

}  // namespace

TEST_CASE("device code: the device-runtime calls are renamed to the hooks, declarations and calls alike") {
  const std::string tag = "cdplab_hook_0123456789abcdef_";
  const auto instrumented = instrument_ptx(kParentPtx, tag);
  CHECK(refused_device_names(kParentPtx).empty());
  for (const std::string call : {"LaunchDeviceV2", "GetLastError", "StreamCreateWithFlags"}) {
    CAPTURE(call);
    CHECK(identifier_count(instrumented.ptx, "__cudaCDP2" + call) == 0);
    CHECK(identifier_count(instrumented.ptx, tag + call) == 2);  // its declaration and its call
  }
  CHECK(identifier_count(instrumented.ptx, tag + "malloc") == 2);
  CHECK(identifier_count(instrumented.ptx, tag + "free") == 2);
  CHECK(identifier_count(instrumented.ptx, "malloc") == 0);
  // What the hooks do not stand in for stays; so do names that merely contain a hooked one.
  CHECK(identifier_count(instrumented.ptx, "__cudaCDP2GetParameterBufferV2") == 2);
  CHECK(identifier_count(instrumented.ptx, "my_malloc_pool") == 1);
  CHECK(identifier_count(instrumented.ptx, "malloc_param_0") == 1);
  CHECK(count_of(instrumented.ptx, "{102, 114, 101, 101}") == 1);  // a string's bytes are no names
}

// A parent with two launch sites (one in a device function it calls) as nvcc 13 writes them, and a
// kernel of another file it launches.
const char* const kTwoCallersPtx = R"(
.extern .func  (.param .b64 func_retval0) __cudaCDP2GetParameterBufferV2
(
	.param .b64 __cudaCDP2GetParameterBufferV2_param_0,
	.param .align 4 .b8 __cudaCDP2GetParameterBufferV2_param_1[12],
	.param .align 4 .b8 __cudaCDP2GetParameterBufferV2_param_2[12],
	.param .b32 __cudaCDP2GetParameterBufferV2_param_3
)
;
.extern .entry _ZN2ns5otherEPi
(
	.param .u64 _ZN2ns5otherEPi_param_0
)
;
.visible .entry _ZN2ns5childEPi(
	.param .u64 _ZN2ns5childEPi_param_0
)
{
	ret;
}
.func  (.param .b32 func_retval0) _ZN2ns6helperEv()
{
	{ // callseq 0, 0
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd1;
	.param .align 4 .b8 param1[12];
	.param .align 4 .b8 param2[12];
	.param .b32 param3;
	.param .b64 retval0;
	call.uni (retval0), 
	__cudaCDP2GetParameterBufferV2, 
	(
	param0, 
	param1, 
	param2, 
	param3
	);
	ld.param.b64 	%rd2, [retval0+0];
	} // callseq 0
	ret;
}
.visible .entry _ZN2ns6parentEPi(
	.param .u64 _ZN2ns6parentEPi_param_0
)
{
	mov.u64 	%rd1, _ZN2ns5childEPi;
	{ // callseq 1, 0
	.param .b64 param0;
	.param .b64 retval0;
	call.uni (retval0), 
	__cudaCDP2GetParameterBufferV2, 
	(
	param0, 
	param1, 
	param2, 
	param3
	);
	} // callseq 1
	ret;
}
)";

TEST_CASE("device code: every launch tells the hooks which function made it, and the kernels' addresses can be read") {
  const std::string tag = "cdplab_hook_0123456789abcdef_";
  const auto instrumented = instrument_ptx(kTwoCallersPtx, tag);
  // Functions by index: what a launch's caller number means to the host.
  CHECK(instrumented.functions == std::vector<std::string>{"__cudaCDP2GetParameterBufferV2", "_ZN2ns5otherEPi",
                                                           "_ZN2ns5childEPi", "_ZN2ns6helperEv", "_ZN2ns6parentEPi"});
  CHECK(instrumented.kernels == std::vector<std::string>{"_ZN2ns5otherEPi", "_ZN2ns5childEPi", "_ZN2ns6parentEPi"});
  const std::string& ptx = instrumented.ptx;
  // Both calls go to the hook, each with its own caller's index; the hook is declared before them.
  CHECK(identifier_count(ptx, "__cudaCDP2GetParameterBufferV2") == 1);  // the declaration, left
  CHECK(identifier_count(ptx, tag + "GetParameterBufferFrom") == 3);
  CHECK(ptx.find(tag + "GetParameterBufferFrom") < ptx.find("__cudaCDP2GetParameterBufferV2"));
  CHECK(ptx.find("_param_4") != std::string::npos);
  const auto helper_call = ptx.find("st.param.b32 [cdplab_caller+0], 3;");
  const auto parent_call = ptx.find("st.param.b32 [cdplab_caller+0], 4;");
  REQUIRE(helper_call != std::string::npos);
  REQUIRE(parent_call != std::string::npos);
  CHECK(helper_call < ptx.find(".visible .entry _ZN2ns6parentEPi"));
  CHECK(parent_call > ptx.find(".visible .entry _ZN2ns6parentEPi"));
  CHECK(count_of(ptx, "param3, cdplab_caller") == 2);
  // The added kernel writes every kernel's address, the other file's included, in that order.
  const auto addresses = ptx.find(".visible .entry " + tag + "kernel_addresses(");
  REQUIRE(addresses != std::string::npos);
  CHECK(ptx.find("mov.u64 \t%cdplab2, _ZN2ns5otherEPi;", addresses) != std::string::npos);
  CHECK(ptx.find("[%cdplab1+16], %cdplab2;", addresses) != std::string::npos);
  // A call written otherwise (no argument list where nvcc puts it) is left to the real function.
  const auto odd = instrument_ptx(std::string(kTwoCallersPtx) + "\tcall.uni (retval0), __cudaCDP2GetParameterBufferV2;\n", tag);
  CHECK(identifier_count(odd.ptx, "__cudaCDP2GetParameterBufferV2") == 2);
}

TEST_CASE("device code: a launch entry point no hook observes is refused") {
  const std::string ptx = ".extern .func  (.param .b32 func_retval0) __cudaCDP2LaunchDevice\n(\n\t.param .b64 p0\n)\n;\n" +
                          std::string(kParentPtx) + "\n\tcall.uni (retval0), __cudaCDP2LaunchDevice, (param0);\n";
  const auto refused = refused_device_names(ptx);
  REQUIRE(refused.size() == 1);
  CHECK(refused.front().name == "__cudaCDP2LaunchDevice");
  CHECK(refused_device_names_problem(ptx).find("launch child grids with <<< >>>") != std::string::npos);
  CHECK(refused_device_names(kParentPtx).empty());
}

TEST_CASE("device code: the hooks' names all carry the process's tag") {
  const std::string tag = "cdplab_hook_fedcba9876543210_";
  const std::string hooks = hooks_ptx(tag, 0x1234abcd5678ef90ull);
  CHECK(count_of(hooks, tag + "LaunchDeviceV2") >= 1);
  CHECK(count_of(hooks, tag + "state") >= 1);
  CHECK(count_of(hooks, tag + "block_start") >= 1);
  CHECK(count_of(hooks, "cdplab_hook_") == count_of(hooks, tag));
  // The state's key is in the code, in every place the hooks unmask the state's address.
  CHECK(count_of(hooks, "0x0cd91ab0c0ffee00") == 0);
  CHECK(count_of(hooks, "0x1234abcd5678ef90") >= 5);
  // Every call the instrumentation renames has its hook.
  for (const auto& call : hooked_runtime_calls()) {
    CAPTURE(call.ptx_name);
    CHECK(hooks.find(".visible .func") != std::string::npos);
    CHECK(count_of(hooks, tag + call.hook) >= 1);
  }
  CHECK(hook_state_key(tag) != hook_state_key("cdplab_hook_fedcba9876543211_"));
  CHECK(fresh_hook_tag() != fresh_hook_tag());
  CHECK(fresh_hook_tag().size() == std::string("cdplab_hook_").size() + 17);
}

TEST_CASE("device code: a tag the grader gives is 16 lowercase hexadecimal digits, or none is taken") {
  CHECK(hook_tag_from("0123456789abcdef") == "cdplab_hook_0123456789abcdef_");
  for (const char* wrong : {"", "0123456789abcde", "0123456789abcdef0", "0123456789ABCDEF", "0123456789abcdeg",
                            "counts_x; .global", "0123456789abcd_f"}) {
    CAPTURE(wrong);
    CHECK(hook_tag_from(wrong).empty());
  }
}

TEST_CASE("device code: the names host code reaches are the visible kernels and variables") {
  const auto names = exported_device_names(kParentPtx);
  CHECK(names == std::vector<std::string>{"_ZN2ns4coefE", "_ZN2ns5countE", "_ZN2ns5childEPi", "_ZN2ns6parentEPi"});
}

TEST_CASE("device code: every exercise of this build links with the hooks and its device libraries") {
  std::ifstream in(fs::path(CDPLAB_BINARY_DIR) / "cdplab-index.json");
  REQUIRE(in);
  const auto index = nlohmann::json::parse(in);
  const std::string tag = fresh_hook_tag();
  int linked = 0;
  for (const auto& exercise : index.at("exercises")) {
    const std::string ptx_path = exercise.value("ptx", "");
    if (ptx_path.empty() || !fs::exists(ptx_path)) continue;
    const std::string test = exercise.value("test", "");
    CAPTURE(test);
    const std::string joined = index.at("device_libraries").value(test, "");
    std::vector<std::string> libraries;
    for (std::size_t at = 0; at < joined.size();) {
      auto end = joined.find('|', at);
      if (end == std::string::npos) end = joined.size();
      libraries.push_back(joined.substr(at, end - at));
      at = end + 1;
    }
    const std::string original = cdplab::files::read_text(ptx_path);
    CHECK_MESSAGE(refused_device_names(original).empty(), refused_device_names_problem(original));
    // Recording grids is asked for per process (check --timeline): both ways must link.
    const auto recording = instrument_ptx(original, tag, true);
    CHECK(count_of(recording.ptx, "call \t" + tag + "block_end;") > 0);
    const auto recorded = link_device_code({{"exercise", recording.ptx}, {"hooks", hooks_ptx(tag, hook_state_key(tag))}},
                                           libraries, "sm_" + std::string(CDPLAB_PTX_ARCHITECTURE));
    CHECK_MESSAGE(recorded.ok, recorded.log);
    const auto instrumented = instrument_ptx(original, tag);
    // Every kernel the exercise defines starts with the block-start hook.
    int defined_kernels = 0;
    for (std::size_t at = original.find(".entry "); at != std::string::npos; at = original.find(".entry ", at + 1)) {
      const std::size_t body = original.find_first_of("{;", at);
      if (body != std::string::npos && original[body] == '{') ++defined_kernels;
    }
    CHECK(count_of(instrumented.ptx, "call.uni \t" + tag + "block_start, (cdplab_kernel, cdplab_key);") == defined_kernels);
    CHECK(count_of(recording.ptx, "call.uni \t" + tag + "block_start, (cdplab_kernel, cdplab_key);") == defined_kernels);
    // ... and, recording, ends at the block-end hook wherever it returned; without, as it was.
    CHECK(count_of(recording.ptx, "call \t" + tag + "block_end;") == defined_kernels);
    CHECK(count_of(instrumented.ptx, "call \t" + tag + "block_end;") == 0);
    CHECK(count_of(instrumented.ptx, "ld.param.b64 \t%cdplab_k1") == 0);  // no key without recording
    // Every launch nvcc wrote tells the hooks its caller: the real parameter-buffer request is left
    // declared and called nowhere.
    CHECK(identifier_count(instrumented.ptx, "__cudaCDP2GetParameterBufferV2") <= 1);
    const auto result = link_device_code({{"exercise", instrumented.ptx}, {"hooks", hooks_ptx(tag, hook_state_key(tag))}}, libraries,
                                         "sm_" + std::string(CDPLAB_PTX_ARCHITECTURE));
    CHECK_MESSAGE(result.ok, result.log);
    CHECK(result.cubin.size() > 1000);
    ++linked;
  }
  CHECK(linked >= 19);
}

TEST_CASE("device code: a grid's launch key reads its parameters where the launch's buffer holds them") {
  // u64 at 0, u32 at 8, a 12-byte struct aligned to 8 at 16, a byte at 28, and a pointer whose
  // `.align 1` is its target's (the parameter itself is 8-aligned: at 32); a second kernel with none.
  const std::string tag = fresh_hook_tag();
  const std::string ptx =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry _Z4workPiiS_c(\n\t.param .u64 .ptr .global .align 4 _Z4workPiiS_c_param_0,\n"
      "\t.param .u32 _Z4workPiiS_c_param_1,\n\t.param .align 8 .b8 _Z4workPiiS_c_param_2[12],\n"
      "\t.param .u8 _Z4workPiiS_c_param_3,\n\t.param .u64 .ptr .global .align 1 _Z4workPiiS_c_param_4\n)\n"
      "{\n\t.reg .pred %p<2>;\n\tsetp.eq.u32 %p1, 1, 1;\n"
      "\t@%p1 ret;\n$L__BB0_1: ret; // not this: ret;\n\t{ ret; }\n\tret;\n}\n"
      // A thread may leave its kernel from inside a device function, guarded or not, on a line of
      // its own or not (inline assembly's `{ exit; }`); a comment's "exit;" is not a statement.
      ".func _Z4quitb()\n{\n\t.reg .pred %q<2>;\n\t.reg .pred p9;\n\tsetp.eq.u32 %q1, 1, 1;\n\tsetp.eq.u32 p9, 1, 1;\n"
      "\t@!%q1 exit;\n\t@p9 exit;\n\t{ exit; }\n\t// ; exit;\n\texit;\n}\n"
      ".visible .entry _Z4idlev()\n{\n\tcall.uni \t_Z4quitb;\n\texit;\n}\n";
  const auto instrumented = instrument_ptx(ptx, tag, true);
  const std::string& out = instrumented.ptx;
  INFO(out);
  // The kernel reads its own parameters ...
  CHECK(count_of(out, "ld.param.b64 \t%cdplab_k1, [_Z4workPiiS_c_param_0+0];") == 1);
  CHECK(count_of(out, "ld.param.b32 \t%cdplab_w, [_Z4workPiiS_c_param_1+0];") == 1);
  CHECK(count_of(out, "ld.param.u8 \t%cdplab_h, [_Z4workPiiS_c_param_2+11];") == 1);
  CHECK(count_of(out, "ld.param.u8 \t%cdplab_h, [_Z4workPiiS_c_param_3+0];") == 1);
  // ... and the launch key reads the same bytes at their offsets in the parameter buffer.
  CHECK(count_of(out, "ld.b64 \t%cdplab_k1, [%cdplab_k2+0];") == 1);
  CHECK(count_of(out, "ld.b32 \t%cdplab_w, [%cdplab_k2+8];") == 1);
  CHECK(count_of(out, "ld.u8 \t%cdplab_h, [%cdplab_k2+16];") == 1);
  CHECK(count_of(out, "ld.u8 \t%cdplab_h, [%cdplab_k2+27];") == 1);
  CHECK(count_of(out, "ld.u8 \t%cdplab_h, [%cdplab_k2+28];") == 1);
  CHECK(count_of(out, "ld.b64 \t%cdplab_k1, [%cdplab_k2+32];") == 1);
  CHECK(count_of(out, ".visible .func  (.param .b64 cdplab_key_out) " + tag + "launch_key(") == 1);
  // Every way out of a kernel goes through the block-end hook: the guarded return too, and one
  // after a label on its line; the comment stays as it was.
  CHECK(count_of(out, "@%p1 bra \t$cdplab_end_0;") == 1);
  CHECK(count_of(out, "$L__BB0_1: bra \t$cdplab_end_0; // not this: ret;") == 1);
  CHECK(count_of(out, "\t{ bra \t$cdplab_end_0; }") == 1);
  CHECK(count_of(out, "$cdplab_end_1:\n\tcall \t" + tag + "block_end;") == 1);
  // ... and so does every way out of a device function that ends the thread, under its guard.
  CHECK(count_of(out, "\t@!%q1 call \t" + tag + "block_end;\n\t@!%q1 exit;") == 1);
  CHECK(count_of(out, "\t@p9 call \t" + tag + "block_end;\n\t@p9 exit;") == 1);
  CHECK(count_of(out, "\t{ call \t" + tag + "block_end;\n\texit; }") == 1);
  CHECK(count_of(out, "\t// ; exit;\n") == 1);
  CHECK(count_of(out, "call \t" + tag + "block_end;\n\t") == 6);  // four in the function, two in the kernels
  CHECK(count_of(out, "exit;") == 5);  // the function's four and the comment's
  // It links: ptxas accepts what was added.
  const auto result = link_device_code({{"exercise", out}, {"hooks", hooks_ptx(tag, hook_state_key(tag))}},
                                       {CDPLAB_CUDADEVRT}, "sm_" + std::string(CDPLAB_PTX_ARCHITECTURE));
  CHECK_MESSAGE(result.ok, result.log);
}

TEST_CASE("device code: a link error comes back with the linker's words") {
  const std::string tag = fresh_hook_tag();
  const std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".extern .func (.param .b32 func_retval0) missing_helper();\n"
                          ".visible .entry k() { .reg .b32 %r<2>; call.uni (%r1), missing_helper, (); ret; }\n";
  const auto result = link_device_code({{"exercise", ptx}}, {}, "sm_" + std::string(CDPLAB_PTX_ARCHITECTURE));
  CHECK_FALSE(result.ok);
  CHECK(result.log.find("missing_helper") != std::string::npos);
}

TEST_CASE("device code: an exercise that names the hooks' counters to write them does not link") {
  // What a student would write to forge the counts: `extern __device__ DeviceRuntimeCounts
  // cdplab_hook_counts;` and a store into it. The hooks' names carry a suffix drawn per process,
  // so the name the student can know is defined nowhere.
  const std::string forger = std::string(".version 8.0\n.target sm_") + CDPLAB_PTX_ARCHITECTURE +
                             "\n.address_size 64\n"
                             ".extern .global .align 8 .b8 cdplab_hook_counts[120];\n"
                             ".visible .entry forge() {\n .reg .b64 %rd<3>;\n mov.u64 %rd1, cdplab_hook_counts;\n"
                             " mov.u64 %rd2, 1000;\n st.global.u64 [%rd1], %rd2;\n ret;\n}\n";
  REQUIRE(refused_device_names(forger).size() == 1);  // refused before any link
  CHECK(refused_device_names(forger).front().name == "cdplab_hook_counts");
  const std::string tag = fresh_hook_tag();
  const auto instrumented = instrument_ptx(forger, tag);
  const auto result = link_device_code({{"exercise", instrumented.ptx}, {"hooks", hooks_ptx(tag, hook_state_key(tag))}}, {},
                                       "sm_" + std::string(CDPLAB_PTX_ARCHITECTURE));
  CHECK_FALSE(result.ok);
  CHECK(result.log.find("cdplab_hook_counts") != std::string::npos);
}

TEST_CASE("checks' perturbations: CDPLAB_CHECK_PERTURBATIONS turns off both, or one of the two") {
  using cdplab::harness::perturbations_asked;
  const auto expect = [](const char* setting, bool launches, bool blocks) {
    const std::string shown = setting == nullptr ? "(not set)" : setting;
    INFO(shown);
    CHECK(perturbations_asked(setting).launches == launches);
    CHECK(perturbations_asked(setting).blocks == blocks);
  };
  expect("off", false, false);
  expect("launches", true, false);
  expect("blocks", false, true);
  expect(nullptr, true, true);
  for (const char* other : {"", "of", "offf", "OFF", "on", "0", "false", "launche", "launchesx", "block", "blocks "})
    expect(other, true, true);
}
