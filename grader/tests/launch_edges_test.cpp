// The launch edges of a check judged against the lesson's rules (grading/launch_edges.h): synthetic
// edges on the graph of fixtures/rules/launch_edges.cu, the judged items, the edges as reports keep
// and draw them, and every reference's launch sites against its exercise's rules.
#include "files/files.h"
#include "grading/grade.h"
#include "grading/launch_edges.h"
#include "manifest/manifest.h"
#include "report/launch_tree.h"
#include "report/report.h"
#include "rules/rule.h"
#include "rules_fixtures.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using cdplab::grading::Item;
using cdplab::grading::ItemKind;
using cdplab::grading::LaunchTreeEdge;
using cdplab::grading::LessonLaunches;
using cdplab::grading::Outcome;
using cdplab::rules::LaunchGraph;
using cdplab::rules::RuleSpec;
using cdplab::rules::StreamKind;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

RuleSpec launches(const std::string& kernel, const std::string& child, std::vector<StreamKind> streams = {}) {
  RuleSpec rule;
  rule.kind = "launches";
  rule.kernel = kernel;
  rule.child = child;
  rule.streams = std::move(streams);
  rule.points = 1;
  return rule;
}

RuleSpec recursion(const std::string& kernel) {
  RuleSpec rule;
  rule.kind = "recursion";
  rule.kernel = kernel;
  rule.points = 1;
  return rule;
}

/// The rules of a lesson like tail-continuation's, and a recursion.
std::vector<RuleSpec> pipeline_rules() {
  return {launches("pipeline_parent", "step_x", {StreamKind::null_stream}),
          launches("pipeline_parent", "step_y", {StreamKind::null_stream}),
          launches("pipeline_parent", "finish", {StreamKind::tail}), recursion("nest")};
}

const LaunchGraph& edges_graph() {
  static const LaunchGraph graph = fixture("launch_edges");
  return graph;
}

/// The PTX symbol of a function of the fixture: a kernel, or a device function some kernel reaches.
std::string symbol(const std::string& name) {
  const LaunchGraph& graph = edges_graph();
  if (const auto* kernel = graph.find(name)) return kernel->mangled;
  for (const auto& [function, kernels] : graph.kernels_reaching)
    if (contains(function, name)) return function;
  FAIL("no function " << name << " in the fixture");
  return {};
}

/// An edge as the grader reads it from a check's record: `grids` grids into each stream of `into`.
LaunchTreeEdge edge(const std::string& caller, const std::string& child, std::vector<StreamKind> into,
                    std::uint64_t grids = 1) {
  LaunchTreeEdge e;
  e.caller = caller;
  e.child = child;
  e.caller_symbol = caller.empty() ? "" : symbol(caller);
  e.child_symbol = child.empty() ? "" : symbol(child);
  for (const StreamKind kind : into) {
    e.grids += grids;
    (kind == StreamKind::null_stream ? e.null_stream
     : kind == StreamKind::tail      ? e.tail
     : kind == StreamKind::fire_and_forget ? e.fire_and_forget
                                           : e.named) += grids;
  }
  return e;
}

std::string fault_of(const LaunchTreeEdge& e, const std::vector<RuleSpec>& rules = pipeline_rules()) {
  return LessonLaunches(rules, edges_graph()).fault(e);
}

}  // namespace

TEST_CASE("launch edges: a device function is reached by the kernels that call it") {
  const LaunchGraph& graph = edges_graph();
  const auto reaching = [&](const std::string& name) {
    std::vector<std::string> names;
    for (const std::size_t k : graph.kernels_reaching.at(symbol(name))) names.push_back(graph.label(k));
    std::sort(names.begin(), names.end());
    return names;
  };
  CHECK(reaching("launch_step_y") == std::vector<std::string>{"pipeline_parent", "step_x"});
  CHECK(reaching("launch_from_parent") == std::vector<std::string>{"pipeline_parent"});
  CHECK(reaching("pipeline_parent") == std::vector<std::string>{"pipeline_parent"});
  int in_helper = 0;
  for (const auto& launch : graph.launches) {
    CHECK_FALSE(launch.function.empty());
    if (launch.function == symbol("launch_step_y")) ++in_helper;
  }
  CHECK(in_helper == 2);  // once for each kernel that reaches it
}

TEST_CASE("launch edges: the right caller into a listed stream passes") {
  CHECK(fault_of(edge("pipeline_parent", "step_x", {StreamKind::null_stream}, 3)).empty());
  CHECK(fault_of(edge("pipeline_parent", "finish", {StreamKind::tail})).empty());
  CHECK(fault_of(edge("nest", "nest", {StreamKind::null_stream}, 5)).empty());
  // A rule without `stream` allows every kind.
  CHECK(fault_of(edge("pipeline_parent", "step_x", {StreamKind::fire_and_forget, StreamKind::named}),
                 {launches("pipeline_parent", "step_x")})
            .empty());
}

TEST_CASE("launch edges: a child launched by the wrong kernel is named with the lesson's caller") {
  CHECK(fault_of(edge("step_x", "step_y", {StreamKind::null_stream})) ==
        "step_y was launched by step_x into the NULL stream; the lesson has pipeline_parent launch it into the NULL "
        "stream");
  // A recursion's kernel launched from outside it.
  CHECK(fault_of(edge("stray", "nest", {StreamKind::null_stream})) ==
        "nest was launched by stray into the NULL stream; the lesson has nest launch it");
  // A rule whose kernel the code lacks still names it.
  CHECK(fault_of(edge("pipeline_parent", "step_x", {StreamKind::null_stream}), {launches("missing_parent", "step_x")}) ==
        "step_x was launched by pipeline_parent into the NULL stream; the lesson has missing_parent launch it");
}

TEST_CASE("launch edges: a stream kind the caller's rule does not list is named alone") {
  CHECK(fault_of(edge("pipeline_parent", "step_y", {StreamKind::fire_and_forget})) ==
        "step_y was launched by pipeline_parent into cudaStreamFireAndForget; the lesson has pipeline_parent launch "
        "it into the NULL stream");
  LaunchTreeEdge mixed = edge("pipeline_parent", "finish", {StreamKind::tail}, 2);
  mixed.null_stream = 1;
  mixed.grids += 1;
  CHECK(fault_of(mixed) ==
        "finish was launched by pipeline_parent into the NULL stream; the lesson has pipeline_parent launch it into "
        "cudaStreamTailLaunch");
  // Streams listed by two rules for one caller add up.
  const std::vector<RuleSpec> two = {launches("pipeline_parent", "step_x", {StreamKind::null_stream}),
                                     launches("pipeline_parent", "step_x", {StreamKind::named})};
  CHECK(fault_of(edge("pipeline_parent", "step_x", {StreamKind::null_stream, StreamKind::named}), two).empty());
  CHECK(contains(fault_of(edge("pipeline_parent", "step_x", {StreamKind::tail}), two),
                 "the lesson has pipeline_parent launch it into the NULL stream or a named stream"));
}

TEST_CASE("launch edges: a device function's launch counts for every kernel that calls it") {
  // Called by pipeline_parent alone: its launches are pipeline_parent's.
  CHECK(fault_of(edge("launch_from_parent", "step_y", {StreamKind::null_stream}, 4)).empty());
  // Called by step_x too: not the lesson's, whichever kernel made it at run time.
  const std::string fault = fault_of(edge("launch_step_y", "step_y", {StreamKind::null_stream}));
  CHECK(contains(fault, "step_y was launched by launch_step_y (a __device__ function that "));
  CHECK(contains(fault, "into the NULL stream; the lesson has pipeline_parent launch it into the NULL stream, not step_x"));
  // Allowed for both callers, it passes.
  std::vector<RuleSpec> both = pipeline_rules();
  both.push_back(launches("step_x", "step_y", {StreamKind::null_stream}));
  CHECK(fault_of(edge("launch_step_y", "step_y", {StreamKind::null_stream}), both).empty());
  // ... but only into a stream kind both callers' rules list.
  CHECK(contains(fault_of(edge("launch_from_parent", "step_y", {StreamKind::tail}), both),
                 "step_y was launched by launch_from_parent (a __device__ function that pipeline_parent calls) into "
                 "cudaStreamTailLaunch; the lesson has pipeline_parent launch it into the NULL stream"));
}

TEST_CASE("launch edges: a launch the hooks could not attribute counts only when nothing explains it") {
  // No caller, and a stream some allowed caller may use: not held against the student.
  CHECK(fault_of(edge("", "step_y", {StreamKind::null_stream}, 7)).empty());
  // No caller, and a stream no rule allows for that child.
  CHECK(fault_of(edge("", "step_y", {StreamKind::tail})) ==
        "step_y was launched into cudaStreamTailLaunch by code the grader could not attribute to a function; the "
        "lesson has pipeline_parent launch it into the NULL stream");
  // No child (a kernel the hooks could not name), or a child no rule names: not judged.
  CHECK(fault_of(edge("step_x", "", {StreamKind::null_stream})).empty());
  CHECK(fault_of(edge("", "", {StreamKind::tail})).empty());
  CHECK(fault_of(edge("", "helper_kernel", {StreamKind::tail})).empty());
}

TEST_CASE("launch edges: a kernel no rule names may be launched only where the lesson launches") {
  CHECK(fault_of(edge("pipeline_parent", "helper_kernel", {StreamKind::null_stream})).empty());
  CHECK(fault_of(edge("step_x", "helper_kernel", {StreamKind::null_stream})) ==
        "helper_kernel was launched by step_x into the NULL stream; the lesson launches from device code only in "
        "pipeline_parent and nest");
  // Rules that name no child judge nothing.
  RuleSpec any_child = launches("pipeline_parent", "");
  const LessonLaunches none({any_child, RuleSpec{"shared_atomics", "step_x"}}, edges_graph());
  CHECK_FALSE(none.judges());
  CHECK(none.fault(edge("step_x", "step_y", {StreamKind::tail})).empty());
}

TEST_CASE("launch edges: a check whose runs broke the lesson loses its points and says why") {
  Item passed;
  passed.name = "small pipeline";
  passed.outcome = Outcome::passed;
  passed.points = passed.max_points = 2;
  passed.feedback = "took 3 ms";
  passed.launches_observed = true;
  passed.launches = {edge("pipeline_parent", "step_x", {StreamKind::null_stream}),
                     edge("step_x", "step_y", {StreamKind::null_stream}),
                     edge("pipeline_parent", "finish", {StreamKind::tail})};
  Item clean = passed;
  clean.name = "odd sizes";
  clean.feedback.clear();
  clean.launches = {edge("pipeline_parent", "step_x", {StreamKind::null_stream}),
                    edge("launch_from_parent", "step_y", {StreamKind::null_stream})};
  Item failed = passed;
  failed.name = "large pipeline";
  failed.outcome = Outcome::failed;
  failed.points = 0;
  failed.feedback = "z[3] is 1, expected 2";
  Item not_counted = passed;  // no device code loaded: no tree
  not_counted.name = "not counted";
  not_counted.launches_observed = false;
  Item rule;
  rule.kind = ItemKind::rule;
  rule.name = "pipeline_parent launches step_y";
  rule.outcome = Outcome::passed;
  rule.points = rule.max_points = 1;
  rule.launches = passed.launches;
  rule.launches_observed = true;
  std::vector<Item> items = {passed, clean, failed, not_counted, rule};

  CHECK(cdplab::grading::judge_launch_edges(pipeline_rules(), edges_graph(), items) == 2);
  const std::string said =
      "launched against the lesson: step_y was launched by step_x into the NULL stream; the lesson has "
      "pipeline_parent launch it into the NULL stream";
  CHECK(items[0].outcome == Outcome::failed);
  CHECK(items[0].points == 0);
  CHECK(items[0].feedback == said + "\ntook 3 ms");
  CHECK(items[0].launches[0].fault.empty());
  CHECK(items[0].launches[1].fault == said.substr(std::string("launched against the lesson: ").size()));
  CHECK(items[1].outcome == Outcome::passed);
  CHECK(items[1].points == 2);
  CHECK(items[2].outcome == Outcome::failed);
  CHECK(items[2].feedback == "z[3] is 1, expected 2\n" + said);
  CHECK(items[3].outcome == Outcome::passed);
  CHECK(items[4].outcome == Outcome::passed);
  CHECK(items[4].launches[1].fault.empty());

  // Rules that name no child leave every check as it was.
  std::vector<Item> untouched = {passed};
  CHECK(cdplab::grading::judge_launch_edges(std::vector<RuleSpec>{}, edges_graph(), untouched) == 0);
  CHECK(untouched[0].outcome == Outcome::passed);
}

TEST_CASE("launch edges: the grader reads the edge's symbols from a check's record") {
  const fs::path file = fs::temp_directory_path() / "cdplab-launch-edges-events.jsonl";
  {
    std::ofstream out(file);
    const nlohmann::json record = {
        {"event", "end"},
        {"check", "small pipeline"},
        {"status", "passed"},
        {"launches",
         {{{"caller", symbol("step_x")}, {"child", symbol("step_y")}, {"grids", 1}, {"null", 1}, {"tail", 0},
           {"fire_and_forget", 0}, {"named", 0}, {"failed", 0}},
          {{"caller", ""}, {"child", symbol("step_y")}, {"grids", 2}, {"null", 2}}}}};
    out << record.dump() << "\n";
  }
  const auto events = cdplab::grading::read_check_events(file.string());
  fs::remove(file);
  REQUIRE(events.size() == 1);
  REQUIRE(events[0].launches.size() == 2);
  CHECK(events[0].launches[0].caller == "step_x");
  CHECK(events[0].launches[0].caller_symbol == symbol("step_x"));
  CHECK(events[0].launches[0].child_symbol == symbol("step_y"));
  CHECK(events[0].launches[1].caller_symbol.empty());
  CHECK_FALSE(fault_of(events[0].launches[0]).empty());
  CHECK(fault_of(events[0].launches[1]).empty());
}

TEST_CASE("launch edges: reports keep an edge's fault and mark it in the tree") {
  LaunchTreeEdge good = edge("pipeline_parent", "step_x", {StreamKind::null_stream});
  LaunchTreeEdge bad = edge("step_x", "step_y", {StreamKind::null_stream});
  bad.fault = "step_y was launched by step_x into the NULL stream; the lesson has pipeline_parent launch it into the "
              "NULL stream";
  const auto lines = cdplab::report::launch_tree_lines({good, bad});
  REQUIRE(lines.size() == 4);
  CHECK(lines[1] == "  -> step_x: 1 grid into the NULL stream");
  CHECK(lines[3] == "  -> step_y: 1 grid into the NULL stream  [against the lesson]");
  const std::string svg = cdplab::report::launch_tree_svg({good, bad}, {}, "caption");
  CHECK(contains(svg, "1 grid into the NULL stream (against the lesson)"));
  CHECK(contains(svg, "url(#arrow-fault)"));
  CHECK(cdplab::report::launch_tree_svg({good}, {}, "caption").find("stroke=\"#c00\"") == std::string::npos);

  cdplab::grading::GradeReport report;
  cdplab::grading::ExerciseResult exercise;
  exercise.id = "tail-continuation";
  Item item;
  item.name = "small pipeline";
  item.launches_observed = true;
  item.launches = {good, bad};
  exercise.items = {item};
  report.exercises = {exercise};
  const nlohmann::json json = cdplab::report::to_json(report);
  const auto read = cdplab::report::from_json(json);
  const auto& launches = read.exercises.at(0).items.at(0).launches;
  REQUIRE(launches.size() == 2);
  CHECK(launches[0].fault.empty());
  CHECK(launches[1].fault == bad.fault);
  CHECK(json["exercises"][0]["items"][0]["launches"][0].count("fault") == 0);
  CHECK(json["exercises"][0]["items"][0]["launches"][1]["fault"] == bad.fault);
}

TEST_CASE("launch edges: every reference's launch sites, and the lesson's launches, meet its rules") {
  const auto book = cdplab::manifest::load_workbook(CDPLAB_SOURCE_DIR);
  std::ifstream in(fs::path(CDPLAB_BINARY_DIR) / "cdplab-index.json");
  REQUIRE(in);
  const auto index = nlohmann::json::parse(in);
  int judged = 0;
  for (const auto& entry : index.at("exercises")) {
    const std::string ptx = entry.value("ptx", "");
    if (ptx.empty() || !fs::exists(ptx)) continue;
    const auto* exercise = book.find_exercise(entry.value("chapter", "") + "/" + entry.value("stem", ""));
    REQUIRE(exercise != nullptr);
    CAPTURE(exercise->id);
    CAPTURE(entry.value("source", ""));
    const auto graph = cdplab::rules::analyze_ptx(cdplab::files::read_text(ptx));
    const LessonLaunches lesson(exercise->rules, graph);
    if (!lesson.judges()) continue;
    // What the hooks can see of the reference, launch site by launch site.
    const auto sites = cdplab::grading::static_launch_edges(graph);
    CHECK_FALSE(sites.empty());
    for (const auto& site : sites) {
      CAPTURE(site.caller + " -> " + site.child);
      CHECK(lesson.fault(site) == "");
    }
    // Each launch a rule declares, into each stream kind it lists (every kind where it lists none).
    for (const auto& rule : exercise->rules) {
      if (rule.kind != "launches" || rule.child.empty()) continue;
      const std::vector<StreamKind> kinds =
          rule.streams.empty() ? std::vector<StreamKind>{StreamKind::null_stream, StreamKind::tail,
                                                         StreamKind::fire_and_forget, StreamKind::named}
                               : rule.streams;
      for (const std::size_t caller : graph.find_all(rule.kernel))
        for (const std::size_t child : graph.find_all(rule.child))
          for (const StreamKind kind : kinds) {
            LaunchTreeEdge declared;
            declared.caller_symbol = graph.kernels[caller].mangled;
            declared.child_symbol = graph.kernels[child].mangled;
            declared.grids = 1;
            (kind == StreamKind::null_stream ? declared.null_stream
             : kind == StreamKind::tail      ? declared.tail
             : kind == StreamKind::fire_and_forget ? declared.fire_and_forget
                                                   : declared.named) = 1;
            CAPTURE(cdplab::rules::describe(rule));
            CHECK(lesson.fault(declared) == "");
          }
    }
    ++judged;
  }
  // Every exercise whose lesson fixes who launches whom.
  CHECK(judged >= 15);
}
