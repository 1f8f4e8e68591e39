// The CDP2 examples of the migration page (docs/migration/*.cu): the launch graph the rule
// checker rebuilds from their PTX has the launches the page describes (the children in the NULL
// stream, the work that CDP1 did after its wait in cudaStreamTailLaunch), and the page includes
// every example. The PTX is compiled by the fixture target in fixtures/migration.
#include "files/files.h"
#include "rules/launch_graph.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace cdplab::rules;

namespace {

const fs::path kExampleDir = fs::path(CDPLAB_SOURCE_DIR) / "docs" / "migration";

LaunchGraph example_graph(const std::string& stem) {
  const fs::path path = fs::path(CDPLAB_TEST_BINARY_DIR) / "fixtures/migration" / (stem + ".ptx");
  REQUIRE_MESSAGE(fs::exists(path), "missing example PTX " << path.string() << " (built by cdplab_migration_examples_ptx)");
  return analyze_ptx(cdplab::files::read_text(path));
}

// The streams of every launch from `parent` to `child`; fails when there is none.
std::vector<StreamKind> streams(const LaunchGraph& graph, const std::string& parent, const std::string& child) {
  std::vector<StreamKind> found;
  for (const auto& launch : graph.launches)
    if (graph.kernels.at(launch.parent).matches(parent) && launch.child != Launch::unknown &&
        graph.kernels.at(launch.child).matches(child))
      found.push_back(launch.stream);
  INFO(describe(graph));
  REQUIRE_MESSAGE(!found.empty(), "no launch " << parent << " -> " << child);
  return found;
}

void check_only(const LaunchGraph& graph, const std::string& parent, const std::string& child, StreamKind kind) {
  for (const StreamKind stream : streams(graph, parent, child)) {
    INFO(parent, " -> ", child, " in\n", describe(graph));
    CHECK(stream == kind);
  }
}

void check_no_private_pointers(const LaunchGraph& graph) {
  for (const auto& launch : graph.launches) {
    INFO(describe(graph));
    CHECK_FALSE(launch.passes_local_address);
    CHECK_FALSE(launch.passes_shared_address);
  }
}

}  // namespace

TEST_CASE("migration example nested_launches: X, Y, Z in order, the rest in a tail launch") {
  const auto graph = example_graph("nested_launches");
  for (const char* step : {"step_x", "step_y", "step_z"}) check_only(graph, "parent_b", step, StreamKind::null_stream);
  check_only(graph, "parent_b", "segment_sum", StreamKind::tail);
  CHECK(graph.launches.size() == 4);
  check_no_private_pointers(graph);
}

TEST_CASE("migration example code_example: the copy after the child is a tail launch") {
  const auto graph = example_graph("code_example");
  check_only(graph, "pair_then_refine", "refine", StreamKind::null_stream);
  check_only(graph, "pair_then_refine", "copy_back", StreamKind::tail);
  CHECK(graph.launches.size() == 2);
  check_no_private_pointers(graph);
}

TEST_CASE("migration example parent_kernel: the work after the wait is a tail launch") {
  const auto graph = example_graph("parent_kernel");
  check_only(graph, "parent_kernel", "child_kernel", StreamKind::null_stream);
  check_only(graph, "parent_kernel", "parent_after_child", StreamKind::tail);
  CHECK(graph.launches.size() == 2);
  check_no_private_pointers(graph);
}

TEST_CASE("migration example library_call_device: own product kernel, consumer in a tail launch") {
  const auto graph = example_graph("library_call_device");
  check_only(graph, "batched_products", "gemm_child", StreamKind::null_stream);
  check_only(graph, "batched_products", "consume", StreamKind::tail);
  CHECK(graph.launches.size() == 2);
  check_no_private_pointers(graph);
}

TEST_CASE("migration example library_call_host: no launches from device code") {
  if (!fs::exists(fs::path(CDPLAB_TEST_BINARY_DIR) / "fixtures/migration/library_call_host.ptx")) {
    MESSAGE("library_call_host.cu not compiled (no cuBLAS in this toolkit)");
    return;
  }
  const auto graph = example_graph("library_call_host");
  CHECK(graph.launches.empty());
  CHECK(graph.find("create_data") != nullptr);
  CHECK(graph.find("consume") != nullptr);
}

TEST_CASE("the migration page includes every example, and only examples that exist") {
  const std::string page = cdplab::files::read_text(fs::path(CDPLAB_SOURCE_DIR) / "docs" / "migration.md");
  REQUIRE_FALSE(page.empty());
  std::set<std::string> shown;
  const std::regex command(R"([\\@](?:snippet|include)\s+([A-Za-z0-9_.-]+\.cu))");
  for (std::sregex_iterator it(page.begin(), page.end(), command), end; it != end; ++it) shown.insert((*it)[1].str());

  std::set<std::string> examples;
  for (const auto& entry : fs::directory_iterator(kExampleDir))
    if (entry.path().extension() == ".cu") examples.insert(entry.path().filename().string());

  REQUIRE_FALSE(examples.empty());
  for (const auto& file : examples) CHECK_MESSAGE(shown.count(file) == 1, "docs/migration/" << file << " is not shown on the page");
  for (const auto& file : shown) CHECK_MESSAGE(examples.count(file) == 1, "the page shows " << file << ", which is not in docs/migration");
}
