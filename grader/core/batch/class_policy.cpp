#include "batch/class_policy.h"

#include "files/files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>

#include <sys/stat.h>

namespace cdplab::batch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// The records of a CSV text (RFC 4180; a UTF-8 byte order mark and lone "\n" line ends are
/// taken as well), each with the line it starts on. Throws for a quote left open.
std::vector<std::pair<int, std::vector<std::string>>> csv_records(const std::string& text) {
  std::vector<std::pair<int, std::vector<std::string>>> records;
  std::size_t i = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
  int line = 1;
  while (i < text.size()) {
    const int first_line = line;
    std::vector<std::string> fields(1);
    bool end_of_record = false;
    while (i < text.size() && !end_of_record) {
      const char c = text[i];
      if (c == '"' && fields.back().empty()) {
        const int opened = line;
        for (++i;; ++i) {
          if (i >= text.size()) throw std::runtime_error("line " + std::to_string(opened) + ": a quote is never closed");
          if (text[i] == '"' && i + 1 < text.size() && text[i + 1] == '"') {
            fields.back() += '"';
            ++i;
          } else if (text[i] == '"') {
            ++i;
            break;
          } else {
            if (text[i] == '\n') ++line;
            fields.back() += text[i];
          }
        }
      } else if (c == ',') {
        fields.emplace_back();
        ++i;
      } else if (c == '\r' || c == '\n') {
        i += (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ? 2 : 1;
        ++line;
        end_of_record = true;
      } else {
        fields.back() += c;
        ++i;
      }
    }
    const bool blank = fields.size() == 1 && fields[0].empty();
    if (!blank) records.emplace_back(first_line, std::move(fields));
  }
  return records;
}

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

/// A heading as it is matched: lower case, without blanks, '_' and '-'.
std::string heading_key(const std::string& heading) {
  std::string key;
  for (const char c : heading)
    if (c != ' ' && c != '\t' && c != '_' && c != '-') key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return key;
}

using RosterField = std::string RosterEntry::*;

/// The roster field a heading names, or nullptr.
RosterField roster_field(const std::string& heading) {
  static const std::map<std::string, RosterField> fields = {
      {"student", &RosterEntry::student},       {"folder", &RosterEntry::student},
      {"submission", &RosterEntry::student},    {"id", &RosterEntry::id},
      {"studentid", &RosterEntry::id},          {"sisuserid", &RosterEntry::id},
      {"idnumber", &RosterEntry::id},           {"name", &RosterEntry::name},
      {"fullname", &RosterEntry::name},         {"login", &RosterEntry::login},
      {"sisloginid", &RosterEntry::login},      {"username", &RosterEntry::login},
      {"email", &RosterEntry::email},           {"emailaddress", &RosterEntry::email},
      {"section", &RosterEntry::section},       {"canvasid", &RosterEntry::canvas_id},
      {"submitted", &RosterEntry::submitted},   {"submittedat", &RosterEntry::submitted},
      {"submissiontime", &RosterEntry::submitted},
      {"useridnumber", &RosterEntry::id},
  };
  const auto found = fields.find(heading_key(heading));
  return found == fields.end() ? nullptr : found->second;
}

/// Reads `count` digits at `pos` into `value`.
bool digits(const std::string& text, std::size_t& pos, int count, int& value) {
  value = 0;
  for (int k = 0; k < count; ++k, ++pos) {
    if (pos >= text.size() || !std::isdigit(static_cast<unsigned char>(text[pos]))) return false;
    value = value * 10 + (text[pos] - '0');
  }
  return true;
}

/// A name as Canvas writes it into the names of downloaded submissions: "Doe, Alice" -> "doealice".
std::string name_key(const std::string& name) {
  std::string key;
  for (const char c : name)
    if (std::isalnum(static_cast<unsigned char>(c)) || (static_cast<unsigned char>(c) & 0x80))
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return key;
}

/// Whether a folder is named as a platform names a downloaded submission of this entry: the
/// name, then '_' and more: Canvas's "doealice_12345_678_lab" (then the Canvas ID, where the
/// roster has one: "doealice_LATE_12345_..."), Moodle's "Alice Doe_123_assignsubmission_file_".
bool canvas_download_of(const RosterEntry& entry, const std::string& folder) {
  if (name_key(entry.name).empty()) return false;
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t end; (end = folder.find('_', start)) != std::string::npos; start = end + 1)
    parts.push_back(folder.substr(start, end - start));
  parts.push_back(folder.substr(start));
  if (parts.size() < 2 || name_key(parts[0]) != name_key(entry.name)) return false;
  if (entry.canvas_id.empty()) return true;
  for (std::size_t i = 1; i < parts.size() && i < 3; ++i)
    if (parts[i] == entry.canvas_id) return true;
  return false;
}

}  // namespace

const std::string& RosterEntry::key() const {
  for (const std::string* field : {&student, &login, &id, &email, &canvas_id, &name})
    if (!field->empty()) return *field;
  return student;
}

const RosterEntry* Roster::find(const std::string& folder) const {
  if (folder.empty()) return nullptr;
  // In order of trust: the folder itself, then a platform's identifiers, then the name.
  const std::vector<std::function<bool(const RosterEntry&)>> levels = {
      [&](const RosterEntry& e) { return e.student == folder; },
      [&](const RosterEntry& e) { return e.student.empty() && e.login == folder; },
      [&](const RosterEntry& e) { return e.student.empty() && e.id == folder; },
      [&](const RosterEntry& e) { return e.student.empty() && e.email == folder; },
      [&](const RosterEntry& e) { return e.student.empty() && e.canvas_id == folder; },
      [&](const RosterEntry& e) { return e.student.empty() && canvas_download_of(e, folder); },
      [&](const RosterEntry& e) { return e.student.empty() && !e.name.empty() && e.name == folder; },
      [&](const RosterEntry& e) {
        return e.student.empty() && !name_key(e.name).empty() && name_key(e.name) == name_key(folder);
      },
  };
  for (const auto& matches : levels) {
    const RosterEntry* found = nullptr;
    for (const auto& entry : entries) {
      if (!matches(entry)) continue;
      if (found != nullptr) return nullptr;  // two students alike: neither is guessed
      found = &entry;
    }
    if (found != nullptr) return found;
  }
  return nullptr;
}

Roster read_roster(const std::string& csv) {
  const auto records = csv_records(csv);
  if (records.empty()) throw std::runtime_error("the roster is empty (its first line names the columns)");
  std::vector<RosterField> columns;
  std::vector<std::string> keys;
  for (const auto& heading : records.front().second) keys.push_back(heading_key(trimmed(heading)));
  // Canvas's gradebook export: "Student" is the display name, "ID" Canvas's user ID.
  const bool canvas = std::count(keys.begin(), keys.end(), "student") == 1 &&
                      (std::count(keys.begin(), keys.end(), "sisuserid") + std::count(keys.begin(), keys.end(), "sisloginid")) > 0;
  std::size_t first_name = keys.size(), last_name = keys.size();
  bool names_a_student = false;
  for (std::size_t c = 0; c < keys.size(); ++c) {
    RosterField field = roster_field(keys[c]);
    if (canvas && keys[c] == "student") field = &RosterEntry::name;
    if (canvas && keys[c] == "id") field = &RosterEntry::canvas_id;
    if (keys[c] == "firstname") first_name = c;
    if (keys[c] == "lastname" || keys[c] == "surname") last_name = c;
    columns.push_back(field);
    names_a_student = names_a_student || (field != nullptr && field != &RosterEntry::section &&
                                          field != &RosterEntry::submitted);
  }
  names_a_student = names_a_student || first_name < keys.size() || last_name < keys.size();
  if (!names_a_student)
    throw std::runtime_error("line 1: no \"student\" column (the name of each student's submission folder or archive), "
                             "nor a login, ID, email or name to find it by");
  Roster roster;
  for (std::size_t r = 1; r < records.size(); ++r) {
    const auto& [line, fields] = records[r];
    // Canvas's "Points Possible" row (written "    Points Possible") and its like: no student.
    if (!fields.empty() && heading_key(trimmed(fields[0])) == "pointspossible") continue;
    RosterEntry entry;
    for (std::size_t c = 0; c < fields.size() && c < columns.size(); ++c)
      if (columns[c] != nullptr) entry.*columns[c] = trimmed(fields[c]);
    if (entry.name.empty()) {
      const std::string first = first_name < fields.size() ? trimmed(fields[first_name]) : "";
      const std::string last = last_name < fields.size() ? trimmed(fields[last_name]) : "";
      entry.name = first + (first.empty() || last.empty() ? "" : " ") + last;
    }
    const std::string where = "line " + std::to_string(line) + ": ";
    // A roster that names folders names one on every line; an export names students otherwise.
    const bool names_folders = std::count(columns.begin(), columns.end(), &RosterEntry::student) > 0;
    if (entry.key().empty() || (names_folders && entry.student.empty()))
      throw std::runtime_error(where + "no student (the \"student\" column is empty)");
    if (std::any_of(roster.entries.begin(), roster.entries.end(), [&](const RosterEntry& e) {
          return e.key() == entry.key() && e.student == entry.student;
        }))
      throw std::runtime_error(where + "student " + entry.key() + " is listed twice");
    if (!entry.submitted.empty() && !parse_time(entry.submitted))
      throw std::runtime_error(where + "\"" + entry.submitted +
                               "\" is not a time (write it as 2026-12-01T23:59:00Z, or without the zone in local time)");
    roster.entries.push_back(std::move(entry));
  }
  return roster;
}

std::optional<std::time_t> parse_time(const std::string& raw, bool date_is_end_of_day) {
  const std::string text = trimmed(raw);
  std::size_t pos = 0;
  std::tm tm{};
  int year = 0, month = 0, day = 0;
  if (!digits(text, pos, 4, year) || pos >= text.size() || text[pos++] != '-' || !digits(text, pos, 2, month) ||
      pos >= text.size() || text[pos++] != '-' || !digits(text, pos, 2, day))
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > 31) return std::nullopt;
  int hour = 0, minute = 0, second = 0;
  const bool date_only = pos == text.size();
  if (date_only && date_is_end_of_day) {
    hour = 23;
    minute = 59;
    second = 59;
  }
  if (!date_only) {
    if (text[pos] != 'T' && text[pos] != 't' && text[pos] != ' ') return std::nullopt;
    ++pos;
    if (!digits(text, pos, 2, hour) || pos >= text.size() || text[pos++] != ':' || !digits(text, pos, 2, minute))
      return std::nullopt;
    if (pos < text.size() && text[pos] == ':') {
      ++pos;
      if (!digits(text, pos, 2, second)) return std::nullopt;
      if (pos < text.size() && text[pos] == '.') {  // fractions of a second: dropped
        ++pos;
        while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
      }
    }
    if (hour > 23 || minute > 59 || second > 60) return std::nullopt;
  }
  std::optional<long> offset;  // seconds east of UTC
  if (pos < text.size()) {
    if ((text[pos] == 'Z' || text[pos] == 'z') && pos + 1 == text.size()) {
      offset = 0;
    } else if (text[pos] == '+' || text[pos] == '-') {
      const long sign = text[pos++] == '-' ? -1 : 1;
      int oh = 0, om = 0;
      if (!digits(text, pos, 2, oh)) return std::nullopt;
      if (pos < text.size() && text[pos] == ':') ++pos;
      if (!digits(text, pos, 2, om) || pos != text.size() || oh > 23 || om > 59) return std::nullopt;
      offset = sign * (oh * 3600L + om * 60L);
    } else {
      return std::nullopt;
    }
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  if (offset) {
    const std::time_t t = timegm(&tm);
    if (tm.tm_mday != day) return std::nullopt;  // 2026-02-30 rolled over
    return t - *offset;
  }
  tm.tm_isdst = -1;
  const std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1) || tm.tm_mday != day) return std::nullopt;
  return t;
}

std::string utc_stamp(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return stamp;
}

Lateness lateness(const LatePolicy& policy, const std::string& submitted) {
  Lateness late;
  if (!policy.due) return late;
  const auto when = parse_time(submitted);
  if (!when) {
    late.unknown = true;
    return late;
  }
  const double seconds = std::difftime(*when, *policy.due);
  if (seconds <= 0) return late;
  late.days = static_cast<int>(std::ceil(seconds / 86400.0));
  late.share = std::min(1.0, late.days * policy.percent_per_day / 100.0);
  if (policy.limit_days && late.days > *policy.limit_days) late.share = 1.0;
  return late;
}

fs::path policy_file(const fs::path& out_dir) { return out_dir / "class-policy.json"; }
fs::path roster_file(const fs::path& out_dir) { return out_dir / "roster.csv"; }

ClassPolicy read_policy(const fs::path& out_dir) {
  ClassPolicy policy;
  std::error_code error;
  if (!fs::is_regular_file(policy_file(out_dir), error)) return policy;
  try {
    const json j = json::parse(files::read_text(policy_file(out_dir)));
    if (j.contains("due") && j.at("due").is_string()) {
      policy.late.due = parse_time(j.at("due").get<std::string>());
      if (!policy.late.due) throw std::runtime_error("its due date is not a time");
    }
    policy.late.percent_per_day = j.value("late_percent_per_day", 0.0);
    if (j.contains("late_limit_days") && j.at("late_limit_days").is_number_integer())
      policy.late.limit_days = j.at("late_limit_days").get<int>();
    policy.assignment = j.value("assignment", policy.assignment);
  } catch (const std::exception& e) {
    throw std::runtime_error(policy_file(out_dir).string() + " cannot be read: " + e.what());
  }
  return policy;
}

void write_policy(const fs::path& out_dir, const ClassPolicy& policy) {
  json j = json::object();
  j["due"] = policy.late.due ? json(utc_stamp(*policy.late.due)) : json(nullptr);
  j["late_percent_per_day"] = policy.late.percent_per_day;
  j["late_limit_days"] = policy.late.limit_days ? json(*policy.late.limit_days) : json(nullptr);
  j["assignment"] = policy.assignment;
  files::write_whole(policy_file(out_dir), j.dump(2) + "\n");
}

std::optional<Roster> read_kept_roster(const fs::path& out_dir) {
  std::error_code error;
  if (!fs::is_regular_file(roster_file(out_dir), error)) return std::nullopt;
  try {
    return read_roster(files::read_text(roster_file(out_dir)));
  } catch (const std::exception& e) {
    throw std::runtime_error(roster_file(out_dir).string() + ": " + e.what());
  }
}

std::string submission_time(const fs::path& source, bool archive) {
  struct stat info {};
  if (archive) return ::stat(source.c_str(), &info) == 0 ? utc_stamp(info.st_mtime) : "";
  std::time_t newest = 0;
  std::error_code error;
  std::size_t seen = 0;
  for (fs::recursive_directory_iterator it(source, fs::directory_options::skip_permission_denied, error), end;
       !error && it != end && ++seen < 100000; it.increment(error)) {
    if (::lstat(it->path().c_str(), &info) == 0 && S_ISREG(info.st_mode)) newest = std::max(newest, info.st_mtime);
  }
  return newest > 0 ? utc_stamp(newest) : "";
}

}  // namespace cdplab::batch
