// The JSON report (format "cdplab-grade/1") and reading it back.
#include "report/report.h"
#include "report/text.h"

#include <stdexcept>

namespace cdplab::report {
namespace {

using grading::ExerciseResult;
using grading::GradeReport;
using grading::Item;
using grading::ItemKind;
using grading::Outcome;
using nlohmann::json;

json item_to_json(const Item& item) {
  json object = {
      {"kind", grading::to_string(item.kind)},
      {"name", text::valid_utf8(item.name)},
      {"outcome", grading::to_string(item.outcome)},
      {"points", item.points},
      {"max_points", item.max_points},
      {"feedback", text::valid_utf8(item.feedback)},
      {"seconds", item.seconds},
  };
  if (item.launches_observed) {
    json launches = json::array();
    for (const auto& e : item.launches) {
      launches.push_back({{"caller", text::valid_utf8(e.caller)}, {"child", text::valid_utf8(e.child)},
                          {"grids", e.grids}, {"null", e.null_stream}, {"tail", e.tail},
                          {"fire_and_forget", e.fire_and_forget}, {"named", e.named}, {"failed", e.failed}});
      if (!e.fault.empty()) launches.back()["fault"] = text::valid_utf8(e.fault);  // against the lesson
    }
    object["launches"] = launches;
  }
  if (item.timeline.recorded()) {
    const auto& t = item.timeline;
    json grids = json::array();
    for (const auto& g : t.grids) {
      json grid = {{"id", g.id}, {"kernel", text::valid_utf8(g.kernel)}, {"stream", text::valid_utf8(g.stream)},
                   {"blocks", g.blocks}, {"start_ns", g.start_ns}, {"end_ns", g.end_ns}};
      if (g.parent != 0) {
        grid["parent"] = g.parent;
        grid["parent_kernel"] = text::valid_utf8(g.parent_kernel);
        grid["parent_block"] = g.parent_block;
        grid["stream_id"] = g.stream_id;
      }
      if (g.launched_seen) grid["launched_ns"] = g.launched_ns;
      grids.push_back(grid);
    }
    object["timeline"] = {{"run", static_cast<std::uint64_t>(t.run)}, {"runs", static_cast<std::uint64_t>(t.runs)}, {"left_out", t.left_out},
                          {"failed_launches", t.failed_launches}, {"grids", grids}};
  }
  return object;
}

json exercise_to_json(const ExerciseResult& exercise) {
  json items = json::array();
  for (const auto& item : exercise.items) items.push_back(item_to_json(item));
  json lesson = json::array();
  for (const auto& line : exercise.lesson_launches) lesson.push_back(text::valid_utf8(line));
  return {
      {"chapter", text::valid_utf8(exercise.chapter)},
      {"id", text::valid_utf8(exercise.id)},
      {"title", text::valid_utf8(exercise.title)},
      {"file", text::valid_utf8(exercise.file)},
      {"problem", text::valid_utf8(exercise.problem)},
      {"build_log", text::valid_utf8(exercise.build_log)},
      {"hint", text::valid_utf8(exercise.hint)},
      {"host_parts_output", text::valid_utf8(exercise.host_parts_output)},
      {"lesson_launches", lesson},
      {"points", exercise.points()},
      {"max_points", exercise.max_points()},
      {"items", items},
  };
}

// Reading: every error names the field, as a path from the top ("exercises[1].items[0].outcome").

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw std::runtime_error("grade report JSON: " + where + ": " + what);
}

std::string path(const std::string& where, const char* key) { return where.empty() ? key : where + "." + key; }

const json& field(const json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end()) fail(path(where, key), "missing");
  return *it;
}

std::string read_string(const json& object, const char* key, const std::string& where, bool required = false) {
  if (!required && !object.contains(key)) return {};
  const json& value = field(object, key, where);
  if (!value.is_string()) fail(path(where, key), "expected a string, found " + std::string(value.type_name()));
  return value.get<std::string>();
}

double read_number(const json& object, const char* key, const std::string& where) {
  if (!object.contains(key)) return 0;
  const json& value = object.at(key);
  if (!value.is_number()) fail(path(where, key), "expected a number, found " + std::string(value.type_name()));
  return value.get<double>();
}

std::uint64_t read_count(const json& object, const char* key, const std::string& where) {
  if (!object.contains(key)) return 0;
  const json& value = object.at(key);
  if (!value.is_number_unsigned()) fail(path(where, key), "expected a non-negative integer, found " + value.dump());
  return value.get<std::uint64_t>();
}

std::uint64_t read_seed(const json& object, const std::string& where) {
  if (!object.contains("seed")) return 0;
  const json& value = object.at("seed");
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  fail(path(where, "seed"), "expected a non-negative integer, found " + value.dump());
}

const json& read_array(const json& object, const char* key, const std::string& where) {
  const json& value = field(object, key, where);
  if (!value.is_array()) fail(path(where, key), "expected an array, found " + std::string(value.type_name()));
  return value;
}

Outcome read_outcome(const json& object, const std::string& where) {
  const std::string name = read_string(object, "outcome", where, true);
  for (Outcome outcome : {Outcome::passed, Outcome::failed, Outcome::skipped})
    if (name == grading::to_string(outcome)) return outcome;
  fail(path(where, "outcome"), "unknown value \"" + name + "\" (passed, failed or skipped)");
}

ItemKind read_kind(const json& object, const std::string& where) {
  const std::string name = read_string(object, "kind", where, true);
  for (ItemKind kind : {ItemKind::check, ItemKind::rule, ItemKind::question})
    if (name == grading::to_string(kind)) return kind;
  fail(path(where, "kind"), "unknown value \"" + name + "\" (check, rule or question)");
}

void require_object(const json& value, const std::string& where) {
  if (!value.is_object()) fail(where.empty() ? "top level" : where, "expected an object, found " + std::string(value.type_name()));
}

Item item_from_json(const json& object, const std::string& where) {
  require_object(object, where);
  Item item;
  item.kind = read_kind(object, where);
  item.name = read_string(object, "name", where, true);
  item.outcome = read_outcome(object, where);
  item.points = read_number(object, "points", where);
  item.max_points = read_number(object, "max_points", where);
  item.feedback = read_string(object, "feedback", where);
  item.seconds = read_number(object, "seconds", where);
  if (object.contains("launches")) {
    item.launches_observed = true;
    const json& launches = read_array(object, "launches", where);
    for (std::size_t i = 0; i < launches.size(); ++i) {
      const std::string at = where + ".launches[" + std::to_string(i) + "]";
      require_object(launches[i], at);
      grading::LaunchTreeEdge e;
      e.caller = read_string(launches[i], "caller", at);
      e.child = read_string(launches[i], "child", at);
      e.grids = read_count(launches[i], "grids", at);
      e.null_stream = read_count(launches[i], "null", at);
      e.tail = read_count(launches[i], "tail", at);
      e.fire_and_forget = read_count(launches[i], "fire_and_forget", at);
      e.named = read_count(launches[i], "named", at);
      e.failed = read_count(launches[i], "failed", at);
      e.fault = read_string(launches[i], "fault", at);
      item.launches.push_back(e);
    }
  }
  if (object.contains("timeline")) {
    const std::string at = where + ".timeline";
    const json& t = object["timeline"];
    require_object(t, at);
    item.timeline.run = static_cast<int>(read_count(t, "run", at));
    item.timeline.runs = static_cast<int>(read_count(t, "runs", at));
    item.timeline.left_out = read_count(t, "left_out", at);
    item.timeline.failed_launches = read_count(t, "failed_launches", at);
    const json& grids = read_array(t, "grids", at);
    for (std::size_t i = 0; i < grids.size(); ++i) {
      const std::string g_at = at + ".grids[" + std::to_string(i) + "]";
      require_object(grids[i], g_at);
      grading::GridSpan g;
      g.id = read_count(grids[i], "id", g_at);
      g.kernel = read_string(grids[i], "kernel", g_at);
      g.stream = read_string(grids[i], "stream", g_at);
      g.blocks = read_count(grids[i], "blocks", g_at);
      g.start_ns = read_count(grids[i], "start_ns", g_at);
      g.end_ns = read_count(grids[i], "end_ns", g_at);
      g.parent = read_count(grids[i], "parent", g_at);
      g.parent_kernel = read_string(grids[i], "parent_kernel", g_at);
      g.parent_block = read_count(grids[i], "parent_block", g_at);
      g.stream_id = read_count(grids[i], "stream_id", g_at);
      g.launched_seen = grids[i].contains("launched_ns");
      g.launched_ns = read_count(grids[i], "launched_ns", g_at);
      item.timeline.grids.push_back(g);
    }
  }
  return item;
}

ExerciseResult exercise_from_json(const json& object, const std::string& where) {
  require_object(object, where);
  ExerciseResult exercise;
  exercise.chapter = read_string(object, "chapter", where);
  exercise.id = read_string(object, "id", where, true);
  exercise.title = read_string(object, "title", where);
  exercise.file = read_string(object, "file", where);
  exercise.problem = read_string(object, "problem", where);
  exercise.build_log = read_string(object, "build_log", where);
  exercise.hint = read_string(object, "hint", where);
  if (object.contains("host_parts_output")) exercise.host_parts_output = read_string(object, "host_parts_output", where);
  if (object.contains("lesson_launches")) {
    const json& lesson = read_array(object, "lesson_launches", where);
    for (std::size_t i = 0; i < lesson.size(); ++i) {
      if (!lesson[i].is_string()) fail(where + ".lesson_launches[" + std::to_string(i) + "]", "expected a string");
      exercise.lesson_launches.push_back(lesson[i].get<std::string>());
    }
  }
  const json& items = read_array(object, "items", where);
  for (std::size_t i = 0; i < items.size(); ++i)
    exercise.items.push_back(item_from_json(items[i], where + ".items[" + std::to_string(i) + "]"));
  return exercise;
}

}  // namespace

json to_json(const GradeReport& report) {
  json exercises = json::array();
  for (const auto& exercise : report.exercises) exercises.push_back(exercise_to_json(exercise));
  json notes = json::array();
  for (const auto& note : report.notes) notes.push_back(text::valid_utf8(note));
  json phases = json::array();
  for (const auto& [name, seconds] : report.phases) phases.push_back({{"phase", name}, {"seconds", seconds}});
  return {
      {"format", kJsonFormat},
      {"tool_version", text::valid_utf8(report.tool_version)},
      {"source", text::valid_utf8(report.source)},
      {"started_at", text::valid_utf8(report.started_at)},
      {"submitted_at", text::valid_utf8(report.submitted_at)},
      {"seconds", report.seconds},
      {"phases", phases},
      {"seed", report.seed},
      {"device", text::valid_utf8(report.device)},
      {"gpu_problem", text::valid_utf8(report.gpu_problem)},
      {"ran_on", text::valid_utf8(report.ran_on)},
      {"notes", notes},
      {"summary",
       {
           {"points", report.points()},
           {"max_points", report.max_points()},
           {"passed", report.count(Outcome::passed)},
           {"failed", report.count(Outcome::failed)},
           {"skipped", report.count(Outcome::skipped)},
           {"complete", report.complete()},
       }},
      {"exercises", exercises},
  };
}

GradeReport from_json(const json& object) {
  require_object(object, "");
  const std::string format = read_string(object, "format", "", true);
  if (format != kJsonFormat) fail("format", "\"" + format + "\" is not " + kJsonFormat);

  GradeReport report;
  report.tool_version = read_string(object, "tool_version", "");
  report.source = read_string(object, "source", "");
  report.started_at = read_string(object, "started_at", "");
  report.submitted_at = read_string(object, "submitted_at", "");  // older reports have none: ""
  report.seconds = read_number(object, "seconds", "");
  report.seed = read_seed(object, "");
  report.device = read_string(object, "device", "");
  report.gpu_problem = read_string(object, "gpu_problem", "");
  report.ran_on = read_string(object, "ran_on", "");  // older reports have none: ""
  if (object.contains("notes")) {  // optional: older reports have none
    const json& notes = read_array(object, "notes", "");
    for (std::size_t i = 0; i < notes.size(); ++i) {
      if (!notes[i].is_string()) fail("notes[" + std::to_string(i) + "]", "must be a string");
      report.notes.push_back(notes[i].get<std::string>());
    }
  }
  if (object.contains("phases")) {  // optional: older reports have none
    const json& phases = read_array(object, "phases", "");
    for (std::size_t i = 0; i < phases.size(); ++i) {
      const std::string where = "phases[" + std::to_string(i) + "]";
      require_object(phases[i], where);
      report.phases.emplace_back(read_string(phases[i], "phase", where, true), read_number(phases[i], "seconds", where));
    }
  }
  const json& exercises = read_array(object, "exercises", "");
  for (std::size_t i = 0; i < exercises.size(); ++i)
    report.exercises.push_back(exercise_from_json(exercises[i], "exercises[" + std::to_string(i) + "]"));
  return report;
}

}  // namespace cdplab::report
