// The timeline of a check's grids (report/grid_timeline.h), drawn from made-up recordings: rows
// by where grids were launched, overlap as stacked lines, the 100-column limit, and the SVG's bars,
// escaping and layout.
#include <doctest/doctest.h>

#include "report/grid_timeline.h"
#include "report/report.h"
#include "gpu_present.h"

#include <nlohmann/json.hpp>

#include "grading/grade.h"
#include "manifest/manifest.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

using cdplab::grading::GridSpan;
using cdplab::grading::GridTimeline;
namespace report = cdplab::report;

GridSpan grid(std::uint64_t id, const std::string& kernel, std::uint64_t parent, const std::string& stream,
              std::uint64_t start_us, std::uint64_t end_us, std::uint64_t block = 0) {
  GridSpan g;
  g.id = id;
  g.kernel = kernel;
  g.parent = parent;
  g.stream = stream;
  g.parent_block = block;
  g.start_ns = start_us * 1000;
  g.end_ns = end_us * 1000;
  g.blocks = 1;
  if (parent != 0) {
    g.launched_seen = true;
    g.launched_ns = g.start_ns > 2000 ? g.start_ns - 2000 : 0;
  }
  return g;
}

/// A parent (one grid from the host) whose block 0 launched three children into its NULL stream,
/// one after another, and whose block 1 launched three into named streams, side by side.
GridTimeline null_and_named() {
  GridTimeline t;
  t.run = 1;
  t.runs = 1;
  t.grids = {grid(1, "parent", 0, "host", 0, 100),
             grid(2, "child", 1, "null", 10, 30, 0),
             grid(3, "child", 1, "named", 12, 40, 1),
             grid(4, "child", 1, "named", 13, 41, 1),
             grid(5, "child", 1, "named", 14, 42, 1),
             grid(6, "child", 1, "null", 31, 50, 0),
             grid(7, "child", 1, "null", 51, 70, 0)};
  return t;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("grid timeline: a NULL stream's grids share one line, named streams' overlapping grids stack") {
  const auto t = null_and_named();
  const auto lines = report::timeline_lines(t);
  REQUIRE(lines.size() == 5);  // host; A1's NULL stream of block 0; three named-stream lines
  CHECK(lines[0].label == "host");
  CHECK(lines[0].grids == std::vector<std::size_t>{0});
  CHECK(lines[1].label == "A1 > null stream, block 0");
  CHECK(lines[1].grids == std::vector<std::size_t>{1, 5, 6});  // one after another: one line
  CHECK(lines[1].depth == 1);
  CHECK(lines[2].label == "A1 > named streams");
  for (int l = 2; l < 5; ++l) CHECK(lines[static_cast<std::size_t>(l)].grids.size() == 1);  // side by side: stacked
  CHECK(lines[3].label.empty());
  CHECK(report::grid_name(t, 0) == "A1");
  CHECK(report::grid_name(t, 5) == "B5");  // kept by start: the fifth child to start
}

TEST_CASE("grid timeline: a tail launch has its own row, grandchildren sit under their parent, orphans apart") {
  GridTimeline t;
  t.run = 2;
  t.runs = 3;
  t.grids = {grid(1, "producer", 0, "host", 0, 50), grid(2, "step", 1, "fire-and-forget", 5, 20),
             grid(3, "step", 2, "null", 21, 30), grid(4, "consumer", 1, "tail", 55, 70),
             grid(9, "lost", 77, "named", 60, 65)};
  const auto lines = report::timeline_lines(t);
  REQUIRE(lines.size() == 5);
  CHECK(lines[1].label == "A1 > fire-and-forget");
  CHECK(lines[2].label == "B1 > null stream, block 0");  // B1's child, before A1's next row
  CHECK(lines[2].depth == 2);
  CHECK(lines[3].label == "A1 > tail launch");
  CHECK(lines[4].label == "launched by a grid not recorded");
  const std::string text = report::timeline_text(t);
  CHECK(text.rfind("grids of run 2 of 3: 5 grids in 70 us", 0) == 0);
}

TEST_CASE("grid timeline text: every line fits the width, grids one after another stay apart, waits are dots") {
  auto t = null_and_named();
  const std::string text = report::timeline_text(t, 100);
  INFO(text);
  for (const auto& line : lines_of(text)) CHECK(line.size() <= 100);
  CHECK(text.find("A = parent (1 grid), B = child (6 grids)") != std::string::npos);
  const auto lines = lines_of(text);
  // The NULL stream's line: three grids, letters in turn upper and lower case.
  const auto null_line = std::find_if(lines.begin(), lines.end(),
                                      [](const std::string& l) { return l.find("null stream") != std::string::npos; });
  REQUIRE(null_line != lines.end());
  CHECK(std::regex_search(*null_line, std::regex("B+b+B+")));
  CHECK(null_line->find('.') != std::string::npos);  // each waited 2 us after its launch
  CHECK(lines.back().find("100 us") != std::string::npos);  // the axis ends at the last moment

  // Long names and many rows: still within the width, the rest counted.
  GridTimeline many;
  many.run = many.runs = 1;
  many.grids.push_back(grid(1, std::string(150, 'k'), 0, "host", 0, 1000));
  for (std::uint64_t i = 0; i < 40; ++i) many.grids.push_back(grid(2 + i, "child", 1, "named", 10 + i, 900));
  many.left_out = 7;
  const std::string crowded = report::timeline_text(many, 100, 10);
  INFO(crowded);
  for (const auto& line : lines_of(crowded)) CHECK(line.size() <= 100);
  CHECK(crowded.find("(7 more not recorded)") != std::string::npos);
  CHECK(crowded.find("... 31 more lines (31 grids), all in the feedback page") != std::string::npos);
  for (const auto& line : lines_of(report::timeline_text(many, 60, 10))) CHECK(line.size() <= 60);
}

TEST_CASE("grid timeline SVG: one bar per grid coloured by stream, wait lines, names escaped, rows in order") {
  auto t = null_and_named();
  t.grids[1].kernel = "child<int&>";
  t.failed_launches = 2;
  const std::string svg = report::timeline_svg(t, "check \"named <streams>\" on H100");
  CHECK(svg.rfind("<svg ", 0) == 0);
  CHECK(count(svg, "</svg>") == 1);
  CHECK(count(svg, "<title>") == t.grids.size());
  CHECK(svg.find("child<int&>") == std::string::npos);
  CHECK(svg.find("child&lt;int&amp;&gt;") != std::string::npos);
  const bool title_escaped = svg.find("check &quot;named &lt;streams&gt;&quot; on H100") != std::string::npos ||
                             svg.find("check \"named &lt;streams&gt;\" on H100") != std::string::npos;
  CHECK(title_escaped);
  CHECK(svg.find("2 launches failed") != std::string::npos);
  CHECK(count(svg, "fill=\"#c44e52\" stroke") == 3);  // three named-stream grids
  CHECK(count(svg, "fill=\"#dd8452\" stroke") == 3);  // three NULL-stream grids
  CHECK(count(svg, "stroke-dasharray=\"2,2\"/>") == 6 + 1);  // a wait line per device launch, one in the legend
  // Rows go down the page in the order of timeline_lines: the labels' y grow.
  std::vector<int> ys;
  for (const char* label : {">host<", ">A1 &gt; null stream, block 0<", ">A1 &gt; named streams<"}) {
    const auto at = svg.find(label);
    REQUIRE(at != std::string::npos);
    const auto y = svg.rfind("y=\"", at);
    ys.push_back(std::stoi(svg.substr(y + 3)));
  }
  CHECK(std::is_sorted(ys.begin(), ys.end()));
  CHECK(ys.front() < ys.back());
  // An empty recording still draws a valid picture.
  GridTimeline empty;
  empty.run = empty.runs = 1;
  const std::string none = report::timeline_svg(empty, "nothing");
  CHECK(none.find("(no grid recorded)") != std::string::npos);
  CHECK(count(none, "</svg>") == 1);
}

TEST_CASE("grid timeline travels in the JSON report and shows under its check in the terminal, within 100 columns") {
  cdplab::grading::GradeReport report;
  report.device = "NVIDIA H100 80GB HBM3";
  cdplab::grading::ExerciseResult e;
  e.chapter = "04-memory-visibility";
  e.id = "tail-consumer";
  e.title = "A consumer that runs after every child";
  e.file = "04-memory-visibility/tail_consumer.cu";
  cdplab::grading::Item check;
  check.name = "child takes 200 us";
  check.max_points = 2;
  check.feedback = "the consumer read before the children had written";
  check.timeline = null_and_named();
  check.timeline.left_out = 3;
  check.timeline.failed_launches = 1;
  cdplab::grading::Item plain;
  plain.name = "no delay";
  plain.outcome = cdplab::grading::Outcome::passed;
  e.items = {check, plain};
  report.exercises.push_back(e);

  const auto back = report::from_json(report::to_json(report));
  const auto& t = back.exercises.at(0).items.at(0).timeline;
  REQUIRE(t.recorded());
  CHECK(t.grids.size() == check.timeline.grids.size());
  CHECK(t.left_out == 3);
  CHECK(t.failed_launches == 1);
  CHECK(t.grids.at(2).stream == "named");
  CHECK(t.grids.at(2).parent == 1);
  CHECK(t.grids.at(2).launched_seen);
  CHECK(t.grids.at(2).launched_ns == check.timeline.grids.at(2).launched_ns);
  CHECK_FALSE(back.exercises.at(0).items.at(1).timeline.recorded());
  CHECK(report::timeline_text(t) == report::timeline_text(check.timeline));

  const std::string out = report::render_terminal(back);
  INFO(out);
  CHECK(out.find("timeline: when the grids of \"child takes 200 us\" ran") != std::string::npos);
  CHECK(out.find("A1 > null stream, block 0") != std::string::npos);
  for (const auto& line : lines_of(out)) CHECK(line.size() <= 100);
  CHECK(report::checks_with_timelines(back.exercises.at(0)).size() == 1);
}

TEST_CASE("grid timeline: the grader reads it from the harness's end record, by start, with the names people write") {
  const auto file = std::filesystem::path(CDPLAB_TEST_BINARY_DIR) / "grid-timeline-events.jsonl";
  std::ofstream(file)
      << R"({"event":"end","check":"a","status":"failed","timeline":{"run":2,"runs":3,"left_out":4,"failed_launches":1,"grids":[)"
      << R"({"id":9,"kernel":"_ZN6cdplab10visibility8consumerEPKjPj","blocks":2,"start":900,"end":1200,"parent":7,"parent_kernel":"_ZN6cdplab10visibility8producerEPjj","parent_block":0,"stream":"tail","stream_id":0,"launched":100},)"
      << R"({"id":7,"kernel":"_ZN6cdplab10visibility8producerEPjj","blocks":4,"start":0,"end":800,"stream":"host"},)"
      << R"("not a grid"]}})" << "\n"
      << R"({"event":"end","check":"b","status":"passed"})" << "\n";
  const auto events = cdplab::grading::read_check_events(file.string());
  REQUIRE(events.size() == 2);
  const auto& t = events[0].timeline;
  CHECK(t.run == 2);
  CHECK(t.runs == 3);
  CHECK(t.left_out == 4);
  CHECK(t.failed_launches == 1);
  REQUIRE(t.grids.size() == 2);
  CHECK(t.grids[0].kernel == "producer");  // by start
  CHECK(t.grids[0].stream == "host");
  CHECK_FALSE(t.grids[0].launched_seen);
  CHECK(t.grids[1].kernel == "consumer");
  CHECK(t.grids[1].parent_kernel == "producer");
  CHECK(t.grids[1].stream == "tail");
  CHECK(t.grids[1].launched_seen);
  CHECK(t.grids[1].start_ns == 900);
  CHECK(t.grids[0].id == 1);  // numbered by start
  CHECK(t.grids[1].id == 2);
  CHECK(t.grids[1].parent == 1);
  CHECK_FALSE(events[1].timeline.recorded());
}

TEST_CASE("grid timeline: the GPU's grid ids and stream handles, past 2^53, come out as small distinct numbers") {
  // An H100 counts device-launched grids down from 2^64 - 1: ids one apart, which a JSON reader
  // that keeps doubles would read as one number.
  const auto file = std::filesystem::path(CDPLAB_TEST_BINARY_DIR) / "grid-timeline-big-ids.jsonl";
  std::ofstream(file)
      << R"({"event":"end","check":"a","status":"failed","timeline":{"run":1,"runs":1,"grids":[)"
      << R"({"id":18446744073709551614,"kernel":"c","start":30,"end":40,"parent":5,"parent_block":0,"stream":"named","stream_id":18446744073709551000,"launched":20},)"
      << R"({"id":18446744073709551615,"kernel":"c","start":20,"end":40,"parent":5,"parent_block":0,"stream":"named","stream_id":18446744073709551001,"launched":10},)"
      << R"({"id":18446744073709551613,"kernel":"c","start":50,"end":60,"parent":99,"parent_block":0,"stream":"named","stream_id":18446744073709551000,"launched":45},)"
      << R"({"id":5,"kernel":"p","start":0,"end":100,"stream":"host"}]}})" << "\n";
  const auto events = cdplab::grading::read_check_events(file.string());
  REQUIRE(events.size() == 1);
  const auto& grids = events[0].timeline.grids;
  REQUIRE(grids.size() == 4);
  CHECK(grids[0].id == 1);  // the host's grid started first
  CHECK(grids[0].parent == 0);
  CHECK(grids[1].id == 2);
  CHECK(grids[2].id == 3);
  CHECK(grids[3].id == 4);
  for (std::size_t i = 1; i < 3; ++i) CHECK(grids[i].parent == 1);
  CHECK(grids[3].parent == 5);  // a parent the recording did not keep: a number of its own
  CHECK(grids[1].stream_id == 1);  // streams numbered in the order their grids started
  CHECK(grids[2].stream_id == 2);
  CHECK(grids[3].stream_id == 2);  // the same handle: the same stream
}

// A grading records the grids of the checks whose verdict is their order (chapter.toml's
// `timeline = true`), and only those: the check processes read the list the grader hands them.
TEST_CASE("grid timeline: a grading asks the checks that judge the order of grids to record, and no others") {
  const auto book = cdplab::manifest::load_workbook(CDPLAB_SOURCE_DIR);
  const auto all = book.exercises();
  const std::string recorded = cdplab::grading::recorded_checks(all);
  std::vector<std::string> lines;
  std::istringstream in(recorded);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  CHECK(std::find(lines.begin(), lines.end(), "01-fundamentals/tail_continuation/small pipeline") != lines.end());
  CHECK(std::find(lines.begin(), lines.end(), "01-fundamentals/tail_continuation/odd sizes") == lines.end());
  std::size_t marked = 0;
  for (const auto* e : all)
    for (const auto& check : e->checks) marked += check.timeline ? 1 : 0;
  CHECK(lines.size() == marked);
  CHECK(marked >= 5);
  // An exercise without such checks asks for nothing.
  const auto* child_grids = book.find_exercise("child-grids");
  REQUIRE(child_grids != nullptr);
  CHECK(cdplab::grading::recorded_checks({child_grids}).empty());
}

// On the GPU: the reference solutions checked with --timeline, and the lesson's orders read off
// the recorded grids (nothing here comes from the exercises' own outputs).
TEST_CASE("grid timeline on the GPU: the references' recorded grids keep the orders the lessons teach") {
  if (!cdplab::testing::gpu_present()) {
    MESSAGE("CDPLAB_TEST_SKIPPED: no GPU: grids are recorded where they run");
    return;
  }
  const auto json = std::filesystem::path(CDPLAB_TEST_BINARY_DIR) / "grid-timeline-references.json";
  std::filesystem::remove(json);
  cdplab::process::Options options;
  options.timeout_seconds = 600;
  // Not child-grids: with recording on, its check "more children than the pool holds" did not
  // finish on an H100 (docs/reports.md, "Timelines"); tail-continuation's steps share a block's
  // NULL stream too.
  const auto ran = cdplab::process::run({CDPLAB_CLI, "check", "concurrency", "tail-continuation", "tail-consumer",
                                         "scaled-tessellation", "--timeline", "--local", "--quiet", "--format", "json",
                                         "--output", json.string()},
                                        options);
  INFO(ran.output);
  REQUIRE(std::filesystem::exists(json));
  const auto report = report::from_json(nlohmann::json::parse(std::ifstream(json)));
  CHECK(report.points() == report.max_points());
  std::size_t device_launched = 0, tail_grids = 0, null_pairs = 0, named_overlaps = 0;
  // Chapter 05's three strategies, from the exercise's own child grids: the strategy's stream
  // kind, and grids of one parent block overlapping or not.
  std::map<std::string, std::size_t> concurrency_children, concurrency_overlaps;
  for (const auto& e : report.exercises) {
    for (const auto& item : e.items) {
      if (!item.timeline.recorded()) continue;
      if (e.id == "concurrency") {
        std::map<std::uint64_t, std::vector<const GridSpan*>> by_block;
        for (const auto& g : item.timeline.grids)
          if (g.parent != 0) by_block[g.parent_block].push_back(&g);
        for (const auto& [block, grids] : by_block) {
          concurrency_children[item.name] += grids.size();
          for (std::size_t i = 1; i < grids.size(); ++i)
            // 1 us for the skew between SMs' timers, as the checks allow (streams_verdicts.h)
            concurrency_overlaps[item.name] += grids[i]->start_ns + 1000 < grids[i - 1]->end_ns ? 1 : 0;
        }
      }
      INFO(e.id, ": ", item.name, "\n", report::timeline_text(item.timeline));
      std::map<std::uint64_t, const GridSpan*> by_id;
      for (const auto& g : item.timeline.grids) by_id[g.id] = &g;
      std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<const GridSpan*>> null_streams;
      std::vector<const GridSpan*> named;
      for (const auto& g : item.timeline.grids) {
        CHECK(g.ended());
        if (g.parent == 0) continue;
        ++device_launched;
        CHECK(g.launched_seen);
        CHECK(g.launched_ns <= g.start_ns);  // a grid starts after its launch
        const auto parent = by_id.find(g.parent);
        if (g.stream == "tail" && parent != by_id.end()) {  // after the whole parent grid
          ++tail_grids;
          CHECK(g.start_ns >= parent->second->end_ns);
        }
        if (g.stream == "null") null_streams[{g.parent, g.parent_block}].push_back(&g);
        if (g.stream == "named") named.push_back(&g);
      }
      // One block's NULL stream runs its grids one after another (they are kept by start).
      for (const auto& [block, grids] : null_streams)
        for (std::size_t i = 1; i < grids.size(); ++i, ++null_pairs) CHECK(grids[i]->start_ns >= grids[i - 1]->end_ns);
      for (std::size_t i = 1; i < named.size(); ++i)
        named_overlaps += named[i]->start_ns < named[i - 1]->end_ns ? 1 : 0;
    }
  }
  CHECK(device_launched > 0);
  CHECK(tail_grids > 0);
  CHECK(null_pairs > 0);
  CHECK(named_overlaps > 0);  // named streams' grids ran side by side
  CHECK(concurrency_children["null stream serialises each block"] == 4 * 32);
  CHECK(concurrency_overlaps["null stream serialises each block"] == 0);  // one after another, block by block
  CHECK(concurrency_children["named streams overlap"] == 4 * 32);
  CHECK(concurrency_overlaps["named streams overlap"] > 0);
  CHECK(concurrency_children["fire-and-forget overlaps"] == 4 * 32);
  CHECK(concurrency_overlaps["fire-and-forget overlaps"] > 0);
}

TEST_CASE("grid timeline pictures: one per check that judges order, in the manifest's order, the device named") {
  cdplab::grading::GradeReport report;
  report.device = "NVIDIA H100 80GB HBM3";
  cdplab::grading::ExerciseResult e;
  e.chapter = "05-streams-and-pools";
  e.id = "concurrency";
  e.file = "05-streams-and-pools/concurrency.cu";
  cdplab::grading::Item busy, ordered, none;
  busy.name = "4096 children";
  busy.timeline = null_and_named();
  ordered.name = "named streams overlap";
  ordered.timeline = null_and_named();
  ordered.timeline.grids.resize(3);
  none.name = "a failed launch reaches the host";
  e.items = {none, busy, ordered};
  report.exercises.push_back(e);
  cdplab::grading::ExerciseResult quiz;  // no timeline: no picture
  quiz.chapter = "05-streams-and-pools";
  quiz.file = "05-streams-and-pools/quiz.toml";
  report.exercises.push_back(quiz);

  CHECK(report::shown_timeline(e, {"named streams overlap"})->name == "named streams overlap");
  CHECK(report::shown_timeline(e, {})->name == "4096 children");  // else the most grids
  CHECK(report::shown_timelines(e, {"a failed launch reaches the host", "named streams overlap"}).size() == 1);
  const auto both = report::shown_timelines(e, {"named streams overlap", "4096 children"});  // in the manifest's order
  REQUIRE(both.size() == 2);
  CHECK(both[0]->name == "named streams overlap");
  CHECK(both[1]->name == "4096 children");
  const auto folder = std::filesystem::path(CDPLAB_TEST_BINARY_DIR) / "timeline-pictures";
  std::filesystem::remove_all(folder);
  const int written = report::write_timeline_pictures(
      report, [](const cdplab::grading::ExerciseResult&) { return std::vector<std::string>{"named streams overlap"}; },
      folder.string());
  CHECK(written == 1);
  std::ifstream in(folder / "05-streams-and-pools-concurrency.svg");
  REQUIRE(in);
  const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(svg.find("concurrency.cu: the check &quot;named streams overlap&quot; on NVIDIA H100 80GB HBM3") !=
        std::string::npos);
  CHECK(count(svg, "<title>") == 3);

  // Every check that judges the order of grids gets a picture, the next ones numbered.
  std::filesystem::remove_all(folder);
  CHECK(report::write_timeline_pictures(report,
                                        [](const cdplab::grading::ExerciseResult&) {
                                          return std::vector<std::string>{"named streams overlap", "4096 children"};
                                        },
                                        folder.string()) == 2);
  std::ifstream second(folder / "05-streams-and-pools-concurrency-2.svg");
  REQUIRE(second);
  const std::string busy_svg((std::istreambuf_iterator<char>(second)), std::istreambuf_iterator<char>());
  CHECK(busy_svg.find("the check &quot;4096 children&quot;") != std::string::npos);
}
