/// @file text.h
/// @brief Text helpers shared by the report formats: safe UTF-8, colour codes removed,
///        lines, points and labels written the same way in every format.
///
/// Feedback can hold anything a compiler or a crashing program prints: colour escape
/// sequences, carriage returns, stray bytes that are not UTF-8. Every format cleans it with
/// these helpers before writing it, so a report is always readable and always well-formed.
#pragma once

#include "results/results.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cdplab::report::text {

/// The replacement character U+FFFD, written in UTF-8.
inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

/// Decodes the UTF-8 code point that starts at `pos` and moves `pos` past it. A byte that does
/// not start a valid sequence (overlong, surrogate, beyond U+10FFFF, cut short) yields -1 and
/// moves `pos` by one byte.
long next_code_point(std::string_view text, std::size_t& pos);

/// Appends code point `cp` to `out` in UTF-8.
void append_utf8(std::string& out, char32_t cp);

/// `text` with every byte that is not part of valid UTF-8 replaced by U+FFFD.
std::string valid_utf8(std::string_view text);

/// `text` without ANSI escape sequences (colours, cursor moves, OSC hyperlinks such as the
/// ones GCC prints). A lone ESC that starts no sequence is kept.
std::string strip_ansi(std::string_view text);

/// Clean text for a terminal or a plain-text field: ANSI sequences removed, invalid UTF-8
/// replaced, "\r\n" turned into "\n", other control characters except tab and newline removed.
std::string plain(std::string_view text);

/// The lines of `text`; a final newline does not start an empty last line.
std::vector<std::string> split_lines(std::string_view text);

/// The first line of `text`, cut to at most `max_chars` code points ("..." marks a cut).
std::string first_line(std::string_view text, std::size_t max_chars);

/// The lines of `text`, each cut at spaces into pieces of at most `width` columns, keeping each
/// line's leading spaces on its pieces and `hanging` more on all but its first (a word longer
/// than `width` stays whole).
std::vector<std::string> wrap_lines(std::string_view text, std::size_t width, std::size_t hanging = 0);

/// Columns a string takes in a terminal: one per code point, two for an East Asian wide one.
std::size_t display_width(std::string_view text);

/// Points without needless decimals: "3", "2.5", "0.33" (at most two decimals).
std::string format_points(double points);

/// "3/5": points awarded against points possible.
std::string format_score(double points, double max_points);

/// "60 %": points against points possible, rounded to a whole percent; "-" when nothing was possible.
std::string percent(double points, double max_points);

/// A student's score as every report gives it (feedback pages, class summary): the share of the
/// points decided, in percent (a skipped item is not a lost one); std::nullopt when nothing was
/// decided.
std::optional<double> score_share(const grading::GradeReport& report);

/// "62.5 %": a score_share as the reports write it.
std::string share_text(double percent);

/// Text for a Markdown table cell: clean (plain), one line, its '|' escaped.
std::string markdown_cell(std::string_view raw);

/// How an item is named in every report: the check's name, or "rule: " and the rule.
std::string item_label(const grading::Item& item);

/// "01-fundamentals/child_grids": the exercise's file without its extension (falls back to
/// "chapter/id" when the file is not known).
std::string exercise_path(const grading::ExerciseResult& exercise);

/// Whether something in the exercise failed: a problem, or a failed item (skipped is not failed).
bool has_failure(const grading::ExerciseResult& exercise);

/// The closing lines of a report: points, item counts, device and seed, or the reason GPU
/// checks were skipped and how many ("grade incomplete: 2 GPU checks skipped").
std::vector<std::string> summary_lines(const grading::GradeReport& report);

/// Escapes text for XML or HTML: element content, or with `attribute` a double-quoted attribute
/// value. Colour codes are removed; characters XML forbids are written as visible text ("\x07");
/// bytes that are not UTF-8 become U+FFFD; in attributes, tab and line ends are character references.
std::string markup_escape(std::string_view raw, bool attribute = false);

}  // namespace cdplab::report::text
