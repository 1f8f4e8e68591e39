// The slide map (docs/slide-map.md) against the chapter manifests: every exercise and page it
// names exists, every course title a manifest cites has a row, and no row is left unexplained.
#include "files/files.h"
#include "manifest/manifest.h"

#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kSourceDir = CDPLAB_SOURCE_DIR;
const std::string kMapName = "docs/slide-map.md";

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

std::string read_text(const fs::path& file) {
  std::string text = cdplab::files::read_text(file);
  REQUIRE_MESSAGE(!text.empty(), "cannot read ", file.string());
  return text;
}

/// One data row of a table of the slide map, with its line number for messages.
struct MapRow {
  int line = 0;
  std::vector<std::string> cells;  ///< trimmed; a well-formed row has four

  std::string cell(std::size_t i) const { return i < cells.size() ? cells[i] : ""; }
  /// The course document's file name, without the backticks around it.
  std::string document() const {
    std::string name = cell(0);
    if (name.size() >= 2 && name.front() == '`' && name.back() == '`') name = name.substr(1, name.size() - 2);
    return name;
  }
  std::string title() const { return cell(1); }
  std::string covered_by() const { return cell(2); }
  std::string note() const { return cell(3); }
  std::string where() const { return kMapName + ":" + std::to_string(line) + ": "; }
};

/// The cells of a Markdown table line "| a | b |" (the page puts no "|" inside a cell).
std::vector<std::string> split_cells(const std::string& line) {
  std::string inner = trim(line);
  if (!inner.empty() && inner.front() == '|') inner.erase(0, 1);
  if (!inner.empty() && inner.back() == '|') inner.pop_back();
  std::vector<std::string> cells;
  std::istringstream in(inner);
  for (std::string cell; std::getline(in, cell, '|');) cells.push_back(trim(cell));
  return cells;
}

/// The data rows of every table in `markdown`: header rows ("document | ...") and the
/// "--- | ---" separator rows are skipped.
std::vector<MapRow> table_rows(const std::string& markdown) {
  static const std::regex separator(R"(^\s*:?-{3,}:?\s*$)");
  std::vector<MapRow> rows;
  std::istringstream in(markdown);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (trim(line).rfind('|', 0) != 0) continue;
    MapRow row{number, split_cells(line)};
    if (row.cell(0) == "document" || std::regex_match(row.cell(0), separator)) continue;
    rows.push_back(row);
  }
  return rows;
}

std::vector<MapRow> slide_map_rows() { return table_rows(read_text(kSourceDir / kMapName)); }

/// What a "covered by" cell names: exercises (`chapter/exercise`) and pages (@ref anchor), and
/// whatever else is in it besides commas and blanks.
struct Coverage {
  std::vector<std::string> exercises;
  std::vector<std::string> pages;
  std::string other;
};

Coverage parse_covered_by(const std::string& cell) {
  static const std::regex item(R"re(`([^`]*)`|@ref\s+(\w+)(\s+"[^"]*")?)re");
  Coverage found;
  std::string rest;
  std::string::const_iterator tail = cell.begin();
  for (std::sregex_iterator it(cell.begin(), cell.end(), item), end; it != end; ++it) {
    rest += it->prefix().str();
    if ((*it)[1].matched) found.exercises.push_back((*it)[1].str());
    else found.pages.push_back((*it)[2].str());
    tail = (*it)[0].second;
  }
  rest.append(tail, cell.end());
  for (char c : rest)
    if (c != ',' && c != ' ') found.other += c;
  return found;
}

/// A "covered by" cell is a list of exercises and pages, or exactly "left out".
bool is_left_out(const std::string& cell) { return cell == "left out"; }

/// A course document's file name: three digits, an underscore, 16 hex digits.
std::string file_name_in(const std::string& text) {
  static const std::regex name(R"(\b\d{3}_[0-9a-f]{16}\.txt\b)");
  std::smatch match;
  return std::regex_search(text, match, name) ? match.str() : "";
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

/// How the workbook cites each course document, from the slide map's section headings
/// "## <file name>: <citation>": citation (lower case) -> file name.
std::map<std::string, std::string> citations_of(const std::string& markdown) {
  static const std::regex heading(R"(^## (\d{3}_[0-9a-f]{16}\.txt): (.+)$)");
  std::map<std::string, std::string> out;
  std::istringstream in(markdown);
  for (std::string line; std::getline(in, line);) {
    std::smatch match;
    if (std::regex_match(line, match, heading)) out[lower(trim(match[2].str()))] = match[1].str();
  }
  return out;
}

/// The document a manifest citation names by its title ("Conference talk \"Introduction to
/// Dynamic Parallelism\", slide ..."): its file name, and the rest of the citation after the
/// document's name; an empty file name when the citation starts with no document's citation.
std::pair<std::string, std::string> cited_document(const std::string& text,
                                                   const std::map<std::string, std::string>& citations) {
  const std::string lowered = lower(text);
  for (const auto& [citation, file] : citations)
    if (lowered.rfind(citation, 0) == 0) return {file, text.substr(citation.size())};
  return {"", text};
}

/// The titles the rest of a manifest citation (after the document's name) quotes, such as
///   , slides "Familiar Syntax" and "Nested Dependencies" (with "remarks" in brackets)
/// Quotes inside a bracketed remark are remarks, not titles. A title that the citation shortens
/// with "..." or ends with a full stop is returned without them.
std::vector<std::string> cited_titles(const std::string& text) {
  std::vector<std::string> titles;
  int depth = 0;  // of brackets outside quotes
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '(') ++depth;
    else if (c == ')' && depth > 0) --depth;
    else if (c == '"') {
      const auto close = text.find('"', i + 1);
      if (close == std::string::npos) break;
      std::string title = trim(text.substr(i + 1, close - i - 1));
      while (!title.empty() && title.back() == '.') title.pop_back();
      if (depth == 0 && !title.empty()) titles.push_back(trim(title));
      i = close;
    }
  }
  return titles;
}

/// A note that gives a reason: a few words, not a placeholder.
bool gives_reason(const std::string& note) {
  std::istringstream words(note);
  int count = 0;
  for (std::string word; words >> word;) ++count;
  return count >= 3;
}

/// The anchors ({#name}) of the documentation's pages: docs/*.md and the chapter lessons.
std::set<std::string> page_anchors() {
  static const std::regex anchor(R"(\{#(\w+)\})");
  std::vector<fs::path> pages;
  for (const auto& entry : fs::directory_iterator(kSourceDir / "docs"))
    if (entry.path().extension() == ".md") pages.push_back(entry.path());
  for (const auto& entry : fs::directory_iterator(kSourceDir / "chapters"))
    if (fs::exists(entry.path() / "README.md")) pages.push_back(entry.path() / "README.md");
  std::set<std::string> anchors;
  for (const auto& page : pages) {
    const std::string text = read_text(page);
    for (std::sregex_iterator it(text.begin(), text.end(), anchor), end; it != end; ++it)
      anchors.insert((*it)[1].str());
  }
  return anchors;
}

/// "02-bezier/scaled-tessellation": an exercise of the workbook, named by chapter and id.
bool exercise_exists(const cdplab::manifest::Workbook& workbook, const std::string& name) {
  const auto slash = name.find('/');
  if (slash == std::string::npos) return false;
  for (const auto& chapter : workbook.chapters) {
    if (chapter.id != name.substr(0, slash)) continue;
    for (const auto& exercise : chapter.exercises)
      if (exercise.id == name.substr(slash + 1)) return true;
  }
  return false;
}

bool row_names_exercise(const MapRow& row, const std::string& name) {
  for (const auto& e : parse_covered_by(row.covered_by()).exercises)
    if (e == name) return true;
  return false;
}

}  // namespace

TEST_CASE("slide map parser reads cells, coverage and citations") {
  const auto rows = table_rows(
      "# Title\n"
      "| document | section, slide or figure | covered by | note |\n"
      "| --- | --- | --- | --- |\n"
      "| `001_a1791196fd2fdb33.txt` | Quadtrees | `03-quadtree/quadtree-build`, @ref ch03 \"lesson, part 2\" | x |\n"
      "| `002_82ec24aabbf83d70.txt` | only three | left out |\n"
      "Text | with a bar, not a row\n");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].line == 4);
  CHECK(rows[0].document() == "001_a1791196fd2fdb33.txt");
  CHECK(rows[1].cells.size() == 3);

  const auto good = parse_covered_by(rows[0].covered_by());
  CHECK(good.exercises == std::vector<std::string>{"03-quadtree/quadtree-build"});
  CHECK(good.pages == std::vector<std::string>{"ch03"});
  CHECK(good.other.empty());
  CHECK(parse_covered_by("see chapter 03").other == "seechapter03");
  CHECK(parse_covered_by("left out").exercises.empty());

  const auto citations = citations_of("## 001_a1791196fd2fdb33.txt: lecture slides \"CSc 8530\"\n"
                                      "## Not a document\n");
  REQUIRE(citations.size() == 1);
  const std::string citation =
      "Lecture slides \"CSc 8530\", slides \"Other considerations\" (nesting levels, \"24\") and "
      "\"Quadtree example. Each block...\", figure \"A (B) C.\"";
  const auto cited = cited_document(citation, citations);
  const std::string& document = cited.first;
  const std::string& rest = cited.second;
  CHECK(document == "001_a1791196fd2fdb33.txt");
  CHECK(cited_titles(rest) ==
        std::vector<std::string>{"Other considerations", "Quadtree example. Each block", "A (B) C"});
  CHECK(cited_document("Beyond the course material", citations).first.empty());

  CHECK_FALSE(gives_reason("-"));
  CHECK(gives_reason("Title slide: course name."));
}

TEST_CASE("slide map rows have four cells and cover or explain") {
  const auto rows = slide_map_rows();
  REQUIRE_MESSAGE(rows.size() >= 50, kMapName, " holds only ", rows.size(), " table rows");
  for (const auto& row : rows) {
    CHECK_MESSAGE(row.cells.size() == 4, row.where(), "a row has four cells, this one ", row.cells.size());
    if (row.cells.size() != 4) continue;
    for (const auto& cell : row.cells) CHECK_MESSAGE(!cell.empty(), row.where(), "a row has no empty cell");
    CHECK_MESSAGE(file_name_in(row.document()) == row.document(), row.where(),
                  "the first cell is a course file name, not \"", row.document(), "\"");
    const auto coverage = parse_covered_by(row.covered_by());
    if (is_left_out(row.covered_by())) {
      CHECK_MESSAGE(gives_reason(row.note()), row.where(), "a row left out says why in its note");
    } else {
      CHECK_MESSAGE(coverage.exercises.size() + coverage.pages.size() > 0, row.where(),
                    "\"covered by\" names an exercise or a page, or says \"left out\"");
      CHECK_MESSAGE(coverage.other.empty(), row.where(), "\"covered by\" holds only `chapter/exercise` and ",
                    "@ref items separated by commas; found \"", coverage.other, "\"");
    }
  }
}

TEST_CASE("slide map names only exercises and pages that exist") {
  const auto workbook = cdplab::manifest::load_workbook(kSourceDir);
  const auto anchors = page_anchors();
  REQUIRE(anchors.count("slide_map") == 1);
  static const std::regex exercise_like(R"(`(\d\d-[^`/ ]+/[^`]+)`)");
  for (const auto& row : slide_map_rows()) {
    const auto coverage = parse_covered_by(row.covered_by());
    for (const auto& name : coverage.exercises)
      CHECK_MESSAGE(exercise_exists(workbook, name), row.where(), "no exercise `", name,
                    "` in the chapter manifests (write chapter/exercise, e.g. 02-bezier/cdp-tessellation)");
    for (const auto& page : coverage.pages)
      CHECK_MESSAGE(anchors.count(page) == 1, row.where(), "no page with the anchor {#", page, "}");
    // An exercise the note mentions must exist too.
    const std::string note = row.note();
    for (std::sregex_iterator it(note.begin(), note.end(), exercise_like), end; it != end; ++it)
      CHECK_MESSAGE(exercise_exists(workbook, (*it)[1].str()), row.where(), "the note names `", (*it)[1].str(),
                    "`, which is no exercise of the chapter manifests");
  }
}

TEST_CASE("slide map has the course titles every manifest cites") {
  const auto rows = slide_map_rows();
  const auto citations_by_title = citations_of(read_text(kSourceDir / kMapName));
  REQUIRE_MESSAGE(citations_by_title.size() == 5, kMapName, " names ", citations_by_title.size(),
                  " course documents in headings \"## <file name>: <citation>\"");
  const auto workbook = cdplab::manifest::load_workbook(kSourceDir);
  int citations = 0;
  for (const auto* exercise : workbook.exercises()) {
    const std::string name = exercise->chapter + "/" + exercise->id;
    for (const auto& citation : exercise->course) {
      CAPTURE(citation);
      // A student holds the book or the slides, not our copy's file name.
      CHECK_MESSAGE(file_name_in(citation).empty(), name, " cites a course document by its file name; cite it as ",
                    kMapName, "'s heading of that document does");
      const auto cited = cited_document(citation, citations_by_title);
      const std::string& document = cited.first;
      const std::string& rest = cited.second;
      if (document.empty()) continue;  // "Beyond the course material: ..."
      ++citations;
      std::vector<const MapRow*> of_document;
      for (const auto& row : rows)
        if (row.document() == document) of_document.push_back(&row);
      CHECK_MESSAGE(!of_document.empty(), name, " cites ", document, ", which has no rows in ", kMapName);

      bool named_in_document = false;
      for (const auto* row : of_document) named_in_document = named_in_document || row_names_exercise(*row, name);
      CHECK_MESSAGE(named_in_document, name, " cites ", document, ", but no row of it in ", kMapName,
                    " names ", name, " under \"covered by\"");

      for (const auto& title : cited_titles(rest)) {
        bool found = false, names_exercise = false;
        for (const auto* row : of_document) {
          if (row->title().find(title) == std::string::npos) continue;
          found = true;
          names_exercise = names_exercise || row_names_exercise(*row, name);
        }
        CHECK_MESSAGE(found, name, " cites \"", title, "\" of ", document, ": no row of ", kMapName,
                      " has that title");
        CHECK_MESSAGE((!found || names_exercise), name, " cites \"", title, "\" of ", document,
                      ", but no row with that title names ", name, " under \"covered by\"");
      }
    }
  }
  CHECK_MESSAGE(citations > 0, "no manifest cites a course document");
}
