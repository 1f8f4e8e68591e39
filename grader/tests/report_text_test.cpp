// The text helpers every report format relies on to stay readable and well-formed.
#include "report/text.h"

#include <doctest/doctest.h>

using namespace cdplab::report;
using cdplab::grading::GradeReport;
using cdplab::grading::Item;
using cdplab::grading::ItemKind;
using cdplab::grading::Outcome;

namespace {
const std::string kFffd(text::kReplacement);
}

TEST_CASE("report text valid_utf8 keeps valid text") {
  const std::string valid = "plain, caf\xC3\xA9, \xE2\x9C\x93 and \xF0\x9F\x98\x80";
  CHECK(text::valid_utf8(valid) == valid);
  CHECK(text::valid_utf8("") == "");
}

TEST_CASE("report text valid_utf8 replaces every invalid byte") {
  CHECK(text::valid_utf8("a\xFFz") == "a" + kFffd + "z");
  CHECK(text::valid_utf8("\xC0\xAF") == kFffd + kFffd);                   // overlong "/"
  CHECK(text::valid_utf8("\xED\xA0\x80") == kFffd + kFffd + kFffd);       // a surrogate
  CHECK(text::valid_utf8("\xF4\x90\x80\x80") == kFffd + kFffd + kFffd + kFffd);  // above U+10FFFF
  CHECK(text::valid_utf8("ok\xE2\x9C") == "ok" + kFffd + kFffd);           // cut short
  CHECK(text::valid_utf8("\x80x") == kFffd + "x");                         // a lone continuation byte
}

TEST_CASE("report text next_code_point decodes and moves on") {
  const std::string s = "A\xC3\xA9\xE2\x9C\x93\xF0\x9F\x98\x80";
  std::size_t pos = 0;
  CHECK(text::next_code_point(s, pos) == 0x41);
  CHECK(text::next_code_point(s, pos) == 0xE9);
  CHECK(text::next_code_point(s, pos) == 0x2713);
  CHECK(text::next_code_point(s, pos) == 0x1F600);
  CHECK(pos == s.size());
  std::string encoded;
  for (char32_t cp : {U'A', U'\u00E9', U'\u2713', U'\U0001F600'}) text::append_utf8(encoded, cp);
  CHECK(encoded == s);
}

TEST_CASE("report text strip_ansi removes colours and hyperlinks") {
  CHECK(text::strip_ansi("\x1b[01;31m\x1b[Kerror:\x1b[m\x1b[K bad") == "error: bad");
  CHECK(text::strip_ansi("see \x1b]8;;https://gcc.gnu.org/\x07-Wall\x1b]8;;\x07 now") == "see -Wall now");
  CHECK(text::strip_ansi("\x1b]8;;x\x1b\\link\x1b]8;;\x1b\\") == "link");
  CHECK(text::strip_ansi("no escapes") == "no escapes");
  CHECK(text::strip_ansi("end\x1b") == "end\x1b");  // not a sequence: left for the caller
}

TEST_CASE("report text plain removes control characters") {
  CHECK(text::plain("a\r\nb\rc\x07" "d\te\x1b[32m!\x1b[0m") == "a\nb\ncd\te!");
  CHECK(text::plain("bell\x7F\xC2\x85") == "bell");  // DEL and a C1 control
  CHECK(text::plain("bad \xFF byte") == "bad " + kFffd + " byte");
}

TEST_CASE("report text split_lines and first_line") {
  CHECK(text::split_lines("a\nb\n") == std::vector<std::string>{"a", "b"});
  CHECK(text::split_lines("a\n\nb") == std::vector<std::string>{"a", "", "b"});
  CHECK(text::split_lines("").empty());
  CHECK(text::first_line("\n  \nsecond\nthird", 80) == "second");
  CHECK(text::first_line("abcdef", 3) == "abc...");
  CHECK(text::first_line("\xE2\x9C\x93\xE2\x9C\x93\xE2\x9C\x93", 2) == "\xE2\x9C\x93\xE2\x9C\x93...");
}

TEST_CASE("report text format_points drops needless decimals") {
  CHECK(text::format_points(3) == "3");
  CHECK(text::format_points(10) == "10");
  CHECK(text::format_points(2.5) == "2.5");
  CHECK(text::format_points(1.0 / 3.0) == "0.33");
  CHECK(text::format_points(0.1 + 0.2) == "0.3");
  CHECK(text::format_points(-0.0001) == "0");
  CHECK(text::format_score(2, 5) == "2/5");
}

TEST_CASE("report text labels and exercise paths") {
  Item check;
  check.name = "skewed ranges";
  Item rule;
  rule.kind = ItemKind::rule;
  rule.name = "expand_parent launches expand_child";
  CHECK(text::item_label(check) == "skewed ranges");
  CHECK(text::item_label(rule) == "rule: expand_parent launches expand_child");

  cdplab::grading::ExerciseResult exercise;
  exercise.chapter = "01-fundamentals";
  exercise.id = "child-grids";
  exercise.file = "01-fundamentals/child_grids.cu";
  CHECK(text::exercise_path(exercise) == "01-fundamentals/child_grids");
  exercise.file = "";
  CHECK(text::exercise_path(exercise) == "01-fundamentals/child-grids");
  exercise.file = "v1.2/readme";
  CHECK(text::exercise_path(exercise) == "v1.2/readme");
}

TEST_CASE("report text display_width counts code points") {
  CHECK(text::display_width("abc") == 3);
  CHECK(text::display_width("\xE2\x9C\x93 ok") == 4);
  CHECK(text::display_width("\xE7\xAF\x84\xE4\xBE\x8B:") == 5);  // two CJK characters take two columns each
}

TEST_CASE("report text wrap_lines cuts at spaces, keeps the indent, and hangs the rest") {
  CHECK(text::wrap_lines("short", 10) == std::vector<std::string>{"short"});
  CHECK(text::wrap_lines("one two three four", 9) == std::vector<std::string>{"one two", "three", "four"});
  CHECK(text::wrap_lines("  one two three", 9) == std::vector<std::string>{"  one two", "  three"});
  CHECK(text::wrap_lines("hint: one two three", 10, 2) == std::vector<std::string>{"hint: one", "  two", "  three"});
  CHECK(text::wrap_lines("unbreakable-name-here x", 5) == std::vector<std::string>{"unbreakable-name-here", "x"});
}

TEST_CASE("report text summary names the device or why GPU checks were skipped") {
  GradeReport report;
  report.seed = 7;
  report.device = "NVIDIA H100 80GB HBM3";
  cdplab::grading::ExerciseResult exercise;
  Item passed;
  passed.outcome = Outcome::passed;
  passed.points = passed.max_points = 2;
  exercise.items = {passed};
  report.exercises = {exercise};

  auto lines = text::summary_lines(report);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "points: 2/2 (1 passed, 0 failed, 0 skipped)");
  CHECK(lines[1] == "device: NVIDIA H100 80GB HBM3");
  CHECK(lines[2] == "seed: 7");

  Item skipped;
  skipped.outcome = Outcome::skipped;
  skipped.max_points = 1;
  report.device.clear();
  report.gpu_problem = "no CUDA-capable device is detected";
  report.exercises[0].items = {skipped, skipped};
  lines = text::summary_lines(report);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "points: 0/2 (0 passed, 0 failed, 2 skipped)");
  CHECK(lines[1] == "no GPU: no CUDA-capable device is detected");
  CHECK(lines[3] == "grade incomplete: 2 GPU checks skipped");

  report.exercises[0].items = {skipped};
  CHECK(text::summary_lines(report).back() == "grade incomplete: 1 GPU check skipped");
}
