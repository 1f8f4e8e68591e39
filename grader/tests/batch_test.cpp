// Grading a class: finding submissions, clean copies of folders and archives (unsafe ones
// refused), the gradebook, feedback pages and class summary, grade_class on quizzes (no build
// needed), and the Slurm mode: its scripts, sbatch and squeue (played by small stand-in scripts
// here; grader/tests/slurm/run-test.sh runs a real Slurm), and the cdplab command line.
#include "batch/archive.h"
#include "batch/batch.h"
#include "batch/slurm.h"
#include "batch/submissions.h"
#include "files/files.h"
#include "process/process.h"
#include "report/report.h"
#include "class_fixtures.h"
#include "test_folders.h"

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace cdplab;
using batch::Submission;
using grading::ExerciseResult;
using grading::GradeReport;
using grading::Item;
using grading::ItemKind;
using grading::Outcome;
using namespace cdplab::testing;

namespace {

const fs::path kWork = fs::path(CDPLAB_TEST_BINARY_DIR) / "batch-cases";
const fs::path kRoot = CDPLAB_SOURCE_DIR;
const std::string kCMake = CDPLAB_CMAKE;

fs::path fresh_dir(const std::string& name) { return cdplab::testing::empty_folder(kWork / name); }

void write(const fs::path& file, const std::string& text) { cdplab::testing::write_file(file, text); }

/// A shell script, executable.
void write_script(const fs::path& file, const std::string& body) {
  write(file, "#!/bin/bash\n" + body);
  fs::permissions(file, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec, fs::perm_options::replace);
}

/// Runs `cmake -E tar ARGS` in `dir`; REQUIREs success.
void cmake_tar(const fs::path& dir, std::vector<std::string> args) {
  args.insert(args.begin(), {kCMake, "-E", "tar"});
  const auto result = process::run(args, {dir.string(), {}, 60});
  INFO(result.output);
  REQUIRE(result.ok());
}

/// A .tar archive of one file named `member` exactly (an absolute path, say), written by hand:
/// archivers refuse to make the archives an attacker would.
void write_tar(const fs::path& archive, const std::string& member, const std::string& content) {
  std::string header(512, '\0');
  const auto put = [&](std::size_t at, const std::string& text) { header.replace(at, text.size(), text); };
  char octal[16];
  put(0, member);
  put(100, "0000644");
  put(108, "0000000");
  put(116, "0000000");
  std::snprintf(octal, sizeof octal, "%011o", static_cast<unsigned>(content.size()));
  put(124, octal);
  put(136, "00000000000");
  put(148, "        ");  // the checksum counts its own field as blanks
  header[156] = '0';      // a regular file
  put(257, std::string("ustar\0" "00", 8));
  unsigned sum = 0;
  for (const unsigned char c : header) sum += c;
  std::snprintf(octal, sizeof octal, "%06o", sum);
  put(148, octal);
  header[154] = '\0';
  header[155] = ' ';
  std::string body = content;
  body.resize((content.size() + 511) / 512 * 512, '\0');
  write(archive, header + body + std::string(1024, '\0'));
}

/// Every regular file below `dir`, relative and sorted.
std::vector<std::string> files_below(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) out.push_back(fs::relative(entry.path(), dir).generic_string());
  std::sort(out.begin(), out.end());
  return out;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return contains(l, part); });
}


}  // namespace

// ---- submissions and clean copies ------------------------------------------------------------

TEST_CASE("batch archive members must stay inside their folder") {
  using batch::is_safe_member;
  CHECK(is_safe_member("09-sample/sample.cu"));
  CHECK(is_safe_member("./09-sample/sample.cu"));
  CHECK(is_safe_member("a..b/c"));  // dots inside a name are harmless
  CHECK_FALSE(is_safe_member(""));
  CHECK_FALSE(is_safe_member("../sample.cu"));
  CHECK_FALSE(is_safe_member("09-sample/../../sample.cu"));
  CHECK_FALSE(is_safe_member("/etc/passwd"));
  CHECK_FALSE(is_safe_member("C:/Windows/x.cu"));
  CHECK_FALSE(is_safe_member("09-sample\\..\\x.cu"));
}

TEST_CASE("batch find_submissions takes folders and archives, sorted, and ignores the rest") {
  const fs::path dir = fresh_dir("find");
  fs::create_directories(dir / "carol");
  fs::create_directories(dir / ".hidden");
  for (const char* file : {"alice.zip", "bob.tar.gz", "dave.tgz", "erin.tar", "notes.txt", ".trash.zip", "frank.rar"})
    write(dir / file, "x");
  const auto found = batch::find_submissions(dir);
  std::vector<std::string> names;
  for (const auto& s : found) names.push_back(s.name);
  CHECK(names == std::vector<std::string>{"alice", "bob", "carol", "dave", "erin"});
  for (const auto& s : found) {
    INFO(s.name);
    CHECK(s.archive == (s.name != "carol"));
    CHECK(s.source.parent_path() == dir);
  }
}

TEST_CASE("batch find_submissions refuses two submissions of one student") {
  const fs::path dir = fresh_dir("find-twice");
  fs::create_directories(dir / "alice");
  write(dir / "alice.zip", "x");
  try {
    batch::find_submissions(dir);
    FAIL("no error for alice/ and alice.zip");
  } catch (const std::runtime_error& error) {
    CHECK(contains(error.what(), "alice"));
  }
}

TEST_CASE("batch clean copy of a folder holds only the manifest's files") {
  const auto book = sample_book();
  const auto exercises = book.exercises();
  const fs::path dir = fresh_dir("copy-folder");
  const fs::path alice = dir / "class" / "alice";
  write(alice / "09-sample/sample.cu", "__global__ void k() {}\n");
  write(alice / "09-sample/quiz.toml", kRightAnswers);
  write(alice / "09-sample/extra.cu", "not in the manifest");
  write(alice / "09-sample/sub/sample.cu", "a nested copy");
  write(alice / "09-sample/build/sample.o", "object");
  write(alice / "notes.txt", "notes");
  const Submission submission{"alice", alice, false};

  auto copy = batch::make_clean_copy(submission, exercises, book, dir / "work");
  CHECK(copy.problem.empty());
  CHECK(copy.notes.empty());
  CHECK(files_below(copy.dir) == std::vector<std::string>{"09-sample/quiz.toml", "09-sample/sample.cu"});
  CHECK(files::read_text(copy.dir / "09-sample/sample.cu") == "__global__ void k() {}\n");

  // A second copy replaces the first: a file gone from the submission is gone from the copy.
  fs::remove(alice / "09-sample/sample.cu");
  copy = batch::make_clean_copy(submission, exercises, book, dir / "work");
  CHECK(files_below(copy.dir) == std::vector<std::string>{"09-sample/quiz.toml"});
}

TEST_CASE("batch clean copy unpacks a zip with the layout three folders deep") {
  const auto book = sample_book();
  const auto exercises = book.exercises();
  const fs::path dir = fresh_dir("copy-zip");
  const fs::path stage = dir / "stage";
  write(stage / "wrap/alice/chapters/09-sample/sample.cu", "the work");
  write(stage / "wrap/alice/chapters/09-sample/quiz.toml", kRightAnswers);
  write(stage / "wrap/alice/chapters/README.md", "not copied");
  // macOS adds resource forks; never taken for the work even when named like a chapter.
  write(stage / "__MACOSX/09-sample/sample.cu", "a resource fork");
  cmake_tar(stage, {"cf", (dir / "alice.zip").string(), "--format=zip", "wrap", "__MACOSX"});

  const auto copy = batch::make_clean_copy({"alice", dir / "alice.zip", true}, exercises, book, dir / "work");
  CHECK(copy.problem.empty());
  CHECK(files_below(copy.dir) == std::vector<std::string>{"09-sample/quiz.toml", "09-sample/sample.cu"});
  CHECK(files::read_text(copy.dir / "09-sample/sample.cu") == "the work");
  CHECK_FALSE(fs::exists(dir / "work" / "unpacked"));  // cleaned up

  // One folder deeper is too deep.
  write(stage / "deeper/wrap/alice/chapters/09-sample/sample.cu", "too deep");
  cmake_tar(stage, {"cf", (dir / "deep.zip").string(), "--format=zip", "deeper"});
  const auto deep = batch::make_clean_copy({"deep", dir / "deep.zip", true}, exercises, book, dir / "work2");
  CHECK(contains(deep.problem, "no chapter folder found"));
}

TEST_CASE("batch clean copy unpacks a .tar.gz") {
  const auto book = sample_book();
  const auto exercises = book.exercises();
  const fs::path dir = fresh_dir("copy-targz");
  write(dir / "stage/09-sample/quiz.toml", kOneWrong);
  cmake_tar(dir / "stage", {"czf", (dir / "bob.tar.gz").string(), "09-sample"});
  const auto copy = batch::make_clean_copy({"bob", dir / "bob.tar.gz", true}, exercises, book, dir / "work");
  CHECK(copy.problem.empty());
  CHECK(files_below(copy.dir) == std::vector<std::string>{"09-sample/quiz.toml"});
  CHECK(files::read_text(copy.dir / "09-sample/quiz.toml") == kOneWrong);
}

TEST_CASE("batch clean copy refuses archives whose paths leave their folder") {
  const auto book = sample_book();
  const auto exercises = book.exercises();
  const fs::path dir = fresh_dir("copy-unsafe");
  write(dir / "stage/inner/09-sample/quiz.toml", kRightAnswers);
  write(dir / "stage/escape.txt", "outside");
  cmake_tar(dir / "stage/inner", {"cf", (dir / "up.tar").string(), "09-sample", "../escape.txt"});
  const auto up = batch::make_clean_copy({"up", dir / "up.tar", true}, exercises, book, dir / "work-up");
  CHECK(contains(up.problem, "leaves its folder"));
  CHECK(contains(up.problem, "../escape.txt"));
  CHECK_FALSE(fs::exists(dir / "work-up" / "escape.txt"));  // where ../ from unpacked/ would land
  CHECK(files_below(up.dir).empty());

  const std::string target = (dir / "absolute-target.txt").string();
  write_tar(dir / "absolute.tar", target, "planted");
  const auto absolute = batch::make_clean_copy({"abs", dir / "absolute.tar", true}, exercises, book,
                                               dir / "work-abs");
  CHECK(contains(absolute.problem, "leaves its folder"));
  CHECK_FALSE(fs::exists(target));
}

TEST_CASE("batch clean copy leaves out links and oversized files with a note") {
  const auto book = sample_book();
  const auto exercises = book.exercises();
  const fs::path dir = fresh_dir("copy-links");
  write(dir / "secret.txt", "not the student's");

  // A linked exercise file, and one over the size limit.
  const fs::path alice = dir / "class/alice";
  fs::create_directories(alice / "09-sample");
  fs::create_symlink(dir / "secret.txt", alice / "09-sample/sample.cu");
  write(alice / "09-sample/quiz.toml", std::string(batch::kMaxExerciseFileBytes + 1, '#'));
  const auto copy = batch::make_clean_copy({"alice", alice, false}, exercises, book, dir / "work-a");
  CHECK(copy.problem.empty());
  CHECK(files_below(copy.dir).empty());
  CHECK(any_contains(copy.notes, "09-sample/sample.cu is not a regular file"));
  CHECK(any_contains(copy.notes, "09-sample/quiz.toml is larger than"));

  // A linked chapter folder.
  write(dir / "elsewhere/09-sample/sample.cu", "someone else's work");
  const fs::path bob = dir / "class/bob";
  fs::create_directories(bob);
  fs::create_directory_symlink(dir / "elsewhere/09-sample", bob / "09-sample");
  const auto linked = batch::make_clean_copy({"bob", bob, false}, exercises, book, dir / "work-b");
  CHECK(files_below(linked.dir).empty());
  CHECK(any_contains(linked.notes, "09-sample is a link"));

  // A link inside an archive refuses the archive: nothing of it is unpacked through a link.
  fs::create_directories(dir / "stage/09-sample");
  fs::create_symlink(dir / "secret.txt", dir / "stage/09-sample/sample.cu");
  cmake_tar(dir / "stage", {"cf", (dir / "carol.tar").string(), "09-sample"});
  const auto packed = batch::make_clean_copy({"carol", dir / "carol.tar", true}, exercises, book, dir / "work-c");
  CHECK(contains(packed.problem, "09-sample/sample.cu is a symbolic link"));
  CHECK(files_below(packed.dir).empty());
}

TEST_CASE("batch archives: links, special files, bombs and too many members are refused by name") {
  const fs::path dir = fresh_dir("archive-rules");
  const fs::path victim = dir / "victim";  // another student's folder, outside the archive's
  fs::create_directories(victim);
  write(victim / "result.json", "kept");
  const auto unpack = [&](const fs::path& archive, const batch::UnpackLimits& limits = {}) {
    const fs::path into = dir / ("into-" + archive.stem().string());
    fs::remove_all(into);
    return batch::unpack_archive(archive, into, limits);
  };
  const auto tar = [&](const fs::path& stage, const std::vector<std::string>& args) {
    cdplab::process::Options options;
    options.working_directory = stage.string();
    std::vector<std::string> argv{"tar"};
    argv.insert(argv.end(), args.begin(), args.end());
    REQUIRE(cdplab::process::run(argv, options).ok());
  };

  // A folder that is a link up and out, then a file written "inside" it.
  fs::create_directories(dir / "s1");
  fs::create_directory_symlink("../../..", dir / "s1/up");
  tar(dir / "s1", {"cf", (dir / "up.tar").string(), "up"});
  write(dir / "s1b/up/victim/result.json", "forged");
  tar(dir / "s1b", {"rf", (dir / "up.tar").string(), "up/victim/result.json"});
  CHECK(contains(unpack(dir / "up.tar"), "up is a symbolic link (to ../../..)"));
  CHECK(files::read_text(victim / "result.json") == "kept");

  // A hard link to a file of the grading machine.
  fs::create_directories(dir / "s2");
  write(dir / "s2/a.cu", "mine");
  fs::create_hard_link(dir / "s2/a.cu", dir / "s2/b.cu");
  tar(dir / "s2", {"cf", (dir / "hard.tar").string(), "a.cu", "b.cu"});
  CHECK(contains(unpack(dir / "hard.tar"), "b.cu is a hard link (to a.cu)"));

  // A FIFO.
  fs::create_directories(dir / "s3");
  REQUIRE(::mkfifo((dir / "s3/pipe").c_str(), 0600) == 0);
  tar(dir / "s3", {"cf", (dir / "fifo.tar").string(), "pipe"});
  CHECK(contains(unpack(dir / "fifo.tar"), "pipe is a FIFO"));

  // A bomb: a file far larger unpacked than packed, and a total over the limit.
  fs::create_directories(dir / "s4");
  write(dir / "s4/zeros", std::string(3 << 20, '\0'));
  write(dir / "s4/more", std::string(3 << 20, '\0'));
  tar(dir / "s4", {"czf", (dir / "bomb.tar.gz").string(), "zeros", "more"});
  CHECK(fs::file_size(dir / "bomb.tar.gz") < (64 << 10));
  batch::UnpackLimits small;
  small.file_bytes = 2 << 20;
  CHECK(contains(unpack(dir / "bomb.tar.gz", small), "zeros is larger than 2 MiB (the limit for one file)"));
  batch::UnpackLimits total;
  total.total_bytes = 4 << 20;
  CHECK(contains(unpack(dir / "bomb.tar.gz", total), "unpacks to more than 4 MiB (the limit for a whole archive)"));
  batch::UnpackLimits few;
  few.members = 1;
  CHECK(contains(unpack(dir / "bomb.tar.gz", few), "more than 1 files and folders"));
  CHECK(unpack(dir / "bomb.tar.gz").empty());  // within the default limits

  // Not an archive at all.
  write(dir / "broken.zip", "not a zip");
  CHECK(contains(unpack(dir / "broken.zip"), "cannot be read"));
}

// ---- class reports ----------------------------------------------------------------------------

TEST_CASE("batch gradebook escapes fields, puts the maxima in the headings and keeps the columns in order") {
  const std::vector<report::ClassRow> rows = {
      {"Smith, Jane", report_of({exercise("b", {item(ItemKind::check, "x", Outcome::passed, 2, 2)})})},
      {"O\"Brien", report_of({exercise("a", {item(ItemKind::check, "y", Outcome::failed, 0, 3)}),
                              exercise("b", {item(ItemKind::check, "x", Outcome::passed, 1.5, 2)})})},
      {"skipper", report_of({exercise("a", {item(ItemKind::check, "y", Outcome::skipped, 0, 3)})})},
  };
  const auto lines = csv_lines(report::to_gradebook_csv(rows));
  REQUIRE(lines.size() == 4);  // one row per student, nothing else
  CHECK(lines[0] == "student,09-sample/b (max 2),09-sample/a (max 3),total,max,status");  // in the order first seen
  CHECK(lines[1] == "\"Smith, Jane\",2,,2,2,partial");  // no column a: an empty cell, graded on part
  CHECK(lines[2] == "\"O\"\"Brien\",1.5,0,1.5,5,final");
  CHECK(lines[3] == "skipper,,0,0,3,partial");
}

TEST_CASE("batch feedback pages keep hostile feedback inert") {
  const std::string hostile = "```\n# not a heading\n<script>alert(1)</script>\n````\n";
  const auto r = report_of({exercise("a", {item(ItemKind::check, "tricky | name", Outcome::failed, 0, 1, hostile),
                                           item(ItemKind::rule, "fine", Outcome::passed, 1, 1)})});
  const std::string md = report::to_feedback_markdown(r, "eve<script>", {});
  // The feedback sits in a fence longer than any run of backquotes in it, so it cannot end early.
  const std::size_t open = md.find("`````text\n");
  REQUIRE(open != std::string::npos);
  const std::size_t body = open + std::string("`````text\n").size();
  CHECK(md.compare(body, hostile.size(), hostile) == 0);
  CHECK(md.compare(body + hostile.size(), 6, "`````\n") == 0);
  CHECK(contains(md, "tricky \\| name"));  // a table cell keeps its columns
  CHECK(contains(md, "Hint: Read the lesson again."));

  const std::string html = report::to_feedback_html(r, "eve<script>", {});
  CHECK_FALSE(contains(html, "<script"));
  CHECK(contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
  CHECK(contains(html, "Feedback for eve&lt;script&gt;"));
}

TEST_CASE("batch feedback pages give a repeated feedback once and name it after that") {
  const std::string reason = "no usable CUDA GPU: no NVIDIA GPU was found; GPU checks were skipped, not passed";
  const auto r = report_of({exercise("a", {item(ItemKind::check, "first", Outcome::skipped, 0, 1, reason),
                                           item(ItemKind::check, "second", Outcome::skipped, 0, 1, reason)}),
                            exercise("b", {item(ItemKind::check, "third", Outcome::skipped, 0, 1, reason),
                                           item(ItemKind::check, "own", Outcome::failed, 0, 1, "wrong value")})});
  const auto count = [](const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
  };
  const std::string md = report::to_feedback_markdown(r, "sam", {});
  CHECK(count(md, "no NVIDIA GPU was found") == 1);
  CHECK(count(md, "as for 09-sample/a, first, above") == 2);
  CHECK(contains(md, "wrong value"));
  const std::string html = report::to_feedback_html(r, "sam", {});
  CHECK(count(html, "no NVIDIA GPU was found") == 1);
  CHECK(count(html, "As for 09-sample/a, first, above.") == 2);
}

TEST_CASE("batch class summary gives the spread, the exercises and the problems") {
  auto broken = exercise("b", {item(ItemKind::check, "x", Outcome::failed, 0, 2)});
  broken.problem = "does not compile: sample.cu:3: error";
  const std::vector<report::ClassRow> rows = {
      {"alice", report_of({exercise("a", {item(ItemKind::check, "y", Outcome::passed, 2, 2)}),
                           exercise("b", {item(ItemKind::check, "x", Outcome::passed, 2, 2)})})},
      {"bob", report_of({exercise("a", {item(ItemKind::check, "y", Outcome::failed, 0, 2)}),
                         exercise("b", {item(ItemKind::check, "x", Outcome::passed, 2, 2)})})},
      {"carol", report_of({exercise("a", {item(ItemKind::check, "y", Outcome::failed, 0, 2)}), broken})},
  };
  const std::string summary = report::to_class_summary(rows);
  CHECK(contains(summary, "- students graded: 3\n"));
  CHECK(contains(summary, "mean 50.0 %, median 50.0 %, lowest 0.0 %, highest 100.0 %"));
  CHECK(contains(summary, "| 90-100 % | 1 # |"));
  CHECK(contains(summary, "| 50-59 % | 1 # |"));
  CHECK(contains(summary, "| 0-9 % | 1 # |"));
  CHECK(contains(summary, "| 09-sample/a | 33 % |"));
  CHECK(contains(summary, "| 09-sample/b | 67 % |"));
  CHECK(contains(summary, "| 09-sample/a: y | 2 |"));  // failed most often, first
  CHECK(contains(summary, "| carol | 09-sample/b | does not compile: sample.cu:3: error |"));
  CHECK_FALSE(contains(summary, "not final"));
}

// ---- GPUs of a class ------------------------------------------------------------------------------

TEST_CASE("batch gpu_devices gives each GPU slot a device, taken from an inherited CUDA_VISIBLE_DEVICES") {
  CHECK(batch::gpu_devices(1, nullptr).empty());  // one GPU: the environment stays as it is
  CHECK(batch::gpu_devices(1, "3").empty());
  CHECK(batch::gpu_devices(2, nullptr) == std::vector<std::string>{"0", "1"});
  // A scheduler's allocation: the slots use the GPUs it gave, not devices 0 and 1.
  CHECK(batch::gpu_devices(2, "2,3") == std::vector<std::string>{"2", "3"});
  CHECK(batch::gpu_devices(2, " 5 , 7 ,9") == std::vector<std::string>{"5", "7"});
  CHECK(batch::gpu_devices(2, "GPU-8f3a,MIG-1b2c") == std::vector<std::string>{"GPU-8f3a", "MIG-1b2c"});
  CHECK_THROWS_WITH_AS(batch::gpu_devices(3, "0,1"),
                       "--gpus 3 asks for more GPUs than CUDA_VISIBLE_DEVICES=\"0,1\" lists (2)", std::invalid_argument);
  CHECK_THROWS_AS(batch::gpu_devices(2, ""), std::invalid_argument);
  CHECK_THROWS_AS(batch::gpu_devices(2, " , "), std::invalid_argument);
}

// ---- grade_class on quizzes --------------------------------------------------------------------

TEST_CASE("batch grade_class grades quizzes without building and keeps results on a rerun") {
  const auto book = sample_book();
  const std::vector<const manifest::Exercise*> quiz = {&book.chapters[0].exercises[1]};
  const fs::path dir = fresh_dir("grade-class");
  const fs::path class_dir = dir / "class";
  write(class_dir / "alice/09-sample/quiz.toml", kRightAnswers);
  write(dir / "stage/09-sample/quiz.toml", kOneWrong);
  fs::create_directories(class_dir);
  cmake_tar(dir / "stage", {"czf", (class_dir / "bob.tar.gz").string(), "09-sample"});
  fs::create_directories(class_dir / "carol/09-sample");  // no answers file
  const auto submissions = batch::find_submissions(class_dir);
  REQUIRE(submissions.size() == 3);

  grading::Toolchain toolchain;
  toolchain.cmake = kCMake;
  batch::BatchOptions options;
  options.out_dir = dir / "out";
  options.parallel = 2;
  options.dot = "";
  std::vector<std::string> log;
  options.log = [&](const std::string& line) { log.push_back(line); };
  const auto grade = [&] { return batch::grade_class(submissions, quiz, book, kRoot, toolchain, options); };

  auto results = grade();
  REQUIRE(results.size() == 3);
  CHECK(results[0].name == "alice");
  CHECK(results[0].report.points() == 3);
  CHECK(results[1].report.points() == 2);
  CHECK(results[2].report.points() == 0);
  CHECK(contains(results[2].report.exercises.at(0).problem, "file missing"));
  for (const auto& r : results) {
    INFO(r.name);
    CHECK_FALSE(r.reused);
    CHECK(r.report.max_points() == 3);
    CHECK(r.build_seconds == 0);  // nothing was built
    for (const char* file : {"result.json", "results.json", "junit.xml", "feedback.md", "feedback.html"})
      CHECK(fs::exists(options.out_dir / "students" / r.name / file));
    CHECK(any_contains(log, r.name + ": graded"));
  }
  CHECK_FALSE(fs::exists(options.out_dir / "work" / "alice" / "build"));
  const auto lines = csv_lines(files::read_text(options.out_dir / "gradebook.csv"));
  CHECK(lines == std::vector<std::string>{"student,09-sample/quiz (max 3),total,max,status", "alice,3,3,3,final",
                                          "bob,2,2,3,final", "carol,0,0,3,final"});
  CHECK(contains(files::read_text(options.out_dir / "summary.md"), "- students graded: 3"));

  // alice changes her answers after grading: a rerun keeps her grade unless asked.
  write(class_dir / "alice/09-sample/quiz.toml", kOneWrong);
  const std::string alice_result = files::read_text(options.out_dir / "students/alice/result.json");
  results = grade();
  for (const auto& r : results) CHECK(r.reused);
  CHECK(results[0].report.points() == 3);
  CHECK(files::read_text(options.out_dir / "students/alice/result.json") == alice_result);

  options.regrade = {"alice"};
  results = grade();
  CHECK_FALSE(results[0].reused);
  CHECK(results[0].report.points() == 2);
  CHECK(results[1].reused);
  CHECK(results[2].reused);

  options.regrade.clear();
  options.force = true;
  results = grade();
  for (const auto& r : results) CHECK_FALSE(r.reused);
  CHECK(contains(files::read_text(options.out_dir / "gradebook.csv"), "alice,2,2,3,final"));
}

TEST_CASE("batch grade_class with --only grades the chosen exercises again and keeps the rest of the grade") {
  auto book = sample_book();
  manifest::Exercise second = book.chapters[0].exercises[1];
  second.id = "other-quiz";
  second.file = "other.toml";
  second.stem = "other";
  book.chapters[0].exercises.push_back(second);
  const auto& exercises = book.chapters[0].exercises;
  const std::vector<const manifest::Exercise*> both = {&exercises[1], &exercises[2]};
  const std::vector<const manifest::Exercise*> first_only = {&exercises[1]};
  const fs::path dir = fresh_dir("grade-only");
  const fs::path class_dir = dir / "class";
  write(class_dir / "alice/09-sample/quiz.toml", kRightAnswers);
  write(class_dir / "alice/09-sample/other.toml", kRightAnswers);
  const auto submissions = batch::find_submissions(class_dir);
  grading::Toolchain toolchain;
  toolchain.cmake = kCMake;
  batch::BatchOptions options;
  options.out_dir = dir / "out";
  options.dot = "";
  std::vector<std::string> log;
  options.log = [&](const std::string& line) { log.push_back(line); };
  auto results = batch::grade_class(submissions, both, book, kRoot, toolchain, options);
  REQUIRE(results.at(0).report.points() == 6);

  // The quiz is marked again (a changed answer key, say): --only regrades it, not "graded before (kept)".
  write(class_dir / "alice/09-sample/quiz.toml", kOneWrong);
  options.only = true;
  results = batch::grade_class(submissions, first_only, book, kRoot, toolchain, options);
  CHECK_FALSE(results.at(0).reused);
  CHECK_FALSE(any_contains(log, "graded before (kept"));
  REQUIRE(results.at(0).report.exercises.size() == 2);  // the other quiz is kept beside it
  CHECK(results.at(0).report.exercises[0].id == "sample-quiz");
  CHECK(results.at(0).report.exercises[0].points() == 2);
  CHECK(results.at(0).report.exercises[1].points() == 3);
  const auto lines = csv_lines(files::read_text(options.out_dir / "gradebook.csv"));
  REQUIRE(lines.size() == 2);
  CHECK(lines[1] == "alice,2,3,5,6,final");
}

// ---- Slurm: the pieces ---------------------------------------------------------------------------

TEST_CASE("slurm shell_quote gives bash the words back unchanged") {
  const std::vector<std::string> words = {"plain", "with blank", "it's", "$HOME `id` \"q\" \\ *", "two\nlines", "",
                                          "'"};
  std::string command = "printf '%s|'";
  std::string expected;
  for (const auto& w : words) {
    command += " " + batch::slurm::shell_quote(w);
    expected += w + "|";
  }
  const auto result = process::run({"bash", "-c", command});
  CHECK(result.ok());
  CHECK(result.output == expected);
}

TEST_CASE("slurm directives quote their values and refuse what sbatch cannot read") {
  using namespace batch::slurm;
  CHECK(directive("partition", "gpu") == "#SBATCH --partition=\"gpu\"\n");
  CHECK(directive("output", "/a b/\"c\"\\d") == "#SBATCH --output=\"/a b/\\\"c\\\"\\\\d\"\n");
  CHECK_THROWS_AS(directive("comment", "two\nlines"), Error);
  CHECK(extra_directive("--qos=normal") == "#SBATCH --qos=\"normal\"\n");
  CHECK(extra_directive("--comment=a b") == "#SBATCH --comment=\"a b\"\n");
  CHECK(extra_directive("--exclusive") == "#SBATCH --exclusive\n");
  for (const char* bad : {"qos=normal", "-q", "--", "--a b=c", "--x=1\n2", ""}) {
    INFO(bad);
    CHECK_THROWS_AS(extra_directive(bad), Error);
  }
  CHECK(output_pattern("/r/50%/logs") == "/r/50%%/logs");
  CHECK_THROWS_AS(output_pattern("/r/a\\b"), Error);
  CHECK(index_ranges({0, 1, 2}) == "0-2");
  CHECK(index_ranges({0, 2, 3, 4, 7}) == "0,2-4,7");
  CHECK(index_ranges({5}) == "5");
  CHECK(index_ranges({3, 4}) == "3-4");
  CHECK(index_ranges({}).empty());
  Resources resources;
  resources.sbatch_args = {"--qos=normal", "-x"};
  CHECK_THROWS_AS(check_resources(resources), Error);
  resources.sbatch_args = {"--qos=normal"};
  resources.mem = "8G\n";
  CHECK_THROWS_AS(check_resources(resources), Error);
}

TEST_CASE("slurm submissions.txt reads back and refuses names it cannot hold") {
  using namespace batch::slurm;
  const std::vector<Submission> submissions = {{"alice", "/c/alice", false}, {"o'hara x", "/c/o'hara x.zip", true}};
  const std::string text = listing(submissions);
  CHECK(text == "0\talice\t/c/alice\n1\to'hara x\t/c/o'hara x.zip\n");
  const auto back = read_listing(text);
  REQUIRE(back.size() == 2);
  CHECK(back[1].name == "o'hara x");
  CHECK(back[1].source == "/c/o'hara x.zip");
  CHECK(back[1].archive);  // not a folder
  CHECK_THROWS_AS(listing({{"tab\tbed", "/c/x", false}}), Error);
  CHECK_THROWS_AS(listing({{"new\nline", "/c/x", false}}), Error);
  CHECK_THROWS_AS(read_listing("1\talice\t/c/alice\n"), Error);  // indices start at 0
  CHECK_THROWS_AS(read_listing("0\talice\n"), Error);
}

TEST_CASE("slurm job ids are read from sbatch --parsable") {
  using batch::slurm::parse_job_id;
  CHECK(parse_job_id("123\n") == std::optional<std::string>("123"));
  CHECK(parse_job_id("123;cluster\n") == std::optional<std::string>("123"));
  CHECK(parse_job_id("sbatch: warning: no --time given\n45\n") == std::optional<std::string>("45"));
  CHECK_FALSE(parse_job_id(""));
  CHECK_FALSE(parse_job_id("Submitted batch job 12\n"));
}

TEST_CASE("slurm scripts run this cdplab with the class's arguments, quoted") {
  using namespace batch::slurm;
  const fs::path dir = fresh_dir("scripts") / "odd 'dir' 100%";
  // A stand-in for cdplab: writes its arguments, one per line.
  write_script(dir / "bin/cdplab", "printf '%s\\n' \"$@\" > \"$ARGS_FILE\"\n");
  Command command;
  command.cdplab = dir / "bin/cdplab";
  command.class_dir = dir / "class of 'it'";
  command.out_dir = dir / "out";
  command.only = {"streams-quiz", "child-grids"};
  command.force = true;
  command.regrade = {"o'hara", "-dash"};
  Resources resources;
  resources.partition = "gpu";
  resources.gres = "gpu:1";
  resources.time = "30:00";
  resources.cpus_per_task = 4;
  resources.mem = "8G";
  resources.account = "cs 101";
  resources.sbatch_args = {"--qos=normal"};
  const Layout layout(command.out_dir);
  const std::string grade = array_script(command, resources, {0, 1, 3}, layout);
  const std::string merge = merge_script(command, resources, layout);

  const std::string out_pattern = output_pattern(command.out_dir);
  const std::vector<std::string> expected_lines = {
      "#SBATCH --array=\"0-1,3\"",       "#SBATCH --output=\"" + out_pattern + "/slurm/logs/%a.out\"",
      "#SBATCH --chdir=\"" + command.out_dir.string() + "\"", "#SBATCH --partition=\"gpu\"",
      "#SBATCH --gres=\"gpu:1\"",        "#SBATCH --time=\"30:00\"",
      "#SBATCH --cpus-per-task=\"4\"",   "#SBATCH --mem=\"8G\"",
      "#SBATCH --account=\"cs 101\"",    "#SBATCH --qos=\"normal\""};
  for (const auto& line : expected_lines) {
    INFO(line);
    CHECK(contains(grade, line + "\n"));
  }
  CHECK(grade.find("--qos") > grade.find("--mem"));  // later lines override earlier ones
  CHECK(contains(merge, "#SBATCH --output=\"" + out_pattern + "/slurm/logs/merge.out\"\n"));
  CHECK(contains(merge, "#SBATCH --account=\"cs 101\"\n"));
  CHECK_FALSE(contains(merge, "--gres"));
  CHECK_FALSE(contains(merge, "--array"));

  // Run them as Slurm would, with the stand-in for cdplab.
  write(dir / "grade.sbatch", grade);
  write(dir / "merge.sbatch", merge);
  const fs::path args_file = dir / "args.txt";
  const auto run_script = [&](const std::string& script, const std::string& cpus) {
    fs::remove(args_file);
    process::Options options;
    options.env = {{"ARGS_FILE", args_file.string()}, {"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_CPUS_PER_TASK", cpus}};
    const auto result = process::run({"bash", (dir / script).string()}, options);
    INFO(result.output);
    CHECK(result.ok());
    std::vector<std::string> args;
    std::istringstream in(files::read_text(args_file));
    for (std::string line; std::getline(in, line);) args.push_back(line);
    return args;
  };
  const std::vector<std::string> task_args = {
      "-j", "4", "grade", command.class_dir.string(), "--out=" + command.out_dir.string(), "--slurm-task=3",
      "--only=streams-quiz", "--only=child-grids", "--force", "--regrade=o'hara", "--regrade=-dash"};
  CHECK(run_script("grade.sbatch", "4") == task_args);
  auto one_cpu = task_args;
  one_cpu[1] = "1";
  CHECK(run_script("grade.sbatch", "") == one_cpu);  // Slurm sets no count: one CPU
  CHECK(run_script("merge.sbatch", "4") == std::vector<std::string>{"-j", "1", "grade", command.class_dir.string(),
                                                                    "--out=" + command.out_dir.string(),
                                                                    "--slurm-merge"});
  // cdplab -j wins over the task's CPUs.
  command.build_jobs = 2;
  write(dir / "grade.sbatch", array_script(command, resources, {3}, layout));
  CHECK(run_script("grade.sbatch", "4").at(1) == "2");
}

TEST_CASE("slurm tasks_to_grade skips finished students unless asked, and done markers say who finished") {
  using namespace batch::slurm;
  const fs::path out = fresh_dir("tasks");
  // Results the grader wrote (with their digests), for alice and carol; one planted for bob.
  for (const char* student : {"alice", "carol"})
    batch::write_student_files(out / "students" / student, student, cdplab::grading::GradeReport{}, {});
  write(out / "students/bob/result.json", "{}");
  const std::vector<Submission> submissions = {{"alice", "/c/alice", false}, {"bob", "/c/bob", false},
                                               {"carol", "/c/carol", false}};
  CHECK(tasks_to_grade(submissions, out, false, false, {}, {}) == std::vector<std::size_t>{1});
  CHECK(tasks_to_grade(submissions, out, false, false, {"carol"}, {}) == std::vector<std::size_t>{1, 2});
  CHECK(tasks_to_grade(submissions, out, true, false, {}, {}) == std::vector<std::size_t>{0, 1, 2});
  // --only into a results folder: everyone is graded again on the chosen exercises (each task
  // keeps the rest of its earlier grade), as a local run does.
  CHECK(tasks_to_grade(submissions, out, false, true, {}, {}) == std::vector<std::size_t>{0, 1, 2});

  const Layout layout(out);
  CHECK_FALSE(done_summary(layout, 1));
  mark_done(layout, 1, "graded 7/8");
  CHECK(done_summary(layout, 1) == std::optional<std::string>("graded 7/8"));
  CHECK(layout.task_log(1) == out / "slurm/logs/1.out");
}

namespace {

/// A Slurm run's setting for the tests of submission: a class of two, a results folder holding
/// an earlier result, and a folder for stand-ins of sbatch and squeue.
struct SubmitCase {
  fs::path dir, bin;
  std::vector<Submission> submissions;
  batch::slurm::Command command;

  explicit SubmitCase(const std::string& name) : dir(fresh_dir(name)), bin(dir / "bin") {
    fs::create_directories(dir / "class/alice");
    fs::create_directories(dir / "class/bob");
    fs::create_directories(bin);
    submissions = batch::find_submissions(dir / "class");
    command.cdplab = "/opt/cdplab";
    command.class_dir = dir / "class";
    command.out_dir = dir / "out";
    write(command.out_dir / "students/alice/result.json", "kept");
  }
  batch::slurm::Submitted submit(const std::string& sbatch) {
    batch::slurm::Tools tools;
    tools.sbatch = (bin / sbatch).string();
    return batch::slurm::write_and_submit(submissions, {0, 1}, command, {}, tools);
  }
  /// The error message of a submission that must fail.
  std::string failure(const std::string& sbatch) {
    try {
      submit(sbatch);
    } catch (const batch::slurm::Error& error) {
      return error.what();
    }
    FAIL("the submission did not fail");
    return "";
  }
  /// Nothing lost: the scripts are written and the earlier result is untouched.
  void check_nothing_lost() const {
    const batch::slurm::Layout layout(command.out_dir);
    CHECK(fs::exists(layout.array_script));
    CHECK(fs::exists(layout.merge_script));
    CHECK(files::read_text(layout.listing) == batch::slurm::listing(submissions));
    CHECK(files::read_text(command.out_dir / "students/alice/result.json") == "kept");
  }
};

}  // namespace

TEST_CASE("slurm submission: the array, then the merge job that depends on it") {
  SubmitCase c("submit-ok");
  // Records its arguments; answers with a warning and an id, then with "id;cluster".
  write_script(c.bin / "sbatch",
               "echo \"$*\" >> \"$0.calls\"\n"
               "if [ ! -f \"$0.once\" ]; then touch \"$0.once\"; echo 'sbatch: warning: no time limit' >&2; echo 77;"
               " else echo '78;cluster'; fi\n");
  batch::slurm::mark_done(batch::slurm::Layout(c.command.out_dir), 1, "graded 1/2");  // from an earlier run
  const auto submitted = c.submit("sbatch");
  CHECK(submitted.array_id == "77");
  CHECK(submitted.merge_id == "78");
  const batch::slurm::Layout layout(c.command.out_dir);
  CHECK(files::read_text(c.bin / "sbatch.calls") == "--parsable " + layout.array_script.string() + "\n" +
                                                         "--parsable --dependency=afterany:77 " +
                                                         layout.merge_script.string() + "\n");
  CHECK_FALSE(batch::slurm::done_summary(layout, 1));  // cleared: task 1 runs again
  CHECK(std::find(submitted.files.begin(), submitted.files.end(), layout.array_script) != submitted.files.end());
  CHECK(fs::is_directory(layout.logs));
  c.check_nothing_lost();
}

TEST_CASE("slurm submission failures keep everything and say how to go on") {
  SUBCASE("sbatch missing") {
    SubmitCase c("submit-missing");
    const std::string message = c.failure("no-such-sbatch");
    CHECK(contains(message, "cannot run"));
    CHECK(contains(message, "Nothing was submitted"));
    CHECK(contains(message, "sbatch '" + (c.dir / "out/slurm/grade.sbatch").string() + "'"));
    c.check_nothing_lost();
  }
  SUBCASE("sbatch refuses the array") {
    SubmitCase c("submit-refused");
    write_script(c.bin / "sbatch", "echo 'sbatch: error: Invalid partition name specified' >&2; exit 1\n");
    const std::string message = c.failure("sbatch");
    CHECK(contains(message, "Invalid partition name specified"));
    CHECK(contains(message, "Nothing was submitted"));
    c.check_nothing_lost();
  }
  SUBCASE("sbatch takes the array but not the merge job") {
    SubmitCase c("submit-half");
    write_script(c.bin / "sbatch", "if [ ! -f \"$0.once\" ]; then touch \"$0.once\"; echo 41; else exit 1; fi\n");
    const std::string message = c.failure("sbatch");
    CHECK(contains(message, "job array 41"));
    CHECK(contains(message, "--slurm-merge"));
    c.check_nothing_lost();
  }
  SUBCASE("sbatch answers without a job id") {
    SubmitCase c("submit-no-id");
    write_script(c.bin / "sbatch", "echo 'Submitted batch job'\n");
    CHECK(contains(c.failure("sbatch"), "did not take"));
  }
}

TEST_CASE("slurm waiting polls squeue until the jobs have left the queue") {
  using namespace batch::slurm;
  const fs::path dir = fresh_dir("squeue");
  const fs::path queue = dir / "queue.txt";
  // Prints queue.txt; "INVALID" plays a forgotten job, "DOWN" an unreachable controller.
  write_script(dir / "squeue",
               "echo \"$*\" > \"$0.args\"\n"
               "case \"$(cat '" + queue.string() + "')\" in\n"
               "  INVALID) echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1 ;;\n"
               "  DOWN) echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; exit 1 ;;\n"
               "  *) cat '" + queue.string() + "' ;;\n"
               "esac\n");
  Tools tools;
  tools.squeue = (dir / "squeue").string();

  write(queue, "12_[1-2]\n  13\n");
  CHECK(queued_jobs(tools, {"12", "13"}) == std::vector<std::string>{"12_[1-2]", "13"});
  CHECK(contains(files::read_text(dir / "squeue.args"), "--jobs=12,13"));
  write(queue, "INVALID");
  CHECK(queued_jobs(tools, {"12"}).empty());
  write(queue, "DOWN");
  CHECK_THROWS_AS(queued_jobs(tools, {"12"}), Error);
  try {
    wait_for_jobs(tools, {"12"}, 0.2, 0.05);
    FAIL("no error from a failing squeue");
  } catch (const Error& error) {
    CHECK(contains(error.what(), "Unable to contact slurm controller"));
  }

  // Still queued at the deadline: false, after the deadline and not long after.
  write(queue, "12_0\n");
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(wait_for_jobs(tools, {"12"}, 0.3, 0.05));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(waited >= 0.3);
  CHECK(waited < 5);

  // The queue empties on the second poll: true on the third, each poll reported.
  std::vector<std::vector<std::string>> polls;
  const bool ended = wait_for_jobs(tools, {"12"}, 30, 0.01, [&](const std::vector<std::string>& queued) {
    polls.push_back(queued);
    if (polls.size() == 2) write(queue, "");
  });
  CHECK(ended);
  REQUIRE(polls.size() == 3);
  CHECK(polls[0] == std::vector<std::string>{"12_0"});
  CHECK(polls[2].empty());
}

// ---- Slurm: the cdplab command line, with stand-ins for sbatch and squeue ------------------------

namespace {

process::Result cdplab_cli(std::vector<std::string> args, const std::map<std::string, std::string>& env = {}) {
  args.insert(args.begin(), CDPLAB_CLI);
  process::Options options;
  options.timeout_seconds = 300;
  options.env = env;
  return process::run(args, options);
}

/// A class of three for chapter 05's quiz: right answers, one wrong (a .tar.gz), none given.
fs::path quiz_class(const fs::path& dir) {
  const std::string quiz = "05-streams-and-pools/quiz.toml";
  const fs::path class_dir = dir / "class of 2026";
  write(class_dir / "alice" / quiz, files::read_text(kRoot / "solutions" / quiz));
  std::string wrong = files::read_text(kRoot / "solutions" / quiz);
  const std::size_t at = wrong.find("pool-overflow = \"");
  REQUIRE(at != std::string::npos);
  wrong.insert(at + std::string("pool-overflow = \"").size(), "1");  // "1952": wrong
  write(dir / "stage" / quiz, wrong);
  cmake_tar(dir / "stage", {"czf", (class_dir / "bob.tar.gz").string(), "05-streams-and-pools"});
  write(class_dir / "carol" / quiz, files::read_text(kRoot / "chapters" / quiz));
  return class_dir;
}

}  // namespace

TEST_CASE("slurm cdplab grade --slurm submits, waits and prints the summary") {
  const fs::path dir = fresh_dir("cli-slurm");
  const fs::path class_dir = quiz_class(dir);
  const fs::path out = dir / "grades";
  // sbatch runs the script at once, each array task in turn; squeue then finds nothing queued.
  write_script(dir / "bin/sbatch",
               "script=\"${*: -1}\"\n"
               "array=$(sed -n 's/^#SBATCH --array=\"\\(.*\\)\"$/\\1/p' \"$script\")\n"
               "for part in ${array//,/ }; do\n"
               "  for i in $(seq \"${part%-*}\" \"${part#*-}\"); do\n"
               "    SLURM_ARRAY_TASK_ID=$i bash \"$script\" > /dev/null 2>&1\n"
               "  done\n"
               "done\n"
               "[ -n \"$array\" ] || bash \"$script\" > /dev/null 2>&1\n"
               "echo $((RANDOM + 1))\n");
  write_script(dir / "bin/squeue", "exit 0\n");
  const char* path = std::getenv("PATH");
  const std::map<std::string, std::string> env = {{"PATH", (dir / "bin").string() + ":" + (path ? path : "/usr/bin:/bin")}};

  const auto result = cdplab_cli({"grade", class_dir.string(), "--slurm", "--out", out.string(), "--only",
                                  "streams-quiz", "--partition", "debug"},
                                 env);
  INFO(result.output);
  CHECK(result.exit_code == 0);
  const auto lines = csv_lines(files::read_text(out / "gradebook.csv"));
  REQUIRE(lines.size() == 4);
  CHECK(lines[1].rfind("alice,", 0) == 0);
  CHECK(lines[2].rfind("bob,", 0) == 0);
  CHECK(lines[3].rfind("carol,0,0,", 0) == 0);
  CHECK(contains(result.output, "alice: graded"));
  CHECK(contains(result.output, "- students graded: 3"));
  CHECK(contains(files::read_text(out / "slurm/grade.sbatch"), "#SBATCH --partition=\"debug\""));
  for (const char* student : {"alice", "bob", "carol"})
    CHECK(fs::exists(out / "students" / student / "feedback.html"));
  const auto alice = report::from_json(nlohmann::json::parse(files::read_text(out / "students/alice/result.json")));
  const auto bob = report::from_json(nlohmann::json::parse(files::read_text(out / "students/bob/result.json")));
  CHECK(alice.points() == alice.max_points());
  CHECK(bob.points() == alice.max_points() - 1);

  // --only again into the same folder: everyone is graded again on that exercise, as a local run
  // does (the exercise was fixed, or its check changed).
  const auto again = cdplab_cli(
      {"grade", class_dir.string(), "--slurm", "--out", out.string(), "--only", "streams-quiz"}, env);
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(contains(again.output, "grades 3 of 3 submissions"));
  CHECK(contains(again.output, "- students graded: 3"));
  // A whole grading never keeps those results of one exercise: everyone is submitted again.
  const auto whole = cdplab_cli({"grade", class_dir.string(), "--slurm", "--out", out.string()}, env);
  INFO(whole.output);
  CHECK(contains(whole.output, "grades 3 of 3 submissions"));
  CHECK_FALSE(contains(files::read_text(out / "gradebook.csv"), ",partial"));
  // Everyone graded whole: a rerun submits nothing and prints the summary again.
  const auto done = cdplab_cli({"grade", class_dir.string(), "--slurm", "--out", out.string()}, env);
  INFO(done.output);
  CHECK(done.exit_code == 0);
  CHECK(contains(done.output, "nothing to submit"));
  CHECK(contains(done.output, "- students graded: 3"));
}

TEST_CASE("slurm cdplab grade --slurm refuses what it cannot do with status 2") {
  const fs::path dir = fresh_dir("cli-slurm-refused");
  const fs::path class_dir = quiz_class(dir);
  const fs::path out = dir / "grades";
  fs::create_directories(dir / "empty-bin");

  const auto no_sbatch = cdplab_cli({"grade", class_dir.string(), "--slurm", "--out", out.string()},
                                    {{"PATH", (dir / "empty-bin").string()}});
  CHECK(no_sbatch.exit_code == 2);
  CHECK(contains(no_sbatch.output, "cannot run sbatch"));
  CHECK(fs::exists(out / "slurm/grade.sbatch"));  // ready to submit by hand
  CHECK_FALSE(fs::exists(out / "students"));

  const auto without_slurm = cdplab_cli({"grade", class_dir.string(), "--partition", "gpu"});
  CHECK(without_slurm.exit_code == 2);
  CHECK(contains(without_slurm.output, "--partition goes with --slurm"));
  const auto one_submission = cdplab_cli({"grade", (class_dir / "alice").string(), "--slurm"});
  CHECK(one_submission.exit_code == 2);
  // Long paths wrap the message at 100 columns: read it as one line.
  std::string unwrapped;
  for (const char c : one_submission.output)
    if (!(c == '\n' || c == ' ') || (unwrapped.empty() || unwrapped.back() != ' ')) unwrapped += c == '\n' ? ' ' : c;
  CHECK(contains(unwrapped, "is one submission"));
  const auto parallel = cdplab_cli({"grade", class_dir.string(), "--slurm", "--parallel", "4"});
  CHECK(parallel.exit_code == 2);
  const auto bad_arg = cdplab_cli({"grade", class_dir.string(), "--slurm", "--sbatch-arg=qos"});
  CHECK(bad_arg.exit_code == 2);
  CHECK(contains(bad_arg.output, "--sbatch-arg"));
  const auto inside = cdplab_cli({"grade", class_dir.string(), "--out", (class_dir / "grades").string()});
  CHECK(inside.exit_code == 2);
  CHECK(contains(inside.output, "inside the class folder"));
}
