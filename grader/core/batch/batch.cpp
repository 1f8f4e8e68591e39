#include "batch/batch.h"

#include "batch/class_policy.h"
#include "files/files.h"
#include "process/process.h"
#include "quiz/quiz.h"
#include "report/text.h"
#include "rules/launch_graph.h"

#include <algorithm>
#include <set>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <unistd.h>

namespace cdplab::batch {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// "01-fundamentals/child_grids" -> "01-fundamentals.child_grids.svg"
std::string picture_file(const std::string& key) {
  std::string name = key;
  std::replace(name.begin(), name.end(), '/', '.');
  return "launch-graph." + name + ".svg";
}

/// At most `count` holders at once; each gets its own slot number (its GPU).
class Slots {
 public:
  explicit Slots(int count) : free_(static_cast<std::size_t>(std::max(1, count)), true) {}
  int acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    int slot = -1;
    changed_.wait(lock, [&] {
      const auto it = std::find(free_.begin(), free_.end(), true);
      if (it == free_.end()) return false;
      slot = static_cast<int>(it - free_.begin());
      return true;
    });
    free_[static_cast<std::size_t>(slot)] = false;
    return slot;
  }
  void release(int slot) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      free_[static_cast<std::size_t>(slot)] = true;
    }
    changed_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<bool> free_;
};

/// ": rules 0.4 s, checks beside others 5.1 s, ..." for the class log: where the grading went.
std::string phase_list(const std::vector<std::pair<std::string, double>>& phases) {
  std::string out;
  for (const auto& [name, seconds] : phases) {
    char part[96];
    std::snprintf(part, sizeof part, "%s%s %.1f s", out.empty() ? ": " : ", ", name.c_str(), seconds);
    out += part;
  }
  return out;
}

std::string start_stamp() {
  const std::time_t t = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return stamp;
}

/// A report in which every exercise failed for the same reason (nothing could be built).
grading::GradeReport failed_report(const std::vector<const manifest::Exercise*>& exercises, const std::string& problem) {
  grading::GradeReport report;
  for (const auto* e : exercises) report.exercises.push_back(grading::not_graded(*e, problem));
  return report;
}

std::string first_lines(const std::string& text, int count) {
  std::string out;
  std::size_t pos = 0;
  for (int i = 0; i < count && pos < text.size(); ++i) {
    const std::size_t end = text.find('\n', pos);
    out += text.substr(pos, end == std::string::npos ? std::string::npos : end - pos + 1);
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

/// Deletes everything in a student's work folder but the clean copy of its files (`keep`): the
/// build tree and what was written beside it.
void remove_build_leftovers(const fs::path& work, const fs::path& keep) {
  std::vector<fs::path> leftovers;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(work, error))
    if (entry.path() != keep) leftovers.push_back(entry.path());
  for (const auto& path : leftovers) fs::remove_all(path, error);
}

}  // namespace

std::map<std::string, std::string> launch_graph_pictures(const grading::BuildTree& tree,
                                                         const std::vector<const manifest::Exercise*>& exercises,
                                                         const std::string& dot) {
  std::map<std::string, std::string> svgs;
  if (dot.empty()) return svgs;
  for (const auto* e : exercises) {
    if (e->is_quiz()) continue;
    // The PTX as the grader took it before the submission's programs ran, and the picture drawn
    // beside the tree: nothing is read from or written into the tree they could rewrite.
    const std::string ptx = grading::compiled_ptx(tree, *e);
    if (ptx.empty()) continue;
    const auto graph = rules::analyze_ptx(ptx);
    const fs::path dot_file = grading::beside_tree(tree, "-compiled") / (e->chapter + "." + e->stem + ".dot");
    fs::create_directories(dot_file.parent_path());
    std::ofstream(dot_file, std::ios::binary) << rules::to_dot(graph);
    const auto drawn = process::run({dot, "-Tsvg", dot_file.string()}, {"", {}, 60});
    if (drawn.ok() && drawn.output.find("<svg") != std::string::npos)
      svgs[e->chapter + "/" + e->stem] = drawn.output.substr(drawn.output.find("<svg"));
  }
  return svgs;
}

namespace {

using json = nlohmann::json;

/// JSON text of `value`; bytes that are not UTF-8 (a student's folder name may hold any) are
/// replaced, never a reason to fail.
std::string json_text(const json& value) { return value.dump(2, ' ', false, json::error_handler_t::replace) + "\n"; }

/// The digest of a result file's text (FNV-1a 64, hexadecimal).
std::string digest(const std::string& text) {
  std::uint64_t hash = 1469598103934665603ull;
  for (const char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char digits[17];
  std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(hash));
  return digits;
}

/// Where the grader keeps the digest of the result in students/<folder>: beside the class's
/// results, outside every student's folder.
fs::path digest_file(const fs::path& student_dir) {
  return student_dir.parent_path().parent_path() / "digests" / student_dir.filename();
}

}  // namespace

bool grades_all_of(const grading::GradeReport& report, const std::vector<const manifest::Exercise*>& exercises) {
  std::set<std::pair<std::string, std::string>> kept;
  for (const auto& e : report.exercises) kept.emplace(e.chapter, e.id);
  return std::all_of(exercises.begin(), exercises.end(),
                     [&](const manifest::Exercise* e) { return kept.count({e->chapter, e->id}) > 0; });
}

grading::GradeReport merge_results(const grading::GradeReport& kept, const grading::GradeReport& fresh) {
  grading::GradeReport merged = fresh;
  merged.exercises.clear();
  std::set<std::pair<std::string, std::string>> placed;
  for (const auto& e : kept.exercises) {
    const auto again = std::find_if(fresh.exercises.begin(), fresh.exercises.end(),
                                    [&](const auto& f) { return f.chapter == e.chapter && f.id == e.id; });
    merged.exercises.push_back(again == fresh.exercises.end() ? e : *again);
    placed.emplace(e.chapter, e.id);
  }
  for (const auto& f : fresh.exercises)
    if (placed.count({f.chapter, f.id}) == 0) merged.exercises.push_back(f);
  return merged;
}

std::optional<grading::GradeReport> kept_result(const fs::path& dir) {
  std::error_code error;
  const fs::path result = dir / "result.json";
  if (!fs::is_regular_file(fs::symlink_status(result, error)) || !fs::is_regular_file(digest_file(dir), error))
    return std::nullopt;
  const std::string text = files::read_text(result);
  if (files::read_text(digest_file(dir)) != digest(text) + "\n") return std::nullopt;
  try {
    return report::from_json(json::parse(text));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

namespace {

/// The launch-graph pictures already in a student's folder, for the exercises of `report`.
report::Pictures pictures_in(const fs::path& dir, const grading::GradeReport& report) {
  report::Pictures pictures;
  std::error_code error;
  for (const auto& e : report.exercises) {
    const std::string key = report::text::exercise_path(e);
    if (fs::is_regular_file(fs::symlink_status(dir / picture_file(key), error))) pictures[key] = picture_file(key);
  }
  return pictures;
}

}  // namespace

void write_student_files(const fs::path& dir, const std::string& student, const grading::GradeReport& report,
                         const std::map<std::string, std::string>& svgs, const std::string& visibility) {
  fs::create_directories(dir);
  files::write_whole(dir / "student.txt", student);
  report::Pictures pictures = pictures_in(dir, report);  // an --only run's kept exercises keep theirs
  for (const auto& [key, svg] : svgs) {
    files::write_whole(dir / picture_file(key), svg);
    pictures[key] = picture_file(key);
  }
  files::write_whole(dir / "results.json", json_text(report::to_gradescope(report, visibility)));
  files::write_whole(dir / "junit.xml", report::to_junit_xml(report));
  files::write_whole(dir / "feedback.md", report::to_feedback_markdown(report, student, pictures));
  files::write_whole(dir / "feedback.html", report::to_feedback_html(report, student, pictures));
  const std::string result = json_text(report::to_json(report));
  fs::create_directories(digest_file(dir).parent_path());
  files::write_whole(digest_file(dir), digest(result) + "\n");
  files::write_whole(dir / "result.json", result);  // last: it marks the student done
}

namespace {

/// What the roster says of a student, in the student's row: IDs, name, login, email, section.
void take_roster_entry(report::ClassRow& row, const RosterEntry& entry) {
  row.id = entry.id;
  row.full_name = entry.name;
  row.login = entry.login;
  row.email = entry.email;
  row.section = entry.section;
  row.canvas_id = entry.canvas_id;
}

}  // namespace

std::vector<report::ClassRow> write_class_reports(const fs::path& out_dir,
                                                  const std::function<void(const std::string&)>& log) {
  const auto say = [&](const std::string& line) {
    if (log) log(line);
  };
  std::vector<report::ClassRow> rows;
  std::map<std::string, fs::path> dir_of;  // each graded student's folder, for the feedback's due date
  const fs::path students = out_dir / "students";
  if (fs::is_directory(students)) {
    std::vector<fs::path> dirs;
    for (const auto& entry : fs::directory_iterator(students))
      if (entry.is_directory()) dirs.push_back(entry.path());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& dir : dirs) {
      const fs::path file = dir / "result.json";
      if (!fs::exists(file)) continue;
      try {
        std::error_code missing;
        const std::string name = fs::is_regular_file(dir / "student.txt", missing) ? files::read_text(dir / "student.txt")
                                                                                   : dir.filename().string();
        report::ClassRow row;
        row.student = name;
        row.report = report::from_json(nlohmann::json::parse(files::read_text(file)));
        row.submitted_at = row.report.submitted_at;
        dir_of[name] = dir;
        rows.push_back(std::move(row));
      } catch (const std::exception& error) {
        say(file.string() + " cannot be read (" + error.what() + "); left out of the gradebook");
      }
    }
  }

  // The roster and the late policy kept in the results folder (class_policy.h); a broken one
  // leaves the gradebook without it, said once, rather than without a gradebook.
  ClassPolicy policy;
  std::optional<Roster> roster;
  try {
    policy = read_policy(out_dir);
    roster = read_kept_roster(out_dir);
  } catch (const std::exception& error) {
    say(std::string(error.what()) + "; the gradebook is written without it");
  }
  if (roster) {
    std::vector<std::string> unlisted;
    std::set<const RosterEntry*> matched;  // by folder, login, ID, email or name (Roster::find)
    for (auto& row : rows) {
      const RosterEntry* entry = roster->find(row.student);
      if (entry == nullptr || !matched.insert(entry).second) {
        unlisted.push_back(row.student);
        continue;
      }
      take_roster_entry(row, *entry);
      if (const auto when = parse_time(entry->submitted)) row.submitted_at = utc_stamp(*when);  // the platform's record
    }
    for (const auto& entry : roster->entries) {
      if (matched.count(&entry) > 0) continue;
      report::ClassRow row;
      row.student = entry.key();
      row.submitted = false;
      take_roster_entry(row, entry);
      rows.push_back(std::move(row));
    }
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.student < b.student; });
    if (!unlisted.empty()) {
      std::string names;
      for (const auto& name : unlisted) names += (names.empty() ? "" : ", ") + name;
      say("not on the roster (no ID in the gradebook, left out of the platform exports' matching): " + names);
    }
  }
  for (auto& row : rows) {
    if (!row.submitted) continue;
    const Lateness late = lateness(policy.late, row.submitted_at);
    row.days_late = late.days;
    row.late_share = late.share;
    row.lateness_unknown = late.unknown;
  }
  // The feedback tells a student of the due date: when, when they submitted, how late, the penalty.
  // Written again only where it changes (a due date set, changed or forgotten).
  for (const auto& row : rows) {
    const auto dir = dir_of.find(row.student);
    if (!row.submitted || dir == dir_of.end()) continue;
    try {
      std::error_code missing;
      const fs::path md = dir->second / "feedback.md";
      const std::string before = fs::is_regular_file(md, missing) ? files::read_text(md) : "";
      if (!policy.late.due && before.find("\n**Due date:**") == std::string::npos) continue;
      report::LateNote note;
      if (policy.late.due) {
        note.due = utc_stamp(*policy.late.due);
        note.submitted = row.submitted_at;
        note.days_late = row.days_late;
        note.unknown = row.lateness_unknown;
        note.percent_per_day = policy.late.percent_per_day;
        note.limit_days = policy.late.limit_days.value_or(-1);
        note.penalty = row.late_penalty();
        note.after_penalty = row.final_points();
      }
      const report::LateNote* late = policy.late.due ? &note : nullptr;
      const auto pictures = pictures_in(dir->second, row.report);
      const std::string after = report::to_feedback_markdown(row.report, row.student, pictures, late);
      if (after == before) continue;
      files::write_whole(md, after);
      files::write_whole(dir->second / "feedback.html", report::to_feedback_html(row.report, row.student, pictures, late));
    } catch (const std::exception& error) {
      say(row.student + ": the feedback cannot be given its due date (" + error.what() + ")");
    }
  }

  files::write_whole(out_dir / "gradebook.csv",
                     report::to_gradebook_csv(rows, {roster.has_value(), policy.late.due.has_value()}));
  std::error_code ignored;
  fs::create_directories(out_dir / "histograms", ignored);
  for (const auto& [key, svg] : report::to_score_histograms(rows))
    files::write_whole(out_dir / report::histogram_file(key), svg);
  files::write_whole(out_dir / "summary.md", report::to_class_summary(rows, true));
  // The platforms match students by ID: without a roster there is nothing to match by.
  for (const char* name : {"gradebook-canvas.csv", "gradebook-moodle.csv"}) fs::remove(out_dir / name, ignored);
  if (roster) {
    files::write_whole(out_dir / "gradebook-canvas.csv", report::to_canvas_csv(rows, policy.assignment));
    files::write_whole(out_dir / "gradebook-moodle.csv", report::to_moodle_csv(rows, policy.assignment));
  }
  return rows;
}

std::vector<std::string> gpu_devices(int gpus, const char* visible) {
  std::vector<std::string> devices;
  if (gpus <= 1) return devices;
  if (visible == nullptr) {
    for (int i = 0; i < gpus; ++i) devices.push_back(std::to_string(i));
    return devices;
  }
  std::vector<std::string> listed;
  std::istringstream list(visible);
  for (std::string entry; std::getline(list, entry, ',');) {
    const auto first = entry.find_first_not_of(" \t");
    if (first != std::string::npos) listed.push_back(entry.substr(first, entry.find_last_not_of(" \t") - first + 1));
  }
  if (listed.size() < static_cast<std::size_t>(gpus)) {
    throw std::invalid_argument("--gpus " + std::to_string(gpus) + " asks for more GPUs than CUDA_VISIBLE_DEVICES=\"" +
                                visible + "\" lists (" + std::to_string(listed.size()) + ")");
  }
  listed.resize(static_cast<std::size_t>(gpus));
  return listed;
}

std::vector<StudentResult> grade_class(const std::vector<Submission>& submissions,
                                       const std::vector<const manifest::Exercise*>& exercises,
                                       const manifest::Workbook& book, const fs::path& project_root,
                                       const grading::Toolchain& toolchain, const BatchOptions& options) {
  std::vector<StudentResult> results(submissions.size());
  std::mutex out_mutex;
  const auto say = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(out_mutex);
    if (options.log) options.log(line);
  };
  // A slot per submission graded at once: share_gpu of them on each GPU (slot s on GPU s % gpus),
  // taking turns at the GPU through its GpuTurns.
  const int gpu_count = std::max(1, options.gpus);
  Slots gpus(gpu_count * std::max(1, options.share_gpu));
  std::vector<grading::GpuTurns> turns(static_cast<std::size_t>(gpu_count));
  // The speed checks' baselines, timed once per GPU for this grading of the class (harness/speed.h).
  const fs::path baseline_cache = options.out_dir / "baseline-times";
  std::error_code cache_error;
  fs::remove_all(baseline_cache, cache_error);
  fs::create_directories(baseline_cache, cache_error);
  const bool cache_made = !cache_error;  // without it, every submission times its baselines
  // One device per slot; without a full list, the slot numbers.
  const std::vector<std::string> devices = options.devices.size() >= static_cast<std::size_t>(std::max(1, options.gpus))
                                               ? options.devices
                                               : gpu_devices(options.gpus, nullptr);
  std::atomic<std::size_t> next{0};
  // The GPUs whose baselines a submission times while it builds: the first submissions to build
  // claim one GPU each (not the one they are graded on later), and time its baselines with that
  // GPU alone, through its turns; so only where submissions take turns (--share-gpu 2 or more).
  // The first builds come before any check, so the GPUs are mostly idle then.
  std::vector<bool> baselines_claimed(static_cast<std::size_t>(gpu_count), false);
  const auto claim_baselines = [&]() -> int {
    std::lock_guard<std::mutex> lock(out_mutex);
    if (!cache_made || options.share_gpu < 2) return -1;
    for (std::size_t gpu = 0; gpu < baselines_claimed.size(); ++gpu) {
      if (baselines_claimed[gpu]) continue;
      baselines_claimed[gpu] = true;
      return static_cast<int>(gpu);
    }
    return -1;
  };

  const auto grade_one = [&](const Submission& submission, StudentResult& result) {
    result.name = submission.name;
    const std::string folder = student_folder(submission.name);
    const fs::path student_dir = options.out_dir / "students" / folder;
    const bool asked = options.force || std::find(options.regrade.begin(), options.regrade.end(), submission.name) !=
                                            options.regrade.end();
    std::optional<grading::GradeReport> kept_whole;  // with --only: the rest of the grade, kept
    if (!asked && fs::exists(student_dir / "result.json")) {
      auto kept = kept_result(student_dir);
      if (kept && options.only) {
        kept_whole = kept;
        say(submission.name + ": grading the chosen exercises (--only) again; the rest of the earlier grade is kept");
      } else if (kept && !grades_all_of(*kept, exercises)) {
        say(submission.name + ": graded before on only some of these exercises (--only); grading again");
      } else if (kept) {
        result.report = *kept;
        result.reused = true;
        say(submission.name + ": graded before (kept; --force grades again)");
        return;
      } else {
        say(submission.name + ": the earlier result is not the one the grader wrote, or cannot be read; grading again");
      }
    }
    const fs::path work = options.out_dir / "work" / folder;
    auto start = Clock::now();
    const auto student_start = start;
    const CleanCopy copy = make_clean_copy(submission, exercises, book, work);
    grading::GradeReport report;
    std::map<std::string, std::string> svgs;
    if (!copy.problem.empty()) {
      report = failed_report(exercises, copy.problem);
      result.prepare_seconds = since(start);
    } else if (std::all_of(exercises.begin(), exercises.end(), [](const auto* e) { return e->is_quiz(); })) {
      // Quizzes only: nothing to configure or build.
      for (const auto* e : exercises) report.exercises.push_back(quiz::grade(*e, copy.dir));
      result.prepare_seconds = since(start);
    } else {
      // A fresh tree every time: a regrade must not configure or read a tree that the submission's
      // programs have written to before.
      std::error_code ignored;
      fs::remove_all(work / "build", ignored);
      grading::BuildTree tree(project_root, work / "build", toolchain);
      const auto configured = tree.configure(
          copy.dir, {"-DCDPLAB_BUILD_TOOLS=OFF", "-DCDPLAB_BUILD_TESTS=OFF", "-DCDPLAB_BUILD_DOCS=OFF"});
      result.prepare_seconds = since(start);
      if (!configured.ok()) {
        report = failed_report(exercises, "the build could not be configured (" + configured.describe() + "):\n" +
                                              first_lines(configured.output, 20));
      } else {
        // Configured outside the box (CMake reads no file of the student's); built and run inside.
        tree.set_budgeted(true);
        if (options.sandbox) {
          tree.set_sandbox(sandbox::submission_box(*options.sandbox, toolchain, copy.dir, work / "build"));
          tree.set_check_boxes(sandbox::check_box(*options.sandbox, toolchain),
                               sandbox::host_parts_box(toolchain, work / "build"));
        }
        say(submission.name + ": building");
        start = Clock::now();
        std::future<int> baselines;  // its destructor waits, whatever happens to the build
        if (const int gpu = claim_baselines(); gpu >= 0) {
          grading::GradeOptions timing = options.grade;
          timing.baseline_cache = baseline_cache.string();
          timing.gpu_turns = &turns[static_cast<std::size_t>(gpu)];
          if (!devices.empty()) timing.env["CUDA_VISIBLE_DEVICES"] = devices[static_cast<std::size_t>(gpu)];
          baselines = std::async(std::launch::async, [&exercises, &tree, timing] {
            return grading::time_baselines(exercises, tree, timing);
          });
        }
        // Before a GPU is taken; grade_all takes its outcome and builds nothing again.
        const bool built = grading::build_all(exercises, tree, options.grade);
        if (baselines.valid()) baselines.wait();
        result.build_seconds = since(start);

        const int slot = gpus.acquire();
        const auto gpu = static_cast<std::size_t>(slot % gpu_count);
        start = Clock::now();
        grading::GradeOptions grade = options.grade;
        grade.seed = grading::fresh_seed();
        grade.built = built;
        if (options.share_gpu > 1) grade.gpu_turns = &turns[gpu];
        if (cache_made) grade.baseline_cache = baseline_cache.string();
        if (!devices.empty()) grade.env["CUDA_VISIBLE_DEVICES"] = devices[gpu];
        try {
          report = grading::grade_all(exercises, tree, grade, submission.source.string());
        } catch (...) {
          gpus.release(slot);
          throw;
        }
        gpus.release(slot);
        result.grade_seconds = since(start);
        svgs = launch_graph_pictures(tree, exercises, options.dot);
      }
    }
    if (kept_whole) report = merge_results(*kept_whole, report);
    report.source = submission.source.string();
    report.submitted_at = submission_time(submission.source, submission.archive);
    if (report.started_at.empty()) report.started_at = start_stamp();
    report.tool_version = options.tool_version;
    report.notes = copy.notes;
    // Gradescope's execution time is the student's whole grading, its build included.
    report.seconds = since(student_start);
    write_student_files(student_dir, submission.name, report, svgs, options.visibility);
    if (!options.keep_work) remove_build_leftovers(work, copy.dir);
    result.report = report;  // only once its files are written: a student without them is not graded
    char line[160];
    std::snprintf(line, sizeof line, ": graded %g/%g%s (prepare %.1f s, build %.1f s, grade %.1f s", report.points(),
                  report.max_points(), report.complete() ? "" : ", incomplete", result.prepare_seconds,
                  result.build_seconds, result.grade_seconds);
    say(submission.name + line + phase_list(report.phases) + ")");
  };

  const auto worker = [&] {
    for (std::size_t i = next++; i < submissions.size(); i = next++) {
      try {
        grade_one(submissions[i], results[i]);
      } catch (const std::exception& error) {
        // The grader's own trouble (a full disk): this student has no result; the batch goes on.
        say(submissions[i].name + ": not graded: " + error.what());
      }
      std::lock_guard<std::mutex> lock(out_mutex);
      try {
        write_class_reports(options.out_dir);
      } catch (const std::exception& error) {
        if (options.log) options.log(std::string("the gradebook cannot be written: ") + error.what());
      }
    }
  };
  const int workers = std::max(1, std::min<int>(options.parallel, static_cast<int>(submissions.size())));
  std::vector<std::thread> threads;
  for (int i = 0; i < workers; ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  fs::remove_all(baseline_cache, cache_error);
  return results;
}

}  // namespace cdplab::batch
