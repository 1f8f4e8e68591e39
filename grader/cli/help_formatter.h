/// @file help_formatter.h
/// @brief `cdplab --help` wrapped to the terminal: CLI11 writes each description on one line,
///        however long; this formatter cuts it at spaces, continuing under the description column.
#pragma once

#include "report/report.h"
#include "report/text.h"

#include <CLI/CLI.hpp>

#include <sstream>
#include <string>

namespace cdplab::cli {

class WrappingFormatter : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
    const std::size_t width = report::terminal_width();
    const std::size_t column = get_column_width();
    std::istringstream in(CLI::Formatter::make_help(app, std::move(name), mode));
    std::string out;
    for (std::string line; std::getline(in, line);) {
      // An option's or a command's line: its name, then its description from `column` on.
      const bool described = line.size() > column && line[column - 1] == ' ' && line[column] != ' ' &&
                             line.rfind("  ", 0) == 0;
      if (report::text::display_width(line) <= width) {
        out += line + "\n";
      } else if (described && width > column + 20) {
        const auto pieces = report::text::wrap_lines(line.substr(column), width - column);
        out += line.substr(0, column) + pieces.front() + "\n";
        for (std::size_t i = 1; i < pieces.size(); ++i) out += std::string(column, ' ') + pieces[i] + "\n";
      } else {
        for (const auto& piece : report::text::wrap_lines(line, width, 2)) out += piece + "\n";
      }
    }
    return out;
  }
};

}  // namespace cdplab::cli
