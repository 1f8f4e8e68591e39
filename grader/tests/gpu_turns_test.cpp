// Turns at a GPU that several gradings share (grading/gpu_turns.h): shared turns run together, an
// alone turn waits for them and keeps new ones out while it waits.
//
// The threads are ordered by the state of the turns (who holds one, who waits), never by sleeping:
// the test gives the same verdict however busy the machine is.
#include "grading/gpu_turns.h"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>

using cdplab::grading::AloneTurn;
using cdplab::grading::GpuTurns;
using cdplab::grading::SharedTurn;

namespace {

/// Yields until `condition` holds: the other thread is then known to have reached its step.
template <class Condition>
void wait_for(Condition condition) {
  while (!condition()) std::this_thread::yield();
}

}  // namespace

TEST_CASE("gpu turns: shared turns overlap, an alone turn waits for them and keeps new ones out") {
  GpuTurns turns;
  std::atomic<int> holding{0};
  std::atomic<int> most_sharing{0};
  std::atomic<bool> alone_saw_company{false};
  std::atomic<bool> first_may_leave{false};

  std::thread first([&] {
    SharedTurn turn(&turns);
    ++holding;
    wait_for([&] { return first_may_leave.load(); });
    --holding;
  });
  wait_for([&] { return holding.load() == 1; });
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
    alone_done = true;
  });
  wait_for([&] { return turns.waiting_alone() == 1; });  // it waits for the first shared turn
  std::atomic<bool> late_shared_before_alone{false};
  std::thread late([&] {  // arrives while the alone turn waits: it goes after it
    SharedTurn turn(&turns);
    late_shared_before_alone = !alone_done.load();
  });
  wait_for([&] { return turns.waiting_to_share() == 1; });
  CHECK_FALSE(alone_done.load());  // the first shared turn still holds the GPU
  first_may_leave = true;
  first.join();
  alone.join();
  late.join();
  CHECK(alone_done.load());
  CHECK_FALSE(alone_saw_company.load());
  CHECK_FALSE(late_shared_before_alone.load());
  CHECK(turns.waiting_alone() == 0);
  CHECK(turns.waiting_to_share() == 0);
}

TEST_CASE("gpu turns: an alone turn keeps shared ones out until it ends") {
  GpuTurns turns;
  std::atomic<bool> alone_may_leave{false};
  std::atomic<bool> alone_held{false};
  std::atomic<bool> shared_during_alone{false};
  std::thread alone([&] {
    AloneTurn turn(&turns);
    alone_held = true;
    wait_for([&] { return alone_may_leave.load(); });
    alone_held = false;
  });
  wait_for([&] { return alone_held.load(); });
  std::thread shared([&] {
    SharedTurn turn(&turns);
    shared_during_alone = alone_held.load();
  });
  wait_for([&] { return turns.waiting_to_share() == 1; });
  alone_may_leave = true;
  alone.join();
  shared.join();
  CHECK_FALSE(shared_during_alone.load());
}
