// The gradebook of a class beyond the grades: the roster, submission times, the due date and
// late policy, the Canvas and Moodle exports, the summary's skipped checks counted apart, each
// exercise's histogram, and a kept result of fewer exercises (an earlier --only) graded again.
#include "batch/batch.h"
#include "batch/class_policy.h"
#include "files/files.h"
#include "report/report.h"
#include "class_fixtures.h"
#include "test_folders.h"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <utime.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace cdplab;
using namespace cdplab::testing;
using grading::ItemKind;
using grading::Outcome;

namespace {

const fs::path kWork = fs::path(CDPLAB_TEST_BINARY_DIR) / "gradebook-cases";
const fs::path kRoot = CDPLAB_SOURCE_DIR;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::time_t utc(const char* text) {
  const auto t = batch::parse_time(text);
  REQUIRE_MESSAGE(t.has_value(), text);
  return *t;
}

/// A row graded `points` of 10 in one exercise.
report::ClassRow row_of(const std::string& student, double points) {
  return {student, report_of({exercise("a", {item(ItemKind::check, "x", points >= 10 ? Outcome::passed : Outcome::failed,
                                                  points, 10)})})};
}

}  // namespace

// ---- times and lateness -----------------------------------------------------------------------

TEST_CASE("gradebook parse_time reads ISO 8601 dates, times and zones, and nothing else") {
  CHECK(batch::utc_stamp(utc("2026-12-01T23:59:00Z")) == "2026-12-01T23:59:00Z");
  CHECK(batch::utc_stamp(utc("2026-12-01 23:59Z")) == "2026-12-01T23:59:00Z");
  CHECK(batch::utc_stamp(utc("2026-12-01T23:59:30.250Z")) == "2026-12-01T23:59:30Z");
  CHECK(batch::utc_stamp(utc("2026-12-01T23:59+01:00")) == "2026-12-01T22:59:00Z");
  CHECK(batch::utc_stamp(utc("2026-12-01T18:00-0500")) == "2026-12-01T23:00:00Z");
  CHECK(batch::utc_stamp(utc("2024-02-29T00:00Z")) == "2024-02-29T00:00:00Z");  // a leap day
  // A date alone: the start of the day, or its last second for a due date.
  const auto day_start = batch::parse_time("2026-12-01");
  const auto day_end = batch::parse_time("2026-12-01", true);
  REQUIRE(day_start);
  REQUIRE(day_end);
  CHECK(*day_end - *day_start == 86399);
  for (const char* bad : {"", "tomorrow", "2026-13-01", "2026-02-30T00:00Z", "2026-12-01T24:00Z", "2026-12-01T10:60Z",
                          "2026-12-1", "2026/12/01", "2026-12-01T10", "2026-12-01T10:00 Z", "2026-12-01T10:00+25:00",
                          "2026-12-01T10:00Zjunk", "12/01/2026"}) {
    INFO(bad);
    CHECK_FALSE(batch::parse_time(bad));
  }
}

TEST_CASE("gradebook lateness counts a started day as a day, takes its percent, and nothing past the limit") {
  batch::LatePolicy policy;
  CHECK(batch::lateness(policy, "2030-01-01T00:00:00Z").days == 0);  // no due date: nothing is late
  policy.due = utc("2026-12-01T23:59:00Z");
  policy.percent_per_day = 10;
  CHECK(batch::lateness(policy, "2026-12-01T23:59:00Z").days == 0);  // on the minute: on time
  CHECK(batch::lateness(policy, "2026-11-20T10:00:00Z").share == 0);
  auto late = batch::lateness(policy, "2026-12-01T23:59:01Z");       // one second late: one day
  CHECK(late.days == 1);
  CHECK(late.share == doctest::Approx(0.10));
  late = batch::lateness(policy, "2026-12-03T00:00:00Z");            // 24 h 1 min: two days
  CHECK(late.days == 2);
  CHECK(late.share == doctest::Approx(0.20));
  CHECK(batch::lateness(policy, "2027-06-01T00:00:00Z").share == doctest::Approx(1.0));  // never below nothing
  policy.limit_days = 2;
  CHECK(batch::lateness(policy, "2026-12-03T00:00:00Z").share == doctest::Approx(0.20));  // within the limit
  CHECK(batch::lateness(policy, "2026-12-04T00:00:00Z").share == doctest::Approx(1.0));   // past it
  late = batch::lateness(policy, "");
  CHECK(late.unknown);
  CHECK(late.share == 0);
  CHECK(batch::lateness(policy, "not a time").unknown);
}

// ---- the roster -------------------------------------------------------------------------------

TEST_CASE("gradebook read_roster takes the platforms' headings, quotes and a byte order mark") {
  const auto roster = batch::read_roster(
      "\xEF\xBB\xBF" "Folder,SIS User ID,Full Name,SIS Login ID,Email Address,Section,Canvas ID,Submitted At,Notes\r\n"
      "alice,S001,\"Liddell, Alice\",aliddell,alice@uni.example,A,101,2026-12-01T20:00:00Z,fine\r\n"
      "\r\n"
      " bob ,S002,\"Bob \"\"the builder\"\" Smith\",,,B,,,\n"
      "carol,S003,\"Carol\nvan Dyke\",,,,,,\n");
  REQUIRE(roster.entries.size() == 3);
  const auto* alice = roster.find("alice");
  REQUIRE(alice != nullptr);
  CHECK(alice->id == "S001");
  CHECK(alice->name == "Liddell, Alice");
  CHECK(alice->login == "aliddell");
  CHECK(alice->email == "alice@uni.example");
  CHECK(alice->section == "A");
  CHECK(alice->canvas_id == "101");
  CHECK(alice->submitted == "2026-12-01T20:00:00Z");
  REQUIRE(roster.find("bob") != nullptr);  // blanks around a field are not part of it
  CHECK(roster.find("bob")->name == "Bob \"the builder\" Smith");
  CHECK(roster.find("carol")->name == "Carol\nvan Dyke");
  CHECK(roster.find("dave") == nullptr);
  CHECK(batch::read_roster("student\nalice\n").entries.size() == 1);  // one column is enough
}

// Canvas's gradebook export as Canvas writes it: Student (the display name), ID (Canvas's user
// ID), SIS User ID, SIS Login ID, Section, then the assignments; the "Points Possible" row (its
// first cell indented) right under the heading.
const char* const kCanvasExport =
    "Student,ID,SIS User ID,SIS Login ID,Section,Lab 3 (12345),Current Score,Final Score\r\n"
    "    Points Possible,,,,,3,(read only),(read only)\r\n"
    "\"Liddell, Alice\",101,S001,aliddell,CDP 2026 A,,,\r\n"
    "\"Smith, Bob\",102,S002,bsmith,CDP 2026 A,,,\r\n"
    "\"Doe, Carol\",103,S003,cdoe,CDP 2026 B,,,\r\n";

// Moodle's grade export (plain text file) as Moodle writes it: the profile fields, then the grade
// items, then the time of the export.
const char* const kMoodleExport =
    "First name,Last name,ID number,Institution,Department,Email address,\"Assignment: Lab 3 (Real)\","
    "\"Last downloaded from this course\"\n"
    "Alice,Liddell,S001,Uni,CS,alice@uni.example,-,1764979200\n"
    "Bob,Smith,S002,Uni,CS,bob@uni.example,-,1764979200\n"
    "Carol,Doe,S003,Uni,CS,carol@uni.example,-,1764979200\n";

TEST_CASE("gradebook read_roster reads Canvas's gradebook export as it comes: no Points Possible student, the ID kept") {
  const auto roster = batch::read_roster(kCanvasExport);
  REQUIRE(roster.entries.size() == 3);
  for (const auto& entry : roster.entries) CHECK_FALSE(contains(entry.key() + entry.name, "Points Possible"));
  const auto* alice = roster.find("aliddell");  // the folder is named by the SIS login
  REQUIRE(alice != nullptr);
  CHECK(alice->name == "Liddell, Alice");
  CHECK(alice->canvas_id == "101");
  CHECK(alice->id == "S001");
  CHECK(alice->section == "CDP 2026 A");
  CHECK(roster.find("S002") == &roster.entries[1]);                      // by the SIS user ID
  CHECK(roster.find("102") == &roster.entries[1]);                       // by Canvas's ID
  CHECK(roster.find("doecarol_103_88123_lab3") == &roster.entries[2]);   // as Canvas names a download
  CHECK(roster.find("doecarol_LATE_103_88123_lab3") == &roster.entries[2]);
  CHECK(roster.find("Liddell, Alice") == alice);                         // by the display name
  CHECK(roster.find("doecarol_999_1_lab3") == nullptr);                  // another Canvas user of that name
  CHECK(roster.find("Points Possible") == nullptr);
}

TEST_CASE("gradebook read_roster reads Moodle's grade export as it comes") {
  const auto roster = batch::read_roster(kMoodleExport);
  REQUIRE(roster.entries.size() == 3);
  CHECK(roster.entries[0].name == "Alice Liddell");
  CHECK(roster.entries[0].id == "S001");
  CHECK(roster.entries[0].email == "alice@uni.example");
  CHECK(roster.find("S001") == &roster.entries[0]);
  CHECK(roster.find("bob@uni.example") == &roster.entries[1]);
  CHECK(roster.find("Carol Doe_4711_assignsubmission_file_") == &roster.entries[2]);  // as Moodle names a download
}

TEST_CASE("gradebook with a platform's export as the roster: no Points Possible student, IDs kept, read back") {
  // alice's folder is her SIS login, bob's his SIS ID, carol submitted nothing.
  const fs::path out = empty_folder(kWork / "canvas-roster");
  const auto graded = report_of({exercise("quiz", {item(ItemKind::question, "q", Outcome::passed, 3, 3)})});
  batch::write_student_files(out / "students/aliddell", "aliddell", graded, {});
  batch::write_student_files(out / "students/S002", "S002", graded, {});
  write_file(batch::roster_file(out), kCanvasExport);
  const auto rows = batch::write_class_reports(out);
  REQUIRE(rows.size() == 3);
  const std::string summary = files::read_text(out / "summary.md");
  INFO(summary);
  CHECK_FALSE(contains(summary, "Points Possible"));
  CHECK(contains(summary, "- students graded: 2\n"));
  CHECK(contains(summary, "- on the roster, no submission: 1 (cdoe)"));
  const auto canvas = csv_lines(files::read_text(out / "gradebook-canvas.csv"));
  INFO(files::read_text(out / "gradebook-canvas.csv"));
  REQUIRE(canvas.size() == 5);
  CHECK(canvas[1] == "Points Possible,,,,,3");
  CHECK(canvas[2] == "\"Smith, Bob\",102,S002,bsmith,CDP 2026 A,3");  // rows in the order of the folders
  CHECK(canvas[3] == "\"Liddell, Alice\",101,S001,aliddell,CDP 2026 A,3");
  CHECK(canvas[4] == "\"Doe, Carol\",103,S003,cdoe,CDP 2026 B,");
  const auto moodle = files::read_text(out / "gradebook-moodle.csv");
  CHECK_FALSE(contains(moodle, "Points Possible"));
  CHECK(contains(moodle, "S001,aliddell,,\"Liddell, Alice\",aliddell,3\r\n"));
  // The export, imported back as the roster, is the same class.
  const auto again = batch::read_roster(files::read_text(out / "gradebook-canvas.csv"));
  REQUIRE(again.entries.size() == 3);
  CHECK(again.find("aliddell")->canvas_id == "101");
  CHECK(again.find("S003")->name == "Doe, Carol");

  // Moodle's export as the roster: alice by her ID number, bob by his email.
  const fs::path moodle_out = empty_folder(kWork / "moodle-roster");
  batch::write_student_files(moodle_out / "students/S001", "S001", graded, {});
  batch::write_student_files(moodle_out / "students/bob", "bob@uni.example", graded, {});
  write_file(batch::roster_file(moodle_out), kMoodleExport);
  batch::write_class_reports(moodle_out);
  const auto moodle_lines = csv_lines(files::read_text(moodle_out / "gradebook-moodle.csv"));
  INFO(files::read_text(moodle_out / "gradebook-moodle.csv"));
  REQUIRE(moodle_lines.size() == 4);
  CHECK(moodle_lines[1] == "S001,,alice@uni.example,Alice Liddell,S001,3");
  CHECK(moodle_lines[2] == "S003,,carol@uni.example,Carol Doe,S003,");
  CHECK(moodle_lines[3] == "S002,,bob@uni.example,Bob Smith,bob@uni.example,3");
  CHECK(batch::read_roster(files::read_text(moodle_out / "gradebook-moodle.csv")).entries.size() == 3);
}

TEST_CASE("gradebook feedback of a late student gives the due date, the submission time, the days late and the penalty") {
  const fs::path out = empty_folder(kWork / "late-feedback");
  const auto graded = report_of({exercise("quiz", {item(ItemKind::question, "q", Outcome::passed, 2, 2),
                                                   item(ItemKind::question, "r", Outcome::failed, 0, 1)})});
  batch::write_student_files(out / "students/alice", "alice", graded, {});
  batch::write_student_files(out / "students/bob", "bob", graded, {});
  write_file(batch::roster_file(out), "student,submitted\nalice,2026-12-01T10:00:00Z\nbob,2026-12-03T12:00:00Z\n");
  batch::ClassPolicy policy;
  policy.late.due = utc("2026-12-01T23:59:00Z");
  policy.late.percent_per_day = 10;
  policy.late.limit_days = 5;
  batch::write_policy(out, policy);
  batch::write_class_reports(out);
  const std::string bob = files::read_text(out / "students/bob/feedback.md");
  INFO(bob);
  CHECK(contains(bob, "**Due date:** 2026-12-01T23:59:00Z. Submitted 2026-12-03T12:00:00Z: 2 days late"));
  CHECK(contains(bob, "**Late penalty:** 10 % of the points a day late, no points after 5 days: 0.4 points off, "
                      "1.6/3 after the penalty."));
  const std::string bob_html = files::read_text(out / "students/bob/feedback.html");
  CHECK(contains(bob_html, "<strong>Due date:</strong> 2026-12-01T23:59:00Z. Submitted 2026-12-03T12:00:00Z: 2 days late"));
  CHECK(contains(bob_html, "0.4 points off, 1.6/3 after the penalty."));
  const std::string alice = files::read_text(out / "students/alice/feedback.md");
  CHECK(contains(alice, "Submitted 2026-12-01T10:00:00Z: on time, no late penalty."));
  CHECK_FALSE(contains(alice, "Late penalty"));
  // The due date forgotten (--due none): the feedback says no more of it.
  batch::write_policy(out, batch::ClassPolicy{});
  batch::write_class_reports(out);
  CHECK_FALSE(contains(files::read_text(out / "students/bob/feedback.md"), "Due date"));
  CHECK_FALSE(contains(files::read_text(out / "students/bob/feedback.html"), "Due date"));
}

TEST_CASE("gradebook read_roster refuses what cannot be a roster, naming the line") {
  const auto refused = [](const std::string& csv) {
    try {
      batch::read_roster(csv);
    } catch (const std::exception& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  CHECK(contains(refused(""), "empty"));
  CHECK(contains(refused("notes,section\nfine,A\n"), "no \"student\" column"));
  CHECK(batch::read_roster("id,name\nS1,Alice\n").entries.size() == 1);  // found by ID or name
  CHECK(contains(refused("student,id\nalice,1\nbob,2\nalice,3\n"), "line 4: student alice is listed twice"));
  CHECK(contains(refused("student,id\n,1\n"), "line 2: no student"));
  CHECK(contains(refused("student,submitted\nalice,yesterday\n"), "line 2: \"yesterday\" is not a time"));
  CHECK(contains(refused("student,name\nalice,\"open\n"), "line 2: a quote is never closed"));
}

TEST_CASE("gradebook policy and roster are kept in the results folder, and broken ones are refused") {
  const fs::path out = empty_folder(kWork / "policy");
  CHECK_FALSE(batch::read_policy(out).late.due);  // none kept: the defaults
  CHECK(batch::read_policy(out).assignment == "cdp-lab");
  CHECK_FALSE(batch::read_kept_roster(out));
  batch::ClassPolicy policy;
  policy.late.due = utc("2026-12-01T23:59:00Z");
  policy.late.percent_per_day = 12.5;
  policy.late.limit_days = 4;
  policy.assignment = "Lab 3: CDP";
  batch::write_policy(out, policy);
  const auto read = batch::read_policy(out);
  REQUIRE(read.late.due);
  CHECK(*read.late.due == *policy.late.due);
  CHECK(read.late.percent_per_day == 12.5);
  CHECK(read.late.limit_days == std::optional<int>(4));
  CHECK(read.assignment == "Lab 3: CDP");
  write_file(batch::policy_file(out), "{ not json");
  CHECK_THROWS_AS(batch::read_policy(out), std::runtime_error);
  write_file(batch::roster_file(out), "notes\nfine\n");  // nothing that names a student
  CHECK_THROWS_AS(batch::read_kept_roster(out), std::runtime_error);
}

TEST_CASE("gradebook submission_time is an archive's time, or the newest file's of a folder") {
  const fs::path dir = empty_folder(kWork / "times");
  write_file(dir / "alice/09-sample/quiz.toml", "old");
  write_file(dir / "alice/09-sample/sample.cu", "new");
  write_file(dir / "bob.zip", "archive");
  const auto set_time = [](const fs::path& file, std::time_t t) {
    const utimbuf times{t, t};
    REQUIRE(::utime(file.c_str(), &times) == 0);
  };
  set_time(dir / "alice/09-sample/quiz.toml", utc("2026-11-30T10:00:00Z"));
  set_time(dir / "alice/09-sample/sample.cu", utc("2026-12-01T09:30:00Z"));
  set_time(dir / "bob.zip", utc("2026-12-02T08:00:00Z"));
  CHECK(batch::submission_time(dir / "alice", false) == "2026-12-01T09:30:00Z");
  CHECK(batch::submission_time(dir / "bob.zip", true) == "2026-12-02T08:00:00Z");
  CHECK(batch::submission_time(dir / "nobody", false).empty());
  fs::create_directories(dir / "empty");
  CHECK(batch::submission_time(dir / "empty", false).empty());
}

// ---- the files of the class -------------------------------------------------------------------

TEST_CASE("gradebook with a roster and a due date: IDs, times, penalties, and a row for who submitted nothing") {
  auto alice = row_of("alice", 10);
  alice.id = "S001";
  alice.full_name = "Liddell, Alice";
  alice.submitted_at = "2026-12-01T20:00:00Z";
  auto bob = row_of("bob", 8);
  bob.id = "S002";
  bob.full_name = "Bob Smith";
  bob.submitted_at = "2026-12-03T01:00:00Z";
  bob.days_late = 2;
  bob.late_share = 0.25;
  report::ClassRow carol;
  carol.student = "carol";
  carol.submitted = false;
  carol.id = "S003";
  auto dave = row_of("dave", 4);
  dave.lateness_unknown = true;
  const auto lines = csv_lines(report::to_gradebook_csv({alice, bob, carol, dave}, {true, true}));
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == "student,id,name,submitted,days late,09-sample/a (max 10),total,max,late penalty,after penalty,status");
  CHECK(lines[1] == "alice,S001,\"Liddell, Alice\",2026-12-01T20:00:00Z,0,10,10,10,0,10,final");
  CHECK(lines[2] == "bob,S002,Bob Smith,2026-12-03T01:00:00Z,2,8,8,10,2,6,final");
  CHECK(lines[3] == "carol,S003,,,,,,10,,,no submission");
  CHECK(lines[4] == "dave,,,,unknown,4,4,10,0,4,final");
}

TEST_CASE("gradebook status tells final, not final, partial and no submission apart") {
  const auto full = report_of({exercise("a", {item(ItemKind::check, "x", Outcome::passed, 1, 1)}),
                               exercise("b", {item(ItemKind::check, "y", Outcome::passed, 1, 1)})});
  const auto skipped = report_of({exercise("a", {item(ItemKind::check, "x", Outcome::skipped, 0, 1)}),
                                  exercise("b", {item(ItemKind::check, "y", Outcome::passed, 1, 1)})});
  const auto only_b = report_of({exercise("b", {item(ItemKind::check, "y", Outcome::passed, 1, 1)})});
  report::ClassRow missing;
  missing.submitted = false;
  CHECK(report::grade_status({"s", full}, 2) == "final");
  CHECK(report::grade_status({"s", skipped}, 2) == "not final");
  CHECK(report::grade_status({"s", only_b}, 2) == "partial");
  CHECK(report::grade_status(missing, 2) == "no submission");
  const auto lines = csv_lines(report::to_gradebook_csv({{"full", full}, {"partial", only_b}}));
  CHECK(lines[2] == "partial,,1,1,1,partial");
}

TEST_CASE("gradebook exports for Canvas and Moodle give final grades only, after the penalty") {
  auto alice = row_of("alice", 10);
  alice.id = "S001";
  alice.full_name = "Liddell, Alice";
  alice.login = "aliddell";
  alice.email = "alice@uni.example";
  alice.section = "A";
  alice.canvas_id = "101";
  auto bob = row_of("bob", 8);
  bob.id = "S002";
  bob.late_share = 0.5;
  auto skipper = report::ClassRow{"skipper", report_of({exercise("a", {item(ItemKind::check, "x", Outcome::skipped, 0, 10)})})};
  skipper.id = "S004";
  report::ClassRow carol;
  carol.student = "carol";
  carol.submitted = false;
  carol.id = "S003";
  const auto canvas = csv_lines(report::to_canvas_csv({alice, bob, carol, skipper}, "Lab 3, CDP"));
  REQUIRE(canvas.size() == 6);
  CHECK(canvas[0] == "Student,ID,SIS User ID,SIS Login ID,Section,\"Lab 3, CDP\"");
  CHECK(canvas[1] == "Points Possible,,,,,10");
  CHECK(canvas[2] == "\"Liddell, Alice\",101,S001,aliddell,A,10");
  CHECK(canvas[3] == "bob,,S002,,,4");       // no name on the roster: the submission's
  CHECK(canvas[4] == "carol,,S003,,,");      // nothing submitted: left as it is
  CHECK(canvas[5] == "skipper,,S004,,,");    // not final: left as it is
  const auto moodle = csv_lines(report::to_moodle_csv({alice, bob, carol, skipper}, "Lab 3"));
  REQUIRE(moodle.size() == 5);
  CHECK(moodle[0] == "ID number,Username,Email address,Full name,Student,Lab 3");
  CHECK(moodle[1] == "S001,aliddell,alice@uni.example,\"Liddell, Alice\",alice,10");
  CHECK(moodle[2] == "S002,,,,bob,4");
  CHECK(moodle[3] == "S003,,,,carol,");
}

TEST_CASE("gradebook summary counts skipped checks apart, and names who is late, partial or missing") {
  // alice scored 5 of the 10 decided points; the other 10 were skipped (no GPU): 50 %, not 25 %.
  const auto half_decided = report_of({exercise("a", {item(ItemKind::check, "x", Outcome::passed, 5, 5),
                                                      item(ItemKind::check, "y", Outcome::failed, 0, 5)}),
                                       exercise("b", {item(ItemKind::check, "z", Outcome::skipped, 0, 10)})});
  const auto full = report_of({exercise("a", {item(ItemKind::check, "x", Outcome::passed, 5, 5),
                                              item(ItemKind::check, "y", Outcome::passed, 5, 5)}),
                               exercise("b", {item(ItemKind::check, "z", Outcome::passed, 10, 10)})});
  report::ClassRow alice{"alice", half_decided};
  report::ClassRow bob{"bob", full};
  bob.days_late = 1;
  report::ClassRow carol;
  carol.student = "carol";
  carol.submitted = false;
  report::ClassRow dave{"dave", report_of({exercise("a", {item(ItemKind::check, "x", Outcome::passed, 5, 5),
                                                          item(ItemKind::check, "y", Outcome::passed, 5, 5)})})};
  const std::string summary = report::to_class_summary({alice, bob, carol, dave});
  INFO(summary);
  CHECK(contains(summary, "- students graded: 3\n"));
  CHECK(contains(summary, "- on the roster, no submission: 1 (carol)"));
  CHECK(contains(summary, "- grades not final: 1 (alice): 1 items skipped (e.g. no GPU), 10 points not decided"));
  CHECK(contains(summary, "(an earlier --only): 1 (dave)"));
  CHECK(contains(summary, "- submitted after the due date: 1 (bob)"));
  CHECK(contains(summary, "mean 83.3 %, median 100.0 %, lowest 50.0 %, highest 100.0 %"));
  CHECK(contains(summary, "| 09-sample/b | 100 % |"));  // alice's skipped b counts for nothing either way
  CHECK(contains(summary, "| 09-sample/a | 83 % |"));
  CHECK_FALSE(contains(summary, "histograms/"));
  CHECK(contains(report::to_class_summary({alice, bob}, true), "![spread of 09-sample/a](histograms/09-sample.a.svg)"));
}

TEST_CASE("gradebook feedback pages and the summary give one student the same score") {
  // 5 of the 10 decided points; 10 more skipped: 50 % in the summary, and in the feedback.
  const auto half_decided = report_of({exercise("a", {item(ItemKind::check, "x", Outcome::passed, 5, 5),
                                                      item(ItemKind::check, "y", Outcome::failed, 0, 5)}),
                                       exercise("b", {item(ItemKind::check, "z", Outcome::skipped, 0, 10)})});
  const std::string summary = report::to_class_summary({{"alice", half_decided}});
  CHECK(contains(summary, "mean 50.0 %"));
  CHECK(contains(report::to_feedback_markdown(half_decided, "alice"), "**Score: 5/20** (50.0 % of the points decided)"));
  CHECK(contains(report::to_feedback_html(half_decided, "alice"), "(50.0 % of the points decided)"));
  const auto whole = report_of({exercise("a", {item(ItemKind::check, "x", Outcome::passed, 2, 3)})});
  CHECK(contains(report::to_class_summary({{"bob", whole}}), "mean 66.7 %"));
  CHECK(contains(report::to_feedback_markdown(whole, "bob"), "**Score: 2/3** (66.7 %)"));
}

TEST_CASE("gradebook histograms count each exercise's students by tenths of the points decided") {
  std::vector<report::ClassRow> rows;
  for (const double points : {0.0, 4.0, 4.5, 9.99, 10.0, 10.0}) rows.push_back(row_of("s", points));
  rows.push_back({"skipped", report_of({exercise("a", {item(ItemKind::check, "x", Outcome::skipped, 0, 10)})})});
  rows.push_back({"<b>", report_of({exercise("<b>&", {item(ItemKind::check, "x", Outcome::passed, 1, 1)})})});
  const auto pictures = report::to_score_histograms(rows);
  REQUIRE(pictures.size() == 2);
  const std::string svg = pictures.at("09-sample/a");
  INFO(svg);
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  // The skipped one is counted, and said to be out of the bars (a class graded without a GPU is
  // not "0 students").
  CHECK(contains(svg, "09-sample/a (max 10): 7 students, 1 not in the bars (every check skipped"));
  CHECK(contains(svg, "<title>0-9 %: 1</title>"));
  CHECK(contains(svg, "<title>40-49 %: 2</title>"));
  CHECK(contains(svg, "<title>90-100 %: 3</title>"));
  CHECK(contains(svg, "<title>50-59 %: 0</title>"));
  CHECK(contains(pictures.at("09-sample/<b>&"), "09-sample/&lt;b&gt;&amp;"));  // a name is text, not markup
  CHECK(report::histogram_file("01-fundamentals/child_grids") == "histograms/01-fundamentals.child_grids.svg");
}

TEST_CASE("gradebook histograms of a class graded without a GPU count every student and fit their title") {
  std::vector<report::ClassRow> rows;
  for (const char* name : {"a", "b", "c", "d"})
    rows.push_back({name, report_of({exercise("a_long_exercise_name_of_the_workbook",
                                              {item(ItemKind::check, "x", Outcome::skipped, 0, 10)})})});
  const std::string svg = report::to_score_histograms(rows).at("09-sample/a_long_exercise_name_of_the_workbook");
  INFO(svg);
  CHECK_FALSE(contains(svg, "0 students"));
  CHECK(contains(svg, ": 4 students, 4 not in the bars"));
  // The title's characters at some 7 px each, not the 300 px of the bars.
  const auto title_start = svg.find("font-size=\"12\">") + 15;
  const auto title = svg.substr(title_start, svg.find("</text>", title_start) - title_start);
  const auto width_at = svg.find("width=\"") + 7;
  const double width = std::stod(svg.substr(width_at));
  CHECK(width > 300);
  CHECK(width >= 30 + 7.0 * static_cast<double>(title.size()));
  CHECK(contains(svg, "viewBox=\"0 0 " + std::to_string(static_cast<int>(width)) + " "));
}

// ---- a class graded on its quizzes ------------------------------------------------------------

TEST_CASE("gradebook of a graded class: the kept roster and policy, submission times, and --only results graded again") {
  // The sample workbook with a second quiz in place of its program: nothing to build.
  auto book = sample_book();
  book.chapters[0].exercises[0] = book.chapters[0].exercises[1];
  book.chapters[0].exercises[0].id = "second-quiz";
  book.chapters[0].exercises[0].file = "second.toml";
  book.chapters[0].exercises[0].stem = "second";
  const std::vector<const manifest::Exercise*> quiz = {&book.chapters[0].exercises[1]};
  const std::vector<const manifest::Exercise*> both = {&book.chapters[0].exercises[0], &book.chapters[0].exercises[1]};
  const fs::path dir = empty_folder(kWork / "class");
  const fs::path class_dir = dir / "class";
  write_file(class_dir / "alice/09-sample/quiz.toml", kRightAnswers);
  write_file(class_dir / "bob/09-sample/quiz.toml", kOneWrong);
  const utimbuf late{utc("2026-12-03T12:00:00Z"), utc("2026-12-03T12:00:00Z")};
  REQUIRE(::utime((class_dir / "bob/09-sample/quiz.toml").c_str(), &late) == 0);
  const auto submissions = batch::find_submissions(class_dir);

  grading::Toolchain toolchain;
  toolchain.cmake = CDPLAB_CMAKE;
  batch::BatchOptions options;
  options.out_dir = dir / "out";
  options.dot = "";
  std::vector<std::string> log;
  options.log = [&](const std::string& line) { log.push_back(line); };
  fs::create_directories(options.out_dir);
  // alice's time comes from the roster (the platform's record); bob's from his files; carol sent nothing.
  write_file(batch::roster_file(options.out_dir),
             "student,id,name,submitted\nalice,S001,Alice,2026-12-01T10:00:00Z\nbob,S002,Bob,\ncarol,S003,Carol,\n");
  batch::ClassPolicy policy;
  policy.late.due = utc("2026-12-01T23:59:00Z");
  policy.late.percent_per_day = 10;
  batch::write_policy(options.out_dir, policy);

  auto results = batch::grade_class(submissions, quiz, book, kRoot, toolchain, options);
  REQUIRE(results.size() == 2);
  CHECK(results[1].report.submitted_at == "2026-12-03T12:00:00Z");
  auto rows = batch::write_class_reports(options.out_dir, options.log);
  auto lines = csv_lines(files::read_text(options.out_dir / "gradebook.csv"));
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "student,id,name,submitted,days late,09-sample/quiz (max 3),total,max,late penalty,after penalty,status");
  CHECK(lines[1] == "alice,S001,Alice,2026-12-01T10:00:00Z,0,3,3,3,0,3,final");
  CHECK(lines[2] == "bob,S002,Bob,2026-12-03T12:00:00Z,2,2,2,3,0.4,1.6,final");
  CHECK(lines[3] == "carol,S003,Carol,,,,,3,,,no submission");
  CHECK(contains(files::read_text(options.out_dir / "gradebook-canvas.csv"), "Alice,,S001,,,3\r\n"));
  CHECK(contains(files::read_text(options.out_dir / "gradebook-moodle.csv"), "S002,,,Bob,bob,1.6\r\n"));
  CHECK(fs::exists(options.out_dir / "histograms/09-sample.quiz.svg"));
  CHECK(contains(files::read_text(options.out_dir / "summary.md"), "(histograms/09-sample.quiz.svg)"));

  // A full grading after the quiz alone: the quiz-only results are graded again, not kept.
  log.clear();
  results = batch::grade_class(submissions, both, book, kRoot, toolchain, options);
  for (const auto& r : results) {
    INFO(r.name);
    CHECK_FALSE(r.reused);
    CHECK(r.report.exercises.size() == 2);
  }
  CHECK(std::count_if(log.begin(), log.end(), [](const std::string& l) { return contains(l, "only some of"); }) == 2);
  // And the quiz alone again: the whole results hold it, so they are kept, whole.
  results = batch::grade_class(submissions, quiz, book, kRoot, toolchain, options);
  for (const auto& r : results) {
    CHECK(r.reused);
    CHECK(r.report.exercises.size() == 2);
  }

  // Without a roster the platform exports go: there is nothing to match students by.
  fs::remove(batch::roster_file(options.out_dir));
  rows = batch::write_class_reports(options.out_dir, options.log);
  CHECK(rows.size() == 2);
  CHECK_FALSE(fs::exists(options.out_dir / "gradebook-canvas.csv"));
  CHECK_FALSE(fs::exists(options.out_dir / "gradebook-moodle.csv"));
  lines = csv_lines(files::read_text(options.out_dir / "gradebook.csv"));
  CHECK(lines[0] ==
        "student,submitted,days late,09-sample/second (max 3),09-sample/quiz (max 3),total,max,late penalty,after penalty,status");
}
