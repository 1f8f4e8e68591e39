// The commands a student uses between checks: list, hint, reset, run (the demo driver), and
// the instructor's starters (generate chapters/ from solutions/).
#include "commands.h"
#include "progress.h"

#include "grading/build_tree.h"
#include "process/process.h"
#include "release/release.h"
#include "starters/starters.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace cdplab::cli {
namespace {

namespace fs = std::filesystem;

/// "01-fundamentals/child_grids.cu" in the student's folder (chapters/).
fs::path student_file(const Context& ctx, const manifest::Exercise& e) { return ctx.root / "chapters" / e.path(); }

/// An exercise's status line; `done` when its last check passed, `pending` when nothing failed in
/// it but its GPU checks could not run (the student loop moves on from both).
std::string status_of(const Context& ctx, const Progress& progress, const manifest::Exercise& e, bool& done,
                      bool& pending) {
  done = false;
  pending = false;
  const fs::path file = student_file(ctx, e);
  if (!fs::exists(file)) return "missing (cdplab reset " + e.id + " restores the starter)";
  const std::string text = read_text(file);
  const auto* last = progress.last(e.id);
  if (last != nullptr && !progress.source_changed(e.id, text)) {
    done = last->value("passed", false);
    if (done) return "done";
    pending = last->value("gpu_pending", false);
    if (pending) return "rules pass; GPU checks pending";
    char score[64];
    std::snprintf(score, sizeof score, "%g/%g", last->value("points", 0.0), last->value("max_points", 0.0));
    return std::string("in progress, ") + score + " at the last check";
  }
  const std::string starter = starter_text(ctx, e);
  if (!starter.empty() && starter == text) return "not started";
  return last != nullptr ? "changed since the last check" : "not checked yet";
}

}  // namespace

const manifest::Exercise* next_unfinished(const Context& ctx) {
  const Progress progress(ctx.own_build);
  for (const auto& chapter : ctx.book.chapters) {
    for (const auto& e : chapter.exercises) {
      bool done = false;
      bool pending = false;
      status_of(ctx, progress, e, done, pending);
      if (!done && !pending) return &e;
    }
  }
  return nullptr;
}

int gpu_pending_count(const Context& ctx) {
  const Progress progress(ctx.own_build);
  int count = 0;
  for (const auto* e : ctx.book.exercises()) {
    bool done = false;
    bool pending = false;
    status_of(ctx, progress, *e, done, pending);
    count += pending ? 1 : 0;
  }
  return count;
}

int run_list(Context& ctx) {
  Progress progress(ctx.own_build);
  const manifest::Exercise* next = nullptr;
  const std::string missing = missing_chapters_note(ctx.book);
  if (!missing.empty()) std::cout << missing << "\n";
  // The columns as wide as the longest id and file name, so that every row lines up.
  int id_width = 0;
  int file_width = 0;
  for (const auto* e : ctx.book.exercises()) {
    id_width = std::max(id_width, static_cast<int>(e->id.size()));
    file_width = std::max(file_width, static_cast<int>(e->file.size()));
  }
  for (const auto& chapter : ctx.book.chapters) {
    std::cout << chapter.id << "  " << chapter.title << "\n";
    for (const auto& e : chapter.exercises) {
      bool done = false;
      bool pending = false;
      const std::string status = status_of(ctx, progress, e, done, pending);
      std::printf("  %-*s  %-*s  %s\n", id_width, e.id.c_str(), file_width, e.file.c_str(), status.c_str());
      if (!done && !pending && next == nullptr) next = &e;
    }
  }
  std::cout << "\n";
  const int pending = gpu_pending_count(ctx);
  if (pending > 0)
    std::cout << wrapped(std::to_string(pending) + (pending == 1 ? " exercise passes" : " exercises pass") +
                         " everything that could run here, but not the GPU checks: they need a GPU (`cdplab check` "
                         "where one is, or your course's: docs/remote-gpu.md).\n");
  if (next == nullptr && !missing.empty()) {
    std::cout << "Every exercise listed passed its last check" << (pending > 0 ? " or awaits its GPU checks" : "")
              << "; restore the missing chapters above.\n";
  } else if (next == nullptr) {
    std::cout << (pending > 0 ? "Every exercise passed its last check or awaits its GPU checks.\n"
                              : "Every exercise passed its last check.\n");
  } else {
    std::cout << wrapped("next: " + next->title + ": edit chapters/" + next->path() + ", then `cdplab check " +
                             next->id + "` (stuck? `cdplab hint " + next->id + "`)\n",
                         2);
  }
  return kAllPassed;
}

int run_hint(Context& ctx, const std::string& name, bool all) {
  const auto& e = find_exercise(ctx.book, name);
  if (e.hints.empty()) {
    std::cout << e.id << " has no hints.\n";
    return kAllPassed;
  }
  Progress progress(ctx.own_build);
  const int total = static_cast<int>(e.hints.size());
  const int seen = progress.hints_seen(e.id);
  const int show = all ? total : std::min(total, seen + 1);
  std::cout << wrapped(e.title + " (" + e.path() + ")\n", 2);
  for (int i = 0; i < show; ++i)
    std::cout << "\n" << wrapped("hint " + std::to_string(i + 1) + " of " + std::to_string(total) + ": " + e.hints[i] + "\n");
  if (show < total) std::cout << "\n(`cdplab hint " << e.id << "` again for the next one)\n";
  else if (!all && seen >= total)
    std::cout << "\n(that was the last of the " << total << " hints: all of them again, above)\n";
  if (!e.course.empty()) {
    std::cout << "\nCourse material:\n";
    for (const auto& c : e.course) std::cout << wrapped("  " + c + "\n", 2);
  }
  progress.set_hints_seen(e.id, std::max(seen, show));
  progress.save();
  return kAllPassed;
}

std::string starter_text(const Context& ctx, const manifest::Exercise& e) {
  const fs::path solution = ctx.root / "solutions" / e.path();
  if (fs::exists(solution)) return starters::generate(read_text(solution), e.path());
  const fs::path original = ctx.root / release::kOriginals / e.path();
  return fs::exists(original) ? read_text(original) : "";
}

int run_reset(Context& ctx, const std::string& name) {
  const auto& e = find_exercise(ctx.book, name);
  const std::string text = starter_text(ctx, e);
  if (text.empty())
    throw UsageError("cannot reset " + e.id + ": neither its solution (solutions/" + e.path() + ") nor its released starter (" +
                     (release::kOriginals / e.path()).string() + ") is in this copy");
  const fs::path file = student_file(ctx, e);
  if (fs::exists(file)) {
    if (read_text(file) == text) {
      std::cout << e.path() << " is already the starter; nothing to do.\n";
      return kAllPassed;
    }
    const fs::path backup = file.string() + ".backup-" + local_timestamp();
    fs::copy_file(file, backup, fs::copy_options::overwrite_existing);
    std::cout << "your version is kept in " << fs::relative(backup, ctx.root).string() << "\n";
  }
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
  std::cout << e.path() << " is the starter again.\n";
  return kAllPassed;
}

int run_program(Context& ctx, const std::string& kind, const std::string& chapter_name,
                const std::vector<std::string>& args) {
  const auto* chapter = ctx.book.find_chapter(chapter_name);
  if (chapter == nullptr) throw UsageError("no chapter named '" + chapter_name + "'");
  const std::string what = kind == "benches" ? "benchmark" : "demo";
  grading::BuildTree tree(ctx.root, ctx.own_build, ctx.toolchain);
  tree.load_index();
  const auto [executable, target] = tree.program(kind, chapter->id);
  if (target.empty())
    throw UsageError(chapter->id + " has no " + what + " in this build (it has none, or one of its exercise files is missing)");
  std::cerr << "cdplab: running the " << what << " of " << chapter->id << " on " << tree.exercise_dir() << "\n";
  return build_and_exec(tree, target, executable, args, "the " + what + " of " + chapter->id);
}

int run_release(Context& ctx, const std::string& folder) {
  const fs::path target = fs::absolute(folder).lexically_normal();
  const fs::path root = fs::absolute(ctx.root).lexically_normal();
  // Inside the project only below build/, which the release never copies.
  const auto inside = [&](const fs::path& dir) { return target.string().rfind(dir.string() + "/", 0) == 0; };
  if (inside(root) && !inside(root / "build"))
    throw UsageError("the release goes outside the project, or below its build/ folder (" + target.string() +
                     " is inside " + root.string() + ")");
  release::Released released;
  try {
    released = release::make_release(ctx.root, target);
  } catch (const std::exception& error) {
    throw UsageError(std::string("no release made: ") + error.what());
  }
  std::cout << "wrote the student release to " << target.string() << " (" << released.copied.size() << " files)\n";
  for (const auto& note : released.notes) std::cout << "  " << note << "\n";
  std::cout << "left out: solutions/, grader/tests/, CI files and build trees\n"
            << "students start with `./cdplab list` and `./cdplab check` in that folder\n";
  return kAllPassed;
}

int run_starters(Context& ctx, bool write) {
  if (!fs::is_directory(ctx.root / "solutions")) {
    // A student release: no solutions to generate starters from. What it can say is which of
    // the student's files differ from the starters as they were released.
    if (write)
      throw UsageError("this copy has no solutions/ (a student release): there is nothing to generate the starters "
                       "from. `cdplab reset EXERCISE` puts back one starter as it was released.");
    int changed = 0;
    int total = 0;
    for (const auto* e : ctx.book.exercises()) {
      const fs::path original = ctx.root / release::kOriginals / e->path();
      if (!fs::exists(original)) continue;
      ++total;
      const fs::path file = student_file(ctx, *e);
      if (fs::exists(file) && read_text(file) == read_text(original)) continue;
      ++changed;
      std::cout << "chapters/" << e->path() << ": " << (fs::exists(file) ? "your work" : "missing")
                << " (`cdplab reset " << e->id << "` puts back the starter as released)\n";
    }
    std::cout << "this copy is a student release (no solutions/): " << changed << " of " << total
              << " exercise files differ from the starters as released (" << release::kOriginals.string() << ")\n";
    return kAllPassed;
  }
  if (write) {
    const auto written = starters::write_all(ctx.root);
    for (const auto& path : written) std::cout << "wrote " << fs::relative(path, ctx.root).string() << "\n";
    if (written.empty()) std::cout << "every starter is up to date\n";
    return kAllPassed;
  }
  int stale = 0;
  for (const auto& pair : starters::compare_all(ctx.root)) {
    if (pair.up_to_date) continue;
    ++stale;
    std::cout << fs::relative(pair.starter, ctx.root).string() << ": " << pair.problem << "\n";
  }
  if (stale > 0) {
    std::cout << wrapped(std::to_string(stale) +
                         " starter(s) differ from their solutions; `cdplab starters --write` regenerates them, "
                         "overwriting the files above (an edit of yours in them is lost: copy it first)\n");
    return kSomeFailed;
  }
  std::cout << "every starter matches its solution\n";
  return kAllPassed;
}

}  // namespace cdplab::cli
