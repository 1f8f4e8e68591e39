// The launch graph the rule checker rebuilds from the PTX of the fixtures in
// fixtures/rules/*.cu, and from hand-written PTX for cases nvcc rarely produces.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "rules/launch_graph.h"
#include "rules_fixtures.h"

using namespace cdplab::rules;

namespace {


const Kernel& kernel(const LaunchGraph& graph, const std::string& name) {
  const Kernel* found = graph.find(name);
  REQUIRE_MESSAGE(found != nullptr, "no kernel " << name << " in\n" << describe(graph));
  return *found;
}

// The launches from kernel `parent` to kernel `child` (both as a manifest writes them).
std::vector<Launch> launches(const LaunchGraph& graph, const std::string& parent,
                             const std::string& child) {
  std::vector<Launch> found;
  for (const auto& launch : graph.launches)
    if (graph.kernels.at(launch.parent).matches(parent) && launch.child != Launch::unknown &&
        graph.kernels.at(launch.child).matches(child))
      found.push_back(launch);
  return found;
}

// The one launch from parent to child; fails the test when there is not exactly one.
Launch only_launch(const LaunchGraph& graph, const std::string& parent, const std::string& child) {
  const auto found = launches(graph, parent, child);
  REQUIRE_MESSAGE(found.size() == 1, parent << " -> " << child << " in\n" << describe(graph));
  return found.front();
}

// The PTX line a site names, and the next one: the call may be split over both.
std::string lines_at(const std::string& ptx, int line) {
  std::istringstream in(ptx);
  std::string text;
  std::string out;
  for (int n = 1; std::getline(in, text); ++n)
    if (n == line || n == line + 1) out += text + "\n";
  return out;
}

void check_clean(const Launch& launch) {
  CHECK_FALSE(launch.passes_local_address);
  CHECK_FALSE(launch.passes_shared_address);
}

}  // namespace

TEST_CASE("graph of a launch into the NULL stream") {
  const std::string ptx = fixture_ptx("stream_null");
  const LaunchGraph graph = analyze_ptx(ptx);
  REQUIRE(graph.kernels.size() == 2);
  CHECK(kernel(graph, "fill").defined);
  CHECK(kernel(graph, "fill_parent").name == "fill_parent(int*, int)");
  REQUIRE(graph.launches.size() == 1);
  const Launch launch = only_launch(graph, "fill_parent", "fill");
  CHECK(launch.stream == StreamKind::null_stream);
  CHECK(launch.site.via.empty());
  check_clean(launch);
  // The line points at the launch call itself.
  CHECK(lines_at(ptx, launch.site.ptx_line).find("__cudaCDP2LaunchDeviceV2") != std::string::npos);
  CHECK(graph.launches_from(graph.find_all("fill").front()).empty());
}

TEST_CASE("graph of a tail launch") {
  const LaunchGraph graph = fixture("stream_tail");
  REQUIRE(graph.launches.size() == 1);
  const Launch launch = only_launch(graph, "produce", "consume");
  CHECK(launch.stream == StreamKind::tail);
  check_clean(launch);
  CHECK(graph.reaches("produce", "consume"));
  CHECK_FALSE(graph.reaches("consume", "produce"));
}

TEST_CASE("graph of a fire-and-forget launch") {
  const LaunchGraph graph = fixture("stream_fire_and_forget");
  REQUIRE(graph.launches.size() == 1);
  const Launch launch = only_launch(graph, "scatter", "leaf");
  CHECK(launch.stream == StreamKind::fire_and_forget);
  check_clean(launch);
}

TEST_CASE("graph of launches into named streams") {
  const std::string ptx = fixture_ptx("stream_named");
  const LaunchGraph graph = analyze_ptx(ptx);
  REQUIRE(graph.launches.size() == 3);
  for (const char* parent : {"fan_out", "fan_out_default", "forward"})
    CHECK_MESSAGE(only_launch(graph, parent, "segment").stream == StreamKind::named, parent);

  const Kernel& fan_out = kernel(graph, "fan_out");
  REQUIRE(fan_out.stream_creations.size() == 1);
  CHECK(fan_out.stream_creations[0].flags == 1u);  // cudaStreamNonBlocking
  CHECK(lines_at(ptx, fan_out.stream_creations[0].site.ptx_line).find("StreamCreateWithFlags") !=
        std::string::npos);

  const Kernel& blocking = kernel(graph, "fan_out_default");
  REQUIRE(blocking.stream_creations.size() == 1);
  CHECK(blocking.stream_creations[0].flags == 0u);  // cudaStreamDefault

  CHECK_FALSE(kernel(graph, "forward").creates_stream());
  CHECK_FALSE(kernel(graph, "segment").creates_stream());
}

TEST_CASE("graph of a self-recursive kernel") {
  const LaunchGraph graph = fixture("recursion_self");
  const Kernel& refine = kernel(graph, "refine");
  CHECK(refine.qualified_name == "tree::refine");
  CHECK(refine.short_name == "refine");
  CHECK(graph.find("tree::refine") == &refine);

  const Launch self = only_launch(graph, "refine", "refine");
  CHECK(self.stream == StreamKind::null_stream);
  CHECK(graph.reaches("refine", "refine"));
  CHECK(graph.reaches("root", "refine"));
  CHECK_FALSE(graph.reaches("root", "root"));

  const std::size_t r = graph.find_all("refine").front();
  const auto cycle = graph.chain(r, r);
  REQUIRE(cycle.size() == 1);
  CHECK(cycle[0]->parent == r);
  CHECK(cycle[0]->child == r);
}

TEST_CASE("graph of mutually recursive kernels") {
  const LaunchGraph graph = fixture("recursion_mutual");
  CHECK(only_launch(graph, "ping", "pong").stream == StreamKind::tail);
  CHECK(only_launch(graph, "pong", "ping").stream == StreamKind::tail);
  CHECK(only_launch(graph, "start", "ping").stream == StreamKind::null_stream);
  CHECK(graph.reaches("ping", "ping"));
  CHECK(graph.reaches("pong", "pong"));
  CHECK(graph.reaches("start", "pong"));
  CHECK_FALSE(graph.reaches("start", "start"));
  CHECK_FALSE(graph.reaches("ping", "start"));

  const std::size_t ping = graph.find_all("ping").front();
  const std::size_t pong = graph.find_all("pong").front();
  const auto cycle = graph.chain(ping, ping);
  REQUIRE(cycle.size() == 2);
  CHECK(cycle[0]->parent == ping);
  CHECK(cycle[0]->child == pong);
  CHECK(cycle[1]->parent == pong);
  CHECK(cycle[1]->child == ping);
  // Global atomics do not count as shared ones.
  CHECK(kernel(graph, "ping").atomics.size() == 1);
  CHECK_FALSE(kernel(graph, "ping").shared_atomics());
}

TEST_CASE("graph attributes launches in device functions to the kernels that call them") {
  const LaunchGraph graph = fixture("device_function_launch");
  // direct calls spawn; indirect calls relay, which calls spawn; orphan is called by no kernel.
  REQUIRE(graph.launches.size() == 2);
  const Launch direct = only_launch(graph, "direct", "worker");
  const Launch indirect = only_launch(graph, "indirect", "worker");
  CHECK(direct.stream == StreamKind::tail);
  CHECK(indirect.stream == StreamKind::tail);
  CHECK(direct.site.via == "spawn(int*, int)");
  CHECK(indirect.site.via == "spawn(int*, int)");
  CHECK(graph.where(direct.site).find(", in spawn(int*, int)") != std::string::npos);
  CHECK(graph.find("orphan") == nullptr);  // a device function, not a kernel
  CHECK(graph.find("spawn") == nullptr);
  CHECK(graph.launches_from(graph.find_all("worker").front()).empty());
}

TEST_CASE("graph of device heap calls") {
  const LaunchGraph graph = fixture("device_heap");
  const Kernel& runtime = kernel(graph, "heap_runtime");
  REQUIRE(runtime.allocations.size() == 1);
  REQUIRE(runtime.deallocations.size() == 1);
  CHECK(runtime.allocations[0].function == "cudaMalloc");
  CHECK(runtime.deallocations[0].function == "cudaFree");

  const Kernel& libc = kernel(graph, "heap_libc");
  REQUIRE(libc.allocations.size() == 1);
  REQUIRE(libc.deallocations.size() == 1);
  CHECK(libc.allocations[0].function == "malloc");
  CHECK(libc.deallocations[0].function == "free");

  const Kernel& leak = kernel(graph, "heap_leak");
  CHECK(leak.device_malloc());
  CHECK_FALSE(leak.device_free());

  const Kernel& none = kernel(graph, "heap_none");
  CHECK_FALSE(none.device_malloc());
  CHECK_FALSE(none.device_free());
  CHECK(graph.launches.empty());
}

TEST_CASE("graph tells shared atomics from global ones") {
  const LaunchGraph graph = fixture("atomics");
  const Kernel& shared = kernel(graph, "histogram_shared");
  CHECK(shared.shared_atomics());
  const auto global_count =
      std::count_if(shared.atomics.begin(), shared.atomics.end(),
                    [](const Atomic& a) { return a.space == AddressSpace::global; });
  CHECK(global_count == 1);  // the final merge into bins

  const Kernel& global = kernel(graph, "histogram_global");
  REQUIRE_FALSE(global.atomics.empty());
  CHECK_FALSE(global.shared_atomics());
  CHECK(global.atomics[0].space == AddressSpace::global);
  CHECK(global.atomics[0].instruction.rfind("atom.", 0) == 0);

  CHECK(kernel(graph, "count_dynamic").shared_atomics());  // extern __shared__

  const Kernel& helper = kernel(graph, "count_via_helper");  // through a device function
  CHECK(helper.shared_atomics());
  REQUIRE(helper.atomics.size() == 1);
  CHECK(helper.atomics[0].site.via == "bump(int*)");

  CHECK(kernel(graph, "no_atomics").atomics.empty());
}

TEST_CASE("graph flags a local address handed to a child") {
  const LaunchGraph graph = fixture("private_local");
  const Launch launch = only_launch(graph, "pass_local", "sum_child");
  CHECK(launch.passes_local_address);
  CHECK_FALSE(launch.passes_shared_address);
}

TEST_CASE("graph flags shared addresses handed to a child") {
  const LaunchGraph graph = fixture("private_shared");
  const Launch fixed = only_launch(graph, "pass_shared", "read_tile");
  CHECK(fixed.passes_shared_address);
  CHECK_FALSE(fixed.passes_local_address);
  CHECK(fixed.stream == StreamKind::tail);
  const Launch dynamic = only_launch(graph, "pass_dynamic_shared", "read_tile");
  CHECK(dynamic.passes_shared_address);
  CHECK_FALSE(dynamic.passes_local_address);
  CHECK(dynamic.stream == StreamKind::fire_and_forget);
}

TEST_CASE("graph follows private addresses through device functions that are not inlined") {
  const LaunchGraph graph = fixture("private_through_function");
  const Launch shared = only_launch(graph, "shared_through_function", "consume");
  CHECK(shared.passes_shared_address);
  CHECK_FALSE(shared.passes_local_address);
  CHECK(shared.site.via.find("launch_consumer") != std::string::npos);
  const Launch local = only_launch(graph, "local_through_function", "consume");
  CHECK(local.passes_local_address);
  CHECK_FALSE(local.passes_shared_address);
  // The same functions handed a global address: clean.
  check_clean(only_launch(graph, "global_through_function", "consume"));
}

TEST_CASE("graph accepts global and device heap memory handed to children") {
  const LaunchGraph graph = fixture("global_only");
  REQUIRE(graph.launches.size() == 3);
  for (const auto& launch : graph.launches) check_clean(launch);
  const auto to_add_one = launches(graph, "pass_global", "add_one");
  REQUIRE(to_add_one.size() == 2);
  CHECK(to_add_one[0].stream == StreamKind::null_stream);
  CHECK(to_add_one[1].stream == StreamKind::fire_and_forget);
  CHECK(only_launch(graph, "pass_global", "release").stream == StreamKind::tail);
  CHECK(kernel(graph, "pass_global").device_malloc());
  CHECK_FALSE(kernel(graph, "pass_global").device_free());
  CHECK(kernel(graph, "release").device_free());
}

TEST_CASE("graph of kernels without launches") {
  const LaunchGraph graph = fixture("no_launches");
  REQUIRE(graph.kernels.size() == 2);
  CHECK(graph.launches.empty());
  CHECK(graph.find("saxpy") != nullptr);
  CHECK(graph.find("scale") != nullptr);
  CHECK_FALSE(graph.reaches("saxpy", "saxpy"));
  CHECK(describe(graph).find("Launches: none") != std::string::npos);
}

TEST_CASE("graph names kernels in namespaces templates and extern C") {
  const LaunchGraph graph = fixture("names");
  CHECK(graph.find_all("child").size() == 2);
  CHECK(graph.find_all("lab::inner::child").size() == 1);
  CHECK(graph.find_all("inner::child").size() == 1);
  CHECK(kernel(graph, "other::child").qualified_name == "other::child");
  CHECK(kernel(graph, "tile").qualified_name == "tile<4>");
  CHECK(kernel(graph, "tile<4>").name == "void tile<4>(int*)");
  CHECK(kernel(graph, "plain_c").mangled == "plain_c");
  CHECK(kernel(graph, "parent").qualified_name == "lab::parent");

  CHECK(only_launch(graph, "parent", "lab::inner::child").stream == StreamKind::null_stream);
  CHECK(only_launch(graph, "parent", "other::child").stream == StreamKind::fire_and_forget);
  CHECK(only_launch(graph, "parent", "tile").stream == StreamKind::tail);
  CHECK(only_launch(graph, "parent", "plain_c").stream == StreamKind::null_stream);
  CHECK(launches(graph, "parent", "child").size() == 2);

  // Messages use the short name unless another kernel shares it.
  CHECK(graph.label(graph.find_all("parent").front()) == "parent");
  CHECK(graph.label(graph.find_all("other::child").front()) == "other::child");
  CHECK(graph.label(graph.find_all("tile").front()) == "tile<4>");
  CHECK(describe(graph).find("parent -> lab::inner::child into the NULL stream") !=
        std::string::npos);
}

TEST_CASE("graph of a launch through cudaGetParameterBuffer and cudaLaunchDevice") {
  const LaunchGraph graph = fixture("explicit_launch");
  const Launch launch = only_launch(graph, "launcher", "target");
  CHECK(launch.stream == StreamKind::tail);
  check_clean(launch);
}

TEST_CASE("analyze_ptx refuses what is not ptx") {
  CHECK_THROWS_AS(analyze_ptx(""), std::runtime_error);
  CHECK_THROWS_AS(analyze_ptx("__global__ void k() {}"), std::runtime_error);
  CHECK_THROWS_AS(analyze_ptx("\x7f"
                              "ELF\x02\x01\x01"),
                  std::runtime_error);
  const std::string truncated = fixture_ptx("stream_tail").substr(0, 2000);
  CHECK_THROWS_AS(analyze_ptx(truncated), std::runtime_error);
}

TEST_CASE("analyze_ptx refuses ptx compiled for device debugging") {
  CHECK_THROWS_WITH_AS(analyze_ptx(".version 9.0\n.target sm_90, debug\n.address_size 64\n"),
                       doctest::Contains("nvcc -G"), std::runtime_error);
  // Line information alone (-lineinfo) is fine: .loc and .file lines, .section blocks.
  std::string ptx = fixture_ptx("stream_tail");
  const std::size_t body = ptx.find("{", ptx.find(".entry _Z7produce"));
  REQUIRE(body != std::string::npos);
  ptx.insert(body + 1, "\n\t.loc\t1 12 3\n");
  ptx.insert(ptx.find(".version"), ".file\t1 \"stream_tail.cu\"\n");
  ptx += ".section .debug_str\n{\n$L__info_string0:\n.b8 95,90,0\n}\n";
  const LaunchGraph graph = analyze_ptx(ptx);
  CHECK(only_launch(graph, "produce", "consume").stream == StreamKind::tail);
}

TEST_CASE("describe lists kernels and launches") {
  const std::string text = describe(fixture("stream_named"));
  CHECK(text.find("fan_out(int*, int, int)") != std::string::npos);
  CHECK(text.find("cudaStreamNonBlocking") != std::string::npos);
  CHECK(text.find("cudaStreamDefault") != std::string::npos);
  CHECK(text.find("fan_out -> segment into a named stream (") != std::string::npos);

  const std::string bad = describe(fixture("private_local"));
  CHECK(bad.find("pass_local -> sum_child into the NULL stream") != std::string::npos);
  CHECK(bad.find("passes the address of a local variable") != std::string::npos);
}

TEST_CASE("to_dot draws kernels and labelled launch edges") {
  const LaunchGraph graph = fixture("recursion_mutual");
  const std::string dot = to_dot(graph);
  CHECK(dot.rfind("digraph launch_graph {", 0) == 0);
  CHECK(dot.substr(dot.size() - 2) == "}\n");
  CHECK(std::count(dot.begin(), dot.end(), '{') == std::count(dot.begin(), dot.end(), '}'));
  CHECK(std::count(dot.begin(), dot.end(), '"') % 2 == 0);

  auto node = [&](const char* name) { return "k" + std::to_string(graph.find_all(name).front()); };
  CHECK(dot.find(node("ping") + " [label=\"ping\"]") != std::string::npos);
  CHECK(dot.find(node("ping") + " -> " + node("pong") + " [label=\"tail\"]") != std::string::npos);
  CHECK(dot.find(node("pong") + " -> " + node("ping") + " [label=\"tail\"]") != std::string::npos);
  CHECK(dot.find(node("start") + " -> " + node("ping") + " [label=\"null\"]") != std::string::npos);
  std::size_t edges = 0;
  for (std::size_t at = dot.find(" -> "); at != std::string::npos; at = dot.find(" -> ", at + 1))
    ++edges;
  CHECK(edges == graph.launches.size());
  CHECK(dot.find("color=red") == std::string::npos);
}

TEST_CASE("to_dot marks private addresses and kernel notes") {
  const std::string shared = to_dot(fixture("private_shared"));
  CHECK(shared.find("color=red") != std::string::npos);
  CHECK(shared.find("shared address") != std::string::npos);
  const std::string named = to_dot(fixture("stream_named"));
  CHECK(named.find("fan_out\\ncreates streams") != std::string::npos);
  CHECK(named.find("\n", named.find("fan_out\\n")) > named.find("creates streams"));
}

// ---- hand-written PTX: cases that are rare in nvcc output ----

namespace {

// A module with kernels kid_a and kid_b and a kernel mom whose body is `body`.
std::string module_with(const std::string& body, const std::string& extra_functions = "") {
  return R"(.version 9.0
.target sm_90
.address_size 64
.extern .func (.param .b64 func_retval0) __cudaCDP2GetParameterBufferV2 (.param .b64 a, .param .align 4 .b8 b[12], .param .align 4 .b8 c[12], .param .b32 d);
.extern .func (.param .b32 func_retval0) __cudaCDP2LaunchDeviceV2_ptsz (.param .b64 a, .param .b64 b);
.extern .func (.param .b32 func_retval0) __cudaCDP2LaunchDeviceV2 (.param .b64 a, .param .b64 b);
.extern .shared .align 4 .b8 pool[];
.visible .entry kid_a(.param .u64 kid_a_param_0) { ret; }
.visible .entry kid_b(.param .u64 kid_b_param_0) { ret; }
)" + extra_functions +
         R"(.visible .entry mom(.param .u64 mom_param_0, .param .u32 mom_param_1)
{
	.local .align 8 .b8 __local_depot0[32];
	.reg .b64 %SP;
	.reg .b64 %SPL;
	.reg .pred %p<4>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<32>;
	mov.u64 %SPL, __local_depot0;
	cvta.local.u64 %SP, %SPL;
	ld.param.u64 %rd1, [mom_param_0];
)" + body +
         "\tret;\n}\n";
}

// The PTX of `child<<<..., stream>>>` storing `stores` (uses %rd20 as the buffer).
std::string launch(const std::string& child_operand, const std::string& stream_operand,
                   const std::string& stores,
                   const std::string& launch_name = "__cudaCDP2LaunchDeviceV2") {
  return "\t{\n\t.param .b64 param0;\n\tst.param.b64 [param0+0], " + child_operand +
         ";\n\t.param .b64 retval0;\n\tcall.uni (retval0), __cudaCDP2GetParameterBufferV2, "
         "(param0, param1, param2, param3);\n\tld.param.b64 %rd20, [retval0+0];\n\t}\n" +
         stores +
         "\t{\n\t.param .b64 param0;\n\tst.param.b64 [param0+0], %rd20;\n\t"
         ".param .b64 param1;\n\tst.param.b64 [param1+0], " +
         stream_operand + ";\n\t.param .b32 retval0;\n\tcall.uni (retval0), " + launch_name +
         ", (param0, param1);\n\t}\n";
}

}  // namespace

TEST_CASE("hand-written ptx resolves children and streams through registers") {
  const LaunchGraph graph = analyze_ptx(module_with(
      "\tmov.u64 %rd2, kid_a;\n\tmov.u64 %rd3, %rd2;\n\tmov.u64 %rd4, 4;\n" +
      launch("%rd3", "%rd4", "\tst.u64 [%rd20], %rd1;\n") +
      launch("kid_b", "3", "\tst.u64 [%rd20], %rd1;\n", "__cudaCDP2LaunchDeviceV2_ptsz")));
  REQUIRE(graph.launches.size() == 2);
  CHECK(only_launch(graph, "mom", "kid_a").stream == StreamKind::fire_and_forget);
  CHECK(only_launch(graph, "mom", "kid_b").stream == StreamKind::tail);
}

TEST_CASE("hand-written ptx launching a kernel defined in another file") {
  const LaunchGraph graph = analyze_ptx(
      module_with("\tmov.u64 %rd2, far_away;\n" + launch("%rd2", "0", "\tst.u64 [%rd20], %rd1;\n"),
                  ".extern .entry far_away\n(\n\t.param .u64 far_away_param_0\n)\n;\n"));
  const Kernel& far = kernel(graph, "far_away");
  CHECK_FALSE(far.defined);
  CHECK(kernel(graph, "mom").defined);
  CHECK(only_launch(graph, "mom", "far_away").stream == StreamKind::null_stream);
  CHECK(describe(graph).find("far_away  (launched; its code is not in this file)") !=
        std::string::npos);
  CHECK(to_dot(graph).find("style=\"rounded,dashed\"") != std::string::npos);
}

TEST_CASE("hand-written ptx with a kernel chosen at run time") {
  const LaunchGraph graph = analyze_ptx(
      module_with("\tmov.u64 %rd2, kid_a;\n\tmov.u64 %rd3, kid_b;\n\tsetp.eq.s32 %p1, %r1, 0;\n"
                  "\tselp.b64 %rd4, %rd2, %rd3, %p1;\n" +
                  launch("%rd4", "0", "")));
  REQUIRE(graph.launches.size() == 1);
  CHECK(graph.launches[0].child == Launch::unknown);
  CHECK(graph.label(graph.launches[0].child) == "an unknown kernel");
  CHECK(to_dot(graph).find("-> unknown") != std::string::npos);
  CHECK(describe(graph).find("mom -> an unknown kernel") != std::string::npos);
}

TEST_CASE("hand-written ptx follows addresses through arithmetic and vector stores") {
  // A local address made with `or`, stored as the second half of a vector store.
  const LaunchGraph local =
      analyze_ptx(module_with("\tadd.u64 %rd5, %SP, 0;\n\tor.b64 %rd6, %rd5, 8;\n" +
                              launch("kid_a", "0", "\tst.v2.u64 [%rd20], {%rd1, %rd6};\n")));
  CHECK(only_launch(local, "mom", "kid_a").passes_local_address);
  CHECK_FALSE(only_launch(local, "mom", "kid_a").passes_shared_address);

  // A shared address computed with mad, converted to generic, stored through a copy of the
  // buffer pointer at an offset.
  const LaunchGraph shared = analyze_ptx(
      module_with("\tmov.u32 %r2, pool;\n\tmad.lo.s32 %r3, %r1, 4, %r2;\n\tcvt.u64.u32 %rd7, %r3;\n"
                  "\tcvta.shared.u64 %rd8, %rd7;\n" +
                  launch("kid_a", "0", "\tadd.s64 %rd21, %rd20, 8;\n\tst.u64 [%rd21], %rd8;\n")));
  CHECK(only_launch(shared, "mom", "kid_a").passes_shared_address);

  // A value loaded from local memory is data, not an address of it.
  const LaunchGraph loaded =
      analyze_ptx(module_with("\tadd.u64 %rd5, %SPL, 0;\n\tld.local.u64 %rd9, [%rd5];\n" +
                              launch("kid_a", "0", "\tst.u64 [%rd20], %rd9;\n")));
  const Launch clean = only_launch(loaded, "mom", "kid_a");
  CHECK_FALSE(clean.passes_local_address);
  CHECK_FALSE(clean.passes_shared_address);

  // A tainted address stored somewhere else than the parameter buffer does not count.
  const LaunchGraph elsewhere = analyze_ptx(
      module_with("\tadd.u64 %rd5, %SP, 0;\n\tst.u64 [%rd1], %rd5;\n" + launch("kid_a", "0", "")));
  CHECK_FALSE(only_launch(elsewhere, "mom", "kid_a").passes_local_address);
}

TEST_CASE("hand-written ptx with generic atomics") {
  const LaunchGraph graph = analyze_ptx(
      module_with("\tmov.u32 %r2, pool;\n\tcvt.u64.u32 %rd7, %r2;\n\tcvta.shared.u64 %rd8, %rd7;\n"
                  "\tatom.add.u32 %r4, [%rd8], 1;\n\tatom.add.u32 %r5, [%rd1], 1;\n"
                  "\tred.shared::cta.add.u32 [%r2], 1;\n"));
  const Kernel& mom = *graph.find("mom");
  REQUIRE(mom.atomics.size() == 3);
  CHECK(mom.atomics[0].space == AddressSpace::shared);   // generic, on a shared address
  CHECK(mom.atomics[1].space == AddressSpace::generic);  // generic, on a parameter
  CHECK(mom.atomics[2].space == AddressSpace::shared);   // red.shared::cta
  CHECK(mom.atomics[2].instruction == "red.shared::cta.add.u32");
}

TEST_CASE("hand-written ptx attributes a device function to every kernel calling it") {
  const std::string helper = R"(.func helper(.param .b64 helper_param_0)
{
	.reg .b64 %rd<32>;
	ld.param.u64 %rd1, [helper_param_0];
)" + launch("kid_b", "4", "\tst.u64 [%rd20], %rd1;\n") +
                             "\tret;\n}\n"
                             ".visible .entry dad(.param .u64 dad_param_0)\n{\n"
                             "\t{\n\t.param .b64 param0;\n\tcall.uni helper, (param0);\n\t}\n"
                             "\tret;\n}\n";
  const LaunchGraph graph =
      analyze_ptx(module_with("\t{\n\t.param .b64 param0;\n\tst.param.b64 [param0+0], %rd1;\n"
                              "\tcall.uni helper, (param0);\n\t}\n",
                              helper));
  const auto mom = only_launch(graph, "mom", "kid_b");
  const auto dad = only_launch(graph, "dad", "kid_b");
  CHECK(mom.site.ptx_line == dad.site.ptx_line);
  CHECK(mom.site.via == "helper");
  CHECK(mom.stream == StreamKind::fire_and_forget);
  CHECK(graph.launches.size() == 2);
}

TEST_CASE("hand-written ptx stream creation with flags unknown at compile time") {
  const LaunchGraph graph = analyze_ptx(module_with(
      "\tld.param.u32 %r1, [mom_param_1];\n\tadd.u64 %rd5, %SP, 0;\n"
      "\t{\n\t.param .b64 param0;\n\tst.param.b64 [param0+0], %rd5;\n\t.param .b32 param1;\n"
      "\tst.param.b32 [param1+0], %r1;\n\t.param .b32 retval0;\n"
      "\tcall.uni (retval0), __cudaCDP2StreamCreateWithFlags, (param0, param1);\n\t}\n"));
  const Kernel& mom = *graph.find("mom");
  REQUIRE(mom.stream_creations.size() == 1);
  CHECK_FALSE(mom.stream_creations[0].flags.has_value());
  CHECK(flags_phrase(mom.stream_creations[0].flags) ==
        "flags that are not a compile-time constant");
  CHECK(describe(graph).find("creates a stream with flags that are not a compile-time constant") !=
        std::string::npos);
  CHECK(flags_phrase(6u) == "flags 6");
}

TEST_CASE("stream kinds have manifest names") {
  for (StreamKind kind :
       {StreamKind::null_stream, StreamKind::tail, StreamKind::fire_and_forget, StreamKind::named})
    CHECK(parse_stream_kind(to_string(kind)) == kind);
  CHECK(std::string(to_string(StreamKind::null_stream)) == "null");
  CHECK(std::string(to_string(StreamKind::fire_and_forget)) == "fire_and_forget");
  CHECK_FALSE(parse_stream_kind("tail_launch").has_value());
  CHECK_FALSE(parse_stream_kind("").has_value());
  CHECK(stream_phrase(StreamKind::tail) == "cudaStreamTailLaunch");
}
