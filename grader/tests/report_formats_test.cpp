// The report formats, on grade reports built by hand: passed, failed, skipped, a missing file,
// a compile error, an empty run. Each format's documented fields and values are checked, and the
// JUnit XML is read back with a small well-formedness checker written here.
#include "report/report.h"
#include "report/text.h"

#include <doctest/doctest.h>

#include <cctype>
#include <map>
#include <set>
#include <stdexcept>
#include <sstream>
#include <string>
#include <vector>

using namespace cdplab;
using grading::ExerciseResult;
using grading::GradeReport;
using grading::Item;
using grading::ItemKind;
using grading::Outcome;
using nlohmann::json;

namespace {

// ---------------------------------------------------------------------------------------------
// Reports built by hand

Item make_item(ItemKind kind, const std::string& name, Outcome outcome, double points, double max_points,
               const std::string& feedback = "", double seconds = 0) {
  Item item;
  item.kind = kind;
  item.name = name;
  item.outcome = outcome;
  item.points = points;
  item.max_points = max_points;
  item.feedback = feedback;
  item.seconds = seconds;
  return item;
}

Item check(const std::string& name, Outcome outcome, double points, double max_points,
           const std::string& feedback = "", double seconds = 0) {
  return make_item(ItemKind::check, name, outcome, points, max_points, feedback, seconds);
}

Item rule(const std::string& name, Outcome outcome, double points, double max_points,
          const std::string& feedback = "") {
  return make_item(ItemKind::rule, name, outcome, points, max_points, feedback);
}

ExerciseResult exercise(const std::string& id, const std::string& stem, const std::string& title) {
  ExerciseResult e;
  e.chapter = "01-fundamentals";
  e.id = id;
  e.title = title;
  e.file = "01-fundamentals/" + stem + ".cu";
  e.hint = "Give every parent thread one child grid over its own range.";
  return e;
}

/// Two checks and two rules: 3 of 5 points, two failures with multi-line feedback.
ExerciseResult child_grids() {
  ExerciseResult e = exercise("child-grids", "child_grids", "One child grid per parent thread");
  e.items = {
      check("skewed ranges", Outcome::passed, 2, 2, "", 0.25),
      check("empty ranges", Outcome::failed, 0, 1, "expected 0 children for item 3\nfound 2 children", 0.5),
      rule("expand_parent launches expand_child", Outcome::passed, 1, 1),
      rule("no_private_pointers", Outcome::failed, 0, 1,
           "expected: no launch hands a child a __shared__ address\nfound: expand_parent passes one"),
  };
  return e;
}

/// Every item passed.
ExerciseResult all_passed() {
  ExerciseResult e = exercise("tail-launch", "tail_launch", "Finish in a tail launch");
  e.items = {check("sums match", Outcome::passed, 3, 3, "", 1.0)};
  return e;
}

/// A compile error: a long build log, every item failed with the same reason.
ExerciseResult compile_error(int log_lines = 30) {
  ExerciseResult e = exercise("recursion", "recursion", "Recursion, one level per launch");
  e.problem = "recursion.cu does not compile";
  for (int i = 1; i <= log_lines; ++i)
    e.build_log += "recursion.cu(" + std::to_string(i) + "): error: line " + std::to_string(i) + "\n";
  e.items = {check("depth 5", Outcome::failed, 0, 2, "not graded: recursion.cu does not compile"),
             check("depth 20", Outcome::failed, 0, 1, "not graded: recursion.cu does not compile")};
  return e;
}

/// The file is missing.
ExerciseResult missing_file() {
  ExerciseResult e = exercise("streams", "streams", "Named streams");
  e.problem = "file missing: 01-fundamentals/streams.cu";
  e.items = {check("overlap", Outcome::failed, 0, 2, "not graded: 01-fundamentals/streams.cu is missing")};
  return e;
}

GradeReport base_report() {
  GradeReport r;
  r.source = "chapters";
  r.device = "NVIDIA H100 80GB HBM3";
  r.seed = 12345678901234567890ull;  // above 2^63: must survive every format exactly
  r.started_at = "2026-03-01T09:30:00Z";
  r.seconds = 42.4;
  r.tool_version = "0.1.0";
  return r;
}

/// A run on a GPU with passed, failed and problem exercises.
GradeReport gpu_report() {
  GradeReport r = base_report();
  r.exercises = {child_grids(), all_passed(), compile_error(), missing_file()};
  return r;
}

/// A run without a GPU: the checks are skipped, the rules still judged.
GradeReport no_gpu_report() {
  GradeReport r = base_report();
  r.device.clear();
  r.gpu_problem = "no CUDA-capable device is detected";
  ExerciseResult e = exercise("child-grids", "child_grids", "One child grid per parent thread");
  e.items = {check("skewed ranges", Outcome::skipped, 0, 2, "no GPU: no CUDA-capable device is detected"),
             check("empty ranges", Outcome::skipped, 0, 1, "no GPU: no CUDA-capable device is detected"),
             rule("expand_parent launches expand_child", Outcome::passed, 1, 1)};
  r.exercises = {e};
  return r;
}

GradeReport single(const ExerciseResult& e) {
  GradeReport r = base_report();
  r.exercises = {e};
  return r;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

/// How many bytes of `text` make `bad` true.
template <typename Predicate>
int count_bytes(const std::string& text, Predicate bad) {
  int n = 0;
  for (unsigned char c : text) n += bad(c) ? 1 : 0;
  return n;
}

/// The line of `text` that starts with `prefix` (empty if none).
std::string line_starting(const std::string& text, const std::string& prefix) {
  for (const auto& line : report::text::split_lines(text))
    if (line.rfind(prefix, 0) == 0) return line;
  return {};
}

// ---------------------------------------------------------------------------------------------
// A small XML reader: enough of XML 1.0 to prove the JUnit output well-formed and to read it
// back (elements, attributes, text, the five named entities, character references).

struct Element {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::vector<Element> children;
  std::string text;  ///< the element's own character data, entities decoded

  std::vector<const Element*> all(const std::string& child_name) const {
    std::vector<const Element*> found;
    for (const auto& c : children)
      if (c.name == child_name) found.push_back(&c);
    return found;
  }
  const Element& one(const std::string& child_name) const {
    const auto found = all(child_name);
    if (found.size() != 1) throw std::runtime_error("expected one <" + child_name + "> in <" + name + ">");
    return *found.front();
  }
  std::string attr(const std::string& key) const {
    const auto it = attributes.find(key);
    if (it == attributes.end()) throw std::runtime_error("<" + name + "> has no attribute " + key);
    return it->second;
  }
};

class XmlReader {
 public:
  explicit XmlReader(const std::string& doc) : doc_(doc) {}

  Element document() {
    if (report::text::valid_utf8(doc_) != doc_) fail("not valid UTF-8");
    if (doc_.compare(0, 5, "<?xml") == 0) {
      pos_ = doc_.find("?>");
      if (pos_ == std::string::npos) fail("unterminated XML declaration");
      pos_ += 2;
    }
    skip_space();
    Element root = element();
    skip_space();
    if (pos_ != doc_.size()) fail("content after the root element");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("XML error at byte " + std::to_string(pos_) + ": " + what);
  }
  bool at_end() const { return pos_ >= doc_.size(); }
  char peek() const { return at_end() ? '\0' : doc_[pos_]; }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\n' || peek() == '\t' || peek() == '\r')) ++pos_;
  }
  static bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.' || c == ':';
  }
  std::string name() {
    const std::size_t start = pos_;
    while (!at_end() && name_char(peek())) ++pos_;
    if (start == pos_) fail("expected a name");
    return doc_.substr(start, pos_ - start);
  }
  /// One character of text or attribute value: an entity or a plain character (never '<').
  void character(std::string& out) {
    const char c = peek();
    if (c == '<') fail("'<' in character data");
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 && c != '\t' && c != '\n' && c != '\r') fail("raw control character " + std::to_string(byte));
    if (c != '&') {
      out += c;
      ++pos_;
      return;
    }
    const std::size_t end = doc_.find(';', pos_);
    if (end == std::string::npos) fail("unterminated entity");
    const std::string entity = doc_.substr(pos_ + 1, end - pos_ - 1);
    static const std::map<std::string, char> named = {
        {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
    if (const auto it = named.find(entity); it != named.end()) {
      out += it->second;
    } else if (entity.size() > 1 && entity[0] == '#') {
      const bool hex = entity[1] == 'x';
      const long cp = std::stol(entity.substr(hex ? 2 : 1), nullptr, hex ? 16 : 10);
      if (cp != 0x9 && cp != 0xA && cp != 0xD && cp < 0x20) fail("reference to a character XML forbids");
      report::text::append_utf8(out, static_cast<char32_t>(cp));
    } else {
      fail("unknown entity &" + entity + ";");
    }
    pos_ = end + 1;
  }
  Element element() {
    expect('<');
    Element e;
    e.name = name();
    for (;;) {
      const bool had_space = peek() == ' ' || peek() == '\n' || peek() == '\t';
      skip_space();
      if (peek() == '/') {
        ++pos_;
        expect('>');
        return e;
      }
      if (peek() == '>') {
        ++pos_;
        break;
      }
      if (!had_space) fail("attributes must be separated by space");
      const std::string key = name();
      expect('=');
      const char quote = peek();
      if (quote != '"' && quote != '\'') fail("attribute value not quoted");
      ++pos_;
      std::string value;
      while (!at_end() && peek() != quote) character(value);
      expect(quote);
      if (!e.attributes.emplace(key, value).second) fail("duplicate attribute " + key);
    }
    for (;;) {
      if (at_end()) fail("unclosed <" + e.name + ">");
      if (doc_.compare(pos_, 2, "</") == 0) {
        pos_ += 2;
        if (name() != e.name) fail("mismatched end tag for <" + e.name + ">");
        skip_space();
        expect('>');
        return e;
      }
      if (peek() == '<') e.children.push_back(element());
      else character(e.text);
    }
  }

  const std::string& doc_;
  std::size_t pos_ = 0;
};

Element parse_xml(const std::string& doc) { return XmlReader(doc).document(); }

}  // namespace

// =============================================================================================
// Terminal

TEST_CASE("report terminal header line shows file title and points") {
  const std::string out = report::render_terminal(single(child_grids()));
  CHECK(report::text::split_lines(out).front() ==
        "01-fundamentals/child_grids.cu  One child grid per parent thread   3/5");
}

TEST_CASE("report terminal aligns the points of all exercises") {
  const std::string out = report::render_terminal(gpu_report());
  const std::string a = line_starting(out, "01-fundamentals/child_grids.cu");
  const std::string b = line_starting(out, "01-fundamentals/tail_launch.cu");
  REQUIRE(!a.empty());
  REQUIRE(!b.empty());
  CHECK(a.size() == b.size());  // both end in a three-character score
  CHECK(b.substr(b.size() - 3) == "3/3");
}

TEST_CASE("report terminal uses ASCII markers and indents multi-line feedback") {
  const std::string out = report::render_terminal(single(child_grids()));
  CHECK(contains(out, "  [pass] skewed ranges"));
  CHECK(contains(out, "  [FAIL] empty ranges"));
  CHECK(contains(out, "  [FAIL] rule: no_private_pointers"));
  CHECK(contains(out, "\n         expected 0 children for item 3\n         found 2 children\n"));
  CHECK(contains(out, "\n         found: expand_parent passes one\n"));
  const std::string passed = line_starting(out, "  [pass] skewed ranges");
  CHECK(passed.substr(passed.size() - 3) == "2/2");
  CHECK_MESSAGE(count_bytes(out, [](unsigned char c) { return c >= 0x80; }) == 0, "non-ASCII output:\n" << out);
}

TEST_CASE("report terminal fits its width: long names, feedback and titles wrap at spaces") {
  ExerciseResult e = exercise("fast-quicksort", "fast_quicksort",
                              "A fast quicksort: grids sized to the range, halves started from a tail launch");
  const std::string long_rule =
      "partition_kernel checks its device-side launches for errors (cudaGetLastError(), as CDPLAB_CHECK_LAUNCH() "
      "calls it) before it ends";
  const std::string long_feedback =
      "found: after the launch at fast_quicksort.cu:120, partition_kernel can end with no cudaGetLastError() on "
      "the way (CDPLAB_CHECK_LAUNCH() calls it), and the launch pool may be full when it runs under load";
  e.items = {rule(long_rule, Outcome::failed, 0, 1, long_feedback), check("random", Outcome::passed, 2, 2)};
  e.problem = "9 line(s) of the results file were not written by the test harness (the code under test wrote "
              "them?) and were ignored";
  e.build_log = "fast_quicksort.cu(120): error: identifier \"kPendingLaunchMargin\" is undefined in this scope, "
                "declared nowhere in the file or in the headers it includes";
  for (const std::size_t width : {std::size_t{100}, std::size_t{72}}) {
    CAPTURE(width);
    const std::string out = report::render_terminal(single(e), {false, true, width});
    std::string words;
    for (const auto& line : report::text::split_lines(out)) {
      CHECK_MESSAGE(report::text::display_width(line) <= width, "too wide: " << line);
      words += line + " ";
    }
    // Nothing is lost: every word of the name, the feedback and the title is still there.
    for (const std::string& text : {long_rule, long_feedback, e.title, e.problem, e.build_log}) {
      std::istringstream in(text);
      for (std::string word; in >> word;) CHECK_MESSAGE(contains(words, word), "lost: " << word);
    }
    CHECK(contains(out, "[FAIL] rule: partition_kernel checks"));
  }
}

TEST_CASE("report terminal colours only when asked") {
  GradeReport r = single(child_grids());
  r.exercises[0].items[1].feedback = "\x1b[01;31merror:\x1b[0m expected 0, found 2";
  const std::string plain = report::render_terminal(r);
  CHECK(plain.find('\x1b') == std::string::npos);
  CHECK(contains(plain, "error: expected 0, found 2"));

  const std::string colored = report::render_terminal(r, {true, true});
  CHECK(contains(colored, "\x1b["));
  CHECK(contains(colored, "\xE2\x9C\x93"));  // ✓
  CHECK(contains(colored, "\xE2\x9C\x97"));  // ✗
  CHECK(!contains(colored, "[pass]"));
}

TEST_CASE("report terminal can hide passed items") {
  const std::string out = report::render_terminal(single(child_grids()), {false, false});
  CHECK(!contains(out, "skewed ranges"));
  CHECK(!contains(out, "expand_parent launches expand_child"));
  CHECK(contains(out, "[FAIL] empty ranges"));
  CHECK(contains(out, "(2 passed items not shown)"));
  CHECK(contains(out, "points: 3/5 (2 passed, 2 failed, 0 skipped)"));  // still counted
}

TEST_CASE("report terminal shows the problem and the start of the build log") {
  const std::string out = report::render_terminal(single(compile_error(30)));
  CHECK(contains(out, "  problem: recursion.cu does not compile\n"));
  CHECK(contains(out, "    recursion.cu(1): error: line 1\n"));
  CHECK(contains(out, "    recursion.cu(20): error: line 20\n"));
  CHECK(!contains(out, "line 21"));
  CHECK(contains(out, "... (10 more lines)"));
  // The reason every item failed is said once, not once per item.
  CHECK(contains(out, "not graded: recursion.cu does not compile\n"));
  CHECK(contains(out, "(same as above)"));

  const std::string short_log = report::render_terminal(single(compile_error(3)));
  CHECK(contains(short_log, "line 3\n"));
  CHECK(!contains(short_log, "more lines"));
}

TEST_CASE("report terminal shows a missing file") {
  const std::string out = report::render_terminal(single(missing_file()));
  CHECK(contains(out, "problem: file missing: 01-fundamentals/streams.cu"));
  CHECK(contains(out, "[FAIL] overlap"));
}

TEST_CASE("report terminal offers the hint only when something failed") {
  const std::string failed = report::render_terminal(single(child_grids()));
  CHECK(contains(failed, "  hint: Give every parent thread one child grid over its own range.\n"));
  CHECK(contains(failed, "  more hints: cdplab hint child-grids\n"));

  CHECK(!contains(report::render_terminal(single(all_passed())), "hint"));
  CHECK(!contains(report::render_terminal(no_gpu_report()), "hint"));  // skipped is not failed
  CHECK(contains(report::render_terminal(single(missing_file())), "more hints: cdplab hint streams"));
}

TEST_CASE("report terminal summary names the device") {
  const std::string out = report::render_terminal(gpu_report());
  CHECK(contains(out, "points: 6/13 (3 passed, 5 failed, 0 skipped)\n"));
  CHECK(contains(out, "device: NVIDIA H100 80GB HBM3\n"));
  CHECK(contains(out, "seed: 12345678901234567890\n"));
  CHECK(!contains(out, "incomplete"));
}

TEST_CASE("report terminal summary without a GPU says the grade is incomplete") {
  const std::string out = report::render_terminal(no_gpu_report());
  // The checks skipped for one reason share one line, and the reason is said once.
  CHECK(contains(out, "  [skip] skewed ranges, empty ranges"));
  CHECK(contains(out, "0/3\n"));
  CHECK(!contains(out, "(same as above)"));
  CHECK(contains(out, "         no GPU: no CUDA-capable device is detected\n"));
  CHECK(contains(out, "no GPU: no CUDA-capable device is detected\n"));
  CHECK(contains(out, "grade incomplete: 2 GPU checks skipped\n"));
  CHECK(contains(out, "points: 1/4 (1 passed, 0 failed, 2 skipped)"));
  CHECK(!contains(out, "device:"));
}

TEST_CASE("report terminal handles an empty report") {
  const std::string out = report::render_terminal(base_report());
  CHECK(contains(out, "No exercises were graded."));
  CHECK(contains(out, "points: 0/0 (0 passed, 0 failed, 0 skipped)"));

  GradeReport nothing = single(exercise("empty", "empty", "No items"));
  CHECK(contains(report::render_terminal(nothing), "(nothing graded)"));
}

TEST_CASE("report: what the host parts printed reaches the student's feedback, and the JSON carries it") {
  GradeReport r = single(exercise("pools", "pools", "Sizing the pending launch pool"));
  r.exercises[0].host_parts_output = "pool was 2048\nraising it to 31024\n";
  const std::string shown = report::render_terminal(r);
  CHECK(contains(shown, "your host parts printed:"));
  CHECK(contains(shown, "raising it to 31024"));
  CHECK(contains(report::to_feedback_markdown(r, "student"), "raising it to 31024"));
  CHECK(contains(report::to_feedback_html(r, "student"), "raising it to 31024"));
  const GradeReport back = report::from_json(report::to_json(r));
  CHECK(back.exercises[0].host_parts_output == r.exercises[0].host_parts_output);
}

// =============================================================================================
// JSON

namespace {

void check_same(const GradeReport& a, const GradeReport& b) {
  CHECK(a.source == b.source);
  CHECK(a.device == b.device);
  CHECK(a.gpu_problem == b.gpu_problem);
  CHECK(a.seed == b.seed);
  CHECK(a.started_at == b.started_at);
  CHECK(a.seconds == b.seconds);
  CHECK(a.tool_version == b.tool_version);
  CHECK(a.phases == b.phases);
  REQUIRE(a.exercises.size() == b.exercises.size());
  for (std::size_t e = 0; e < a.exercises.size(); ++e) {
    const auto& x = a.exercises[e];
    const auto& y = b.exercises[e];
    CHECK(x.chapter == y.chapter);
    CHECK(x.id == y.id);
    CHECK(x.title == y.title);
    CHECK(x.file == y.file);
    CHECK(x.problem == y.problem);
    CHECK(x.build_log == y.build_log);
    CHECK(x.hint == y.hint);
    CHECK(x.host_parts_output == y.host_parts_output);
    REQUIRE(x.items.size() == y.items.size());
    for (std::size_t i = 0; i < x.items.size(); ++i) {
      CHECK(x.items[i].kind == y.items[i].kind);
      CHECK(x.items[i].name == y.items[i].name);
      CHECK(x.items[i].outcome == y.items[i].outcome);
      CHECK(x.items[i].points == y.items[i].points);
      CHECK(x.items[i].max_points == y.items[i].max_points);
      CHECK(x.items[i].feedback == y.items[i].feedback);
      CHECK(x.items[i].seconds == y.items[i].seconds);
    }
  }
}

GradeReport through_text(const GradeReport& r) { return report::from_json(json::parse(report::to_json(r).dump(2))); }

}  // namespace

TEST_CASE("report json round trip keeps every field") {
  GradeReport r = gpu_report();
  r.exercises.push_back(no_gpu_report().exercises.front());
  r.gpu_problem = "one device of two failed";
  r.exercises[0].items[0].seconds = 0.1 + 0.2;  // a double that needs all its digits
  r.phases = {{"building", 11.5}, {"checks beside others", 5.25}, {"waiting for the GPU", 0.0}};
  const GradeReport back = through_text(r);
  check_same(r, back);
  CHECK(report::to_json(back) == report::to_json(r));

  check_same(base_report(), through_text(base_report()));  // the empty report
}

TEST_CASE("report json writes the format and derived totals") {
  const json j = report::to_json(gpu_report());
  CHECK(j.at("format") == "cdplab-grade/1");
  CHECK(j.at("seed").get<std::uint64_t>() == 12345678901234567890ull);
  CHECK(j.at("summary").at("points") == 6.0);
  CHECK(j.at("summary").at("max_points") == 13.0);
  CHECK(j.at("summary").at("passed") == 3);
  CHECK(j.at("summary").at("failed") == 5);
  CHECK(j.at("summary").at("skipped") == 0);
  CHECK(j.at("summary").at("complete") == true);
  CHECK(j.at("exercises").at(0).at("points") == 3.0);
  CHECK(j.at("exercises").at(0).at("items").at(3).at("kind") == "rule");
  CHECK(j.at("exercises").at(0).at("items").at(1).at("outcome") == "failed");
  CHECK(report::to_json(no_gpu_report()).at("summary").at("complete") == false);
}

TEST_CASE("report json ignores derived totals when reading") {
  json j = report::to_json(gpu_report());
  j["summary"]["points"] = 999;
  j["exercises"][0]["points"] = 999;
  const GradeReport back = report::from_json(j);
  CHECK(back.points() == 6.0);
  CHECK(back.exercises[0].points() == 3.0);
}

TEST_CASE("report json rejects another format and broken fields") {
  const json good = report::to_json(gpu_report());
  const auto message_of = [](const json& j) {
    try {
      report::from_json(j);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };

  json j = good;
  j["format"] = "cdplab-grade/2";
  CHECK(contains(message_of(j), "format"));
  j = good;
  j.erase("format");
  CHECK(contains(message_of(j), "format: missing"));
  j = good;
  j["exercises"][1]["items"][0]["outcome"] = "passd";
  CHECK(contains(message_of(j), "exercises[1].items[0].outcome: unknown value \"passd\""));
  j = good;
  j["exercises"][0]["items"][2]["kind"] = "test";
  CHECK(contains(message_of(j), "exercises[0].items[2].kind"));
  j = good;
  j["exercises"][0]["title"] = 7;
  CHECK(contains(message_of(j), "exercises[0].title: expected a string"));
  j = good;
  j["seed"] = -1;
  CHECK(contains(message_of(j), "seed"));
  j = good;
  j.erase("exercises");
  CHECK(contains(message_of(j), "exercises: missing"));
  CHECK(contains(message_of(json::array()), "expected an object"));
  CHECK(message_of(good) == "(no error)");
}

TEST_CASE("report json turns invalid UTF-8 into replacement characters") {
  GradeReport r = single(compile_error(1));
  r.exercises[0].build_log = "bad byte \xFF here";
  const json j = report::to_json(r);
  std::string text;
  CHECK_NOTHROW(text = j.dump());
  const GradeReport back = report::from_json(json::parse(text));
  CHECK(back.exercises[0].build_log == "bad byte \xEF\xBF\xBD here");
}

// =============================================================================================
// Gradescope

TEST_CASE("report gradescope writes only documented fields") {
  const json j = report::to_gradescope(gpu_report());
  std::set<std::string> top;
  for (const auto& [key, value] : j.items()) top.insert(key);
  CHECK(top == std::set<std::string>{"score", "execution_time", "output", "output_format", "visibility", "tests"});
  CHECK(j.at("output_format") == "text");
  CHECK(j.at("execution_time") == 42);
  REQUIRE(j.at("tests").is_array());
  for (const auto& test : j.at("tests")) {
    std::set<std::string> keys;
    for (const auto& [key, value] : test.items()) keys.insert(key);
    CHECK(keys == std::set<std::string>{"name", "score", "max_score", "status", "output", "number", "tags", "visibility"});
    CHECK((test.at("status") == "passed" || test.at("status") == "failed"));
    CHECK(test.at("number").is_string());
    CHECK(test.at("tags").is_array());
  }
}

TEST_CASE("report gradescope scores add up to the report") {
  const GradeReport r = gpu_report();
  const json j = report::to_gradescope(r);
  double score = 0;
  double max_score = 0;
  for (const auto& test : j.at("tests")) {
    score += test.at("score").get<double>();
    max_score += test.at("max_score").get<double>();
    CHECK(test.at("score").get<double>() <= test.at("max_score").get<double>());
  }
  CHECK(score == r.points());
  CHECK(max_score == r.max_points());
  CHECK(j.at("score").get<double>() == r.points());
}

TEST_CASE("report gradescope numbers names and tags the tests") {
  const json tests = report::to_gradescope(gpu_report()).at("tests");
  REQUIRE(tests.size() == 10);  // 4 + 1 items, a build test and 2 items, a build test and 1 item
  CHECK(tests[0].at("number") == "1.1");
  CHECK(tests[0].at("name") == "01-fundamentals/child_grids: skewed ranges");
  CHECK(tests[0].at("status") == "passed");
  CHECK(tests[0].at("score") == 2.0);
  CHECK(tests[0].at("tags") == json::array({"01-fundamentals", "child-grids", "check"}));
  CHECK(tests[1].at("status") == "failed");
  CHECK(tests[1].at("output") == "expected 0 children for item 3\nfound 2 children");
  CHECK(tests[3].at("name") == "01-fundamentals/child_grids: rule: no_private_pointers");
  CHECK(tests[3].at("number") == "1.4");
  CHECK(tests[3].at("tags").at(2) == "rule");
  CHECK(tests[4].at("number") == "2.1");
}

TEST_CASE("report gradescope reports a problem as a failed build test") {
  const json tests = report::to_gradescope(gpu_report()).at("tests");
  const json& build = tests[5];
  CHECK(build.at("number") == "3.0");
  CHECK(build.at("name") == "01-fundamentals/recursion: build");
  CHECK(build.at("status") == "failed");
  CHECK(build.at("score") == 0.0);
  CHECK(build.at("max_score") == 0.0);
  const std::string output = build.at("output");
  CHECK(contains(output, "recursion.cu does not compile"));
  CHECK(contains(output, "recursion.cu(30): error: line 30"));
  CHECK(build.at("tags").at(2) == "build");
  CHECK(tests[8].at("name") == "01-fundamentals/streams: build");
  CHECK(contains(tests[8].at("output").get<std::string>(), "file missing"));
}

TEST_CASE("report gradescope never counts a skipped item as passed") {
  GradeReport r = no_gpu_report();
  r.exercises[0].items[0].points = 2;  // even if points were (wrongly) awarded
  const json j = report::to_gradescope(r);
  const json& skipped = j.at("tests").at(0);
  CHECK(skipped.at("status") == "failed");
  CHECK(skipped.at("score") == 0.0);
  CHECK(skipped.at("max_score") == 2.0);
  const std::string output = skipped.at("output");
  CHECK(contains(output, "skipped"));
  CHECK(contains(output, "no CUDA-capable device is detected"));
  CHECK(j.at("score") == 1.0);  // only the passed rule
  const std::string overall = j.at("output");
  CHECK(contains(overall, "grade incomplete: 2 GPU checks skipped"));
  // Said first, where Gradescope shows it above the tests: this score is not final.
  CHECK(overall.rfind("NOT FINAL: 2 checks were skipped", 0) == 0);
  CHECK_FALSE(report::to_gradescope(gpu_report()).at("output").get<std::string>().find("NOT FINAL") != std::string::npos);
}

TEST_CASE("report gradescope overall output holds the summary and hints") {
  const std::string output = report::to_gradescope(gpu_report()).at("output");
  CHECK(contains(output, "points: 6/13"));
  CHECK(contains(output, "device: NVIDIA H100 80GB HBM3"));
  CHECK(contains(output, "01-fundamentals/child_grids: hint: Give every parent thread"));
  CHECK(contains(output, "more hints: cdplab hint child-grids"));
  CHECK(!contains(output, "cdplab hint tail-launch"));  // all passed: no hint
}

TEST_CASE("report gradescope handles an empty report") {
  const json j = report::to_gradescope(base_report());
  CHECK(j.at("score") == 0.0);
  CHECK(j.at("tests").empty());
  CHECK_NOTHROW(j.dump());
}

// =============================================================================================
// JUnit XML

TEST_CASE("report junit is well formed with one suite per exercise") {
  const Element root = parse_xml(report::to_junit_xml(gpu_report()));
  CHECK(root.name == "testsuites");
  CHECK(root.attr("tests") == "10");
  CHECK(root.attr("failures") == "5");
  CHECK(root.attr("errors") == "2");
  CHECK(root.attr("skipped") == "0");
  CHECK(root.attr("time") == "42.400");
  const auto suites = root.all("testsuite");
  REQUIRE(suites.size() == 4);

  const Element& first = *suites[0];
  CHECK(first.attr("name") == "01-fundamentals/child_grids");
  CHECK(first.attr("tests") == "4");
  CHECK(first.attr("failures") == "2");
  CHECK(first.attr("errors") == "0");
  CHECK(first.attr("skipped") == "0");
  CHECK(first.attr("time") == "0.750");
  const auto cases = first.all("testcase");
  REQUIRE(cases.size() == 4);
  CHECK(cases[0]->attr("classname") == "01-fundamentals.child_grids");
  CHECK(cases[0]->attr("name") == "skewed ranges");
  CHECK(cases[0]->attr("time") == "0.250");
  CHECK(cases[0]->children.empty());  // passed
  const Element& failure = cases[1]->one("failure");
  CHECK(failure.attr("message") == "expected 0 children for item 3");
  CHECK(failure.attr("type") == "check");
  CHECK(failure.text == "expected 0 children for item 3\nfound 2 children");
  CHECK(cases[3]->attr("name") == "rule: no_private_pointers");
  CHECK(cases[3]->one("failure").attr("type") == "rule");
}

TEST_CASE("report junit carries seed and device as properties") {
  const Element root = parse_xml(report::to_junit_xml(gpu_report()));
  for (const Element* suite : root.all("testsuite")) {
    std::map<std::string, std::string> properties;
    for (const Element* p : suite->one("properties").all("property")) properties[p->attr("name")] = p->attr("value");
    CHECK(properties["seed"] == "12345678901234567890");
    CHECK(properties["device"] == "NVIDIA H100 80GB HBM3");
    CHECK(properties.count("points") == 1);
  }
  const Element no_gpu = parse_xml(report::to_junit_xml(no_gpu_report()));
  std::map<std::string, std::string> properties;
  for (const Element* p : no_gpu.one("testsuite").one("properties").all("property"))
    properties[p->attr("name")] = p->attr("value");
  CHECK(properties["device"].empty());
  CHECK(properties["gpu_problem"] == "no CUDA-capable device is detected");
}

TEST_CASE("report junit writes a problem as an error of a build testcase") {
  const Element root = parse_xml(report::to_junit_xml(gpu_report()));
  const Element& suite = *root.all("testsuite")[2];
  CHECK(suite.attr("errors") == "1");
  CHECK(suite.attr("tests") == "3");
  const Element& build = *suite.all("testcase").front();
  CHECK(build.attr("name") == "build");
  CHECK(build.attr("classname") == "01-fundamentals.recursion");
  const Element& error = build.one("error");
  CHECK(error.attr("message") == "recursion.cu does not compile");
  CHECK(contains(error.text, "recursion.cu(30): error: line 30"));

  const Element& missing = *root.all("testsuite")[3]->all("testcase").front();
  CHECK(missing.one("error").attr("message") == "file missing: 01-fundamentals/streams.cu");
}

TEST_CASE("report junit marks skipped items skipped and never passed") {
  const Element root = parse_xml(report::to_junit_xml(no_gpu_report()));
  CHECK(root.attr("skipped") == "2");
  CHECK(root.attr("failures") == "0");
  const auto cases = root.one("testsuite").all("testcase");
  REQUIRE(cases.size() == 3);
  CHECK(cases[0]->one("skipped").attr("message") == "no GPU: no CUDA-capable device is detected");
  CHECK(cases[1]->all("skipped").size() == 1);
  CHECK(cases[2]->children.empty());  // the rule passed
}

TEST_CASE("report junit escapes markup and control characters") {
  GradeReport r = single(child_grids());
  const std::string nasty = "a<b> & \"c\" 'd' ]]> \x01\x1b[31mred\x1b[0m \xFF end";
  r.exercises[0].items[1].name = "name with <angle> & \"quotes\"";
  r.exercises[0].items[1].feedback = nasty + "\nsecond\tline";
  r.device = "dev\x02ice";
  const std::string xml = report::to_junit_xml(r);
  CHECK(count_bytes(xml, [](unsigned char c) { return c < 0x20 && c != '\n' && c != '\t'; }) == 0);

  Element root;
  REQUIRE_NOTHROW(root = parse_xml(xml));
  const Element& testcase = *root.one("testsuite").all("testcase")[1];
  CHECK(testcase.attr("name") == "name with <angle> & \"quotes\"");
  const Element& failure = testcase.one("failure");
  const std::string expected_text = "a<b> & \"c\" 'd' ]]> \\x01red \xEF\xBF\xBD end\nsecond\tline";
  CHECK(failure.text == expected_text);
  // The message is the first line made plain: the control character is left out there.
  CHECK(failure.attr("message") == "a<b> & \"c\" 'd' ]]> red \xEF\xBF\xBD end");
  std::map<std::string, std::string> properties;
  for (const Element* p : root.one("testsuite").one("properties").all("property"))
    properties[p->attr("name")] = p->attr("value");
  CHECK(properties["device"] == "dev\\x02ice");
}

TEST_CASE("report junit keeps line ends inside attributes") {
  GradeReport r = single(child_grids());
  r.exercises[0].items[1].name = "two\nlines";
  const std::string xml = report::to_junit_xml(r);
  CHECK(contains(xml, "name=\"two&#10;lines\""));
  CHECK(parse_xml(xml).one("testsuite").all("testcase")[1]->attr("name") == "two\nlines");
}

TEST_CASE("report junit handles an empty report") {
  const Element root = parse_xml(report::to_junit_xml(base_report()));
  CHECK(root.name == "testsuites");
  CHECK(root.attr("tests") == "0");
  CHECK(root.children.empty());
}

TEST_CASE("report junit checker rejects broken XML") {
  // The checker above must be able to fail, or the tests that use it prove nothing.
  CHECK_THROWS(parse_xml("<a><b></a></b>"));
  CHECK_THROWS(parse_xml("<a x=\"1\" x=\"2\"/>"));
  CHECK_THROWS(parse_xml("<a>1 < 2</a>"));
  CHECK_THROWS(parse_xml("<a>&nbsp;</a>"));
  CHECK_THROWS(parse_xml("<a>\x01</a>"));
  CHECK_THROWS(parse_xml("<a>&#1;</a>"));
  CHECK_THROWS(parse_xml("<a x=1/>"));
  CHECK_THROWS(parse_xml("<a/><b/>"));
  CHECK_THROWS(parse_xml("<a>\xFF</a>"));
  CHECK_NOTHROW(parse_xml("<?xml version=\"1.0\"?>\n<a x='1'><b>&lt;&#10;&#x41;</b></a>\n"));
}

TEST_CASE("gradescope results say their visibility, top level and per test") {
  const json visible = report::to_gradescope(gpu_report());
  CHECK(visible.at("visibility") == "visible");
  const json hidden = report::to_gradescope(gpu_report(), "after_due_date");
  CHECK(hidden.at("visibility") == "after_due_date");
  REQUIRE_FALSE(hidden.at("tests").empty());
  for (const auto& test : hidden.at("tests")) CHECK(test.at("visibility") == "after_due_date");
}
