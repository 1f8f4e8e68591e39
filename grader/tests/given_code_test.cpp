// The parts of an exercise file a grading runs as given (grader/core/starters/given_code.h).
#include "starters/given_code.h"

#include "files/files.h"
#include "starters/starters.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

namespace fs = std::filesystem;
using cdplab::starters::given_host_changes;
using cdplab::starters::namespace_functions;

namespace {

const char* const kFile = R"(// An exercise.
#include "cdplab/host_part.h"
#include <vector>
namespace ex {
/* a comment with { braces } */
inline constexpr unsigned kThreads = 256;
__global__ void child(float* out, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { out[i] = 1.0f; }
}
namespace {
void check(const std::vector<float>& v, int limit = 3) {
  if (v.size() > limit) throw "a } in a string";
}
}  // namespace
CDPLAB_HOST_PART std::size_t pool_for(unsigned n) { return n + 64; }
std::vector<float> entry(const std::vector<float>& in) {
  check(in);
  const auto twice = [](float x) { return 2 * x; };
  return {twice(in[0])};
}
}  // namespace ex
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("given code: the functions of a file, the student's and the given ones") {
  const auto functions = namespace_functions(kFile);
  REQUIRE(functions.size() == 4);
  CHECK(functions[0].header == "__global__ void child(float* out, unsigned n)");
  CHECK(functions[0].students());
  CHECK(functions[1].header == "void check(const std::vector<float>& v, int limit = 3)");
  CHECK_FALSE(functions[1].students());
  CHECK(functions[2].students());  // the host part
  CHECK(functions[3].header == "std::vector<float> entry(const std::vector<float>& in)");
  CHECK(functions[3].body.find("twice(in[0])") != std::string::npos);
}

TEST_CASE("given code: a change to a kernel or a host part is the student's, one to given host code is reported") {
  CHECK(given_host_changes(kFile, kFile).empty());
  CHECK(given_host_changes(kFile, replaced(kFile, "out[i] = 1.0f;", "out[i] = 2.0f;")).empty());
  CHECK(given_host_changes(kFile, replaced(kFile, "return n + 64;", "return n + 1024;")).empty());
  // Comments and spacing are not changes.
  CHECK(given_host_changes(kFile, replaced(kFile, "  check(in);", "  check(in);   // first\n")).empty());
  const auto changed = given_host_changes(kFile, replaced(kFile, "  check(in);", "  (void)in;"));
  REQUIRE(changed.size() == 1);
  CHECK(changed.front() == "std::vector<float> entry(const std::vector<float>& in)");
  // A given function left out is a change too.
  const auto renamed = given_host_changes(kFile, replaced(kFile, "void check(", "void checked("));
  REQUIRE(renamed.size() == 1);
  CHECK(renamed.front() == "void check(const std::vector<float>& v, int limit = 3)");
}

TEST_CASE("given code: every starter, solved, changes no given host code") {
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(CDPLAB_SOURCE_DIR) / "solutions")) {
    if (entry.path().extension() != ".cu") continue;
    const std::string solution = cdplab::files::read_text(entry.path());
    INFO(entry.path().filename().string());
    CHECK(given_host_changes(cdplab::starters::generate(solution, entry.path().string()), solution).empty());
    ++files;
  }
  CHECK(files == 19);
}

TEST_CASE("given code: the CDPLAB_TODO() calls left, comments aside") {
  const std::string text = "a();\n  CDPLAB_TODO();\n// CDPLAB_TODO() in a comment\n/* CDPLAB_TODO();\n */ b();\n"
                           "  if (x) CDPLAB_TODO();  // and a comment\n";
  CHECK(cdplab::starters::todo_lines(text) == std::vector<int>{2, 6});
  CHECK(cdplab::starters::todo_lines("int main() {}\n").empty());
}
