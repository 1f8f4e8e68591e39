// The process of an exercise's host parts (grader/harness/host_parts): the reference solutions'
// host parts, built into that process by this build, answer requests as a grading suite sends
// them, through two FIFOs; what they set on the device comes back as effects, their exceptions as
// exceptions. No GPU needed: that process never has one.
#include "frames.h"
#include "host_parts.h"
#include "wire.h"

#include "process/process.h"
#include "sandbox/submission.h"
#include "starters/given_code.h"

#include "cdplab/check.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace fs = std::filesystem;
using namespace cdplab::harness::host_parts;
namespace wire = cdplab::harness::wire;

namespace {

/// The host parts' program this build made for exercise `test` ("<chapter>/<stem>").
std::string host_parts_program(const std::string& test) {
  std::ifstream in(fs::path(CDPLAB_BINARY_DIR) / "cdplab-index.json");
  REQUIRE(in);
  const auto index = nlohmann::json::parse(in);
  for (const auto& exercise : index.at("exercises"))
    if (exercise.value("test", "") == test) return exercise.value("host_parts", "");
  return "";
}

/// The program running, its two FIFOs open from the grading suite's side; with `boxed`, in the box
/// a grading runs it in (sandbox::host_parts_box: its build tree at /build, the FIFOs at /parts).
class Server {
 public:
  explicit Server(const std::string& test, bool boxed = false)
      : dir_(fs::temp_directory_path() / ("cdplab-host-parts-" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    REQUIRE(::mkfifo((dir_ / "requests").c_str(), 0600) == 0);
    REQUIRE(::mkfifo((dir_ / "replies").c_str(), 0600) == 0);
    const std::string program = host_parts_program(test);
    REQUIRE_MESSAGE(fs::exists(program), "no host parts program for ", test);
    cdplab::process::Options options;
    options.timeout_seconds = 60;
    std::vector<std::string> argv{program, dir_.string()};
    if (boxed) {
      cdplab::grading::Toolchain tools;
      auto box = cdplab::sandbox::host_parts_box(tools, CDPLAB_BINARY_DIR);
      box.read_only_at.emplace_back(dir_.string(), "/parts");  // as a grading binds it: the FIFOs still open
      argv = cdplab::sandbox::wrap(box, {cdplab::sandbox::path_in(box, program), "/parts"});
    }
    running_ = std::async(std::launch::async, [=] { return cdplab::process::run(argv, options); });
    replies_ = ::open((dir_ / "replies").c_str(), O_RDONLY | O_NONBLOCK);
    for (int i = 0; i < 2000 && requests_ < 0; ++i) {
      requests_ = ::open((dir_ / "requests").c_str(), O_WRONLY | O_NONBLOCK);
      if (requests_ < 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    REQUIRE(requests_ >= 0);
    ::fcntl(requests_, F_SETFL, ::fcntl(requests_, F_GETFL) & ~O_NONBLOCK);
  }
  ~Server() {
    if (requests_ >= 0) ::close(requests_);  // the program reads the end of its requests and ends
    if (replies_ >= 0) ::close(replies_);
    if (running_.valid()) running_.wait();
    fs::remove_all(dir_);
  }
  Reply ask(const std::string& part, const DeviceState& state, const std::string& arguments) {
    REQUIRE(write_frame(requests_, wire::encode(Request{part, state, arguments})));
    const Frame frame = read_frame(replies_, 20000, kMostMessageBytes);
    REQUIRE(frame.status == Frame::Status::ok);
    return wire::decode<Reply>(frame.bytes);
  }
  cdplab::process::Result ended() {
    ::close(requests_);
    requests_ = -1;
    return running_.get();
  }

 private:
  fs::path dir_;
  std::future<cdplab::process::Result> running_;
  int requests_ = -1;
  int replies_ = -1;
};

DeviceState fresh_device() {
  DeviceState state;
  state.pending_launches = 2048;
  state.heap_bytes = 8 << 20;
  state.stack_bytes = 1024;
  state.printf_bytes = 1 << 20;
  state.heap_resizable = 1;
  return state;
}

}  // namespace

TEST_CASE("host parts: the pool sized from the workload comes back as a limit set, and the size returned") {
  Server server("05-streams-and-pools/pools");
  const Reply reply = server.ask("size_launch_pool", fresh_device(), wire::encode(std::make_tuple(20000u)));
  REQUIRE(reply.threw == 0);
  const auto pool = wire::decode<std::size_t>(reply.result);
  CHECK(pool >= 20000);
  REQUIRE(reply.effects.size() == 1);
  CHECK(reply.effects[0].kind == kLimit);
  CHECK(reply.effects[0].limit == static_cast<std::uint32_t>(cudaLimitDevRuntimePendingLaunchCount));
  CHECK(reply.effects[0].value == pool);
  // A pool already large enough is kept: no limit set, and the size read back.
  DeviceState large = fresh_device();
  large.pending_launches = 1 << 20;
  const Reply kept = server.ask("size_launch_pool", large, wire::encode(std::make_tuple(20000u)));
  CHECK(kept.effects.empty());
  CHECK(wire::decode<std::size_t>(kept.result) == (1u << 20));
  // The program ends when the grading suite closes its end.
  CHECK(server.ended().exit_code == 0);
}

TEST_CASE("host parts: constant memory written by a host part comes back as the variable's bytes") {
  Server server("04-memory-visibility/constant_params");
  const std::vector<float> coefficients{1.5f, -2.0f, 0.25f};
  const Reply reply = server.ask("upload_coefficients", fresh_device(), wire::encode(std::make_tuple(coefficients)));
  REQUIRE(reply.threw == 0);
  REQUIRE(reply.effects.size() == 2);
  CHECK(reply.effects[0].kind == kSymbol);
  CHECK(reply.effects[0].symbol == "_ZN6cdplab10visibility12coefficientsE");
  CHECK(reply.effects[0].bytes == std::string(reinterpret_cast<const char*>(coefficients.data()), 12));
  CHECK(reply.effects[1].symbol == "_ZN6cdplab10visibility17coefficient_countE");
  const int count = 3;
  CHECK(reply.effects[1].bytes == std::string(reinterpret_cast<const char*>(&count), sizeof count));
}

TEST_CASE("host parts: a heap that can no longer grow fails the reservation as on the GPU") {
  Server server("04-memory-visibility/device_heap");
  DeviceState fixed = fresh_device();
  fixed.heap_resizable = 0;
  const std::vector<unsigned> sizes(100000, 64);  // far more than the 8 MiB heap holds
  const Reply reply = server.ask("reserve_heap_for", fixed, wire::encode(std::make_tuple(sizes)));
  REQUIRE(reply.threw == 1);
  CHECK(reply.effects.empty());
  try {
    wire::rethrow_encoded(static_cast<wire::ExceptionKind>(reply.exception_kind), reply.exception, "host part");
    FAIL("no exception");
  } catch (const cdplab::CudaError& error) {
    CHECK(error.code() == cudaErrorInvalidValue);
    CHECK(std::string(error.what()).find("heap") != std::string::npos);
  }
  // The same sizes on a fresh device: the heap is raised.
  const Reply raised = server.ask("reserve_heap_for", fresh_device(), wire::encode(std::make_tuple(sizes)));
  REQUIRE(raised.threw == 0);
  REQUIRE(raised.effects.size() == 1);
  CHECK(raised.effects[0].limit == static_cast<std::uint32_t>(cudaLimitMallocHeapSize));
  CHECK(raised.effects[0].value >= 100000u * 64u * sizeof(unsigned));
}

TEST_CASE("host parts: a part the file does not have is an exception, not a crash") {
  Server server("05-streams-and-pools/quicksort");
  const Reply reply = server.ask("no_such_part", fresh_device(), wire::encode(std::make_tuple(1)));
  REQUIRE(reply.threw == 1);
  CHECK(reply.exception.find("no host part no_such_part") != std::string::npos);
  // The program goes on answering after an exception.
  const Reply sized = server.ask("reserve_sort_launches", fresh_device(), wire::encode(std::make_tuple(std::size_t{200000})));
  CHECK(sized.threw == 0);
  CHECK(sized.effects.size() == 1);
}

namespace {

/// The header of each function whose body holds a BEGIN SOLUTION marker of `source` ("" when the
/// marker lies at namespace scope).
std::vector<std::pair<int, std::string>> solution_regions(const std::string& source) {
  const auto functions = cdplab::starters::namespace_functions(source);
  std::vector<std::pair<int, std::string>> regions;
  std::istringstream in(source);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.find("// BEGIN SOLUTION") == std::string::npos) continue;
    std::string function;
    for (const auto& f : functions)
      if (f.line <= number && number <= f.end_line) function = f.header;
    regions.emplace_back(number, function);
  }
  return regions;
}

}  // namespace

TEST_CASE("host parts: every answer of a solution on the host side is in a host part") {
  int regions = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(CDPLAB_SOURCE_DIR) / "solutions")) {
    if (entry.path().extension() != ".cu") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    for (const auto& [line, function] : solution_regions(text.str())) {
      ++regions;
      if (function.empty()) continue;  // namespace scope: constants, device code, a host part's helpers
      INFO(entry.path().filename().string(), ":", line, " in ", function);
      CHECK((function.find("__global__") != std::string::npos || function.find("__device__") != std::string::npos ||
             function.find("CDPLAB_HOST_PART") != std::string::npos));
    }
  }
  CHECK(regions >= 19);
  // The check can fail: a region in a plain host function is found.
  const auto found = solution_regions("namespace a {\nint entry(int n) {\n  // BEGIN SOLUTION\n  return n;\n}\n}\n");
  REQUIRE(found.size() == 1);
  CHECK(found.front().second.find("int entry(int n)") != std::string::npos);
}

TEST_CASE("host parts: in their box the program sees its tree at /build and knows no path of the grader's") {
  if (!cdplab::sandbox::probe(cdplab::sandbox::bwrap_program()).ok) {
    MESSAGE("CDPLAB_TEST_SKIPPED: bubblewrap cannot start a box here");
    return;
  }
  Server server("05-streams-and-pools/pools", /*boxed=*/true);
  const Reply reply = server.ask("size_launch_pool", fresh_device(), wire::encode(std::make_tuple(5000u)));
  REQUIRE(reply.threw == 0);
  CHECK(wire::decode<std::size_t>(reply.result) >= 5000);
  // The box's own view: a shell in the same box finds the tree at /build, and no trace of where
  // this build tree really is.
  cdplab::grading::Toolchain tools;
  const auto box = cdplab::sandbox::host_parts_box(tools, CDPLAB_BINARY_DIR);
  const auto looked = cdplab::process::run(cdplab::sandbox::wrap(box, {"sh", "-c", "cd /build && pwd -P && ls"}));
  INFO(looked.output);
  CHECK(looked.ok());
  CHECK(looked.output.find("/build\n") == 0);
  CHECK(looked.output.find(CDPLAB_BINARY_DIR) == std::string::npos);
  CHECK(looked.output.find("cdplab-index.json") != std::string::npos);
}
