/// @file class_policy.h
/// @brief What the gradebook of a class needs beyond the grades: who the students are (a
///        roster), when each one submitted, the due date and the late policy.
///
/// The policy and the roster live in the results folder (`class-policy.json`, `roster.csv`),
/// written by `cdplab grade CLASS --roster ... --due ...`, so that every later writing of the
/// gradebook (after each student, the Slurm merge job, a rerun that keeps every result) uses
/// them without being told again. Changing them regrades no one: a rerun rewrites the gradebook.
#pragma once

#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cdplab::batch {

/// One student of a roster.
struct RosterEntry {
  std::string student;    ///< the submission's name: its folder, or its archive without extension
  std::string id;         ///< the institution's student ID (Canvas "SIS User ID", Moodle "ID number")
  std::string name;       ///< the full name
  std::string login;      ///< Canvas "SIS Login ID", Moodle username
  std::string email;
  std::string section;
  std::string canvas_id;  ///< Canvas's own user ID ("ID" in its gradebook)
  std::string submitted;  ///< when the learning platform received the work (ISO 8601); may be empty

  /// How the gradebook names the student when no submission names them: the folder, else the
  /// login, the ID, the email, the Canvas ID or the name, the first one given.
  const std::string& key() const;
};

/// A class list, read from CSV (RFC 4180) with a heading row. The headings are matched without
/// regard to case, blanks or '_': "student" (or "folder", "submission"), "id" (or "student id",
/// "sis user id", "id number"), "name" (or "full name"; "first name" and "last name"/"surname"
/// are joined), "login" (or "sis login id", "username"), "email" (or "email address"),
/// "section", "canvas id", and "submitted" (or "submitted at", "submission time"). Other columns
/// (the assignments of an export) are ignored.
///
/// The platforms' gradebook exports are read as they come:
/// - Canvas's (Student, ID, SIS User ID, SIS Login ID, Section, then the assignments): its
///   "Student" is the display name ("Doe, Alice") and its "ID" Canvas's own user ID; the
///   "Points Possible" row under the heading is no student.
/// - Moodle's (First name, Last name, ID number, Institution, Department, Email address, then
///   the grade items).
struct Roster {
  std::vector<RosterEntry> entries;
  /// The entry of the submission named `folder`: the one whose folder it is, else the one whose
  /// login, ID, email or Canvas ID it is, else whose name it is (as written, or as Canvas names
  /// downloaded submissions: "doealice" or "doealice_CANVASID_..."). nullptr when none, or when
  /// two entries match alike.
  const RosterEntry* find(const std::string& folder) const;
};

/// Reads a roster; throws std::runtime_error naming the line for what cannot be a roster (no
/// column that names a student, an unclosed quote, a student listed twice, a "submitted" time
/// that is not a time).
Roster read_roster(const std::string& csv);

/// A time written as ISO 8601: "2026-12-01", "2026-12-01T23:59", "2026-12-01 23:59:30", with an
/// optional zone ("Z", "+01:00", "-0500"); without one it is this machine's local time. A date
/// alone is the start of that day, or its last second with `date_is_end_of_day` (a due date).
/// std::nullopt when `text` is not such a time.
std::optional<std::time_t> parse_time(const std::string& text, bool date_is_end_of_day = false);

/// `t` as "2026-12-01T22:59:00Z".
std::string utc_stamp(std::time_t t);

/// The due date and what lateness costs.
struct LatePolicy {
  std::optional<std::time_t> due;  ///< none: nothing is late
  double percent_per_day = 0;      ///< taken off the total for each day, or part of one, late
  std::optional<int> limit_days;   ///< later than this many days: no points at all
};

/// How late a submission is and what that costs.
struct Lateness {
  int days = 0;        ///< days late, a started day counting as one; 0 when on time or unknown
  double share = 0;    ///< share of the points taken off, 0 to 1
  bool unknown = false;  ///< a due date, but no submission time to judge by
};

/// The lateness of work submitted at `submitted` (ISO 8601; empty when not known).
Lateness lateness(const LatePolicy& policy, const std::string& submitted);

/// Everything the gradebook is written by.
struct ClassPolicy {
  LatePolicy late;
  std::string assignment = "cdp-lab";  ///< the grade column's name in the learning-platform exports
};

/// The files of a results folder that hold the policy and the roster.
std::filesystem::path policy_file(const std::filesystem::path& out_dir);  ///< class-policy.json
std::filesystem::path roster_file(const std::filesystem::path& out_dir);  ///< roster.csv

/// The policy kept in `out_dir` (the defaults where there is none). Throws std::runtime_error
/// for a policy file that cannot be read.
ClassPolicy read_policy(const std::filesystem::path& out_dir);
void write_policy(const std::filesystem::path& out_dir, const ClassPolicy& policy);

/// The roster kept in `out_dir`, if there is one (read_roster's errors otherwise).
std::optional<Roster> read_kept_roster(const std::filesystem::path& out_dir);

/// When a submission was handed in, as far as its files tell: an archive's modification time, or
/// the newest modification time of a regular file in a folder (links not followed). Empty when
/// there is none. This is the time on the grader's disk: where files were downloaded from a
/// learning platform, it is the download's time unless the download kept the original times, so
/// a roster's "submitted" column (the platform's own record) takes precedence over it.
std::string submission_time(const std::filesystem::path& source, bool archive);

}  // namespace cdplab::batch
