// The launch tree of a check (report/launch_tree.h): read from the harness's end record, kept in the
// JSON report, said in the terminal for a failed check beside the lesson's launches, and drawn.
#include "grading/grade.h"
#include "report/launch_tree.h"
#include "report/report.h"
#include "test_folders.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace {

using cdplab::grading::ExerciseResult;
using cdplab::grading::GradeReport;
using cdplab::grading::Item;
using cdplab::grading::ItemKind;
using cdplab::grading::LaunchTreeEdge;
using cdplab::grading::Outcome;

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

/// A quicksort's tree: partition launches its continuation tail-launched, which launches
/// partition again (fire-and-forget and named streams) and a block sort; one launch failed.
std::vector<LaunchTreeEdge> quicksort_tree() {
  return {{"partition_kernel", "partition_done", 40, 0, 40, 0, 0, 0},
          {"partition_done", "partition_kernel", 39, 0, 0, 30, 9, 1},
          {"partition_done", "block_sort_kernel", 41, 0, 0, 41, 0, 0}};
}

ExerciseResult quicksort_exercise(Outcome outcome) {
  ExerciseResult e;
  e.chapter = "05-streams-and-pools";
  e.id = "quicksort";
  e.title = "Quicksort <with> streams";
  e.file = "05-streams-and-pools/quicksort.cu";
  e.lesson_launches = {"partition_kernel launches partition_done into the tail stream"};
  Item passed;
  passed.name = "sorted";
  passed.outcome = Outcome::passed;
  passed.points = passed.max_points = 2;
  passed.launches = {{"partition_kernel", "partition_done", 2, 0, 2, 0, 0, 0}};
  passed.launches_observed = true;
  Item checked;
  checked.name = "10M random";
  checked.outcome = outcome;
  checked.max_points = 3;
  checked.points = outcome == Outcome::passed ? 3 : 0;
  checked.feedback = outcome == Outcome::passed ? "" : "value 17 out of order";
  checked.launches = quicksort_tree();
  checked.launches_observed = true;
  e.items = {passed, checked};
  return e;
}

}  // namespace

TEST_CASE("launch tree: each edge's grids in words, by stream, with the failed ones") {
  const auto tree = quicksort_tree();
  CHECK(cdplab::report::describe_launches(tree[0]) == "40 grids tail-launched");
  CHECK(cdplab::report::describe_launches(tree[1]) ==
        "39 grids: 30 fire-and-forget, 9 into created streams (1 failed)");
  CHECK(cdplab::report::describe_launches({"a", "b", 1, 1, 0, 0, 0, 0}) == "1 grid into the NULL stream");
}

TEST_CASE("launch tree: lines name each caller once, its children under it, recursion not expanded twice") {
  const auto lines = cdplab::report::launch_tree_lines(quicksort_tree());
  // No kernel here is launched only from the host: the tree starts at the first caller seen.
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == "partition_kernel");
  CHECK(lines[1] == "  -> partition_done: 40 grids tail-launched");
  CHECK(lines[2] == "partition_done");
  CHECK(lines[3].find("  -> partition_kernel: 39 grids") == 0);
  CHECK(lines[4] == "  -> block_sort_kernel: 41 grids fire-and-forget");
  const auto itself = cdplab::report::launch_tree_lines({{"reduce", "reduce", 5, 5, 0, 0, 0, 0}});
  CHECK(itself == std::vector<std::string>{"reduce", "  -> reduce (itself): 5 grids into the NULL stream"});
  CHECK(cdplab::report::launch_tree_lines({}) == std::vector<std::string>{"(nothing launched from device code)"});
  const auto unknown = cdplab::report::launch_tree_lines({{"", "", 2, 2, 0, 0, 0, 0}});
  CHECK(unknown.at(1) == "  -> (a kernel not known): 2 grids into the NULL stream");
}

TEST_CASE("launch tree: the picture has a box per kernel, an arrow per edge, escaped names and the lesson") {
  auto tree = quicksort_tree();
  tree.push_back({"partition_done", "sort<a&b>", 1, 1, 0, 0, 0, 0});
  const std::string svg =
      cdplab::report::launch_tree_svg(tree, {"partition_kernel launches partition_done"}, "check \"10M <random>\"");
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(count_of(svg, "<rect x=") == 4);                      // four kernels
  CHECK(count_of(svg, "marker-end=\"url(#arrow)\"") == 4);     // four edges
  CHECK(svg.find("sort&lt;a&amp;b&gt;") != std::string::npos);
  CHECK(svg.find("sort<a&b>") == std::string::npos);
  CHECK(svg.find("10M &lt;random&gt;") != std::string::npos);
  CHECK(svg.find("The lesson asks for:") != std::string::npos);
  CHECK(svg.find("39 grids: 30 fire-and-forget, 9 into created streams (1 failed)") != std::string::npos);
  // Deeper kernels stand further right: block_sort_kernel's box is right of partition_kernel's.
  const auto x_of = [&](const std::string& name) {
    const auto label = svg.find(">" + name + "</text>");
    const auto box = svg.rfind("<rect x=\"", label);
    return std::stoi(svg.substr(box + 9));
  };
  CHECK(x_of("block_sort_kernel") > x_of("partition_done"));
  CHECK(x_of("partition_done") > x_of("partition_kernel"));
  const std::string empty = cdplab::report::launch_tree_svg({}, {}, "nothing");
  CHECK(empty.find("(nothing launched from device code)") != std::string::npos);
}

TEST_CASE("launch tree: the failed check's tree, and the lesson's launches, show in the terminal; a passed one's do not") {
  GradeReport report;
  report.exercises = {quicksort_exercise(Outcome::failed)};
  const std::string failed = cdplab::report::render_terminal(report);
  CHECK(failed.find("launches: what \"10M random\" ran on the GPU") != std::string::npos);
  CHECK(failed.find("    partition_done\n      -> partition_kernel: 39 grids") != std::string::npos);
  CHECK(failed.find("the lesson:") != std::string::npos);
  CHECK(failed.find("- partition_kernel launches partition_done into the tail stream") != std::string::npos);
  report.exercises = {quicksort_exercise(Outcome::passed)};
  CHECK(cdplab::report::render_terminal(report).find("launches:") == std::string::npos);
  // A check that failed with nothing launched says so: the parent did the child's work.
  auto nothing = quicksort_exercise(Outcome::failed);
  nothing.items[1].launches.clear();
  report.exercises = {nothing};
  CHECK(cdplab::report::render_terminal(report).find("(nothing launched from device code)") != std::string::npos);
  // Where the grader did not count (no device code loaded), no tree is claimed.
  nothing.items[1].launches_observed = false;
  report.exercises = {nothing};
  CHECK(cdplab::report::render_terminal(report).find("launches:") == std::string::npos);
}

TEST_CASE("launch tree: the JSON report keeps it, an empty observed tree included, and the lesson's launches") {
  GradeReport report;
  auto exercise = quicksort_exercise(Outcome::failed);
  Item nothing;
  nothing.name = "no launches";
  nothing.launches_observed = true;
  exercise.items.push_back(nothing);
  report.exercises = {exercise};
  const auto json = cdplab::report::to_json(report);
  const auto back = cdplab::report::from_json(json);
  const auto& items = back.exercises.at(0).items;
  REQUIRE(items.size() == 3);
  CHECK(items[1].launches.size() == 3);
  CHECK(items[1].launches[1].fire_and_forget == 30);
  CHECK(items[1].launches[1].failed == 1);
  CHECK(items[1].launches[0].caller == "partition_kernel");
  CHECK(items[2].launches_observed);
  CHECK(items[2].launches.empty());
  CHECK(back.exercises.at(0).lesson_launches == exercise.lesson_launches);
  CHECK(cdplab::report::to_json(back) == json);
  auto wrong = json;
  wrong["exercises"][0]["items"][1]["launches"][0]["grids"] = -1;
  CHECK_THROWS_WITH_AS(cdplab::report::from_json(wrong), doctest::Contains("launches[0].grids"), std::runtime_error);
}

TEST_CASE("launch tree: the feedback page draws the failed check's tree") {
  GradeReport report;
  report.exercises = {quicksort_exercise(Outcome::failed)};
  const std::string html = cdplab::report::to_feedback_html(report, "ada");
  CHECK(html.find("<h3>Launch tree</h3>") != std::string::npos);
  CHECK(html.find("<svg xmlns") != std::string::npos);
  CHECK(html.find("launches of the check &quot;10M random&quot;") != std::string::npos);
  const std::string markdown = cdplab::report::to_feedback_markdown(report, "ada");
  CHECK(markdown.find("  -> block_sort_kernel: 41 grids fire-and-forget") != std::string::npos);
}

TEST_CASE("launch tree: the grader reads it from the harness's end record, with the names people write") {
  const auto file = std::filesystem::path(CDPLAB_TEST_BINARY_DIR) / "launch-tree-events.jsonl";
  std::ofstream(file)
      << R"({"event":"end","check":"a","status":"failed","launches":[{"caller":"_ZN6cdplab12fundamentals13expand_parentEPKjPKfPfj","child":"_ZN6cdplab12fundamentals12expand_childEPKfPfjj","grids":3,"null":3,"tail":0,"fire_and_forget":0,"named":0,"failed":0},{"caller":"","child":"","grids":1,"null":1},"not an edge"]})"
      << "\n"
      << R"({"event":"end","check":"b","status":"passed"})" << "\n";
  const auto events = cdplab::grading::read_check_events(file.string());
  REQUIRE(events.size() == 2);
  CHECK(events[0].launches_observed);
  REQUIRE(events[0].launches.size() == 2);
  CHECK(events[0].launches[0].caller == "expand_parent");
  CHECK(events[0].launches[0].child == "expand_child");
  CHECK(events[0].launches[0].null_stream == 3);
  CHECK(events[0].launches[1].child.empty());
  CHECK_FALSE(events[1].launches_observed);

  // Overloaded kernels keep their parameter lists, so that each has a box of its own.
  std::ofstream(file)
      << R"({"event":"end","check":"a","status":"passed","launches":[{"caller":"_Z6sorterPii","child":"_Z6sorterPfi","grids":2,"null":2},{"caller":"_Z6sorterPfi","child":"_Z4leafPf","grids":1,"null":1}]})"
      << "\n";
  const auto overloads = cdplab::grading::read_check_events(file.string());
  REQUIRE(overloads.size() == 1);
  REQUIRE(overloads[0].launches.size() == 2);
  CHECK(overloads[0].launches[0].caller == "sorter(int*, int)");
  CHECK(overloads[0].launches[0].child == "sorter(float*, int)");
  CHECK(overloads[0].launches[1].caller == "sorter(float*, int)");
  CHECK(overloads[0].launches[1].child == "leaf");
}

TEST_CASE("launch tree: a picture per exercise whose launches were counted, named after its file") {
  GradeReport report;
  auto counted = quicksort_exercise(Outcome::passed);
  ExerciseResult uncounted;
  uncounted.chapter = "01-fundamentals";
  uncounted.id = "child-grids";
  uncounted.file = "01-fundamentals/child_grids.cu";
  Item skipped;
  skipped.outcome = Outcome::skipped;
  uncounted.items = {skipped};
  report.exercises = {counted, uncounted};
  const auto folder = std::filesystem::path(CDPLAB_TEST_BINARY_DIR) / "launch-tree-pictures";
  std::filesystem::remove_all(folder);
  CHECK(cdplab::report::write_launch_tree_pictures(report, folder.string()) == 1);
  const auto picture = folder / "05-streams-and-pools-quicksort.svg";
  REQUIRE(std::filesystem::exists(picture));
  std::ifstream in(picture);
  const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Passed everywhere: the check that launched the most is drawn.
  CHECK(svg.find("quicksort.cu: launches of the check &quot;10M random&quot;") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(folder / "01-fundamentals-child_grids.svg"));
}

TEST_CASE("launch tree: an exercise that launches nothing and is asked to launch nothing shows no tree") {
  auto e = quicksort_exercise(Outcome::failed);
  e.lesson_launches.clear();
  for (auto& item : e.items) item.launches.clear();
  CHECK(cdplab::report::shown_launch_tree(e, false) == nullptr);
  e.lesson_launches = {"a launches b from device code"};
  REQUIRE(cdplab::report::shown_launch_tree(e, true) != nullptr);
  CHECK(cdplab::report::shown_launch_tree(e, true)->name == "10M random");
}
