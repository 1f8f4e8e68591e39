// Values as bytes (grader/harness/wire.h): the codec that carries a host part's arguments, result
// and exception between the grader's check process and the host parts' process. Round trips of
// every kind of type, bytes that do not decode (refused before anything large is allocated), and
// exceptions encoded and thrown again.
#include "../harness/wire.h"

#include "cdplab/check.h"
#include "cdplab/fundamentals.h"
#include "cdplab/quadtree.h"
#include "cdplab/streams.h"
#include "cdplab/visibility.h"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace wire = cdplab::harness::wire;

namespace {

template <class T>
T round_trip(const T& value) {
  return wire::decode<T>(wire::encode(value));
}

std::uint32_t bits(float value) {
  std::uint32_t out;
  std::memcpy(&out, &value, sizeof out);
  return out;
}

struct NestedAggregate {
  std::string name;
  std::vector<std::vector<cdplab::quadtree::Box>> boxes;
  std::optional<std::pair<int, std::vector<double>>> extra;
  std::array<std::string, 2> labels;
  std::tuple<bool, char, std::vector<bool>> flags;
  cdplab::streams::Aggregation how;
};

}  // namespace

TEST_CASE("wire: values round-trip through the codec, floats bit for bit") {
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::denorm_min(),
                            std::nanf("0x12345"),
                            -std::nanf("7"),
                            1.0f / 3.0f};
  cdplab::fundamentals::PipelineStages stages;
  for (const float f : specials) {
    stages.x.push_back(f);
    stages.result.push_back(-f);
  }
  stages.y = {1.0f};
  const auto back = round_trip(stages);
  REQUIRE(back.x.size() == stages.x.size());
  REQUIRE(back.result.size() == stages.result.size());
  for (std::size_t i = 0; i < stages.x.size(); ++i) {
    CHECK(bits(back.x[i]) == bits(stages.x[i]));
    CHECK(bits(back.result[i]) == bits(stages.result[i]));
  }
  CHECK(back.y == stages.y);
  CHECK(back.z.empty());

  cdplab::quadtree::Quadtree tree;
  tree.nodes.push_back(cdplab::quadtree::QuadtreeNode{5, 1, {0.0f, 0.5f, 0.5f, 1.0f}, 3, 9, true});
  tree.x = {0.25f};
  tree.y = {0.75f};
  const auto tree_back = round_trip(tree);
  REQUIRE(tree_back.nodes.size() == 1);
  CHECK(tree_back.nodes[0].id == 5);
  CHECK(tree_back.nodes[0].box.max_y == 1.0f);
  CHECK(tree_back.nodes[0].leaf);
  CHECK(tree_back.x == tree.x);

  const cdplab::visibility::HeapRun heap{{1, 2, 3}, cudaErrorInvalidDevicePointer};
  const auto heap_back = round_trip(heap);
  CHECK(heap_back.sums == heap.sums);
  CHECK(heap_back.host_free_error == cudaErrorInvalidDevicePointer);

  cdplab::streams::FastSortRun sort;
  sort.sorted = {-3, 0, 7};
  sort.stats = {2, 3, 1, 4, 99};
  const auto sort_back = round_trip(sort);
  CHECK(sort_back.sorted == sort.sorted);
  CHECK(sort_back.stats.memory_values == 99);

  NestedAggregate nested{"n", {{{1, 2, 3, 4}}, {}}, std::make_pair(-1, std::vector<double>{0.5}), {"a", ""},
                         {true, 'x', {true, false, true}}, cdplab::streams::Aggregation::per_block};
  const auto nested_back = round_trip(nested);
  CHECK(nested_back.name == "n");
  REQUIRE(nested_back.boxes.size() == 2);
  CHECK(nested_back.boxes[0][0].max_y == 4.0f);
  CHECK(nested_back.boxes[1].empty());
  REQUIRE(nested_back.extra.has_value());
  CHECK(nested_back.extra->second == std::vector<double>{0.5});
  CHECK(nested_back.labels[0] == "a");
  CHECK(std::get<2>(nested_back.flags) == std::vector<bool>{true, false, true});
  CHECK(nested_back.how == cdplab::streams::Aggregation::per_block);
  CHECK(round_trip(std::optional<int>{}) == std::nullopt);
  const int* pointer = reinterpret_cast<const int*>(0x1234);
  CHECK(round_trip(pointer) == pointer);  // a device address travels as a number
}

TEST_CASE("wire: bytes that do not hold the type fail to decode, without a large allocation") {
  const std::string payload = wire::encode(std::vector<float>{1.0f, 2.0f});
  CHECK_THROWS_AS(wire::decode<std::vector<float>>(payload.substr(0, payload.size() - 1)), wire::DecodeError);
  CHECK_THROWS_AS(wire::decode<std::vector<float>>(payload + "x"), wire::DecodeError);
  // A length of 2^60 elements: refused before anything is allocated.
  std::string forged = payload;
  const std::uint64_t huge = std::uint64_t{1} << 60;
  std::memcpy(forged.data(), &huge, sizeof huge);
  CHECK_THROWS_AS(wire::decode<std::vector<float>>(forged), wire::DecodeError);
  CHECK_THROWS_AS(wire::decode<std::vector<std::vector<int>>>(forged), wire::DecodeError);
  CHECK_THROWS_AS(wire::decode<std::string>(forged), wire::DecodeError);
  CHECK_THROWS_AS(wire::decode<bool>(std::string(1, '\2')), wire::DecodeError);
}

TEST_CASE("wire: exceptions keep their kind, codes and message") {
  const auto kept = [](std::exception_ptr error) {
    const auto [kind, payload] = wire::encode_exception(error);
    try {
      wire::rethrow_encoded(kind, payload, "the host part");
    } catch (...) {
      return std::current_exception();
    }
    return std::exception_ptr();
  };
  try {
    std::rethrow_exception(kept(std::make_exception_ptr(cdplab::CudaError(cudaErrorIllegalAddress, "fault"))));
  } catch (const cdplab::CudaError& e) {
    CHECK(e.code() == cudaErrorIllegalAddress);
    CHECK(std::string(e.what()) == "fault");
  }
  try {
    std::rethrow_exception(kept(std::make_exception_ptr(
        cdplab::DeviceLaunchError(cudaErrorLaunchPendingCountExceeded, 12, "pool full"))));
  } catch (const cdplab::DeviceLaunchError& e) {
    CHECK(e.code() == cudaErrorLaunchPendingCountExceeded);
    CHECK(e.failures() == 12);
    CHECK(std::string(e.what()) == "pool full");
  }
  CHECK_THROWS_WITH_AS(std::rethrow_exception(kept(std::make_exception_ptr(cdplab::NotImplemented("todo")))), "todo",
                       cdplab::NotImplemented);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(kept(std::make_exception_ptr(std::invalid_argument("bad")))), "bad",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(kept(std::make_exception_ptr(std::out_of_range("far")))), "far",
                       std::out_of_range);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(kept(std::make_exception_ptr(std::bad_alloc()))), "std::bad_alloc",
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(kept(std::make_exception_ptr(42))),
                       "the host part threw an exception that is no std::exception", std::runtime_error);
  // Fields that do not decode as the kind says: refused, with whose exception it was.
  CHECK_THROWS_WITH_AS(wire::rethrow_encoded(wire::ExceptionKind::cuda_error, "abc", "the host part"),
                       doctest::Contains("the host part: an exception that does not decode"), std::runtime_error);
  const std::string message = wire::encode(std::string("far"));
  CHECK_THROWS_WITH_AS(wire::rethrow_encoded(wire::ExceptionKind::out_of_range, message + "x", "the host part"),
                       doctest::Contains("does not decode"), std::runtime_error);
  CHECK_THROWS_AS(wire::rethrow_encoded(wire::ExceptionKind::out_of_range, message, "the host part"),
                  std::out_of_range);
}
