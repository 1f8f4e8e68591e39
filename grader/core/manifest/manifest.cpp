#include "manifest/manifest.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace cdplab::manifest {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const fs::path& file, const std::string& what) {
  throw std::runtime_error(file.string() + ": " + what);
}

std::string required_string(const toml::table& table, const char* key, const fs::path& file,
                            const std::string& where) {
  const auto value = table[key].value<std::string>();
  if (!value || value->empty()) fail(file, where + ": missing string '" + key + "'");
  return *value;
}

std::vector<std::string> string_list(const toml::table& table, const char* key, const fs::path& file,
                                     const std::string& where) {
  std::vector<std::string> out;
  const auto* node = table.get(key);
  if (node == nullptr) return out;
  const auto* array = node->as_array();
  if (array == nullptr) fail(file, where + ": '" + key + "' must be a list of strings");
  for (const auto& element : *array) {
    const auto text = element.value<std::string>();
    if (!text) fail(file, where + ": '" + key + "' must be a list of strings");
    out.push_back(*text);
  }
  return out;
}

const toml::array* table_array(const toml::table& table, const char* key, const fs::path& file,
                               const std::string& where) {
  const auto* node = table.get(key);
  if (node == nullptr) return nullptr;
  const auto* array = node->as_array();
  if (array == nullptr || !array->is_array_of_tables())
    fail(file, where + ": '" + key + "' must be written [[" + where + "." + key + "]]");
  return array;
}

/// A question's id is a key of the student's quiz file: a bare TOML key.
bool is_bare_key(const std::string& id) {
  if (id.empty()) return false;
  for (const char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  return true;
}

QuestionSpec read_question(const toml::table& table, const fs::path& file, const std::string& where,
                           const std::vector<QuestionSpec>& earlier) {
  QuestionSpec q;
  q.id = required_string(table, "id", file, where + " question");
  const std::string at = where + ": question '" + q.id + "'";
  if (!is_bare_key(q.id)) fail(file, at + ": an id is letters, digits, '-' and '_' only");
  for (const auto& other : earlier)
    if (other.id == q.id) fail(file, at + ": the id is used twice");
  q.text = required_string(table, "text", file, at);
  q.answers = string_list(table, "answers", file, at);
  if (q.answers.empty()) fail(file, at + ": 'answers' lists no accepted answer");
  q.hint = table["hint"].value<std::string>().value_or("");
  q.points = table["points"].value<double>().value_or(1.0);
  if (q.points < 0) fail(file, at + ": negative points");
  return q;
}

Exercise read_exercise(const toml::table& table, const std::string& chapter, const fs::path& file) {
  Exercise e;
  e.chapter = chapter;
  e.id = required_string(table, "id", file, "exercise");
  const std::string where = "exercise '" + e.id + "'";
  e.file = required_string(table, "file", file, where);
  const std::string extension = fs::path(e.file).extension().string();
  if ((extension != ".cu" && extension != ".toml") || e.file.find('/') != std::string::npos || e.file == "chapter.toml")
    fail(file, where + ": 'file' must be a .cu file name (or, for a quiz, a .toml file name) in the chapter folder");
  e.stem = fs::path(e.file).stem().string();
  e.title = required_string(table, "title", file, where);
  e.course = string_list(table, "course", file, where);
  e.hints = string_list(table, "hints", file, where);
  if (const auto* checks = table_array(table, "check", file, "exercise")) {
    for (const auto& node : *checks) {
      const auto& t = *node.as_table();
      CheckSpec check;
      check.name = required_string(t, "name", file, where + " check");
      check.points = t["points"].value<double>().value_or(1.0);
      if (check.points < 0) fail(file, where + ": check '" + check.name + "' has negative points");
      if (const toml::node* memcheck = t.get("memcheck")) {
        if (!memcheck->is_boolean()) fail(file, where + ": check '" + check.name + "': 'memcheck' must be true or false");
        check.memcheck = memcheck->as_boolean()->get();
      }
      if (const toml::node* timeline = t.get("timeline")) {
        if (!timeline->is_boolean()) fail(file, where + ": check '" + check.name + "': 'timeline' must be true or false");
        check.timeline = timeline->as_boolean()->get();
      }
      e.checks.push_back(check);
    }
  }
  if (const auto* rules = table_array(table, "rule", file, "exercise")) {
    for (const auto& node : *rules) {
      try {
        e.rules.push_back(rules::parse_rule(*node.as_table()));
      } catch (const std::exception& error) {
        fail(file, where + ": rule: " + error.what());
      }
    }
  }
  if (const auto* questions = table_array(table, "question", file, "exercise")) {
    for (const auto& node : *questions) e.questions.push_back(read_question(*node.as_table(), file, where, e.questions));
  }
  if (extension == ".toml") {
    if (e.questions.empty() || !e.checks.empty() || !e.rules.empty())
      fail(file, where + ": a quiz (a .toml file) has [[exercise.question]] items and no checks or rules");
  } else if (!e.questions.empty()) {
    fail(file, where + ": [[exercise.question]] items belong to a quiz, whose 'file' is a .toml file");
  } else if (e.checks.empty() && e.rules.empty()) {
    fail(file, where + ": no [[exercise.check]] and no [[exercise.rule]]");
  }
  return e;
}

}  // namespace

double Exercise::max_points() const {
  double sum = 0;
  for (const auto& c : checks) sum += c.points;
  for (const auto& r : rules)
    if (!rules::deducts(r)) sum += r.points;  // such a rule only ever takes points off
  for (const auto& q : questions) sum += q.points;
  return sum;
}

namespace {

/// A name as a path below the project's top may spell it (a shell's tab completion):
/// "chapters/01-fundamentals/child_grids.cu" or "./chapters/01-fundamentals/" as
/// "01-fundamentals/child_grids.cu" and "01-fundamentals".
std::string path_as_name(std::string name) {
  while (name.rfind("./", 0) == 0) name.erase(0, 2);
  if (name.rfind("chapters/", 0) == 0) name.erase(0, 9);
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  return name;
}

}  // namespace

const Exercise* Workbook::find_exercise(const std::string& typed) const {
  const std::string name = path_as_name(typed);
  for (const auto* e : exercises()) {
    if (name == e->id || name == e->stem || name == e->file || name == e->chapter + "/" + e->stem ||
        name == e->path())
      return e;
  }
  return nullptr;
}

const Chapter* Workbook::find_chapter(const std::string& typed) const {
  const std::string id = path_as_name(typed);
  if (id.empty()) return nullptr;
  for (const auto& c : chapters) {
    if (c.id == id || c.id.substr(0, id.size() + 1) == id + "-") return &c;  // "01" finds "01-fundamentals"
  }
  return nullptr;
}

std::vector<const Exercise*> Workbook::exercises() const {
  std::vector<const Exercise*> out;
  for (const auto& c : chapters)
    for (const auto& e : c.exercises) out.push_back(&e);
  return out;
}

std::vector<const Exercise*> Workbook::select(const std::vector<std::string>& names, std::string& unknown) const {
  if (names.empty()) return exercises();
  std::vector<const Exercise*> out;
  for (const auto& name : names) {
    if (const auto* chapter = find_chapter(name)) {
      for (const auto& e : chapter->exercises) out.push_back(&e);
    } else if (const auto* e = find_exercise(name)) {
      out.push_back(e);
    } else {
      unknown = name;
      return {};
    }
  }
  return out;
}

Chapter load_chapter(const fs::path& chapter_toml) {
  toml::table root;
  try {
    root = toml::parse_file(chapter_toml.string());
  } catch (const toml::parse_error& error) {
    std::string where;
    if (error.source().begin) where = " (line " + std::to_string(error.source().begin.line) + ")";
    fail(chapter_toml, std::string(error.description()) + where);
  }
  Chapter chapter;
  const auto* head = root["chapter"].as_table();
  if (head == nullptr) fail(chapter_toml, "missing [chapter] table");
  chapter.id = required_string(*head, "id", chapter_toml, "chapter");
  chapter.title = required_string(*head, "title", chapter_toml, "chapter");
  const std::string folder = chapter_toml.parent_path().filename().string();
  if (chapter.id != folder) fail(chapter_toml, "[chapter] id '" + chapter.id + "' differs from its folder '" + folder + "'");
  if (const auto* list = table_array(root, "exercise", chapter_toml, "chapter")) {
    for (const auto& node : *list) chapter.exercises.push_back(read_exercise(*node.as_table(), chapter.id, chapter_toml));
  }
  if (chapter.exercises.empty()) fail(chapter_toml, "no [[exercise]]");
  return chapter;
}

Workbook load_workbook(const fs::path& project_root) {
  Workbook book;
  const fs::path chapters = project_root / "chapters";
  std::vector<fs::path> files;
  if (fs::is_directory(chapters)) {
    for (const auto& entry : fs::directory_iterator(chapters)) {
      if (entry.is_directory() && fs::exists(entry.path() / "chapter.toml")) files.push_back(entry.path() / "chapter.toml");
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) book.chapters.push_back(load_chapter(file));
  const fs::path suites = project_root / "grader" / "suites";
  if (fs::is_directory(suites)) {
    for (const auto& entry : fs::directory_iterator(suites)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory() && !fs::exists(chapters / name / "chapter.toml")) book.missing_chapters.push_back(name);
    }
    std::sort(book.missing_chapters.begin(), book.missing_chapters.end());
  }
  // Ids are what students type: they must name one exercise.
  std::vector<std::string> ids;
  for (const auto* e : book.exercises()) {
    if (std::find(ids.begin(), ids.end(), e->id) != ids.end())
      throw std::runtime_error("exercise id '" + e->id + "' is used twice (" + e->chapter + ")");
    ids.push_back(e->id);
  }
  return book;
}

}  // namespace cdplab::manifest
