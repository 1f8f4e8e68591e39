#include "context.h"

#include "build_config.h"
#include "report/report.h"
#include "report/text.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <iostream>
#include <fstream>
#include <algorithm>
#include <sstream>

namespace cdplab::cli {

Context make_context(int jobs) {
  Context ctx;
  ctx.root = build_config::kProjectRoot;
  ctx.own_build = build_config::kBinaryDir;
  ctx.toolchain.cmake = build_config::kCMake;
  ctx.toolchain.ctest = build_config::kCTest;
  ctx.toolchain.generator = build_config::kGenerator;
  ctx.toolchain.cache_args = build_config::kCacheArgs;
  ctx.toolchain.jobs = jobs;
  ctx.toolchain.compilers_from = ctx.own_build;  // the trees grade configures use its compiler checks
  ctx.color = isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
  try {
    ctx.book = manifest::load_workbook(ctx.root);
  } catch (const std::exception& error) {
    throw UsageError(std::string("cannot read the chapter manifests: ") + error.what());
  }
  return ctx;
}

std::string wrapped(const std::string& text, std::size_t hanging) {
  std::string out;
  for (const auto& line : report::text::wrap_lines(text, report::terminal_width(), hanging)) out += line + "\n";
  if (!text.empty() && text.back() != '\n' && !out.empty()) out.pop_back();
  return out;
}

bool is_student_copy() {
  std::error_code error;
  return !std::filesystem::is_directory(std::filesystem::path(build_config::kProjectRoot) / "solutions", error);
}

std::string missing_chapters_note(const manifest::Workbook& book) {
  std::string note;
  for (const auto& chapter : book.missing_chapters) {
    note += "cdplab: chapter " + chapter + " is missing: chapters/" + chapter +
            "/chapter.toml is not there, so its exercises are left out of the list and of the total. Restore the "
            "folder (`git checkout -- chapters/" + chapter + "`, or copy it from the release you were given).\n";
  }
  return note;
}

std::string name_of_path(const std::string& name) {
  const bool path_like = name.find('/') != std::string::npos ||
                         (name.size() > 3 && name.compare(name.size() - 3, 3, ".cu") == 0) ||
                         (name.size() > 5 && name.compare(name.size() - 5, 5, ".toml") == 0) || name == "." ||
                         name == "..";
  if (!path_like) return name;
  std::string trimmed = name;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  std::error_code error;
  const auto path = std::filesystem::weakly_canonical(std::filesystem::absolute(trimmed, error), error);
  if (error) return name;
  const auto chapters =
      std::filesystem::weakly_canonical(std::filesystem::path(build_config::kProjectRoot) / "chapters", error);
  if (error) return name;
  const auto relative = path.lexically_relative(chapters);
  if (relative.empty() || relative == "." || *relative.begin() == "..") return name;  // not below chapters/
  return relative.generic_string();
}

std::vector<const manifest::Exercise*> select_exercises(const manifest::Workbook& book,
                                                        const std::vector<std::string>& typed) {
  std::vector<std::string> names;
  for (const auto& name : typed) names.push_back(name_of_path(name));
  std::string unknown;
  auto selected = book.select(names, unknown);
  if (!unknown.empty()) find_exercise(book, unknown);  // throws, naming what there is
  return selected;
}

std::string nearest_name(const std::string& typed, const std::vector<std::string>& known) {
  // Levenshtein distance, one row at a time.
  const auto distance = [](const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      std::size_t diagonal = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= b.size(); ++j) {
        const std::size_t above = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
        diagonal = above;
      }
    }
    return row[b.size()];
  };
  std::string best;
  std::size_t best_distance = 3;  // farther than two edits is no slip
  for (const auto& name : known) {
    const std::size_t d = name.rfind(typed, 0) == 0 && typed.size() >= 3 ? 1 : distance(typed, name);
    if (d < best_distance) {
      best = name;
      best_distance = d;
    }
  }
  // Else a name the typed one is a part of ("fundamentals" of "01-fundamentals").
  if (best.empty() && typed.size() >= 4)
    for (const auto& name : known)
      if (name.find(typed) != std::string::npos) return name;
  return best;
}

const manifest::Exercise& find_exercise(const manifest::Workbook& book, const std::string& typed) {
  const std::string name = name_of_path(typed);
  if (const auto* e = book.find_exercise(name)) return *e;
  // A chapter where one exercise is meant (cdplab hint 01-fundamentals): name its exercises.
  if (const auto* chapter = book.find_chapter(name)) {
    std::string exercises;
    for (const auto& e : chapter->exercises) exercises += (exercises.empty() ? "" : ", ") + e.id;
    throw UsageError("'" + name + "' is a chapter; this command takes one of its exercises: " + exercises);
  }
  std::ostringstream known;
  std::vector<std::string> names;
  for (const auto& chapter : book.chapters) {
    known << "\n  " << chapter.id << ":";
    names.push_back(chapter.id);
    for (const auto& e : chapter.exercises) {
      known << " " << e.id;
      names.push_back(e.id);
    }
  }
  const std::string nearest = nearest_name(name, names);
  throw UsageError("no chapter or exercise named '" + name + "'" +
                   (nearest.empty() ? "" : "; did you mean '" + nearest + "'?") + " There are:" + known.str());
}

int exit_code_for(const grading::GradeReport& report) {
  // A failure is certain whatever the skipped checks would say: it outranks "incomplete".
  if (report.has_failure()) return kSomeFailed;
  if (!report.complete()) return kIncomplete;
  return kAllPassed;
}

int build_and_exec(const grading::BuildTree& tree, const std::string& target, const std::string& executable,
                   const std::vector<std::string>& args, const std::string& what) {
  const auto built = tree.build({target});
  if (!built.ok()) {
    std::cerr << built.output;
    std::cerr << "cdplab: " << what << " does not build (see above)\n";
    return kSomeFailed;
  }
  std::vector<char*> argv = {const_cast<char*>(executable.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();
  execv(executable.c_str(), argv.data());
  throw UsageError("cannot start " + executable);
}

std::string local_timestamp() {
  const std::time_t t = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&t));
  return stamp;
}

void print_progress(const manifest::Exercise& exercise, const std::string& stage) {
  std::fprintf(stderr, "  %-28s %s\n", exercise.path().c_str(), stage.c_str());
}

}  // namespace cdplab::cli
