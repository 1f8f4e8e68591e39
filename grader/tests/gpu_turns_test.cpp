// Turns at a GPU that several gradings share (grading/gpu_turns.h): shared turns run together, an
// alone turn waits for them and keeps new ones out while it waits.
#include "grading/gpu_turns.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

using cdplab::grading::AloneTurn;
using cdplab::grading::GpuTurns;
using cdplab::grading::SharedTurn;
using namespace std::chrono_literals;

TEST_CASE("gpu turns: shared turns overlap, an alone turn waits for them and keeps new ones out") {
  GpuTurns turns;
  std::atomic<int> holding{0};
  std::atomic<int> most_sharing{0};
  std::atomic<bool> alone_saw_company{false};
  std::atomic<bool> first_may_leave{false};

  std::thread first([&] {
    SharedTurn turn(&turns);
    ++holding;
    while (!first_may_leave) std::this_thread::sleep_for(1ms);
    --holding;
  });
  while (holding.load() == 0) std::this_thread::sleep_for(1ms);
  std::thread second([&] {  // shares beside the first
    SharedTurn turn(&turns);
    most_sharing = ++holding;
    --holding;
  });
  second.join();
  CHECK(most_sharing.load() == 2);

  std::atomic<bool> alone_done{false};
  std::thread alone([&] {
    AloneTurn turn(&turns);
    alone_saw_company = holding.load() != 0;
    std::this_thread::sleep_for(20ms);
    alone_done = true;
  });
  std::this_thread::sleep_for(20ms);  // the alone turn now waits for the first shared one
  std::atomic<bool> late_shared_before_alone{false};
  std::thread late([&] {  // arrives while the alone turn waits: it goes after it
    SharedTurn turn(&turns);
    late_shared_before_alone = !alone_done.load();
  });
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(alone_done.load());
  first_may_leave = true;
  first.join();
  alone.join();
  late.join();
  CHECK(alone_done.load());
  CHECK_FALSE(alone_saw_company.load());
  CHECK_FALSE(late_shared_before_alone.load());
}
