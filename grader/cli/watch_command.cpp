// `cdplab watch [EXERCISE]`: the exercise is checked each time the student saves its file, and
// once it passes the next one is shown. Saves are noticed through Linux's inotify (no polling):
// every chapter folder of the checked tree is watched for files written and closed, or moved
// into place (editors that save by renaming a temporary file).
#include "commands.h"

#include "process/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <thread>

namespace cdplab::cli {
namespace {

namespace fs = std::filesystem;

int g_stop_pipe[2] = {-1, -1};

/// Ctrl-C (or SIGTERM): ends the programs of a check in progress and wakes the watch loop.
extern "C" void on_stop(int /*signal*/) {
  process::cancel_all();
  const char byte = 1;
  const ssize_t written = write(g_stop_pipe[1], &byte, 1);
  (void)written;
}

/// The chapter folders of the tree, watched for saves: watch descriptor -> chapter id.
class SaveWatcher {
 public:
  SaveWatcher(const fs::path& exercise_dir, const manifest::Workbook& book) {
    fd_ = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (fd_ < 0) throw UsageError(std::string("cannot watch for saved files (inotify): ") + std::strerror(errno));
    for (const auto& chapter : book.chapters) {
      const fs::path dir = exercise_dir / chapter.id;
      const int wd = inotify_add_watch(fd_, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO);
      if (wd >= 0) chapters_[wd] = chapter.id;
    }
    if (chapters_.empty()) throw UsageError("no chapter folder to watch in " + exercise_dir.string());
  }
  ~SaveWatcher() { close(fd_); }
  SaveWatcher(const SaveWatcher&) = delete;
  SaveWatcher& operator=(const SaveWatcher&) = delete;

  int fd() const { return fd_; }

  /// The files saved since the last call, as "chapter/file"; drains every pending event.
  std::set<std::string> saved_files() {
    std::set<std::string> files;
    alignas(inotify_event) char buffer[16384];
    for (;;) {
      const ssize_t got = read(fd_, buffer, sizeof buffer);
      if (got <= 0) break;
      for (ssize_t at = 0; at < got;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        const auto chapter = chapters_.find(event->wd);
        if (event->len > 0 && chapter != chapters_.end()) files.insert(chapter->second + "/" + event->name);
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
    }
    return files;
  }

 private:
  int fd_ = -1;
  std::map<int, std::string> chapters_;
};

/// Waits for a save or a stop; true when the watch should stop.
bool wait_for_save_or_stop(const SaveWatcher& watcher) {
  pollfd fds[2] = {{watcher.fd(), POLLIN, 0}, {g_stop_pipe[0], POLLIN, 0}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return true;
    }
    if (fds[1].revents != 0) return true;
    if (fds[0].revents != 0) return false;
  }
}

void print_next_step(const Context& ctx, const manifest::Exercise* current) {
  if (current == nullptr) {
    std::cout << "\n"
              << wrapped(std::string("watch: every exercise passed its last check") +
                             (gpu_pending_count(ctx) > 0 ? " or awaits its GPU checks (no GPU here)" : "") +
                             ". Ctrl-C leaves.\n",
                         2)
              << std::flush;
    return;
  }
  std::cout << "\n"
            << wrapped("watch: working on " + current->id + " (" + current->title + "): save chapters/" +
                           current->path() + " to check it (a hint: `cdplab hint " + current->id +
                           "`; Ctrl-C leaves)\n",
                       2)
            << std::flush;
}

}  // namespace

int run_watch(Context& ctx, const std::string& exercise, const GradeArgs& args) {
  if (args.format != "terminal" || !args.output.empty())
    throw UsageError("watch shows its results in the terminal; use check for --format and --output");
  std::vector<const manifest::Exercise*> all;
  for (const auto& chapter : ctx.book.chapters)
    for (const auto& e : chapter.exercises) all.push_back(&e);
  const manifest::Exercise* current = exercise.empty() ? next_unfinished(ctx) : &find_exercise(ctx.book, exercise);
  const grading::BuildTree tree = open_own_tree(ctx, all, !args.quiet);

  if (pipe2(g_stop_pipe, O_CLOEXEC) != 0) throw UsageError(std::string("cannot make a pipe: ") + std::strerror(errno));
  struct sigaction action {};
  action.sa_handler = on_stop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  SaveWatcher watcher(tree.exercise_dir(), ctx.book);
  const auto check = [&](const manifest::Exercise* e) {
    std::cout << "\nwatch: checking " << e->id << " (" << e->path() << ")\n" << std::flush;
    grading::GradeReport report;
    try {
      const files::HeldLock checking = one_check_at_a_time(ctx);
      report = check_exercises(ctx, tree, {e}, args);
    } catch (const UsageError& error) {
      // A remote that could not answer this time (the server down, a cut connection): say so,
      // and check again at the next save.
      std::cout << "watch: " << error.what() << "\n" << std::flush;
      print_next_step(ctx, current);
      return;
    }
    if (process::cancelled()) return;
    // Passed, or nothing failed but the GPU checks that could not run here: on to the next one.
    const bool passed = !report.exercises.empty() && report.exercises.front().all_passed();
    const bool gpu_pending = !report.exercises.empty() && !report.has_failure() && !report.complete();
    if ((passed || gpu_pending) && e == current) current = next_unfinished(ctx);
    print_next_step(ctx, current);
  };
  if (current != nullptr) check(current);
  else print_next_step(ctx, current);

  while (!process::cancelled()) {
    if (wait_for_save_or_stop(watcher)) break;
    // An editor's save can be several events (write, rename, attribute): let them settle.
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    for (const std::string& saved : watcher.saved_files()) {
      for (const auto* e : all) {
        if (e->path() == saved && !process::cancelled()) check(e);
      }
    }
  }
  std::cout << "\nwatch: stopped\n" << std::flush;
  return kAllPassed;
}

}  // namespace cdplab::cli

namespace cdplab::cli {

int run_next_exercise(Context& ctx, const GradeArgs& args) {
  if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) return run_watch(ctx, "", args);
  const manifest::Exercise* next = next_unfinished(ctx);
  if (next == nullptr) {
    const int pending = gpu_pending_count(ctx);
    if (pending > 0) {
      std::cout << wrapped("every exercise passes what could run here; " + std::to_string(pending) +
                           " await their GPU checks: `cdplab check` where a GPU is, or on your course's "
                           "(docs/remote-gpu.md); `cdplab list` shows them\n");
      return kIncomplete;
    }
    std::cout << "every exercise is done; `cdplab list` shows them, `cdplab check` checks them all again\n";
    return kAllPassed;
  }
  std::cout << wrapped("cdplab: the first exercise not done is " + next->id + " (" + next->path() +
                           "); checking it. In a terminal, `cdplab` alone checks it again each time you save it.\n",
                       2);
  GradeArgs one = args;
  one.names = {next->id};
  return run_check(ctx, one);
}

}  // namespace cdplab::cli
