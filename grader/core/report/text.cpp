#include "report/text.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace cdplab::report::text {

using grading::ExerciseResult;
using grading::GradeReport;
using grading::Item;
using grading::Outcome;

long next_code_point(std::string_view text, std::size_t& pos) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  if (lead < 0x80) {
    ++pos;
    return lead;
  }
  // The ranges of RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF.
  std::size_t length = 0;
  char32_t cp = 0;
  unsigned char second_min = 0x80;
  unsigned char second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    cp = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    cp = lead & 0x0Fu;
    if (lead == 0xE0) second_min = 0xA0;
    if (lead == 0xED) second_max = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    cp = lead & 0x07u;
    if (lead == 0xF0) second_min = 0x90;
    if (lead == 0xF4) second_max = 0x8F;
  } else {
    ++pos;
    return -1;
  }
  if (pos + length > text.size()) {
    ++pos;
    return -1;
  }
  for (std::size_t i = 1; i < length; ++i) {
    const unsigned char b = byte(pos + i);
    const unsigned char min = i == 1 ? second_min : 0x80;
    const unsigned char max = i == 1 ? second_max : 0xBF;
    if (b < min || b > max) {
      ++pos;
      return -1;
    }
    cp = (cp << 6) | (b & 0x3Fu);
  }
  pos += length;
  return static_cast<long>(cp);
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t start = pos;
    if (next_code_point(text, pos) < 0) out += kReplacement;
    else out.append(text, start, pos - start);
  }
  return out;
}

std::string strip_ansi(std::string_view text) {
  constexpr char kEsc = '\x1b';
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] != kEsc || i + 1 >= text.size()) {
      out += text[i++];
      continue;
    }
    const char kind = text[i + 1];
    if (kind == '[') {  // CSI: parameter and intermediate bytes, then one final byte
      std::size_t j = i + 2;
      while (j < text.size() && text[j] >= 0x20 && text[j] <= 0x3F) ++j;
      if (j < text.size() && text[j] >= 0x40 && text[j] <= 0x7E) {
        i = j + 1;
        continue;
      }
    } else if (kind == ']') {  // OSC (hyperlinks, titles): ends with BEL or ESC backslash
      std::size_t j = i + 2;
      while (j < text.size() && text[j] != '\a' &&
             !(text[j] == kEsc && j + 1 < text.size() && text[j + 1] == '\\'))
        ++j;
      if (j < text.size()) {
        i = j + (text[j] == '\a' ? 1 : 2);
        continue;
      }
    } else if (kind >= 0x40 && kind <= 0x5F) {  // a two-byte escape
      i += 2;
      continue;
    }
    out += text[i++];  // not a sequence: keep the ESC for the caller to deal with
  }
  return out;
}

std::string plain(std::string_view text) {
  const std::string clean = valid_utf8(strip_ansi(text));
  std::string out;
  out.reserve(clean.size());
  for (std::size_t pos = 0; pos < clean.size();) {
    const std::size_t start = pos;
    const long cp = next_code_point(clean, pos);
    if (cp == '\r') {
      // "\r\n" is one line end; a lone "\r" (progress output) starts a new line too.
      if (pos >= clean.size() || clean[pos] != '\n') out += '\n';
      continue;
    }
    const bool control = (cp < 0x20 && cp != '\t' && cp != '\n') || (cp >= 0x7F && cp <= 0x9F);
    if (!control) out.append(clean, start, pos - start);
  }
  return out;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      lines.emplace_back(text.substr(start));
      break;
    }
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string first_line(std::string_view text, std::size_t max_chars) {
  std::string line;
  for (const auto& candidate : split_lines(text)) {
    if (candidate.find_first_not_of(" \t") != std::string::npos) {
      line = candidate;
      break;
    }
  }
  std::size_t pos = 0;
  std::size_t chars = 0;
  while (pos < line.size() && chars < max_chars) {
    next_code_point(line, pos);
    ++chars;
  }
  if (pos < line.size()) return line.substr(0, pos) + "...";
  return line;
}

std::vector<std::string> wrap_lines(std::string_view text, std::size_t width, std::size_t hanging) {
  std::vector<std::string> out;
  for (const auto& line : split_lines(text)) {
    if (display_width(line) <= width) {
      out.push_back(line);
      continue;
    }
    const auto indent = line.find_first_not_of(' ');
    const std::string lead = line.substr(0, indent == std::string::npos ? 0 : indent);
    std::string start = lead;  // of the line being filled: the lead, then the lead and the hanging indent
    std::string current = start;
    std::istringstream words(line.substr(lead.size()));
    for (std::string word; words >> word;) {
      const bool first = current.size() == start.size();
      if (!first && display_width(current) + 1 + display_width(word) > width) {
        out.push_back(current);
        start = lead + std::string(hanging, ' ');
        current = start;
      }
      current += (current.size() == start.size() ? "" : " ") + word;
    }
    out.push_back(current);
  }
  return out;
}

std::size_t display_width(std::string_view text) {
  // East Asian wide characters (CJK, Hangul, full-width forms) take two columns.
  const auto wide = [](long cp) {
    return (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) || (cp >= 0xAC00 && cp <= 0xD7A3) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
           (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x20000 && cp <= 0x3FFFD);
  };
  std::size_t width = 0;
  for (std::size_t pos = 0; pos < text.size();) width += wide(next_code_point(text, pos)) ? 2 : 1;
  return width;
}

std::string format_points(double points) {
  double rounded = std::round(points * 100.0) / 100.0;
  if (rounded == 0.0) rounded = 0.0;  // no "-0"
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.2f", rounded);
  std::string out = buffer;
  if (out.find('.') != std::string::npos) {
    out.erase(out.find_last_not_of('0') + 1);
    if (out.back() == '.') out.pop_back();
  }
  return out;
}

std::string format_score(double points, double max_points) {
  return format_points(points) + "/" + format_points(max_points);
}

std::string percent(double points, double max_points) {
  if (max_points <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.0f %%", 100.0 * points / max_points);
  return text;
}

std::optional<double> score_share(const grading::GradeReport& report) {
  const double decided = report.decided_max_points();
  if (decided <= 0) return std::nullopt;
  return 100.0 * report.points() / decided;
}

std::string share_text(double percent) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %%", percent);
  return text;
}

std::string markdown_cell(std::string_view raw) {
  std::string out;
  for (const char c : plain(raw)) {
    if (c == '\n') out += ' ';
    else if (c == '|') out += "\\|";
    else out += c;
  }
  return out;
}

std::string item_label(const Item& item) {
  switch (item.kind) {
    case grading::ItemKind::rule: return "rule: " + item.name;
    case grading::ItemKind::question: return "question: " + item.name;
    case grading::ItemKind::check: break;
  }
  return item.name;
}

std::string exercise_path(const ExerciseResult& exercise) {
  if (exercise.file.empty()) return exercise.chapter.empty() ? exercise.id : exercise.chapter + "/" + exercise.id;
  const std::size_t slash = exercise.file.find_last_of('/');
  const std::size_t dot = exercise.file.find_last_of('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash + 1))
    return exercise.file.substr(0, dot);
  return exercise.file;
}

bool has_failure(const ExerciseResult& exercise) {
  if (!exercise.problem.empty()) return true;
  for (const auto& item : exercise.items)
    if (item.outcome == Outcome::failed) return true;
  return false;
}

std::vector<std::string> summary_lines(const GradeReport& report) {
  const int passed = report.count(Outcome::passed);
  const int failed = report.count(Outcome::failed);
  const int skipped = report.count(Outcome::skipped);
  std::vector<std::string> lines;
  lines.push_back("points: " + format_score(report.points(), report.max_points()) + " (" +
                  std::to_string(passed) + " passed, " + std::to_string(failed) + " failed, " +
                  std::to_string(skipped) + " skipped)");
  if (!report.ran_on.empty()) lines.push_back("ran on: " + plain(report.ran_on));
  if (!report.device.empty()) lines.push_back("device: " + plain(report.device));
  if (!report.gpu_problem.empty()) lines.push_back("no GPU: " + plain(report.gpu_problem));
  else if (report.device.empty()) lines.push_back("no GPU: none was found");
  lines.push_back("seed: " + std::to_string(report.seed));
  if (skipped > 0) {
    lines.push_back("grade incomplete: " + std::to_string(skipped) + " GPU " +
                    (skipped == 1 ? "check" : "checks") + " skipped");
  }
  return lines;
}

/// Whether XML 1.0 allows the character at all (even as a character reference).
bool xml_char(long cp) {
  return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) || (cp >= 0xE000 && cp <= 0xFFFD) ||
         (cp >= 0x10000 && cp <= 0x10FFFF);
}

/// Escapes text for element content or (with `attribute`) a double-quoted attribute value.
/// Colour codes are removed; characters XML forbids are written as visible text ("\x07");
/// bytes that are not UTF-8 become U+FFFD. In attributes, tab and line ends are character
/// references, so that a reader's attribute normalisation keeps them.
std::string markup_escape(std::string_view raw, bool attribute) {
  const std::string input = strip_ansi(raw);
  std::string out;
  out.reserve(input.size());
  for (std::size_t pos = 0; pos < input.size();) {
    const std::size_t start = pos;
    const long cp = next_code_point(input, pos);
    switch (cp) {
      case '&': out += "&amp;"; continue;
      case '<': out += "&lt;"; continue;
      case '>': out += "&gt;"; continue;
      case '"': out += "&quot;"; continue;
      case '\'': out += "&apos;"; continue;
      case '\r': out += "&#13;"; continue;
      case '\t': out += attribute ? "&#9;" : "\t"; continue;
      case '\n': out += attribute ? "&#10;" : "\n"; continue;
      default: break;
    }
    if (cp < 0) {
      out += kReplacement;
    } else if (!xml_char(cp)) {
      char visible[16];
      std::snprintf(visible, sizeof visible, cp < 0x100 ? "\\x%02lX" : "\\u%04lX", cp);
      out += visible;
    } else {
      out.append(input, start, pos - start);
    }
  }
  return out;
}

}  // namespace cdplab::report::text
