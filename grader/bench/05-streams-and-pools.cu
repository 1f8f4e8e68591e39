// Benchmark of chapter 05 (streams and pools): what one device-side launch costs in each kind of
// stream, what aggregating launches (one per warp, one per block) saves, where the pending launch
// pool ends, and the chapter's two quicksorts against CUB's radix sort and std::sort.
//
// Usage: bench-05-streams-and-pools [--quick] [--sort-only] [--seed S]
//
// Prints the device, then one Markdown table per measurement, each followed by footnotes on what
// was timed and, where an exercise produced data, whether it matched the CPU. Exit status: 0 when
// every output matched, 1 on an error or a wrong output, 2 on a wrong command line, 77 when there
// is no GPU.
#include "cdplab/bench.h"
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/gpu_timer.h"
#include "cdplab/random.h"
#include "cdplab/streams.h"

#include "../probe/launch_kernels.cuh"
#include "../suites/05-streams-and-pools/support/radix_sort.h"


#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

namespace bench = cdplab::bench;
namespace probe = cdplab::probe;
namespace st = cdplab::streams;
using bench::UsageError;
using probe::StreamKind;
using cdplab::support::streams::CubRadixSort;

const char* const kProgram = "bench-05-streams-and-pools";

const char* const kUsage =
    "usage: bench-05-streams-and-pools [--quick] [--sort-only] [--seed S]\n"
    "  --quick      a reduced set in a few seconds: fewer runs, 10 000 items for the aggregation,\n"
    "               N = 2048, 2049, 4096 for the pool, 1 and 10 million ints for the sorts (the\n"
    "               simple quicksort at 1 million only); else 1, 10 and 100 million ints\n"
    "  --sort-only  only the sorting tables (3)\n"
    "  --seed S     seed of the generated items and ints (default 2026)\n"
    "Measures launch costs per stream kind, launch aggregation (the exercise's expand_items), the\n"
    "pending launch pool with held children, and the exercises' quicksorts against CUB's radix sort\n"
    "and std::sort.\n";

// 1a: tiny children timed with CUDA events.
constexpr unsigned kChildThreads = 32;  // every child of 1a and 2 is one block of 32 threads
constexpr int kSerialChildren = 1000;   // one parent thread launching children in a loop
constexpr int kFullWarmups = 2;
constexpr int kFullRuns = 7;
constexpr int kQuickWarmups = 1;
constexpr int kQuickRuns = 3;

// 1b: the exercise's expand_items.
constexpr unsigned kFullItems = 100000;
constexpr unsigned kQuickItems = 10000;
constexpr unsigned kParentThreads = 256;  // expand_items' parent block, as streams.h states
constexpr unsigned kWarpSize = 32;

// 2: the pool cliff.
constexpr unsigned kCliffParentThreads = 256;
constexpr unsigned long long kHoldCapNs = 250'000'000;  // a held child waits at most 0.25 s

// 1b and 3: launches beyond the per-thread aggregation's one child per item.
constexpr std::size_t kPendingHeadroom = 2048;

constexpr double kCellBudgetMs = 3000.0;  // host-timed runs of one cell stop after about this

// Each phase is stopped (the process exits with status 1) after this many seconds.
constexpr unsigned kLaunchPhaseSeconds = 60;
constexpr unsigned kAggregationPhaseSeconds = 120;
constexpr unsigned kPoolPhaseSeconds = 60;
constexpr unsigned kSortPhaseSeconds = 240;

struct Options {
  bool help = false;
  bool quick = false;
  bool sort_only = false;
  std::uint64_t seed = 2026;
};

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      options.help = true;
    } else if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--sort-only") {
      options.sort_only = true;
    } else if (arg == "--seed") {
      if (i + 1 >= argc) throw UsageError("--seed needs a value");
      options.seed = bench::parse_seed(arg, argv[++i]);
    } else {
      throw UsageError("unknown argument '" + arg + "'");
    }
  }
  return options;
}

// ---------------------------------------------------------------------------------------------
// A deadline per phase: the host cannot cancel a grid that never ends, but it can end the process.

char g_deadline_message[256];
std::size_t g_deadline_length = 0;

void on_deadline(int /*signal*/) {
  // Only async-signal-safe calls here: write the prepared message, then leave.
  const ssize_t written = write(STDERR_FILENO, g_deadline_message, g_deadline_length);
  (void)written;
  _exit(1);
}

/// Ends the process with status 1 and a message naming the phase when the phase is still running
/// after `seconds` (SIGALRM); disarmed when it goes out of scope.
class PhaseDeadline {
 public:
  PhaseDeadline(const char* phase, unsigned seconds) {
    const int length = std::snprintf(g_deadline_message, sizeof g_deadline_message,
                                     "\n%s: %s did not finish within %u s; stopped (a grid may never end)\n",
                                     kProgram, phase, seconds);
    g_deadline_length = length < 0 ? 0 : std::min(sizeof g_deadline_message - 1, static_cast<std::size_t>(length));
    struct sigaction action {};
    action.sa_handler = on_deadline;
    sigemptyset(&action.sa_mask);
    sigaction(SIGALRM, &action, nullptr);
    alarm(seconds);
  }
  ~PhaseDeadline() { alarm(0); }
  PhaseDeadline(const PhaseDeadline&) = delete;
  PhaseDeadline& operator=(const PhaseDeadline&) = delete;
};

// ---------------------------------------------------------------------------------------------
// Small helpers

std::size_t pool_limit() {
  std::size_t value = 0;
  CDPLAB_CHECK(cudaDeviceGetLimit(&value, cudaLimitDevRuntimePendingLaunchCount));
  return value;
}

/// Sets the pending launch pool (the device must be idle) and returns what the device reports.
std::size_t set_pool_limit(std::size_t launches) {
  CDPLAB_CHECK(cudaDeviceSynchronize());
  CDPLAB_CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, launches));
  return pool_limit();
}

/// "12.34" (two decimals).
std::string fixed_text(double value, int decimals = 2) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

/// How many per second, with a unit: "142.9 k", "3.21 M".
std::string per_second_text(double count, double ms) {
  if (!(ms > 0.0)) return "-";
  const double rate = count / (ms * 1e-3);
  char text[48];
  if (rate >= 1e9) {
    std::snprintf(text, sizeof text, "%.2f G", rate / 1e9);
  } else if (rate >= 1e6) {
    std::snprintf(text, sizeof text, "%.2f M", rate / 1e6);
  } else if (rate >= 1e3) {
    std::snprintf(text, sizeof text, "%.1f k", rate / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.0f", rate);
  }
  return text;
}

std::string count_text(std::size_t value) { return bench::format_count(static_cast<long long>(value)); }

/// A host-timed cell: the median time and how many timed runs it took.
struct Cell {
  double ms = 0.0;
  int runs = 0;
};

/// One untimed warm-up call of `run` (when `warm_up`), then up to `max_runs` timed calls, fewer
/// when the first one is slow (kCellBudgetMs); an untimed `prepare()` before every call.
template <typename Prepare, typename Run>
Cell measure_host(int max_runs, bool warm_up, Prepare&& prepare, Run&& run) {
  if (warm_up) {
    prepare();
    run();
  }
  bench::Samples times;
  prepare();
  times.add(bench::time_ms(run));
  Cell cell;
  cell.runs = bench::runs_within(times.median(), kCellBudgetMs, max_runs);
  for (int r = 1; r < cell.runs; ++r) {
    prepare();
    times.add(bench::time_ms(run));
  }
  cell.ms = times.median();
  return cell;
}

void nothing_to_prepare() {}

/// A cell's time, with "[k]" when only k of `max_runs` timed runs fitted the budget.
std::string cell_text(const Cell& cell, int max_runs, int& fewer_runs) {
  std::string text = bench::format_ms(cell.ms);
  if (cell.runs < max_runs) {
    text += " [" + std::to_string(cell.runs) + "]";
    ++fewer_runs;
  }
  return text;
}

// ---------------------------------------------------------------------------------------------
// 1a. Launch cost per child: tiny children, timed with CUDA events around the parent grid

/// One row of table 1a: a parent grid shape and where its threads launch.
struct LaunchCase {
  const char* label;
  StreamKind kind;
  unsigned blocks;
  unsigned threads;
  bool serial;  ///< one thread launches kSerialChildren children in a loop (NULL stream)
};

const LaunchCase kLaunchCases[] = {
    {"serial: one thread, a loop, NULL stream", StreamKind::kNull, 1, 1, true},
    {"per thread, NULL stream", StreamKind::kNull, 1, 1024, false},
    {"per thread, NULL stream", StreamKind::kNull, 8, 128, false},
    {"per thread, named stream (create, launch, destroy)", StreamKind::kNamed, 1, 1024, false},
    {"per thread, named stream (create, launch, destroy)", StreamKind::kNamed, 8, 128, false},
    {"per thread, fire-and-forget", StreamKind::kFireAndForget, 1, 1024, false},
    {"per thread, fire-and-forget", StreamKind::kFireAndForget, 8, 128, false},
    {"per thread, tail launch", StreamKind::kTail, 1, 1024, false},
    {"per thread, tail launch", StreamKind::kTail, 8, 128, false},
};

std::string shape_text(unsigned blocks, unsigned threads) {
  return std::to_string(blocks) + " x " + std::to_string(threads);
}

/// Prints table 1a; returns false when a launch failed (the row then shows how).
bool run_launch_costs(const Options& options) {
  const PhaseDeadline deadline("1a (launch costs)", kLaunchPhaseSeconds);
  const int warmups = options.quick ? kQuickWarmups : kFullWarmups;
  const int runs = options.quick ? kQuickRuns : kFullRuns;

  std::printf("\n## 1. Launch cost per child\n\n### 1a. Tiny children, timed on the GPU\n\n");
  const bench::MarkdownTable table({"launches", "parent grid", "children", "GPU ms (1)", "us per child (2)",
                                    "children/s (3)", "failed launches (4)"});
  table.print_header();

  cdplab::DeviceArray<int> codes(probe::kCodeSlots);
  std::vector<std::string> failures;
  for (const LaunchCase& c : kLaunchCases) {
    CDPLAB_CHECK(cudaMemset(codes.data(), 0, codes.size() * sizeof(int)));
    const int children = c.serial ? kSerialChildren : static_cast<int>(c.blocks * c.threads);
    const double ms = probe::median_parent_ms(
        [&] {
          if (c.serial) {
            probe::serial_parent<<<c.blocks, c.threads>>>(kSerialChildren, kChildThreads, codes.data());
          } else {
            probe::fan_parent<<<c.blocks, c.threads>>>(c.kind, kChildThreads, codes.data());
          }
        },
        warmups, runs);
    const std::vector<int> histogram = codes.download();
    const long long attempted = static_cast<long long>(children) * (warmups + runs);
    const long long failed = attempted - histogram[cudaSuccess];
    if (failed != 0)
      failures.push_back(std::string(c.label) + ", " + shape_text(c.blocks, c.threads) + ": " +
                         probe::histogram_text(histogram.data(), true));
    table.print_row({c.label, shape_text(c.blocks, c.threads), bench::format_count(children), bench::format_ms(ms),
                     fixed_text(ms * 1e3 / children), per_second_text(children, ms),
                     bench::format_count(failed) + " of " + bench::format_count(attempted)});
  }

  // The parent grids alone, for the footnote (not subtracted).
  const auto idle_ms = [&](unsigned blocks, unsigned threads) {
    return probe::median_parent_ms([&] { probe::idle_parent<<<blocks, threads>>>(); }, warmups, runs);
  };
  const double idle_one = idle_ms(1, 1);
  const double idle_block = idle_ms(1, 1024);
  const double idle_blocks = idle_ms(8, 128);

  std::printf(
      "\nEvery child is an empty kernel launched as <<<1, %u>>>; the pending launch pool holds %s launches.\n"
      "(1) CUDA events recorded in the default stream around the host launch of the parent grid: the time\n"
      "    covers the parent grid and every child it launched. Nothing is subtracted: the parent grid's own\n"
      "    time is in it (an empty parent grid takes %s ms as 1 x 1, %s ms as 1 x 1024, %s ms as 8 x 128).\n"
      "    Median of %d timed runs after %d warm-up runs.\n"
      "(2) (1) divided by the children, in microseconds: the cost of one launch, the child's run included.\n"
      "(3) children divided by (1).\n"
      "(4) launches whose cudaGetLastError() was not cudaSuccess, over every run (warm-ups included); a\n"
      "    named stream that could not be created counts as a failed launch.\n"
      "- The NULL stream is one stream per block: the launches of one block run one after another, those of\n"
      "  different blocks side by side. A named stream's time includes its creation and destruction. A tail\n"
      "  launch runs after the parent grid has finished.\n",
      kChildThreads, count_text(pool_limit()).c_str(), bench::format_ms(idle_one).c_str(),
      bench::format_ms(idle_block).c_str(), bench::format_ms(idle_blocks).c_str(), runs, warmups);
  if (failures.empty()) {
    std::printf("- every launch succeeded.\n");
  } else {
    std::printf("- FAILED LAUNCHES:\n");
    for (const auto& f : failures) std::printf("  - %s\n", f.c_str());
  }
  return failures.empty();
}

// ---------------------------------------------------------------------------------------------
// 1b. Aggregated launches: the exercise's expand_items, timed whole on the host

struct ExpandWorkload {
  std::vector<unsigned> counts;
  std::vector<float> values;
  std::size_t outputs = 0;
};

/// `items` items with 1 to kMaxOutputsPerItem outputs each (uniform), values in [0.5, 2).
ExpandWorkload make_expand_workload(unsigned items, std::uint64_t seed) {
  cdplab::Random rng = cdplab::Random(seed).derive(cdplab::hash_name("expand_items"));
  ExpandWorkload w;
  w.counts.resize(items);
  for (auto& c : w.counts) c = static_cast<unsigned>(rng.integer(1, st::kMaxOutputsPerItem));
  w.values = cdplab::uniform_floats(rng, items, 0.5f, 2.0f);
  for (const unsigned c : w.counts) w.outputs += c;
  return w;
}

/// "" when `out` holds exactly what the children must write (values[i] * (k + 1) in the first
/// counts[i] slots of item i, 0 in the others); else how many slots differ and the first one.
std::string check_expand(const ExpandWorkload& w, const std::vector<float>& out) {
  const std::size_t slots = w.counts.size() * st::kMaxOutputsPerItem;
  if (out.size() != slots) return std::to_string(out.size()) + " slots came back, expected " + std::to_string(slots);
  std::size_t wrong = 0;
  std::string first;
  for (std::size_t i = 0; i < w.counts.size(); ++i) {
    for (unsigned k = 0; k < st::kMaxOutputsPerItem; ++k) {
      const float expected = k < w.counts[i] ? w.values[i] * static_cast<float>(k + 1) : 0.0f;
      const float found = out[i * st::kMaxOutputsPerItem + k];
      if (std::fabs(found - expected) <= 1e-6f * std::fabs(expected)) continue;
      if (wrong++ == 0) {
        char text[160];
        std::snprintf(text, sizeof text, "item %zu slot %u is %g, expected %g (item has %u outputs)", i, k,
                      static_cast<double>(found), static_cast<double>(expected), w.counts[i]);
        first = text;
      }
    }
  }
  if (wrong == 0) return "";
  return std::to_string(wrong) + " wrong slots; " + first;
}

/// The child grids an aggregation is meant to launch for `items` items, every one with work.
std::size_t expected_child_grids(st::Aggregation how, std::size_t items) {
  switch (how) {
    case st::Aggregation::per_thread: return items;
    case st::Aggregation::per_warp: return (items + kWarpSize - 1) / kWarpSize;
    case st::Aggregation::per_block: return (items + kParentThreads - 1) / kParentThreads;
  }
  return 0;
}

/// Prints table 1b; returns false when an output was wrong.
bool run_aggregation(const Options& options) {
  const PhaseDeadline deadline("1b (aggregated launches)", kAggregationPhaseSeconds);
  const unsigned items = options.quick ? kQuickItems : kFullItems;
  const int max_runs = options.quick ? 1 : 5;
  const ExpandWorkload w = make_expand_workload(items, options.seed);

  std::printf("\n### 1b. Aggregated launches: the exercise's expand_items, timed whole\n\n");
  const bench::MarkdownTable table({"aggregation", "items", "outputs", "child grids (1)", "host ms (2)",
                                    "us per child grid (3)", "child grids/s", "outputs/s"});
  table.print_header();

  std::vector<std::string> problems;
  std::vector<std::string> notes;
  int fewer_runs = 0;
  for (const st::Aggregation how : {st::Aggregation::per_thread, st::Aggregation::per_warp,
                                    st::Aggregation::per_block}) {
    st::ExpandRun last;
    const Cell cell =
        measure_host(max_runs, true, nothing_to_prepare, [&] { last = st::expand_items(w.counts, w.values, how); });
    const std::string problem = check_expand(w, last.out);
    if (!problem.empty()) problems.push_back(std::string(st::to_string(how)) + ": " + problem);
    const std::size_t expected = expected_child_grids(how, items);
    if (last.child_grids != expected)
      notes.push_back(std::string(st::to_string(how)) + " reported " + count_text(last.child_grids) +
                      " child grids; one per " +
                      (how == st::Aggregation::per_thread ? "item"
                       : how == st::Aggregation::per_warp ? "warp"
                                                          : "block") +
                      " would be " + count_text(expected));
    const double grids = static_cast<double>(last.child_grids);
    table.print_row({st::to_string(how), count_text(items), count_text(w.outputs), count_text(last.child_grids),
                     cell_text(cell, max_runs, fewer_runs), grids > 0 ? fixed_text(cell.ms * 1e3 / grids) : "-",
                     per_second_text(grids, cell.ms), per_second_text(static_cast<double>(w.outputs), cell.ms)});
  }

  std::printf(
      "\nItems: %s, each with 1 to %u outputs (uniform, seed %llu); the parent has one thread per item, %u per\n"
      "block.\n"
      "(1) child_grids as the exercise reported it (each child grid counts itself once).\n"
      "(2) Host clock (std::chrono::steady_clock) around whole calls of expand_items: upload of counts and\n"
      "    values, GPU buffers allocated and freed, the parent grid and every child, download of all %u slots\n"
      "    per item. %s after one warm-up call%s. Nothing is subtracted.\n"
      "(3) (2) divided by (1): an upper bound of one child grid's cost, the call's fixed costs included.\n",
      count_text(items).c_str(), st::kMaxOutputsPerItem, static_cast<unsigned long long>(options.seed),
      kParentThreads, st::kMaxOutputsPerItem, options.quick ? "1 timed run" : "Median of 5 timed runs",
      fewer_runs > 0 ? "; [k]: only k runs, one run took long" : "");
  for (const auto& note : notes) std::printf("- note: %s.\n", note.c_str());
  if (problems.empty()) {
    std::printf("- check of every aggregation's last output against the CPU (every slot of every item): ok\n");
  } else {
    std::printf("- check of every aggregation's last output against the CPU: %zu MISMATCH(ES)\n", problems.size());
    for (const auto& problem : problems) std::printf("  - %s\n", problem.c_str());
  }
  return problems.empty();
}

// ---------------------------------------------------------------------------------------------
// 2. The pool cliff: N children held pending at once

/// What the runs of one pool row found.
struct CliffRow {
  std::size_t pool = 0;
  Cell time;
  int failed_min = 0;   ///< failed launches, fewest of all runs (warm-up included)
  int failed_max = 0;   ///< ... and most
  int launched = 0;     ///< launches that succeeded, last run
  std::string errors;   ///< the failed launches' codes, last run ("-" when none)
  int ran = 0;          ///< children that ran, last run
  int gave_up = 0;      ///< children that stopped waiting, last run
};

/// `n` fire-and-forget children held pending at once with the pool at `pool`: `warmups` untimed
/// runs, then `runs` timed with CUDA events around the parent grid.
CliffRow run_cliff(int n, std::size_t pool, int warmups, int runs) {
  CliffRow row;
  row.pool = set_pool_limit(pool);
  cdplab::DeviceArray<probe::OverflowCounters> counters(1);
  const unsigned blocks = (static_cast<unsigned>(n) + kCliffParentThreads - 1) / kCliffParentThreads;
  cdplab::GpuTimer timer;
  bench::Samples times;
  for (int r = 0; r < warmups + runs; ++r) {
    CDPLAB_CHECK(cudaMemset(counters.data(), 0, sizeof(probe::OverflowCounters)));
    CDPLAB_CHECK(cudaDeviceSynchronize());
    timer.start();
    probe::overflow_parent<<<blocks, kCliffParentThreads>>>(StreamKind::kFireAndForget, n, kChildThreads,
                                                            kHoldCapNs, counters.data());
    CDPLAB_CHECK(cudaGetLastError());
    timer.stop();
    const double ms = timer.elapsed_ms();
    CDPLAB_CHECK(cudaDeviceSynchronize());
    const probe::OverflowCounters c = counters.download()[0];
    const int failed = n - c.launch_codes[cudaSuccess];
    if (r == 0) row.failed_min = row.failed_max = failed;
    row.failed_min = std::min(row.failed_min, failed);
    row.failed_max = std::max(row.failed_max, failed);
    if (r < warmups) continue;
    times.add(ms);
    row.launched = c.launch_codes[cudaSuccess];
    row.errors = failed == 0 ? "-" : probe::histogram_text(c.launch_codes, true);
    row.ran = c.ran;
    row.gave_up = c.gave_up;
  }
  row.time.ms = times.median();
  row.time.runs = runs;
  return row;
}

/// Prints table 2. Launch failures are what it measures, so it never fails the benchmark.
void run_pool_cliff(const Options& options, std::size_t default_pool) {
  const PhaseDeadline deadline("2 (the pending launch pool)", kPoolPhaseSeconds);
  const std::vector<int> sizes =
      options.quick ? std::vector<int>{2048, 2049, 4096} : std::vector<int>{1024, 2048, 2049, 4096, 10000};
  const int warmups = 1;
  const int runs = options.quick ? 1 : 5;

  std::printf("\n## 2. The pending launch pool: N children held pending at once\n\n");
  const bench::MarkdownTable table({"N children", "pool (1)", "launched", "failed (2)", "error of the failed (3)",
                                    "children ran (4)", "gave up (5)", "GPU ms (6)"});
  table.print_header();
  int varied = 0;
  int unexplained = 0;
  for (const int n : sizes) {
    const auto sized = static_cast<std::size_t>(n);
    std::vector<std::size_t> pools = {default_pool};
    if (sized != default_pool) pools.push_back(sized);
    for (const std::size_t pool : pools) {
      const CliffRow row = run_cliff(n, pool, warmups, runs);
      std::string failed = bench::format_count(row.failed_max);
      if (row.failed_min != row.failed_max) {
        failed = bench::format_count(row.failed_min) + " to " + failed;
        ++varied;
      }
      if (row.ran != row.launched) ++unexplained;
      const char* which = sized == default_pool ? " (default = N)" : pool == default_pool ? " (default)" : " (N)";
      table.print_row({bench::format_count(n), count_text(row.pool) + which, bench::format_count(row.launched), failed,
                       row.errors, bench::format_count(row.ran), bench::format_count(row.gave_up),
                       bench::format_ms(row.time.ms)});
    }
  }
  set_pool_limit(default_pool);

  std::printf(
      "\nOne parent grid of N threads (%u per block); each launches one child <<<1, %u>>> into\n"
      "cudaStreamFireAndForget. A child waits (spinning on a counter) until every parent thread has tried\n"
      "its launch, so all N launches compete for the pool at once; a child gives up after %.2f s, so no\n"
      "run can hang.\n"
      "(1) cudaLimitDevRuntimePendingLaunchCount as the device reported it after cudaDeviceSetLimit: the\n"
      "    default the program started with, or N.\n"
      "(2) launches whose cudaGetLastError() was not cudaSuccess (\"a to b\": it varied between runs, warm-up\n"
      "    included); launched: those that succeeded (last run).\n"
      "(3) the error codes of the failed launches (last run): cudaErrorLaunchPendingCountExceeded (69) is\n"
      "    the pool. In CDP2 a launch that finds the pool full fails; the child never runs. (The CDP1 device\n"
      "    runtime instead moved launches to a slower, virtualised pool.)\n"
      "(4) children that ran (last run): every launched child should run.\n"
      "(5) children that stopped waiting at their time-out (last run); 0 when every launch was tried in time.\n"
      "(6) CUDA events around the host launch of the parent grid: the launches, the children's waits and runs;\n"
      "    nothing subtracted. %s after one warm-up run.\n",
      kCliffParentThreads, kChildThreads, static_cast<double>(kHoldCapNs) * 1e-9,
      runs == 1 ? "1 timed run" : "Median of 5 timed runs");
  if (varied > 0) std::printf("- the failures varied between runs in %d row(s).\n", varied);
  if (unexplained > 0)
    std::printf("- note: in %d row(s) the children that ran differ from the launches that succeeded.\n", unexplained);
  std::printf("- the pool was set back to %s after the table.\n", count_text(default_pool).c_str());
}

// ---------------------------------------------------------------------------------------------
// 3. Sorting ints: the two CDP quicksorts, CUB's radix sort and std::sort, on the same inputs

std::vector<int> random_ints(std::size_t n, std::uint64_t seed) {
  cdplab::Random rng = cdplab::Random(seed).derive(static_cast<std::uint64_t>(n));
  std::vector<int> data(n);
  for (auto& v : data) v = static_cast<int>(static_cast<std::uint32_t>(rng.next() >> 32));
  return data;
}

/// "" when `found` equals `expected` (both sorted); else the first difference.
std::string check_sorted(const std::vector<int>& found, const std::vector<int>& expected) {
  if (found.size() != expected.size())
    return std::to_string(found.size()) + " ints came back, expected " + std::to_string(expected.size());
  const auto differs = std::mismatch(found.begin(), found.end(), expected.begin());
  if (differs.first == found.end()) return "";
  const std::size_t at = static_cast<std::size_t>(differs.first - found.begin());
  return "position " + std::to_string(at) + " holds " + std::to_string(*differs.first) + ", std::sort has " +
         std::to_string(*differs.second) + (std::is_sorted(found.begin(), found.end()) ? "" : " (not in order)");
}

/// GPU-timed cells: CUDA events around one call, `prepare()` (untimed) before each; the median of
/// `runs` timed calls after `warmups` untimed ones.
template <typename Prepare, typename Run>
Cell measure_gpu(int warmups, int runs, Prepare&& prepare, Run&& run) {
  cdplab::GpuTimer timer;
  bench::Samples times;
  for (int r = 0; r < warmups + runs; ++r) {
    prepare();
    CDPLAB_CHECK(cudaDeviceSynchronize());
    timer.start();
    run();
    timer.stop();
    const double ms = timer.elapsed_ms();
    if (r >= warmups) times.add(ms);
  }
  return Cell{times.median(), runs};
}

/// A whole CUB sort as a host call like quicksort(): buffers and temporary storage allocated,
/// upload, sort, download, buffers freed.
std::vector<int> cub_sort_whole(const std::vector<int>& input) {
  const cdplab::DeviceArray<int> in(input);
  cdplab::DeviceArray<int> out(input.size());
  CubRadixSort cub_sort(in.data(), out.data(), input.size());
  cub_sort.sort();
  return out.download();
}

/// "12.345 ms, 81.0 M/s": a time and the ints per second it makes; "-" when not measured.
std::string time_rate_text(const Cell& cell, std::size_t n, int max_runs, int& fewer_runs) {
  if (cell.runs == 0) return "-";
  std::string text = bench::format_ms(cell.ms) + " ms, " + fixed_text(static_cast<double>(n) / (cell.ms * 1e3), 1) +
                     " M/s";
  if (cell.runs < max_runs) {
    text += " [" + std::to_string(cell.runs) + "]";
    ++fewer_runs;
  }
  return text;
}

/// Bytes per int the fast CDP quicksort and CUB move through memory at least (see the notes).
constexpr double kBytesPerIntPass = 8.0;  // one read and one write of a 4-byte int
constexpr double kCubBytesPerInt = 36.0;  // histograms: one read; four 8-bit passes: a read and a write each

/// What the runs of one N measured.
struct SortRow {
  std::size_t n = 0;
  Cell fast, simple, cub, cub_whole, cpu, copy;
  st::FastSortStats stats{};
};

/// Prints tables 3a and 3b; returns false when a sort was wrong.
/// `start_pool`: the pending launch pool the process started with; the fast sort runs from it at
/// every N (it raises the pool to what it needs), since a pool larger than needed makes every
/// device-side launch slower.
bool run_sorts(const Options& options, std::size_t start_pool) {
  const PhaseDeadline deadline("3 (sorting)", kSortPhaseSeconds);
  const std::vector<std::size_t> sizes = options.quick ? std::vector<std::size_t>{1000000, 10000000}
                                                       : std::vector<std::size_t>{1000000, 10000000, 100000000};
  // The simple quicksort takes seconds from 10 million ints on.
  const std::size_t simple_max = options.quick ? 1000000 : 10000000;
  const int gpu_runs = options.quick ? kQuickRuns : kFullRuns;
  const int gpu_warmups = options.quick ? kQuickWarmups : kFullWarmups;
  const int host_runs = options.quick ? 1 : 3;

  std::printf("\n## 3. Sorting ints: the CDP quicksorts, CUB's radix sort, std::sort\n\n### 3a. Times\n\n");
  const bench::MarkdownTable table({"N ints", "fast CDP quicksort, GPU (1)", "simple CDP quicksort, call (2)",
                                    "CUB radix sort, GPU (3)", "CUB radix sort, call (4)", "std::sort, 1 core (5)",
                                    "fast CDP / CUB (6)", "std::sort / fast CDP (7)"});
  table.print_header();
  std::vector<std::string> problems;
  std::vector<SortRow> rows;
  int fewer_runs = 0;
  for (const std::size_t n : sizes) {
    SortRow row;
    row.n = n;
    const std::vector<int> input = random_ints(n, options.seed);
    std::vector<int> expected;
    row.cpu = measure_host(
        host_runs, false, [&] { expected = input; }, [&] { std::sort(expected.begin(), expected.end()); });
    const auto check = [&](const char* sorter, const std::vector<int>& found) {
      const std::string problem = check_sorted(found, expected);
      if (!problem.empty()) problems.push_back(std::string(sorter) + ", N = " + count_text(n) + ": " + problem);
    };

    cdplab::DeviceArray<int> data(n);
    {
      set_pool_limit(start_pool);
      st::FastSortWorkspace workspace(n);
      row.fast = measure_gpu(
          gpu_warmups, gpu_runs, [&] { data.upload(input); },
          [&] { st::fast_quicksort_device(data.data(), n, workspace); });
      row.stats = workspace.last_stats();
      check("fast CDP quicksort", data.download());
    }
    {
      cdplab::DeviceArray<int> sorted(n);
      CubRadixSort cub_sort(data.data(), sorted.data(), n);
      data.upload(input);
      row.cub = measure_gpu(gpu_warmups, gpu_runs, nothing_to_prepare, [&] { cub_sort.sort(); });
      check("CUB radix sort", sorted.download());
      // The copy bandwidth the sorts are measured against: one read and one write of every int.
      row.copy = measure_gpu(gpu_warmups, gpu_runs, nothing_to_prepare, [&] {
        CDPLAB_CHECK(cudaMemcpyAsync(sorted.data(), data.data(), n * sizeof(int), cudaMemcpyDeviceToDevice));
      });
    }
    data = cdplab::DeviceArray<int>();  // free before the whole-call sorts allocate their own
    std::vector<int> cub_found;
    row.cub_whole = measure_host(host_runs, true, nothing_to_prepare, [&] { cub_found = cub_sort_whole(input); });
    check("CUB radix sort (whole call)", cub_found);
    if (n <= simple_max) {
      st::SortRun simple;
      row.simple = measure_host(host_runs, true, nothing_to_prepare, [&] { simple = st::quicksort(input); });
      check("simple CDP quicksort", simple.sorted);
    }

    table.print_row({count_text(n), time_rate_text(row.fast, n, gpu_runs, fewer_runs),
                     time_rate_text(row.simple, n, host_runs, fewer_runs),
                     time_rate_text(row.cub, n, gpu_runs, fewer_runs),
                     time_rate_text(row.cub_whole, n, host_runs, fewer_runs),
                     time_rate_text(row.cpu, n, host_runs, fewer_runs),
                     fixed_text(row.fast.ms / row.cub.ms, 1) + "x", fixed_text(row.cpu.ms / row.fast.ms, 1) + "x"});
    rows.push_back(row);
  }

  std::printf(
      "\nInts: uniform over the whole int range (seed %llu); every sorter sorts the same ints. Cells: the median\n"
      "time and N divided by it, in millions of ints per second.\n"
      "(1) fast_quicksort_device (exercise fast-quicksort of this build) on ints already in GPU memory, its\n"
      "    workspace allocated beforehand: CUDA events around the call, which returns once the device is\n"
      "    synchronised (the host launch, every device-side launch and grid, the pool check). The ints are\n"
      "    uploaded again, untimed, before each run. Median of %d runs after %d warm-up run(s). Before each N\n"
      "    the pending launch pool is set back to the size the process started with; the sort raises it to\n"
      "    what it needs (a pool larger than needed makes every device-side launch slower).\n"
      "(2) quicksort() (exercise quicksort of this build), host clock around whole calls: GPU buffers allocated,\n"
      "    upload, sort, download. After one warm-up call; \"-\": not run at this N (it takes seconds).\n"
      "(3) cub::DeviceRadixSort::SortKeys from one GPU buffer into another, temporary storage allocated\n"
      "    beforehand: CUDA events around the call. Median of %d runs after %d warm-up run(s).\n"
      "(4) CUB as a whole host call, like (2): buffers and temporary storage allocated, upload, sort,\n"
      "    download, buffers freed. After one warm-up call.\n"
      "(5) std::sort on one CPU thread, on a fresh copy of the input each run (the copy not timed).\n"
      "(6) (1) divided by (3): how many times longer the fast CDP quicksort takes than CUB's radix sort.\n"
      "(7) (5) divided by (1).\n"
      "Host-clock cells: %s%s.\n",
      static_cast<unsigned long long>(options.seed), gpu_runs, gpu_warmups, gpu_runs, gpu_warmups,
      host_runs == 1 ? "1 timed run" : "median of 3 timed runs",
      fewer_runs > 0 ? "; [k]: only k runs, one run took long" : "");
  if (problems.empty()) {
    std::printf("- check of every sorter's last output against std::sort's (every int): ok\n");
  } else {
    std::printf("- check of the outputs against std::sort's: %zu MISMATCH(ES)\n", problems.size());
    for (const auto& problem : problems) std::printf("  - %s\n", problem.c_str());
  }

  std::printf("\n### 3b. The fast CDP quicksort's grids, and the memory bound\n\n");
  const bench::MarkdownTable bound({"N ints", "partitions (8)", "block sorts (8)", "deepest level (8)",
                                    "passes over the ints (9)", "copy GB/s (10)", "fast CDP at copy speed (11)",
                                    "fast CDP / that", "CUB at copy speed (12)", "CUB / that"});
  bound.print_header();
  for (const SortRow& row : rows) {
    const double n = static_cast<double>(row.n);
    const double copy_bytes_per_ms = kBytesPerIntPass * n / row.copy.ms;
    const double passes = static_cast<double>(row.stats.memory_values) / (2.0 * n);
    const double fast_bound_ms = passes * kBytesPerIntPass * n / copy_bytes_per_ms;
    const double cub_bound_ms = kCubBytesPerInt * n / copy_bytes_per_ms;
    std::string block_sorts = count_text(row.stats.block_sorts);
    if (row.stats.fallbacks > 0) block_sorts += " (" + count_text(row.stats.fallbacks) + " long)";
    bound.print_row({count_text(row.n), count_text(row.stats.partitions), block_sorts,
                     std::to_string(row.stats.max_depth), fixed_text(passes, 1),
                     fixed_text(copy_bytes_per_ms * 1e-6, 0), bench::format_ms(fast_bound_ms),
                     fixed_text(row.fast.ms / fast_bound_ms, 1) + "x", bench::format_ms(cub_bound_ms),
                     fixed_text(row.cub.ms / cub_bound_ms, 1) + "x"});
  }
  std::printf(
      "\n(8) as the fast sort's grids recorded them in its last run: partition grids, ranges sorted by one block\n"
      "    (\"long\": longer than kFastSortBlockMax = %u, sorted at the depth limit kFastSortMaxDepth = %d), and\n"
      "    the deepest level (the whole array is level 0).\n"
      "(9) passes over memory, as the grids counted the values they read and wrote (a partition reads its\n"
      "    range and writes the values not equal to the pivot, counted as all; a block sort reads and writes\n"
      "    its range once per radix pass, plus one read per pass for the digit counts), divided by 2 N.\n"
      "(10) cudaMemcpyAsync of the N ints from one GPU buffer to another (a read and a write of each int),\n"
      "    CUDA events, median of %d runs: the bandwidth a pass can reach on this GPU.\n"
      "(11) (9) x 8 bytes per int x N at (10): the time the fast sort's memory traffic takes at copy speed.\n"
      "    \"/ that\": (1) divided by it; the rest is launch latency, the partition levels' dependence, the\n"
      "    block sorts' work in shared memory and their tail.\n"
      "(12) the same for CUB's radix sort, taken as %.0f bytes per int (one read for the digit histograms, then\n"
      "    a read and a write in each of four 8-bit passes).\n"
      "- Any sort must read and write every int at least once: 8 bytes per int, (10) is that floor.\n",
      st::kFastSortBlockMax, st::kFastSortMaxDepth, gpu_runs, kCubBytesPerInt);
  return problems.empty();
}

// ---------------------------------------------------------------------------------------------

int run(const Options& options) {
  const auto started = std::chrono::steady_clock::now();
  if (!bench::print_device_or_skip(kProgram)) return bench::kNoGpuExitCode;

  const std::size_t default_pool = pool_limit();
  std::printf("%s run, seed %llu. Pending launch pool (cudaLimitDevRuntimePendingLaunchCount) at the start: %s.\n",
              options.quick ? "Quick (--quick)" : "Full", static_cast<unsigned long long>(options.seed),
              count_text(default_pool).c_str());

  if (options.sort_only) {
    const bool sorted_ok = run_sorts(options, default_pool);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("\nTotal run time %.1f s.%s\n", seconds, sorted_ok ? "" : " Some outputs were WRONG (see above).");
    return sorted_ok ? 0 : 1;
  }

  bool all_ok = run_launch_costs(options);

  // The per-thread aggregation launches one child per item: raise the pool for 1b (the
  // exercises may raise it further themselves).
  const unsigned items = options.quick ? kQuickItems : kFullItems;
  const std::size_t work_pool = std::max(default_pool, static_cast<std::size_t>(items) + kPendingHeadroom);
  const std::size_t pool_1b = set_pool_limit(work_pool);
  std::printf("\nFor 1b the pending launch pool is raised to %s (one launch per item, plus %s).\n",
              count_text(pool_1b).c_str(), count_text(kPendingHeadroom).c_str());
  all_ok = run_aggregation(options) && all_ok;

  run_pool_cliff(options, default_pool);

  all_ok = run_sorts(options, default_pool) && all_ok;

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("\nTotal run time %.1f s.%s\n", seconds,
              all_ok ? "" : " Some launches failed or outputs were WRONG (see the notes above).");
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return bench::run_main(kProgram, kUsage, argc, argv, parse_options, run);
}
