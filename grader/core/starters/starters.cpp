#include "starters/starters.h"

#include "files/files.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace cdplab::starters {
namespace {

namespace fs = std::filesystem;

std::string trim_left(const std::string& line) {
  const auto first = line.find_first_not_of(" \t");
  return first == std::string::npos ? std::string() : line.substr(first);
}

bool is_marker(const std::string& line, const std::string& marker) {
  std::string rest = trim_left(line);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t' || rest.back() == '\r')) rest.pop_back();
  return rest == marker;
}

/// The first line where two texts differ (1-based).
int first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  int line = 1;
  while (true) {
    const bool ga = static_cast<bool>(std::getline(sa, la));
    const bool gb = static_cast<bool>(std::getline(sb, lb));
    if (!ga && !gb) return line;
    if (ga != gb || la != lb) return line;
    ++line;
  }
}

}  // namespace

std::string generate(const std::string& solution_text, const std::string& name) {
  // Markers are comments of the file's language: `#` in TOML (quiz answers), `//` in C++.
  const std::string comment = fs::path(name).extension() == ".toml" ? "#" : "//";
  const std::string begin_marker = comment + " BEGIN SOLUTION";
  const std::string end_marker = comment + " END SOLUTION";
  const std::string starter_code = comment + "|";
  std::istringstream in(solution_text);
  std::ostringstream out;
  std::string line;
  int number = 0;
  int region_start = 0;
  while (std::getline(in, line)) {
    ++number;
    const auto where = [&](int n) { return name + ":" + std::to_string(n) + ": "; };
    if (is_marker(line, begin_marker)) {
      if (region_start != 0) throw std::runtime_error(where(number) + "BEGIN SOLUTION inside the region opened at line " + std::to_string(region_start));
      region_start = number;
      continue;
    }
    if (is_marker(line, end_marker)) {
      if (region_start == 0) throw std::runtime_error(where(number) + "END SOLUTION without BEGIN SOLUTION");
      region_start = 0;
      continue;
    }
    if (region_start != 0) continue;
    const auto indent = line.find_first_not_of(" \t");
    if (indent != std::string::npos && line.compare(indent, starter_code.size(), starter_code) == 0) {
      std::string code = line.substr(indent + starter_code.size());
      if (!code.empty() && code[0] == ' ') code.erase(0, 1);
      line = line.substr(0, indent) + code;
    }
    out << line << '\n';
  }
  if (region_start != 0)
    throw std::runtime_error(name + ":" + std::to_string(region_start) + ": BEGIN SOLUTION is never closed");
  return out.str();
}

std::vector<Pair> compare_all(const fs::path& project_root) {
  std::vector<Pair> pairs;
  const fs::path solutions = project_root / "solutions";
  if (!fs::is_directory(solutions)) return pairs;
  for (const auto& entry : fs::recursive_directory_iterator(solutions)) {
    const auto extension = entry.path().extension();
    if (!entry.is_regular_file() || (extension != ".cu" && extension != ".toml")) continue;
    Pair pair;
    pair.solution = entry.path();
    pair.starter = project_root / "chapters" / fs::relative(entry.path(), solutions);
    try {
      const std::string expected = generate(files::read_text(pair.solution), fs::relative(pair.solution, project_root).string());
      if (!fs::exists(pair.starter)) {
        pair.problem = "missing";
      } else {
        const std::string found = files::read_text(pair.starter);
        if (found == expected) pair.up_to_date = true;
        else pair.problem = "differs from the generated starter at line " + std::to_string(first_difference(found, expected));
      }
    } catch (const std::exception& error) {
      pair.problem = error.what();
    }
    pairs.push_back(pair);
  }
  std::sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.solution < b.solution; });
  return pairs;
}

std::vector<fs::path> write_all(const fs::path& project_root) {
  std::vector<fs::path> written;
  for (const auto& pair : compare_all(project_root)) {
    if (pair.up_to_date) continue;
    const std::string text = generate(files::read_text(pair.solution), pair.solution.string());  // throws on markers
    fs::create_directories(pair.starter.parent_path());
    std::ofstream(pair.starter, std::ios::binary) << text;
    written.push_back(pair.starter);
  }
  return written;
}

}  // namespace cdplab::starters
