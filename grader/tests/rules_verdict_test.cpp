// The manifest's CDP rules: reading [[exercise.rule]] tables, and every rule kind passing on a
// good fixture and failing on a bad one with an expected/found a student can act on.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "rules/rule.h"
#include "rules_fixtures.h"

using namespace cdplab::rules;

namespace {

RuleSpec rule_from(const std::string& toml_text) { return parse_rule(toml::parse(toml_text)); }

// Evaluates a rule written in TOML on a fixture.
RuleVerdict judge(const std::string& toml_text, const std::string& stem) {
  return evaluate(rule_from(toml_text), fixture(stem));
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The message parse_rule throws for a rule table.
std::string parse_error(const std::string& toml_text) {
  try {
    rule_from(toml_text);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "(no error)";
}

/// A kernel of a fixture, whether a rule passes it, and why.
struct KernelCase {
  const char* kernel;
  bool passes;
  const char* why;
};

/// Judges the rule `kind` on each case's kernel of fixture `stem`; returns the verdicts in order.
std::vector<RuleVerdict> judge_cases(const std::string& kind, const std::string& stem,
                                     const std::vector<KernelCase>& cases) {
  std::vector<RuleVerdict> verdicts;
  for (const KernelCase& c : cases) {
    verdicts.push_back(judge("kind = \"" + kind + "\"\nkernel = \"" + c.kernel + "\"", stem));
    INFO(c.kernel << " (" << c.why << "): " << verdicts.back().found);
    CHECK(verdicts.back().passed == c.passes);
  }
  return verdicts;
}

}  // namespace

TEST_CASE("parse_rule reads every key") {
  const RuleSpec rule = rule_from(R"(
kind = "launches"
kernel = "produce"
child = "consume"
stream = ["tail", "fire_and_forget", "tail"]
points = 2
message = "Hand the reduction to a tail launch."
)");
  CHECK(rule.kind == "launches");
  CHECK(rule.kernel == "produce");
  CHECK(rule.child == "consume");
  CHECK(rule.streams == std::vector<StreamKind>{StreamKind::tail, StreamKind::fire_and_forget});
  CHECK(rule.points == 2.0);
  CHECK(rule.message == "Hand the reduction to a tail launch.");

  const RuleSpec minimal = rule_from("kind = \"device_malloc\"");
  CHECK(minimal.kernel.empty());
  CHECK(minimal.points == 0.0);
  CHECK(minimal.streams.empty());

  const RuleSpec one_stream =
      rule_from("kind = \"launches\"\nkernel = \"k\"\nstream = \"named\"\npoints = 0.5");
  CHECK(one_stream.streams == std::vector<StreamKind>{StreamKind::named});
  CHECK(one_stream.points == 0.5);

  const RuleSpec flags =
      rule_from("kind = \"creates_stream\"\nkernel = \"k\"\nflags = \"non_blocking\"");
  CHECK(flags.flags == "non_blocking");
  CHECK(rule_kinds().size() == 16);
}

TEST_CASE("parse_rule reads given, and describe marks a given rule") {
  const RuleSpec rule = rule_from("kind = \"barrier_before_shared_atomics\"\nkernel = \"k\"\ngiven = true\npoints = 1");
  CHECK(rule.given);
  CHECK(describe(rule) == "given code: " + describe_requirement(rule));
  CHECK_FALSE(rule_from("kind = \"recursion\"\nkernel = \"k\"").given);
  CHECK(contains(parse_error("kind = \"recursion\"\nkernel = \"k\"\ngiven = 1"), "'given' must be true or false"));
}

TEST_CASE("parse_rule names the key at fault") {
  CHECK(contains(parse_error("kernel = \"k\""), "'kind' is missing"));
  CHECK(contains(parse_error("kind = 3"), "'kind' must be a string"));
  const std::string unknown_kind = parse_error("kind = \"launch\"\nkernel = \"k\"");
  CHECK(contains(unknown_kind, "unknown kind 'launch'"));
  CHECK(contains(unknown_kind, "launches"));  // lists the kinds there are

  const std::string typo = parse_error("kind = \"launches\"\nkernel = \"k\"\nchlid = \"c\"");
  CHECK(contains(typo, "unknown key 'chlid'"));
  CHECK(contains(typo, "line 3"));  // the key's own line
  CHECK(contains(typo, "child"));   // and what the kind takes

  CHECK(contains(parse_error("kind = \"recursion\"\nkernel = \"k\"\nchild = \"c\""),
                 "'child' does not apply here"));
  CHECK(contains(parse_error("kind = \"device_free\"\nstream = \"tail\""),
                 "'stream' does not apply here"));
  CHECK(contains(parse_error("kind = \"launches\"\nchild = \"c\""), "needs 'kernel'"));
  CHECK(contains(parse_error("kind = \"shared_atomics\""), "needs 'kernel'"));
  CHECK(contains(parse_error("kind = \"launches\"\nkernel = 7"), "'kernel' must be a string"));
  CHECK(contains(parse_error("kind = \"launches\"\nkernel = \"\""), "'kernel' is empty"));
  CHECK(contains(parse_error("kind = \"launches\"\nkernel = \"k\"\nstream = [\"tial\"]"),
                 "'stream' has 'tial'"));
  CHECK(contains(parse_error("kind = \"launches\"\nkernel = \"k\"\nstream = []"),
                 "'stream' is an empty list"));
  CHECK(contains(parse_error("kind = \"launches\"\nkernel = \"k\"\nstream = [3]"),
                 "'stream' must be a list of strings"));
  CHECK(contains(parse_error("kind = \"creates_stream\"\nkernel = \"k\"\nflags = \"blocking\""),
                 "'flags' is 'blocking'"));
  CHECK(contains(parse_error("kind = \"recursion\"\nkernel = \"k\"\npoints = -1"),
                 "'points' must be zero or more"));
  CHECK(contains(parse_error("kind = \"recursion\"\nkernel = \"k\"\npoints = \"2\""),
                 "'points' must be a number"));
  CHECK(contains(parse_error("kind = \"recursion\"\nkernel = \"k\"\nmessage = 1"),
                 "'message' must be a string"));
}

TEST_CASE("parse_rule reads the rules of a manifest") {
  const toml::table manifest = toml::parse(R"(
[[exercise]]
id = "tail"
file = "stream_tail.cu"

[[exercise.rule]]
kind = "launches"
kernel = "produce"
child = "consume"
stream = ["tail"]
points = 1

[[exercise.rule]]
kind = "no_private_pointers"
points = 1

[[exercise.rule]]
kind = "recursion"
kernel = "produce"
message = "Let produce launch itself for the next level."
)");
  const toml::array& rules = *manifest["exercise"][0]["rule"].as_array();
  REQUIRE(rules.size() == 3);
  const LaunchGraph graph = fixture("stream_tail");
  std::vector<bool> passed;
  for (const auto& node : rules)
    passed.push_back(evaluate(parse_rule(*node.as_table()), graph).passed);
  CHECK(passed == std::vector<bool>{true, true, false});
  CHECK(parse_rule(*rules[2].as_table()).message ==
        "Let produce launch itself for the next level.");
}

TEST_CASE("describe says what a rule expects") {
  CHECK(describe(rule_from(
            "kind = \"launches\"\nkernel = \"expand_parent\"\nchild = \"expand_child\"")) ==
        "expand_parent launches expand_child from device code");
  CHECK(
      describe(rule_from("kind = \"launches\"\nkernel = \"p\"\nstream = [\"tail\", \"named\"]")) ==
      "p launches a kernel from device code, only into cudaStreamTailLaunch or a named stream");
  CHECK(describe(rule_from("kind = \"recursion\"\nkernel = \"refine\"")) ==
        "refine launches itself, directly or through other kernels");
  CHECK(
      describe(rule_from("kind = \"creates_stream\"\nkernel = \"k\"\nflags = \"non_blocking\"")) ==
      "k creates a stream in device code with cudaStreamNonBlocking");
  CHECK(describe(rule_from("kind = \"device_malloc\"")) ==
        "some kernel allocates device-heap memory (cudaMalloc or malloc) in device code");
  CHECK(describe(rule_from("kind = \"device_free\"\nkernel = \"k\"")) ==
        "k frees device-heap memory (cudaFree or free) in device code");
  CHECK(describe(rule_from("kind = \"shared_atomics\"\nkernel = \"h\"")) ==
        "h performs atomic operations on __shared__ memory");
  CHECK(describe(rule_from("kind = \"no_private_pointers\"")) ==
        "no launch hands a child an address of local or __shared__ memory");
  CHECK(describe(rule_from("kind = \"distinct_streams\"\nkernel = \"q\"\nchild = \"q\"")) ==
        "q launches q into a different stream at each launch site");
  CHECK(describe(rule_from("kind = \"barrier_before_shared_atomics\"\nkernel = \"h\"")) ==
        "h has a barrier (__syncthreads) between its stores to __shared__ memory and the atomics on it");
  CHECK(describe(rule_from("kind = \"barrier_before_launch\"\nkernel = \"p\"")).rfind(
            "p has a barrier (__syncthreads, or __syncwarp where a lane launches for its warp) between the block's stores and each launch", 0) == 0);
}

TEST_CASE("rule launches passes and fails") {
  const std::string tail_rule = R"(
kind = "launches"
kernel = "produce"
child = "consume"
stream = ["tail"]
)";
  const RuleVerdict good = judge(tail_rule, "stream_tail");
  CHECK(good.passed);
  CHECK(good.expected ==
        "produce launches consume from device code, only into cudaStreamTailLaunch");
  CHECK(contains(good.found, "produce launches consume into cudaStreamTailLaunch ("));

  // The same shape of exercise with the child in the NULL stream.
  const RuleVerdict wrong_stream = judge(R"(
kind = "launches"
kernel = "fill_parent"
child = "fill"
stream = ["tail"]
)",
                                         "stream_null");
  CHECK_FALSE(wrong_stream.passed);
  CHECK(contains(wrong_stream.found,
                 "the launch of fill from fill_parent uses the NULL stream ("));

  const RuleVerdict nothing = judge("kind = \"launches\"\nkernel = \"consume\"", "stream_tail");
  CHECK_FALSE(nothing.passed);
  CHECK(nothing.found == "consume launches nothing");

  const RuleVerdict other_child =
      judge("kind = \"launches\"\nkernel = \"root\"\nchild = \"root\"", "recursion_self");
  CHECK_FALSE(other_child.passed);
  CHECK(contains(other_child.found, "root launches refine ("));
  CHECK(contains(other_child.found, "but not root"));

  const RuleVerdict missing =
      judge("kind = \"launches\"\nkernel = \"produce\"\nchild = \"fill\"", "stream_tail");
  CHECK_FALSE(missing.passed);
  CHECK(missing.found == "no kernel named fill in the exercise");

  // Two kernels named child: both launches count, and both must use an allowed stream.
  CHECK(judge("kind = \"launches\"\nkernel = \"parent\"\nchild = \"child\"\nstream = [\"null\", "
              "\"fire_and_forget\"]",
              "names")
            .passed);
  const RuleVerdict one_wrong = judge(
      "kind = \"launches\"\nkernel = \"parent\"\nchild = \"child\"\nstream = [\"null\"]", "names");
  CHECK_FALSE(one_wrong.passed);
  CHECK(contains(one_wrong.found,
                 "the launch of other::child from parent uses cudaStreamFireAndForget"));

  // Any child, any stream; and a launch made in a device function.
  CHECK(judge("kind = \"launches\"\nkernel = \"indirect\"", "device_function_launch").passed);
  CHECK(
      contains(judge("kind = \"launches\"\nkernel = \"indirect\"", "device_function_launch").found,
               "in spawn(int*, int)"));
  const RuleVerdict named =
      judge("kind = \"launches\"\nkernel = \"fan_out\"\nchild = \"segment\"\nstream = [\"named\"]",
            "stream_named");
  CHECK(named.passed);
}

TEST_CASE("rule recursion passes and fails") {
  const RuleVerdict self = judge("kind = \"recursion\"\nkernel = \"refine\"", "recursion_self");
  CHECK(self.passed);
  CHECK(contains(self.found, "refine launches itself ("));

  const RuleVerdict mutual = judge("kind = \"recursion\"\nkernel = \"ping\"", "recursion_mutual");
  CHECK(mutual.passed);
  CHECK(contains(mutual.found, "ping launches pong ("));
  CHECK(contains(mutual.found, "pong launches ping ("));

  const RuleVerdict entry = judge("kind = \"recursion\"\nkernel = \"start\"", "recursion_mutual");
  CHECK_FALSE(entry.passed);
  CHECK(entry.found == "start launches ping, but no chain of launches leads back to start");

  const RuleVerdict flat = judge("kind = \"recursion\"\nkernel = \"fill\"", "stream_null");
  CHECK_FALSE(flat.passed);
  CHECK(flat.found == "fill launches nothing");
  CHECK(flat.expected == "fill launches itself, directly or through other kernels");
}

TEST_CASE("rule creates_stream passes and fails") {
  const std::string non_blocking =
      "kind = \"creates_stream\"\nkernel = \"%s\"\nflags = \"non_blocking\"";
  auto with = [&](const std::string& name) {
    std::string text = non_blocking;
    return text.replace(text.find("%s"), 2, name);
  };
  const RuleVerdict good = judge(with("fan_out"), "stream_named");
  CHECK(good.passed);
  CHECK(contains(good.found, "fan_out creates a stream with cudaStreamNonBlocking ("));

  const RuleVerdict blocking = judge(with("fan_out_default"), "stream_named");
  CHECK_FALSE(blocking.passed);
  CHECK(contains(
      blocking.found,
      "fan_out_default creates a stream with cudaStreamDefault, not cudaStreamNonBlocking"));
  // Without flags any device-side stream will do.
  CHECK(judge("kind = \"creates_stream\"\nkernel = \"fan_out_default\"", "stream_named").passed);

  const RuleVerdict none = judge(with("forward"), "stream_named");
  CHECK_FALSE(none.passed);
  CHECK(none.found == "forward creates no stream in device code");
}

TEST_CASE("rule device_malloc passes and fails") {
  const RuleVerdict runtime =
      judge("kind = \"device_malloc\"\nkernel = \"heap_runtime\"", "device_heap");
  CHECK(runtime.passed);
  CHECK(contains(runtime.found, "heap_runtime calls cudaMalloc ("));
  const RuleVerdict libc = judge("kind = \"device_malloc\"\nkernel = \"heap_libc\"", "device_heap");
  CHECK(libc.passed);
  CHECK(contains(libc.found, "heap_libc calls malloc ("));
  CHECK(judge("kind = \"device_malloc\"", "device_heap").passed);

  const RuleVerdict none = judge("kind = \"device_malloc\"\nkernel = \"heap_none\"", "device_heap");
  CHECK_FALSE(none.passed);
  CHECK(none.found == "heap_none calls neither cudaMalloc nor malloc in device code");
  const RuleVerdict anywhere = judge("kind = \"device_malloc\"", "no_launches");
  CHECK_FALSE(anywhere.passed);
  CHECK(anywhere.found == "no kernel calls cudaMalloc or malloc in device code");
}

TEST_CASE("rule device_free passes and fails") {
  CHECK(judge("kind = \"device_free\"\nkernel = \"heap_runtime\"", "device_heap").passed);
  CHECK(judge("kind = \"device_free\"\nkernel = \"heap_libc\"", "device_heap").passed);
  // The tail-launched child frees what the parent allocated.
  const RuleVerdict child_frees = judge("kind = \"device_free\"", "global_only");
  CHECK(child_frees.passed);
  CHECK(contains(child_frees.found, "release calls cudaFree ("));

  const RuleVerdict leak = judge("kind = \"device_free\"\nkernel = \"heap_leak\"", "device_heap");
  CHECK_FALSE(leak.passed);
  CHECK(contains(leak.found, "heap_leak allocates with cudaMalloc ("));
  CHECK(contains(leak.found, "but calls neither cudaFree nor free in device code"));
  const RuleVerdict none = judge("kind = \"device_free\"\nkernel = \"heap_none\"", "device_heap");
  CHECK_FALSE(none.passed);
  CHECK(none.found == "heap_none calls neither cudaFree nor free in device code");
}

TEST_CASE("rule shared_atomics passes and fails") {
  const RuleVerdict shared =
      judge("kind = \"shared_atomics\"\nkernel = \"histogram_shared\"", "atomics");
  CHECK(shared.passed);
  CHECK(contains(shared.found, "histogram_shared performs atom.shared.add.u32 ("));
  const RuleVerdict helper =
      judge("kind = \"shared_atomics\"\nkernel = \"count_via_helper\"", "atomics");
  CHECK(helper.passed);
  CHECK(contains(helper.found, "in bump(int*)"));
  CHECK(judge("kind = \"shared_atomics\"\nkernel = \"count_dynamic\"", "atomics").passed);

  const RuleVerdict global =
      judge("kind = \"shared_atomics\"\nkernel = \"histogram_global\"", "atomics");
  CHECK_FALSE(global.passed);
  CHECK(
      contains(global.found,
               "histogram_global's atomic operations are not on __shared__ memory: atom.global."));
  const RuleVerdict none = judge("kind = \"shared_atomics\"\nkernel = \"no_atomics\"", "atomics");
  CHECK_FALSE(none.passed);
  CHECK(none.found == "no_atomics performs no atomic operation");
}

TEST_CASE("rule no_private_pointers passes and fails") {
  const RuleVerdict good = judge("kind = \"no_private_pointers\"", "global_only");
  CHECK(good.passed);
  CHECK(good.found ==
        "none of the 3 launches of the exercise passes a local or __shared__ address");

  const RuleVerdict local = judge("kind = \"no_private_pointers\"", "private_local");
  CHECK_FALSE(local.passed);
  CHECK(contains(
      local.found,
      "the launch of sum_child from pass_local passes the address of a local variable ("));

  const RuleVerdict shared = judge("kind = \"no_private_pointers\"", "private_shared");
  CHECK_FALSE(shared.passed);
  CHECK(
      contains(shared.found,
               "the launch of read_tile from pass_shared passes an address of __shared__ memory"));
  CHECK(contains(shared.found, "1 more launches pass private addresses"));

  // Scoped to one kernel: only its launches count.
  const RuleVerdict scoped =
      judge("kind = \"no_private_pointers\"\nkernel = \"pass_dynamic_shared\"", "private_shared");
  CHECK_FALSE(scoped.passed);
  CHECK_FALSE(contains(scoped.found, "more"));
  const RuleVerdict child_only =
      judge("kind = \"no_private_pointers\"\nkernel = \"read_tile\"", "private_shared");
  CHECK(child_only.passed);
  CHECK(child_only.found == "read_tile launches nothing from device code");
}

TEST_CASE("rules naming a kernel the exercise lacks fail") {
  const LaunchGraph graph = fixture("stream_tail");
  for (const std::string& kind : rule_kinds()) {
    RuleSpec rule;
    rule.kind = kind;
    rule.kernel = "expand_parent";
    const RuleVerdict verdict = evaluate(rule, graph);
    CHECK_MESSAGE(!verdict.passed, kind);
    CHECK_MESSAGE(verdict.found == "no kernel named expand_parent in the exercise", kind);
    CHECK_MESSAGE(verdict.expected == describe(rule), kind);
  }
}

TEST_CASE("evaluate refuses a rule parse_rule would refuse") {
  const LaunchGraph graph = fixture("stream_tail");
  RuleSpec unknown;
  unknown.kind = "launch";
  unknown.kernel = "produce";
  CHECK_THROWS_AS(evaluate(unknown, graph), std::invalid_argument);
  RuleSpec no_kernel;
  no_kernel.kind = "recursion";
  CHECK_THROWS_AS(evaluate(no_kernel, graph), std::invalid_argument);
}

TEST_CASE("rule distinct_streams fails only when two launches certainly share a stream") {
  const std::string rule = "kind = \"distinct_streams\"\nchild = \"half\"\nkernel = ";
  const RuleVerdict apart = judge(rule + "\"halves_apart\"", "stream_pairs");
  CHECK(apart.passed);
  CHECK(contains(apart.found, "the 2 launches of half from halves_apart into named streams use different stream variables"));
  const RuleVerdict together = judge(rule + "\"halves_together\"", "stream_pairs");
  CHECK_FALSE(together.passed);
  CHECK(contains(together.found, "go into the same stream"));
  CHECK(contains(together.found, ".cu:"));
  // A variable written again between the launches holds another stream.
  CHECK(judge(rule + "\"reuse_variable\"", "stream_pairs").passed);
  // The stream the kernel was handed: the same for both launches.
  CHECK_FALSE(judge(rule + "\"forward_twice\"", "stream_pairs").passed);
  // Streams in an array, one per trip of a loop (nvcc unrolls it): a variable each.
  CHECK(judge(rule + "\"halves_in_loop\"", "stream_pairs").passed);
  // No launch into a named stream at all: nothing the rule asks for.
  const RuleVerdict none = judge("kind = \"distinct_streams\"\nkernel = \"half\"", "stream_pairs");
  CHECK_FALSE(none.passed);
  CHECK(none.found == "half launches no kernels into a named stream");
}

TEST_CASE("rule barrier_before_shared_atomics passes and fails") {
  CHECK(judge("kind = \"barrier_before_shared_atomics\"\nkernel = \"count_guarded\"", "barriers").passed);
  const RuleVerdict unguarded = judge("kind = \"barrier_before_shared_atomics\"\nkernel = \"count_unguarded\"", "barriers");
  CHECK_FALSE(unguarded.passed);
  CHECK(contains(unguarded.found, "the shared-memory atomic at "));
  CHECK(contains(unguarded.found, "follows the store to __shared__ memory at "));
  CHECK(contains(unguarded.found, "with no barrier in between"));
  // A warp barrier orders what one warp does with its own counters.
  CHECK(judge("kind = \"barrier_before_shared_atomics\"\nkernel = \"count_warp_private\"", "barriers").passed);
  // ... and nothing of the other warps': counters the block shares need the block's barrier.
  const RuleVerdict warp_only = judge("kind = \"barrier_before_shared_atomics\"\nkernel = \"count_after_syncwarp\"", "barriers");
  CHECK_FALSE(warp_only.passed);
  CHECK(contains(warp_only.found, "with no barrier in between"));
  const RuleVerdict none = judge("kind = \"barrier_before_shared_atomics\"\nkernel = \"publish_guarded\"", "barriers");
  CHECK_FALSE(none.passed);
  CHECK(none.found == "publish_guarded performs no atomic on __shared__ memory");
}

TEST_CASE("rule fenced_counter: a fence and a barrier before the counter, a fence after it") {
  const auto verdicts = judge_cases("fenced_counter", "counters", {
      {"last_block_fenced", true, "__threadfence and __syncthreads before, __threadfence after"},
      {"last_block_no_fence_before", false, "the partial may not be visible when another block counts"},
      {"last_block_no_barrier_before", false, "thread 0 counts the block before its other threads wrote"},
      {"last_block_no_fence_after", false, "the last block reads the partials without a fence"},
      {"last_block_acq_rel", true, "cuda::atomic_ref's acq_rel fetch_add fences both sides"},
      {"no_counter", false, "nobody compares the atomic's result"},
  });
  CHECK(contains(verdicts[0].found, "a fence lies on each side of last_block_fenced's counter"));
  CHECK(contains(verdicts[1].found, "with no __threadfence() in between"));
  CHECK(contains(verdicts[1].found, "counters.cu:"));
  CHECK(contains(verdicts[2].found, "with no __syncthreads() in between"));
  CHECK(contains(verdicts[3].found, "comes with no __threadfence() before it"));
  CHECK(contains(verdicts[5].found, "no_counter has no counter"));
}

TEST_CASE("rule destroys_stream: every stream created in device code is destroyed") {
  const auto verdicts = judge_cases("destroys_stream", "counters", {
      {"streams_destroyed", true, "created, launched into, destroyed"},
      {"streams_leaked", false, "never destroyed"},
      {"streams_half_destroyed", false, "two created, one destroyed"},
      {"no_streams", false, "no stream created at all"},
  });
  CHECK(contains(verdicts[1].found, "never calls cudaStreamDestroy"));
  CHECK(contains(verdicts[2].found, "creates streams at 2 places and destroys them at only 1"));
  CHECK(contains(verdicts[3].found, "creates no stream in device code"));
}

TEST_CASE("rule shared_in_bounds: an entry past the end of a __shared__ array, at a constant offset") {
  const auto verdicts = judge_cases("shared_in_bounds", "shared_arrays", {
      {"in_bounds", true, "four entries of an array of four"},
      {"one_short", false, "four entries of an array of three"},
      {"run_time_index", true, "an index the compiler cannot see is not judged"},
      {"no_arrays", true, "nothing to overrun"},
  });
  CHECK(contains(verdicts[1].found, "touches bytes 12 to 15 of cursors, a __shared__ array of 12 bytes"));
  CHECK(contains(verdicts[1].found, "shared_arrays.cu:"));
  // It only deducts: a starter that touches no array meets it.
  CHECK(deducts(rule_from("kind = \"shared_in_bounds\"\nkernel = \"k\"")));
  CHECK_FALSE(deducts(rule_from("kind = \"recursion\"\nkernel = \"k\"")));
}

TEST_CASE("rule barrier_before_shared_reads: a value one thread publishes in __shared__ memory is read after a barrier") {
  const std::string rule = "kind = \"barrier_before_shared_reads\"\nkernel = ";
  CHECK(judge(rule + "\"share_claimed\"", "barriers").passed);
  CHECK(judge(rule + "\"share_totals\"", "barriers").passed);
  // Each thread its own entry: nothing is published, and the rule asks for a value staged for the block.
  const RuleVerdict own = judge(rule + "\"own_slot\"", "barriers");
  CHECK_FALSE(own.passed);
  CHECK(contains(own.found, "stores no value in __shared__ memory for the block"));
  const RuleVerdict unsynced = judge(rule + "\"share_claimed_unsynced\"", "barriers");
  CHECK_FALSE(unsynced.passed);
  CHECK(contains(unsynced.found, "have no __syncthreads() between them on some path"));
  CHECK(contains(unsynced.found, "the read of __shared__ memory at "));
  CHECK_FALSE(judge(rule + "\"share_totals_unsynced\"", "barriers").passed);
  // A 64-bit value read as its upper half: the bytes overlap, though the offsets differ.
  const RuleVerdict wide = judge(rule + "\"share_wide_half\"", "barriers");
  INFO(wide.found);
  CHECK(wide.passed);
  CHECK_FALSE(judge(rule + "\"share_wide_half_unsynced\"", "barriers").passed);
  // A barrier inside an `if` the whole block takes alike orders the claim for the reads after it.
  const RuleVerdict when_needed = judge(rule + "\"share_claimed_when_needed\"", "barriers");
  INFO(when_needed.found);
  CHECK(when_needed.passed);
  // A helper call orders the reads only when the helper holds a barrier.
  CHECK_FALSE(judge(rule + "\"share_claimed_across_call\"", "barriers").passed);
  CHECK(judge(rule + "\"share_claimed_across_barrier_call\"", "barriers").passed);
  // The reads on the other side of the store's branch run between the same two barriers.
  CHECK_FALSE(judge(rule + "\"share_claimed_split_unsynced\"", "barriers").passed);

  // A warp barrier orders the publishing thread's warp only.
  CHECK_FALSE(judge(rule + "\"share_claimed_warp_synced\"", "barriers").passed);
}

TEST_CASE("rule barrier_before_shared_reads: other threads' entries and the block's counters are read after a barrier") {
  const std::string rule = "kind = \"barrier_before_shared_reads\"\ndeduct = true\nkernel = ";
  CHECK(judge(rule + "\"flush_after_barrier\"", "barriers").passed);
  // A warp barrier before the flush orders the flushing thread's warp only.
  const RuleVerdict warp_only = judge(rule + "\"flush_after_syncwarp\"", "barriers");
  INFO(warp_only.found);
  CHECK_FALSE(warp_only.passed);
  CHECK(contains(warp_only.found, "have no __syncthreads() between them on some path"));
  CHECK(contains(warp_only.found, "barriers.cu:"));
  CHECK(judge(rule + "\"neighbour_synced\"", "barriers").passed);
  CHECK_FALSE(judge(rule + "\"neighbour_unsynced\"", "barriers").passed);
  // A thread reading back its own entry needs no barrier.
  CHECK(judge(rule + "\"own_slot\"", "barriers").passed);
  // Entries of the warp's own: __syncwarp() orders them.
  const RuleVerdict warp_swap = judge(rule + "\"warp_swap_synced\"", "barriers");
  INFO(warp_swap.found);
  CHECK(warp_swap.passed);
  CHECK_FALSE(judge(rule + "\"warp_swap_unsynced\"", "barriers").passed);
  // Two arrays of a struct: an entry of one never meets an entry of the other.
  const RuleVerdict apart = judge(rule + "\"struct_arrays_apart\"", "barriers");
  INFO(apart.found);
  CHECK(apart.passed);
}

TEST_CASE("rules with deduct = true only take points off, and a shared barrier rule that deducts passes code with nothing to guard") {
  const std::string reads = "kind = \"barrier_before_shared_reads\"\nkernel = \"k\"";
  CHECK(deducts(rule_from(reads + "\ndeduct = true")));
  CHECK_FALSE(deducts(rule_from(reads)));
  CHECK_FALSE(deducts(rule_from(reads + "\ndeduct = false")));
  CHECK(contains(parse_error(reads + "\ndeduct = 1"), "'deduct' must be true or false"));
  // Not the given code's: the item reads as the rule's requirement.
  CHECK(describe(rule_from(reads + "\ndeduct = true")) == describe(rule_from(reads)));
  // Nothing staged, no shared atomic: nothing to guard, where the rule deducts ...
  const RuleVerdict no_reads = judge("kind = \"barrier_before_shared_reads\"\ndeduct = true\nkernel = \"publish_nothing\"", "barriers");
  CHECK(no_reads.passed);
  CHECK(judge("kind = \"barrier_before_shared_atomics\"\ndeduct = true\nkernel = \"publish_nothing\"", "barriers").passed);
  CHECK(judge("kind = \"barrier_before_shared_atomics\"\ngiven = true\nkernel = \"publish_nothing\"", "barriers").passed);
  // ... and a missing value or atomic where it earns points.
  CHECK_FALSE(judge("kind = \"barrier_before_shared_reads\"\nkernel = \"publish_nothing\"", "barriers").passed);
  CHECK_FALSE(judge("kind = \"barrier_before_shared_atomics\"\nkernel = \"publish_nothing\"", "barriers").passed);
  // A deducting rule still fails a race.
  CHECK_FALSE(judge("kind = \"barrier_before_shared_atomics\"\ndeduct = true\nkernel = \"count_unguarded\"", "barriers").passed);
  CHECK_FALSE(judge("kind = \"barrier_before_shared_reads\"\ndeduct = true\nkernel = \"share_claimed_unsynced\"", "barriers").passed);
}

TEST_CASE("rule barrier_lines: the given code's barriers counted by their lines, not their instructions") {
  const std::string rule = "kind = \"barrier_lines\"\nat_least = 3\ngiven = true\nkernel = ";
  const RuleVerdict whole = judge(rule + "\"block_sum_whole\"", "given_barriers");
  INFO(whole.found);
  CHECK(whole.passed);
  CHECK(contains(whole.found, "has __syncthreads() on 3 lines of the exercise file"));
  const RuleVerdict racy = judge(rule + "\"block_sum_one_gone\"", "given_barriers");
  INFO(racy.found);
  CHECK_FALSE(racy.passed);
  CHECK(contains(racy.found, "on 2 lines"));
  CHECK(contains(racy.found, "the given code has 3: one of its barriers is gone"));
  CHECK(deducts(rule_from(rule + "\"k\"")));
  CHECK(contains(parse_error("kind = \"barrier_lines\"\nat_least = 3\nkernel = \"k\""), "write given = true"));
  CHECK(contains(parse_error("kind = \"barrier_lines\"\ngiven = true\nkernel = \"k\""), "needs 'at_least'"));
  CHECK(contains(parse_error("kind = \"barrier_lines\"\nat_least = 0\ngiven = true\nkernel = \"k\""),
                 "'at_least' must be a whole number of 1 or more"));
  CHECK(contains(parse_error("kind = \"recursion\"\nat_least = 2\nkernel = \"k\""), "'at_least' does not apply here"));
}

TEST_CASE("rule barrier_before_launch passes and fails") {
  const RuleVerdict guarded = judge("kind = \"barrier_before_launch\"\nkernel = \"publish_guarded\"", "barriers");
  CHECK(guarded.passed);
  CHECK(guarded.found == "a barrier lies between publish_guarded's stores and each of its launches");
  const RuleVerdict unguarded = judge("kind = \"barrier_before_launch\"\nkernel = \"publish_unguarded\"", "barriers");
  CHECK_FALSE(unguarded.passed);
  CHECK(contains(unguarded.found, "the launch at "));
  CHECK(contains(unguarded.found, "follows the store to memory at "));
  CHECK(judge("kind = \"barrier_before_launch\"\nkernel = \"publish_nothing\"", "barriers").passed);
  CHECK_FALSE(judge("kind = \"barrier_before_launch\"\nkernel = \"count_guarded\"", "barriers").passed);
}

TEST_CASE("rule barrier_before_launch: the launching thread's own stores need no barrier, other threads' do") {
  judge_cases("barrier_before_launch", "barriers", {
      {"publish_header", true, "thread 0 writes, then launches"},
      {"publish_by_last_thread", true, "threadIdx.x == blockDim.x - 1 is one thread too"},
      {"publish_restamped", false, "every thread writes after the barrier"},
      {"publish_rounds_guarded", true, "followed along the loop, a barrier in every round"},
      {"publish_rounds_unguarded", false, "the stores come after the launch in the text, before it in time"},
      {"publish_column", false, "threadIdx.y == 0 leaves a row of threads"},
      {"publish_by_chosen_thread", false, "each thread computes its own launching thread"},
      {"publish_counted", false, "an atomicAdd is a write"},
      {"publish_warp_synced", false, "__syncwarp() orders one warp's writes, thread 0 launches for the block"},
      {"publish_per_warp", true, "each warp's lane 0 launches after __syncwarp()"},
      {"publish_header_if_enabled", true, "threadIdx.x == 0 && a parameter"},
      {"publish_header_first_block", true, "threadIdx.x == 0 && blockIdx.x == 0"},
      {"publish_header_after_loop", true, "the register of threadIdx.x becomes a loop counter"},
      {"publish_header_signed_index", true, "int tid > 0 returns"},
      {"publish_header_grid_index", true, "the grid's thread 0"},
  });
}

TEST_CASE("rule launch_checked: every path from a launch to the kernel's end passes an error check") {
  const std::vector<KernelCase> cases = {
      {"checked_after", true, "cudaGetLastError() right after the launch"},
      {"peek_checked", true, "cudaPeekAtLastError() reads the error too"},
      {"checked_once_after_two", true, "one check after two launches: the error stays until read"},
      {"checked_after_loop", true, "a loop of launches, then one check"},
      {"checked_unless_empty", true, "a return before the launch needs no check"},
      {"checked_by_helper", true, "a device function of its own may check"},
      {"checked_by_external", true, "a device function defined elsewhere may check"},
      {"checked_by_same_guard", true, "threadIdx.x == 0 launches and, after a barrier, checks"},
      {"checked_if_launched", true, "a flag set by the launch guards the check"},
      {"checked_by_other_thread", false, "thread 0 launches, thread 1 checks"},
      {"unchecked", false, "no check at all"},
      {"checked_when_asked", false, "the check only behind a parameter"},
      {"returns_before_check", false, "a return between the launch and the check"},
      {"checked_before_launch", false, "a check before each launch leaves the last one unchecked"},
  };
  const auto verdicts = judge_cases("launch_checked", "launch_checks", cases);
  for (std::size_t i = 0; i < cases.size(); ++i)
    if (!cases[i].passes) CHECK(contains(verdicts[i].found, "no cudaGetLastError() on the way"));
  const RuleVerdict none = judge("kind = \"launch_checked\"\nkernel = \"launches_nothing\"", "launch_checks");
  CHECK_FALSE(none.passed);
  CHECK(contains(none.found, "launches nothing"));
}

TEST_CASE("a finding names the source line, and quotes it, where the PTX has line information") {
  const std::string source = cdplab::files::read_text(std::filesystem::path(CDPLAB_SOURCE_DIR) /
                                                      "grader/tests/fixtures/rules/launch_checks.cu");
  const std::string launch = "__global__ void unchecked(int* data) { work<<<1, 32>>>(data); }";
  const auto at = source.find(launch);
  REQUIRE(at != std::string::npos);
  const auto line = 1 + std::count(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  const RuleSpec rule = rule_from("kind = \"launch_checked\"\nkernel = \"unchecked\"");

  LaunchGraph graph = fixture("launch_checks");
  // Without the source's text: the file and line, from the PTX's .file and .loc directives.
  CHECK(contains(evaluate(rule, graph).found, "launch_checks.cu:" + std::to_string(line)));
  CHECK_FALSE(contains(evaluate(rule, graph).found, "PTX line"));
  // With it: the line itself too.
  graph.attach_source("launch_checks.cu", source);
  const RuleVerdict verdict = evaluate(rule, graph);
  INFO(verdict.found);
  CHECK(contains(verdict.found, "launch_checks.cu:" + std::to_string(line) + ": `" + launch + "`"));
  // A source of another name is not quoted, and no line of another file is named as the student's.
  graph.attach_source("other.cu", source);
  CHECK(contains(evaluate(rule, graph).found, "PTX line"));
}
