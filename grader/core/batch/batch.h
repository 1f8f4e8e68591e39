/// @file batch.h
/// @brief Grading a class: every submission of a folder in a build tree of its own, builds in
///        parallel, the GPU checks of up to `share_gpu` submissions at a time per GPU (what
///        needs the GPU alone takes turns), each result written as soon as it is known, and the
///        class's gradebook and summary.
///
/// The output folder holds:
/// - `students/<name>/`: result.json (the full report, cdplab-grade/1), results.json
///   (Gradescope), junit.xml, feedback.md, feedback.html, and launch-graph SVGs;
/// - `gradebook.csv` and `summary.md`, rewritten after every student;
/// - `work/<name>/`: the clean copy of the submission's files; with `keep_work` also its build
///   tree and what was written beside it (compiled PTX, observations, verdicts). Without it they
///   are deleted once the student's files are written: a regrade builds a fresh tree anyway, and a
///   class of two hundred would otherwise keep some 170 MB a student.
///
/// - `gradebook-canvas.csv` and `gradebook-moodle.csv` with a roster, `histograms/` (each
///   exercise's spread of scores), and the class policy (batch/class_policy.h).
///
/// A student whose result.json exists is not graded again unless asked (`force`, `regrade`), or
/// unless it lacks some exercise asked for now (grades_all_of): a result of an earlier `--only`
/// run is never kept as a whole grade.
#pragma once

#include "batch/submissions.h"
#include "grading/build_tree.h"
#include "grading/grade.h"
#include "manifest/manifest.h"
#include "report/report.h"
#include "sandbox/submission.h"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cdplab::batch {

struct BatchOptions {
  std::filesystem::path out_dir;        ///< where results go (see the file comment)
  std::string visibility = "visible";   ///< Gradescope's visibility of each student's results.json
  int parallel = 2;                     ///< submissions prepared and built at the same time
  int gpus = 1;                         ///< GPUs the checks run on
  /// Submissions whose checks run on one GPU at the same time; their speed checks, the suites that
  /// time the GPU and the baselines being timed still have the GPU alone (grading/gpu_turns.h)
  int share_gpu = 2;
  /// CUDA_VISIBLE_DEVICES for each GPU slot (gpu_devices); fewer than `gpus`: slot numbers when gpus > 1
  std::vector<std::string> devices;
  bool force = false;                   ///< grade every submission again
  bool keep_work = false;               ///< keep each student's build tree in work/ (see the file comment)
  std::vector<std::string> regrade;     ///< grade these students again
  /// The exercises were chosen (--only): a kept result is graded again on these exercises, and
  /// its other exercises are kept beside them (merge_results)
  bool only = false;
  grading::GradeOptions grade;          ///< time limits; the seed is fresh for every run
  std::string tool_version;
  std::string dot = "dot";              ///< Graphviz, for the launch-graph pictures ("" for none)
  /// Set: every submission is built and its programs run in a box of its own
  /// (sandbox::submission_box with this kit); std::nullopt: with the grader's own rights.
  std::optional<sandbox::Kit> sandbox;
  /// Called with one line per event ("alice: graded 37/40"); from several threads, one at a time.
  std::function<void(const std::string&)> log;
};

/// The device each of `gpus` GPU slots runs its checks on, as a CUDA_VISIBLE_DEVICES value:
/// the first `gpus` entries of `visible` (the inherited CUDA_VISIBLE_DEVICES, for example the
/// GPUs a scheduler gave the job), or "0" .. "gpus-1" when `visible` is null. Empty for one GPU:
/// the checks then inherit the environment as it is. Throws std::invalid_argument when
/// `visible` lists fewer devices than `gpus`.
std::vector<std::string> gpu_devices(int gpus, const char* visible);

/// One student's outcome in a batch.
struct StudentResult {
  std::string name;
  bool reused = false;            ///< graded by an earlier run (its result.json was kept)
  grading::GradeReport report;
  double prepare_seconds = 0;     ///< unpacking, copying, configuring
  double build_seconds = 0;       ///< compiling every exercise and suite
  double grade_seconds = 0;       ///< rules, checks, quizzes (mostly GPU time)
};

/// Grades `submissions` (from find_submissions) on the `exercises` of `book`. Never throws for
/// a submission's own failures: they are in its report.
std::vector<StudentResult> grade_class(const std::vector<Submission>& submissions,
                                       const std::vector<const manifest::Exercise*>& exercises,
                                       const manifest::Workbook& book, const std::filesystem::path& project_root,
                                       const grading::Toolchain& toolchain, const BatchOptions& options);

/// Reads every students/<folder>/result.json below `out_dir` (the student's name from the
/// folder's student.txt) and writes gradebook.csv and summary.md from them. Returns the rows
/// (unreadable results are skipped with a log line).
std::vector<report::ClassRow> write_class_reports(const std::filesystem::path& out_dir,
                                                  const std::function<void(const std::string&)>& log = {});

/// Writes one student's files (student.txt: the name as it is; result.json, results.json,
/// junit.xml, feedback.md/.html and the pictures) into `dir`, and the digest of its result.json
/// beside the class's results (kept_result_digest). `svgs` maps "chapter/stem" to an SVG document.
void write_student_files(const std::filesystem::path& dir, const std::string& student,
                         const grading::GradeReport& report, const std::map<std::string, std::string>& svgs,
                         const std::string& visibility = "visible");

/// The result a run of the class grader kept for a student whose folder is `dir`
/// (students/<folder>), when the grader wrote it: its result.json matches the digest the grader
/// wrote beside the class's results (digests/<folder>) when it graded that student. std::nullopt
/// for anything else (no result, no digest, another content, unreadable): that student is graded
/// again.
std::optional<grading::GradeReport> kept_result(const std::filesystem::path& dir);

/// Whether `report` grades every one of `exercises`: a kept result of an earlier `--only` run
/// lacks some of a whole grading's exercises, so the student is graded again rather than kept;
/// a whole result kept through an `--only` run stays whole.
bool grades_all_of(const grading::GradeReport& report, const std::vector<const manifest::Exercise*>& exercises);

/// `kept` with the exercises of `fresh` in place of its own (those it lacks added at the end):
/// an `--only` run regrades its exercises and keeps the rest of a whole grade.
grading::GradeReport merge_results(const grading::GradeReport& kept, const grading::GradeReport& fresh);

/// The launch graphs of a graded build tree as SVG documents ("chapter/stem" -> SVG), drawn
/// with Graphviz (`dot`); exercises without PTX, and all of them when `dot` is missing, have none.
std::map<std::string, std::string> launch_graph_pictures(const grading::BuildTree& tree,
                                                         const std::vector<const manifest::Exercise*>& exercises,
                                                         const std::string& dot);

}  // namespace cdplab::batch
