#include "grading/shared_process.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

namespace cdplab::grading {

std::string test_case_filter(const std::vector<std::string>& checks) {
  std::string filter;
  for (const auto& check : checks) {
    if (!filter.empty()) filter += ',';
    for (const char c : check) {
      if (c == ',' || c == '\\') filter += '\\';
      filter += c;
    }
  }
  return filter;
}

std::set<std::string> settled_checks(const manifest::Exercise& exercise, const std::vector<CheckEvent>& events) {
  std::set<std::string> settled;
  for (const auto& item : check_items(exercise, events, ""))
    if (item.outcome == Outcome::passed || item.outcome == Outcome::skipped) settled.insert(item.name);
  return settled;
}

std::set<std::string> started_checks(const std::vector<CheckEvent>& events) {
  std::set<std::string> started;
  for (const auto& e : events)
    if (e.event == "start") started.insert(e.check);
  return started;
}

void parallel_for(std::size_t count, int jobs, const std::function<void(std::size_t)>& work) {
  std::vector<Job> each(count);
  for (std::size_t i = 0; i < count; ++i)
    each[i].run = [&work, i] {
      work(i);
      return std::vector<Job>{};
    };
  const int threads = std::max(1, jobs);
  run_work_list(std::move(each), count < static_cast<std::size_t>(threads) ? static_cast<int>(count) : threads);
}

void run_work_list(std::vector<Job> first, int jobs) {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Job> waiting(std::make_move_iterator(first.begin()), std::make_move_iterator(first.end()));
  std::size_t running = 0;
  std::exception_ptr failure;
  auto worker = [&] {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      // Nothing waiting and nothing running: no job can add one any more.
      changed.wait(lock, [&] { return !waiting.empty() || running == 0; });
      if (waiting.empty()) return;
      Job job = std::move(waiting.front());
      waiting.pop_front();
      ++running;
      lock.unlock();
      std::vector<Job> more;
      std::exception_ptr thrown;
      try {
        more = job.run();
      } catch (...) {  // kept for the caller; the other jobs still run, and the threads end
        thrown = std::current_exception();
      }
      lock.lock();
      if (thrown && !failure) failure = thrown;
      for (auto& next : more) waiting.push_back(std::move(next));
      --running;
      changed.notify_all();
    }
  };
  std::vector<std::thread> workers;
  for (int t = 1; t < std::max(1, jobs); ++t) workers.emplace_back(worker);
  worker();
  for (auto& w : workers) w.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace cdplab::grading
