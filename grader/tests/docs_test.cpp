// The rendered documentation (<build>/docs/html, the 'docs' target): no page shows Markdown that
// Doxygen left as text (a table row with a '|' in a code span, bold that starts with a code span).
// Without Doxygen, or before the docs are built, it reports itself skipped.
#include "files/files.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

/// `html` without what is code (blocks, spans, signatures) and without tags: the text a reader
/// sees, one piece per line. (By hand, not std::regex: its matching recurses, and a page of the
/// API reference is long enough to exhaust the stack.)
std::string visible_text(const std::string& html) {
  static const std::vector<std::pair<std::string, std::string>> code = {
      {"<pre", "</pre>"}, {"<div class=\"fragment\">", "</div><!-- fragment -->"}, {"<code>", "</code>"},
      {"<tt>", "</tt>"}, {"<script", "</script>"}, {"<table class=\"memname\">", "</table>"}};
  std::string text;
  for (std::size_t at = 0; at < html.size();) {
    bool skipped = false;
    for (const auto& [open, close] : code) {
      if (html.compare(at, open.size(), open) != 0) continue;
      const auto end = html.find(close, at + open.size());
      at = end == std::string::npos ? html.size() : end + close.size();
      text += '\n';
      skipped = true;
      break;
    }
    if (skipped) continue;
    if (html[at] == '<') {  // a tag: a line break in the text
      const auto end = html.find('>', at);
      at = end == std::string::npos ? html.size() : end + 1;
      text += '\n';
      continue;
    }
    text += html[at++];
  }
  for (const auto& [entity, plain] : std::vector<std::pair<std::string, std::string>>{
           {"&lt;", "<"}, {"&gt;", ">"}, {"&#124;", "|"}, {"&quot;", "\""}, {"&amp;", "&"}}) {
    for (auto at = text.find(entity); at != std::string::npos; at = text.find(entity, at + plain.size()))
      text.replace(at, entity.size(), plain);
  }
  return text;
}

/// The lines of `text` that look like Markdown left unrendered.
std::vector<std::string> raw_markdown(const std::string& text) {
  static const std::vector<std::regex> signs = {
      std::regex(R"(^\s*\|.*\|.*\|\s*$)"),  // a table row as text
      std::regex(R"(\*\*[^*]+\*\*)"),     // bold left as asterisks
      std::regex(R"(```)"),                  // a code fence
      std::regex(R"(\]\([^)\s]+\))"),        // a link left as text
  };
  std::vector<std::string> found;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    for (const auto& sign : signs)
      if (std::regex_search(line, sign)) {
        found.push_back(line.substr(0, 160));
        break;
      }
    start = end + 1;
  }
  return found;
}

}  // namespace

TEST_CASE("docs: the detector finds Markdown left as text, and not rendered pages or code") {
  CHECK(raw_markdown(visible_text("<p>| <code>a||b</code> | c | d |</p>")).size() == 1);
  CHECK(raw_markdown(visible_text("<p>** is not in scope in .**</p>")).size() == 1);
  CHECK(raw_markdown(visible_text("<p>see [the guide](guide.md)</p>")).size() == 1);
  CHECK(raw_markdown(visible_text("<p><b>bold</b>, <code>**p</code>, a [note] (aside)</p>")).empty());
  CHECK(raw_markdown(visible_text("<div class=\"fragment\">| a | b |\n```x```</div><!-- fragment -->")).empty());
  CHECK(raw_markdown(visible_text("<table class=\"memname\"><td>char **</td><td>argv **x**</td></table>")).empty());
}

TEST_CASE("docs: no page of the rendered documentation shows raw Markdown") {
  const fs::path html = fs::path(CDPLAB_BINARY_DIR) / "docs" / "html";
  if (!fs::exists(html / "index.html")) {
    MESSAGE("CDPLAB_TEST_SKIPPED: " << html.string() << " has no pages (no Doxygen, or the docs target not built)");
    return;
  }
  std::size_t pages = 0;
  for (const auto& entry : fs::directory_iterator(html)) {
    if (entry.path().extension() != ".html") continue;
    ++pages;
    const auto found = raw_markdown(visible_text(cdplab::files::read_text(entry.path())));
    for (const auto& line : found) FAIL_CHECK(entry.path().filename().string() << ": " << line);
  }
  CHECK(pages > 10);
}
