/// @file bench.h
/// @brief What the chapter benchmarks share: the device line every result starts with, host
///        timing of whole calls (median of several runs), Markdown tables printed row by row,
///        and the frame of a benchmark's main() (command line errors, exit statuses).
///
/// A benchmark (grader/bench/NN-name.cu) times the host entry points of a chapter's exercises.
/// Those calls wait for the whole tree of grids they launch, so a host clock around the call
/// measures everything the GPU did for it, nested launches included.
#pragma once

#include "cdplab/check.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cdplab::bench {

/// Exit status of a benchmark that found no usable GPU (CTest's skip convention, as the suites).
constexpr int kNoGpuExitCode = 77;
/// Exit status of a benchmark given a command line it does not understand.
constexpr int kUsageExitCode = 2;

/// The GPU a benchmark runs on, and the CUDA versions it runs with.
struct DeviceLine {
  bool available = false;  ///< a device is present and the driver works
  std::string text;        ///< one line: name, compute capability, SMs, driver and runtime versions; or why no GPU
};

/// Formats a CUDA version number (12040) as "12.4".
inline std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

/// Describes device 0 in one line. Asks cudaGetDeviceCount first, so it is safe on a machine
/// without a GPU or driver: then `available` is false and `text` says why.
inline DeviceLine describe_device() {
  DeviceLine line;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    line.text = err != cudaSuccess ? std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err)
                                   : std::string("cudaGetDeviceCount found no device");
    return line;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    line.text = "cudaGetDeviceProperties failed for device 0";
    return line;
  }
  int driver = 0;
  int runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  line.available = true;
  line.text = std::string("device: ") + prop.name + ", compute capability " + std::to_string(prop.major) + "." +
              std::to_string(prop.minor) + ", " + std::to_string(prop.multiProcessorCount) + " SMs; CUDA driver " +
              cuda_version_text(driver) + ", runtime " + cuda_version_text(runtime);
  return line;
}

/// Prints the device line to stdout and returns true; without a usable GPU, says so on stderr
/// ("<program>: no usable CUDA GPU (why); this benchmark needs one: skipped") and returns false,
/// and the benchmark returns kNoGpuExitCode.
inline bool print_device_or_skip(const char* program) {
  const DeviceLine device = describe_device();
  if (!device.available) {
    std::fprintf(stderr, "%s: no usable CUDA GPU (%s); this benchmark needs one: skipped\n", program,
                 device.text.c_str());
    return false;
  }
  std::printf("%s\n", device.text.c_str());
  return true;
}

/// Milliseconds one call of `call` takes on the host's steady clock.
template <typename Call>
double time_ms(Call&& call) {
  const auto start = std::chrono::steady_clock::now();
  std::forward<Call>(call)();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(stop - start).count();
}

/// The times of repeated runs of one measurement.
class Samples {
 public:
  /// Records one run's time.
  void add(double ms) { values_.push_back(ms); }
  /// How many runs were recorded.
  std::size_t size() const { return values_.size(); }
  /// The median (the mean of the middle two for an even count); 0 when nothing was recorded.
  double median() const {
    if (values_.empty()) return 0.0;
    std::vector<double> sorted = values_;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t mid = sorted.size() / 2;
    return sorted.size() % 2 == 1 ? sorted[mid] : 0.5 * (sorted[mid - 1] + sorted[mid]);
  }

 private:
  std::vector<double> values_;
};

/// How many timed runs fit in `budget_ms` when one run takes about `one_run_ms` (the warm-up's
/// time, say): at least 1, at most `max_runs`. Keeps slow cells of a table from dominating.
inline int runs_within(double one_run_ms, double budget_ms, int max_runs) {
  if (max_runs < 1) return 1;
  if (!(one_run_ms > 0.0)) return max_runs;
  const double fit = budget_ms / one_run_ms;
  return fit >= max_runs ? max_runs : std::max(1, static_cast<int>(fit));
}

/// Milliseconds with three decimals ("12.345").
inline std::string format_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", ms);
  return text;
}

/// An integer with its digits in groups of three, separated by spaces ("100 000").
inline std::string format_count(long long value) {
  const bool negative = value < 0;
  std::string digits = std::to_string(negative ? -value : value);
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3) digits.insert(static_cast<std::size_t>(at), " ");
  return negative ? "-" + digits : digits;
}

/// A Markdown table printed as it fills: the header first, then each row when its results are
/// in, so a long benchmark shows progress. Every column but the first is right-aligned.
class MarkdownTable {
 public:
  /// A table with these column titles, printed to `out` (unbuffered stdout suits a benchmark).
  explicit MarkdownTable(std::vector<std::string> titles, std::FILE* out = stdout)
      : titles_(std::move(titles)), out_(out) {
    for (const auto& title : titles_) widths_.push_back(std::max<std::size_t>(title.size(), 3));
  }

  /// Prints the title row and the alignment row.
  void print_header() const {
    print_cells(titles_);
    std::string rule = "|";
    for (std::size_t c = 0; c < widths_.size(); ++c) {
      // As wide as the cells below: dashes, and a colon at the right for right alignment.
      rule += c == 0 ? " " + std::string(widths_[c], '-') + " |" : " " + std::string(widths_[c] - 1, '-') + ": |";
    }
    std::fprintf(out_, "%s\n", rule.c_str());
  }

  /// Prints one row; `cells` has one entry per column (missing ones are left blank).
  void print_row(const std::vector<std::string>& cells) const { print_cells(cells); }

 private:
  void print_cells(const std::vector<std::string>& cells) const {
    std::string row = "|";
    for (std::size_t c = 0; c < widths_.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : std::string();
      const std::string pad(cell.size() < widths_[c] ? widths_[c] - cell.size() : 0, ' ');
      row += " " + (c == 0 ? cell + pad : pad + cell) + " |";
    }
    std::fprintf(out_, "%s\n", row.c_str());
  }

  std::vector<std::string> titles_;
  std::vector<std::size_t> widths_;
  std::FILE* out_;
};

// ---------------------------------------------------------------------------------------------
// The command line and main()

/// A command line the benchmark does not understand: run_main prints the message and the usage
/// on stderr and returns kUsageExitCode.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// `text`, the value of `option`, as a whole number (all of it); else throws UsageError.
inline long long parse_integer(const std::string& option, const char* text) {
  try {
    std::size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == std::string(text).size()) return value;
  } catch (const std::exception&) {
  }
  throw UsageError(option + " needs a whole number, not '" + text + "'");
}

/// `text`, the value of `option`, as a comma-separated list of sizes ("1000,30000"), each between
/// 1 and `largest`, sorted; else throws UsageError naming `what` ("lines", "points").
inline std::vector<int> parse_sizes(const std::string& option, const std::string& text, long long largest,
                                    const std::string& what) {
  std::vector<int> sizes;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const long long value = parse_integer(option, text.substr(start, comma - start).c_str());
    if (value < 1 || value > largest)
      throw UsageError(option + " takes numbers of " + what + " between 1 and " + std::to_string(largest));
    sizes.push_back(static_cast<int>(value));
    start = comma + 1;
  }
  std::sort(sizes.begin(), sizes.end());
  return sizes;
}

/// `text`, the value of `option`, as a 64-bit seed (any whole number); else throws UsageError.
inline std::uint64_t parse_seed(const std::string& option, const char* text) {
  try {
    std::size_t used = 0;
    const unsigned long long value = std::stoull(text, &used);
    if (used > 0 && used == std::string(text).size()) return value;
  } catch (const std::exception&) {
  }
  throw UsageError(option + " needs a whole number, not '" + text + "'");
}

/// The body of a benchmark's main(): makes stdout unbuffered (rows appear as they are measured),
/// reads the command line with `parse(argc, argv)` into options that have a `help` flag, prints
/// `usage` when it is set and returns 0, else returns `run(options)`. What escapes becomes the
/// exit status: UsageError kUsageExitCode (message and usage on stderr), NotImplemented 1 (an
/// exercise still has a TODO on the path the benchmark took), any other exception 1.
template <typename Parse, typename Run>
int run_main(const char* program, const char* usage, int argc, char** argv, Parse&& parse, Run&& run) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  try {
    const auto options = parse(argc, argv);
    if (options.help) {
      std::printf("%s", usage);
      return 0;
    }
    return run(options);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: %s\n%s", program, e.what(), usage);
    return kUsageExitCode;
  } catch (const cdplab::NotImplemented& e) {
    std::fprintf(stderr, "\n%s: an exercise of this build is not finished: %s\n", program, e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\n%s: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace cdplab::bench
