// The mechanical mutation sweep (sweep.h): generate, compile and judge the rules, grade on a GPU,
// report. Each stage reads what an earlier run left in the sweep's folder and does only the rest.
#include "sweep.h"

#include "gpu_present.h"

#include "batch/submissions.h"
#include "files/files.h"
#include "manifest/manifest.h"
#include "process/process.h"
#include "report/report.h"
#include "rules/rule.h"

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace fs = std::filesystem;

namespace cdplab::sweep {

namespace {

using Clock = std::chrono::steady_clock;

std::string hex(std::uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

void write_file(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  const fs::path temporary = file.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + file.string());
  }
  fs::rename(temporary, file);
}

std::optional<nlohmann::json> read_json(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
  return text;
}

std::string tail(const std::string& text, std::size_t size) {
  return text.size() > size ? text.substr(text.size() - size) : text;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

/// The compiler's first error, without the file's path: what a report says of a mutant that
/// does not compile.
std::string first_error(const std::string& output) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find("): error");
    if (at == std::string::npos) continue;
    const auto open = line.rfind('(', at);  // "<file>(<line>): error: ..." -> "line <line>: ..."
    return "line " + line.substr(open + 1, at - open - 1) + line.substr(at + std::string("): error").size());
  }
  return first_line(output);
}

}  // namespace

// ----- the mutants of the workbook ---------------------------------------------------------------

std::vector<ExerciseMutants> generate_exercises(const fs::path& root, const std::vector<std::string>& names) {
  const manifest::Workbook book = manifest::load_workbook(root);
  std::vector<const manifest::Exercise*> chosen;
  std::set<std::string> taken;
  const auto take = [&](const manifest::Exercise* e) {
    if (!e->is_quiz() && taken.insert(e->chapter + "/" + e->stem).second) chosen.push_back(e);
  };
  if (names.empty()) {
    for (const auto* e : book.exercises()) take(e);
  } else {
    for (const auto& name : names) {
      if (const auto* chapter = book.find_chapter(name)) {
        for (const auto& e : chapter->exercises) take(&e);
      } else if (const auto* e = book.find_exercise(name); e != nullptr && !e->is_quiz()) {
        take(e);
      } else {
        throw std::runtime_error("'" + name + "' is no chapter or programming exercise of the workbook "
                                 "(a chapter such as 01-fundamentals, an exercise such as child-grids or "
                                 "01-fundamentals/child_grids)");
      }
    }
    // The workbook's order, whatever the order of the names.
    std::vector<const manifest::Exercise*> ordered;
    for (const auto* e : book.exercises())
      if (std::find(chosen.begin(), chosen.end(), e) != chosen.end()) ordered.push_back(e);
    chosen = ordered;
  }
  std::vector<ExerciseMutants> out;
  for (const auto* e : chosen) {
    ExerciseMutants x;
    x.chapter = e->chapter;
    x.stem = e->stem;
    x.file = e->file;
    x.exercise_id = e->id;
    x.solution = root / "solutions" / e->chapter / e->file;
    x.source = files::read_text(x.solution);
    if (x.source.empty()) throw std::runtime_error("cannot read " + x.solution.string());
    x.mutants = generate(x.source);
    x.duplicate = duplicates(x.source, x.mutants);
    out.push_back(std::move(x));
  }
  return out;
}

// ----- equivalents -------------------------------------------------------------------------------

fs::path equivalents_file(const fs::path& root, const std::string& chapter, const std::string& stem) {
  return root / "grader" / "tests" / "mutants" / chapter / (stem + ".equivalent.toml");
}

std::vector<Equivalent> read_equivalents(const fs::path& file) {
  if (!fs::exists(file)) return {};
  const auto fail = [&](const std::string& what) { throw std::runtime_error(file.string() + ": " + what); };
  toml::table root;
  try {
    root = toml::parse_file(file.string());
  } catch (const toml::parse_error& error) {
    fail(std::string("not valid TOML: ") + error.what());
  }
  std::vector<Equivalent> out;
  std::set<std::string> ids;
  for (const auto& [key, value] : root) {
    if (key != "equivalent") fail("unknown key '" + std::string(key.str()) + "' (only [[equivalent]] tables)");
    const toml::array* array = value.as_array();
    if (array == nullptr || !array->is_array_of_tables()) fail("write [[equivalent]] tables");
    for (const auto& node : *array) {
      const toml::table& table = *node.as_table();
      for (const auto& [field, unused] : table) {
        if (field != "id" && field != "why") fail("unknown key '" + std::string(field.str()) + "' in an [[equivalent]] table");
      }
      Equivalent e;
      e.id = table["id"].value<std::string>().value_or("");
      e.why = table["why"].value<std::string>().value_or("");
      if (e.id.empty()) fail("an [[equivalent]] table without an id");
      if (e.why.empty()) fail("'" + e.id + "' says no 'why': write the reasoning that proves it equivalent");
      if (!ids.insert(e.id).second) fail("'" + e.id + "' is listed twice");
      out.push_back(e);
    }
  }
  return out;
}

// ----- states ------------------------------------------------------------------------------------

const char* to_string(State state) {
  switch (state) {
    case State::duplicate: return "duplicate";
    case State::not_tried: return "not tried";
    case State::did_not_compile: return "did not compile";
    case State::killed_by_rules: return "killed by rules";
    case State::killed: return "killed";
    case State::survived: return "survived";
    case State::equivalent: return "equivalent";
    case State::not_graded: return "not graded";
  }
  return "?";
}

double ExerciseOutcome::kill_rate() const {
  const std::size_t decided = killed() + count(State::survived);
  return decided == 0 ? -1.0 : static_cast<double>(killed()) / static_cast<double>(decided);
}

std::string hash_hex(const std::string& text) { return hex(hash_text(text)); }

namespace {

/// What `cdplab rules` said of one mutant.
struct Verdict {
  bool valid = false;     ///< a verdict of this very text
  bool compiled = false;
  std::vector<std::string> failed;  ///< the rules that failed
  std::string output;
};

/// The sweep's folder, for one exercise.
struct Paths {
  fs::path out;
  const ExerciseMutants* x;

  fs::path rules_dir(const Mutant& m) const { return out / "rules" / x->flat() / x->submission(m); }
  fs::path rules_source(const Mutant& m) const { return rules_dir(m) / x->chapter / x->file; }
  fs::path verdict(const Mutant& m) const { return rules_dir(m) / "verdict.json"; }
  fs::path class_dir() const { return out / "class" / x->flat(); }
  fs::path class_source(const Mutant& m) const { return class_dir() / x->submission(m) / x->chapter / x->file; }
  /// The hash of the text each submission of the class had when it was written.
  fs::path class_hashes() const { return out / "class" / (x->flat() + ".hashes.json"); }
  fs::path grades_dir() const { return out / "grades" / x->flat(); }
  fs::path result(const Mutant& m) const {
    // A name past 64 bytes is kept in a folder of a shorter name (batch/submissions.h).
    return grades_dir() / "students" / cdplab::batch::student_folder(x->submission(m)) / "result.json";
  }
};

Verdict read_verdict(const fs::path& file, const std::string& hash) {
  Verdict v;
  const auto json = read_json(file);
  if (!json || !json->is_object() || json->value("hash", "") != hash) return v;
  v.valid = true;
  v.compiled = json->value("compiled", false);
  if (json->contains("failed") && (*json)["failed"].is_array())
    for (const auto& rule : (*json)["failed"]) v.failed.push_back(rule.get<std::string>());
  v.output = json->value("output", "");
  return v;
}

/// The points of each rule of an exercise, by the description a report gives it.
std::map<std::string, double> rule_points(const fs::path& root, const std::string& exercise_id) {
  static std::map<std::string, std::map<std::string, double>> cache;
  static std::map<fs::path, manifest::Workbook> books;
  if (!books.count(root)) books[root] = manifest::load_workbook(root);
  auto& points = cache[root.string() + "|" + exercise_id];
  if (points.empty()) {
    if (const auto* e = books[root].find_exercise(exercise_id))
      for (const auto& rule : e->rules) points[rules::describe(rule)] = rule.points;
  }
  return points;
}

bool rules_kill(const Verdict& v, const std::map<std::string, double>& points) {
  return v.compiled && std::any_of(v.failed.begin(), v.failed.end(), [&](const std::string& rule) {
           const auto it = points.find(rule);
           return it != points.end() && it->second > 0;
         });
}

Verdict judge_rules(const Settings& settings, const fs::path& file, const std::string& exercise_id, const std::string& hash) {
  process::Options options;
  options.timeout_seconds = 600;
  const auto result = process::run({settings.cdplab, "rules", file.string(), "--exercise", exercise_id}, options);
  Verdict v;
  v.valid = true;
  // Exit 0: every rule passed (or the exercise has none); 1 with the verdicts printed: some
  // failed; anything else: the file did not compile.
  v.compiled = result.ok() || (result.exit_code == 1 && result.output.find("\nRules of ") != std::string::npos);
  std::istringstream lines(result.output);
  const std::string mark = "  [FAIL] ";
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(mark, 0) == 0) v.failed.push_back(line.substr(mark.size()));
  v.output = tail(result.output, 3000);
  if (!result.started) v.output = "cdplab could not be started: " + settings.cdplab;
  nlohmann::json json = {{"hash", hash}, {"compiled", v.compiled}, {"failed", v.failed}, {"output", v.output}};
  write_file(file.parent_path().parent_path() / "verdict.json", json.dump(2) + "\n");
  return v;
}

/// The mutants of one exercise the sweep takes, in the order it takes them.
std::vector<std::size_t> order_of(const ExerciseMutants& x, std::size_t sample) {
  std::vector<bool> excluded(x.mutants.size());
  for (std::size_t i = 0; i < x.mutants.size(); ++i) excluded[i] = x.duplicate[i] != -1;
  if (sample > 0) return stratified_order(x.mutants, excluded);
  std::vector<std::size_t> all;
  for (std::size_t i = 0; i < x.mutants.size(); ++i)
    if (!excluded[i]) all.push_back(i);
  return all;
}

struct Budget {
  Clock::time_point start = Clock::now();
  double seconds = 0;
  double left() const {
    if (seconds <= 0) return 1e18;
    return seconds - std::chrono::duration<double>(Clock::now() - start).count();
  }
  bool over() const { return left() <= 0; }
};

void say(const Settings& s, const std::string& line) {
  if (s.log != nullptr) *s.log << line << std::endl;
}

/// Compiles (with `cdplab rules`) the mutants each exercise takes, in its order, until `sample`
/// of them compile (all of them when sample is 0). Returns, per exercise, the mutants tried.
std::vector<std::vector<std::size_t>> compile_stage(const Settings& settings, const std::vector<ExerciseMutants>& xs,
                                                    const Budget& budget, bool& stopped) {
  std::vector<std::vector<std::size_t>> tried(xs.size());
  std::vector<std::vector<std::size_t>> orders(xs.size());
  std::vector<std::size_t> next(xs.size(), 0), compiled(xs.size(), 0);
  for (std::size_t e = 0; e < xs.size(); ++e) orders[e] = order_of(xs[e], settings.sample);
  const unsigned workers = settings.compile_jobs > 0 ? settings.compile_jobs
                                                     : std::max(1u, std::min(std::thread::hardware_concurrency(), 8u));
  std::size_t done = 0, fresh = 0;
  const auto start = Clock::now();
  for (;;) {
    struct Job {
      std::size_t exercise, mutant;
      std::string hash;
      Verdict verdict;
      bool ran = false;
    };
    std::vector<Job> jobs;
    for (std::size_t e = 0; e < xs.size(); ++e) {
      const Paths paths{settings.out, &xs[e]};
      std::size_t pending = 0;
      while (next[e] < orders[e].size() && (settings.sample == 0 || compiled[e] + pending < settings.sample)) {
        const std::size_t i = orders[e][next[e]++];
        const Mutant& m = xs[e].mutants[i];
        const std::string text = apply(xs[e].source, m);
        const std::string hash = hex(hash_text(text));
        const Verdict cached = read_verdict(paths.verdict(m), hash);
        // Barrier and fence removals come on top of the sample: every one is taken.
        const bool counted = !is_ordering_operator(m.op);
        tried[e].push_back(i);
        if (cached.valid) {
          if (cached.compiled && counted) ++compiled[e];
          continue;
        }
        write_file(paths.rules_source(m), text);
        jobs.push_back({e, i, hash, {}, false});
        if (counted) ++pending;
      }
    }
    if (jobs.empty()) break;
    std::atomic<std::size_t> cursor{0};
    std::vector<std::thread> threads;
    for (unsigned w = 0; w < std::min<std::size_t>(workers, jobs.size()); ++w) {
      threads.emplace_back([&] {
        for (std::size_t j = cursor++; j < jobs.size(); j = cursor++) {
          if (budget.over()) return;
          Job& job = jobs[j];
          const Paths paths{settings.out, &xs[job.exercise]};
          job.verdict = judge_rules(settings, paths.rules_source(xs[job.exercise].mutants[job.mutant]),
                                    xs[job.exercise].exercise_id, job.hash);
          job.ran = true;
        }
      });
    }
    for (auto& t : threads) t.join();
    for (const Job& job : jobs) {
      if (!job.ran) {  // the budget ran out: not tried after all
        auto& list = tried[job.exercise];
        list.erase(std::remove(list.begin(), list.end(), job.mutant), list.end());
        stopped = true;
        continue;
      }
      ++fresh;
      if (job.verdict.compiled && !is_ordering_operator(xs[job.exercise].mutants[job.mutant].op)) ++compiled[job.exercise];
    }
    done += jobs.size();
    if (stopped) break;
    say(settings, "compiled " + std::to_string(fresh) + " mutant(s) to PTX so far (" +
                      std::to_string(static_cast<int>(std::chrono::duration<double>(Clock::now() - start).count())) + " s)");
  }
  (void)done;
  return tried;
}

std::map<std::string, std::string> read_hashes(const fs::path& file) {
  std::map<std::string, std::string> out;
  if (const auto json = read_json(file); json && json->is_object())
    for (const auto& [name, hash] : json->items())
      if (hash.is_string()) out[name] = hash.get<std::string>();
  return out;
}

/// Whether a result lost points (killed), kept them all (survived) or skipped something.
struct Graded {
  bool exists = false;
  bool built = true;
  bool lost = false;
  bool skipped = false;
  std::string detail;
  std::string device;
};

Graded read_result(const fs::path& file, const std::string& exercise_id) {
  Graded g;
  const auto json = read_json(file);
  if (!json) return g;
  grading::GradeReport report;
  try {
    report = report::from_json(*json);
  } catch (const std::exception&) {
    return g;
  }
  for (const auto& e : report.exercises) {
    if (e.id != exercise_id) continue;
    g.exists = true;
    g.device = report.device;
    if (!e.problem.empty()) {
      g.built = false;
      g.detail = first_line(e.problem);
      return g;
    }
    for (const auto& item : e.items) {
      if (item.outcome == grading::Outcome::failed && item.points < item.max_points) {
        g.lost = true;
        g.detail += (g.detail.empty() ? "" : "; ") + item.name;
      }
      if (item.outcome == grading::Outcome::skipped) g.skipped = true;
    }
  }
  return g;
}

/// Writes the class of one exercise: the mutants to grade, each a submission. Removes the
/// submissions of mutants no longer taken, and the results of those whose text changed or whose
/// grade is not final. Returns how many still need a grade.
std::size_t write_class(const Settings& settings, const ExerciseMutants& x, const std::vector<std::size_t>& to_grade, bool regrade_incomplete) {
  const Paths paths{settings.out, &x};
  auto hashes = read_hashes(paths.class_hashes());
  std::set<std::string> names;
  std::size_t pending = 0;
  for (const std::size_t i : to_grade) {
    const Mutant& m = x.mutants[i];
    const std::string name = x.submission(m);
    names.insert(name);
    const std::string text = apply(x.source, m);
    const std::string hash = hex(hash_text(text));
    const fs::path student = paths.grades_dir() / "students" / name;
    if (hashes[name] != hash) {
      fs::remove_all(student);  // graded with another text, or never
      hashes[name] = hash;
    }
    if (files::read_text(paths.class_source(m)) != text) write_file(paths.class_source(m), text);
    if (regrade_incomplete && fs::exists(paths.result(m))) {
      const Graded g = read_result(paths.result(m), x.exercise_id);
      if (!g.exists || (g.built && !g.lost && g.skipped)) fs::remove_all(student);
    }
    if (!fs::exists(paths.result(m))) ++pending;
  }
  if (fs::exists(paths.class_dir())) {
    for (const auto& entry : fs::directory_iterator(paths.class_dir()))
      if (!names.count(entry.path().filename().string())) fs::remove_all(entry.path());
  }
  nlohmann::json json(hashes);
  write_file(paths.class_hashes(), json.dump(2) + "\n");
  return pending;
}

/// Where every mutant of every exercise stands, from what the sweep's folder holds.
std::vector<ExerciseOutcome> judge(const Settings& settings, const std::vector<ExerciseMutants>& xs) {
  std::vector<ExerciseOutcome> outcomes;
  for (std::size_t e = 0; e < xs.size(); ++e) {
    const ExerciseMutants& x = xs[e];
    const Paths paths{settings.out, &x};
    const auto points = rule_points(settings.root, x.exercise_id);
    const auto hashes = read_hashes(paths.class_hashes());
    std::map<std::string, std::string> equivalents;
    for (const auto& eq : read_equivalents(equivalents_file(settings.root, x.chapter, x.stem))) equivalents[eq.id] = eq.why;
    ExerciseOutcome outcome;
    outcome.exercise = e;
    for (std::size_t i = 0; i < x.mutants.size(); ++i) {
      const Mutant& m = x.mutants[i];
      MutantOutcome o;
      o.index = i;
      if (const auto it = equivalents.find(m.id()); it != equivalents.end()) {
        o.listed_equivalent = true;
        o.why = it->second;
      }
      const std::string hash = hex(hash_text(apply(x.source, m)));
      const Verdict verdict = x.duplicate[i] != -1 ? Verdict{} : read_verdict(paths.verdict(m), hash);
      const auto graded_hash = hashes.find(x.submission(m));
      const Graded graded = verdict.valid && verdict.compiled && graded_hash != hashes.end() && graded_hash->second == hash
                                ? read_result(paths.result(m), x.exercise_id)
                                : Graded{};
      if (x.duplicate[i] != -1) {
        o.state = State::duplicate;
        o.detail = x.duplicate[i] == -2 ? "the reference's text" : "the text of " + x.mutants[static_cast<std::size_t>(x.duplicate[i])].id();
      } else if (!verdict.valid) {
        o.state = State::not_tried;
      } else if (!verdict.compiled) {
        o.state = State::did_not_compile;
        o.detail = first_error(verdict.output);
      } else if (graded.exists && !graded.built) {
        o.state = State::did_not_compile;
        o.detail = graded.detail;
      } else if (graded.exists && graded.lost) {
        o.state = State::killed;
        o.detail = graded.detail;
      } else if (graded.exists && !graded.skipped) {
        o.state = o.listed_equivalent ? State::equivalent : State::survived;
      } else if (rules_kill(verdict, points)) {
        o.state = State::killed_by_rules;
        for (const auto& rule : verdict.failed) o.detail += (o.detail.empty() ? "" : "; ") + rule;
      } else {
        o.state = State::not_graded;
      }
      if (graded.exists && !graded.device.empty()) outcome.device = graded.device;
      ++outcome.counts[o.state];
      outcome.mutants.push_back(o);
      equivalents.erase(m.id());
    }
    for (const auto& [id, why] : equivalents) outcome.unknown_equivalents.push_back(id);
    outcomes.push_back(std::move(outcome));
  }
  return outcomes;
}

std::string percent(double rate) {
  if (rate < 0) return "-";
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << rate * 100 << " %";
  return out.str();
}

struct Tally {
  std::size_t generated = 0, duplicates = 0, tried = 0, not_compiled = 0, by_rules = 0, on_gpu = 0, survived = 0,
              equivalent = 0, not_graded = 0;
  void add(const ExerciseOutcome& o, std::size_t mutants) {
    generated += mutants;
    duplicates += o.count(State::duplicate);
    tried += mutants - o.count(State::duplicate) - o.count(State::not_tried);
    not_compiled += o.count(State::did_not_compile);
    by_rules += o.count(State::killed_by_rules);
    on_gpu += o.count(State::killed);
    survived += o.count(State::survived);
    equivalent += o.count(State::equivalent);
    not_graded += o.count(State::not_graded);
  }
  double rate() const {
    const std::size_t decided = by_rules + on_gpu + survived;
    return decided == 0 ? -1.0 : static_cast<double>(by_rules + on_gpu) / static_cast<double>(decided);
  }
  std::string row(const std::string& name) const {
    return "| " + name + " | " + std::to_string(generated) + " | " + std::to_string(duplicates) + " | " +
           std::to_string(tried) + " | " + std::to_string(not_compiled) + " | " + std::to_string(by_rules) + " | " +
           std::to_string(on_gpu) + " | " + std::to_string(survived) + " | " + std::to_string(equivalent) + " | " +
           std::to_string(not_graded) + " | " + percent(rate()) + " |\n";
  }
};

std::string indent_block(const std::string& text, const std::string& mark) {
  std::string out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out += mark + line + "\n";
  return out;
}

void write_report(const Settings& settings, const SweepOutcome& sweep) {
  const auto& xs = sweep.exercises;
  std::set<std::string> devices;
  for (const auto& o : sweep.outcomes)
    if (!o.device.empty()) devices.insert(o.device);
  std::string graded_on;
  for (const auto& d : devices) graded_on += (graded_on.empty() ? "" : ", ") + d;

  std::string score =
      "# Mechanical mutation sweep\n\n"
      "Written by `cdplab_mutation_sweep` on " + today() + " (grader/tests/mutants/README.md, \"The mechanical "
      "sweep\"); graded on " + (graded_on.empty() ? std::string("no GPU yet") : graded_on) + ".\n\n"
      "A mutant is *killed* when it loses any point: by a rule worth points (`cdplab rules`, no GPU needed) or "
      "in the class grader's run on a GPU. The kill rate is killed / (killed + survived): mutants listed as "
      "equivalent, those that did not compile, and those not graded yet are left out. *Tried*: the mutants the "
      "sweep took (its sample) and handed to the compiler.\n\n";
  const std::string header =
      "| exercise | generated | duplicates | tried | did not compile | killed by rules | killed on the GPU | "
      "survived | equivalent | not graded | kill rate |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  std::string chapter_header = header;
  chapter_header.replace(0, std::string("| exercise").size(), "| chapter");
  score += "## Per exercise\n\n" + header;
  std::map<std::string, Tally> chapters;
  Tally all;
  for (std::size_t e = 0; e < xs.size(); ++e) {
    Tally t;
    t.add(sweep.outcomes[e], xs[e].mutants.size());
    score += t.row(xs[e].key());
    chapters[xs[e].chapter].add(sweep.outcomes[e], xs[e].mutants.size());
    all.add(sweep.outcomes[e], xs[e].mutants.size());
  }
  score += all.row("**all**");
  score += "\n## Per chapter\n\n" + chapter_header;
  for (const auto& [chapter, t] : chapters) score += t.row(chapter);
  score += all.row("**all**");

  // Per operator: what each one's graded mutants did.
  struct OpTally {
    std::size_t generated = 0, killed = 0, survived = 0, equivalent = 0, not_compiled = 0;
  };
  std::map<std::string, OpTally> ops;
  for (std::size_t e = 0; e < xs.size(); ++e) {
    for (const auto& o : sweep.outcomes[e].mutants) {
      OpTally& t = ops[xs[e].mutants[o.index].op];
      ++t.generated;
      if (o.state == State::killed || o.state == State::killed_by_rules) ++t.killed;
      if (o.state == State::survived) ++t.survived;
      if (o.state == State::equivalent) ++t.equivalent;
      if (o.state == State::did_not_compile) ++t.not_compiled;
    }
  }
  score += "\n## Per operator\n\n| operator | what it does | generated | did not compile | killed | survived | equivalent | kill rate |\n"
           "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& op : operators()) {
    const auto found = ops.find(op.name);
    if (found == ops.end()) continue;
    const OpTally& t = found->second;
    const std::size_t decided = t.killed + t.survived;
    score += "| " + std::string(op.name) + " | " + op.what + " | " + std::to_string(t.generated) + " | " +
             std::to_string(t.not_compiled) + " | " + std::to_string(t.killed) + " | " + std::to_string(t.survived) +
             " | " + std::to_string(t.equivalent) + " | " +
             percent(decided == 0 ? -1.0 : static_cast<double>(t.killed) / static_cast<double>(decided)) + " |\n";
  }
  write_file(settings.out / "sweep-score.md", score);

  std::string survivors =
      "# Survivors of the mechanical mutation sweep\n\n"
      "Every graded mutant that kept full marks, with the line it changes (" + today() + "). Triage each one: a "
      "bug the checks should catch (add a check, an input or a rule; then a catalogue mutant in "
      "`grader/tests/mutants/<chapter>/<stem>.toml` keeps it caught), or a mutant no submission can tell from "
      "the reference (list it, with the reasoning, in `grader/tests/mutants/<chapter>/<stem>.equivalent.toml`).\n";
  nlohmann::json results = nlohmann::json::array();
  for (std::size_t e = 0; e < xs.size(); ++e) {
    const ExerciseMutants& x = xs[e];
    std::string section, listed;
    for (const auto& o : sweep.outcomes[e].mutants) {
      const Mutant& m = x.mutants[o.index];
      results.push_back({{"exercise", x.key()}, {"id", m.id()}, {"operator", m.op}, {"line", m.line},
                         {"state", to_string(o.state)}, {"detail", o.detail}});
      const auto [before, after] = changed_lines(x.source, m);
      const std::string diff = "```diff\n" + indent_block(before, "-") + indent_block(after, "+") + "```\n";
      if (o.state == State::survived) {
        section += "\n### `" + m.id() + "`, line " + std::to_string(m.line) + "\n\n" + diff;
      } else if (o.state == State::equivalent) {
        listed += "- `" + m.id() + "` (line " + std::to_string(m.line) + "): " + o.why + "\n";
      } else if (o.listed_equivalent && (o.state == State::killed || o.state == State::killed_by_rules)) {
        section += "\n### `" + m.id() + "`, line " + std::to_string(m.line) +
                   ": listed as equivalent, but it lost points (" + o.detail + ")\n\n" + diff +
                   "\nTake it out of the equivalents file.\n";
      }
    }
    std::string unknown;
    for (const auto& id : sweep.outcomes[e].unknown_equivalents) unknown += "- `" + id + "`\n";
    if (section.empty() && listed.empty() && unknown.empty()) continue;
    survivors += "\n## " + x.key() + " (" + x.exercise_id + ")\n" + section;
    if (!listed.empty()) survivors += "\nListed as equivalent:\n\n" + listed;
    if (!unknown.empty())
      survivors += "\nListed as equivalent, but no longer generated (the solution changed: triage them again):\n\n" + unknown;
  }
  write_file(settings.out / "sweep-survivors.md", survivors);
  write_file(settings.out / "sweep-results.json", results.dump(1) + "\n");
}

void print_table(const Settings& settings, const SweepOutcome& sweep) {
  if (settings.log == nullptr) return;
  std::ostream& out = *settings.log;
  out << std::left << std::setw(44) << "exercise" << std::right << std::setw(6) << "gen" << std::setw(7) << "tried"
      << std::setw(8) << "no-ptx" << std::setw(8) << "killed" << std::setw(9) << "survived" << std::setw(8) << "equiv"
      << std::setw(9) << "pending" << std::setw(10) << "rate" << "\n";
  for (std::size_t e = 0; e < sweep.exercises.size(); ++e) {
    const auto& o = sweep.outcomes[e];
    const auto& x = sweep.exercises[e];
    const std::size_t tried = x.mutants.size() - o.count(State::duplicate) - o.count(State::not_tried);
    out << std::left << std::setw(44) << x.key() << std::right << std::setw(6) << x.mutants.size() << std::setw(7)
        << tried << std::setw(8) << o.count(State::did_not_compile) << std::setw(8) << o.killed() << std::setw(9)
        << o.count(State::survived) << std::setw(8) << o.count(State::equivalent) << std::setw(9)
        << o.count(State::not_graded) << std::setw(10) << percent(o.kill_rate()) << "\n";
  }
  out << "report: " << (settings.out / "sweep-score.md").string() << ", " << (settings.out / "sweep-survivors.md").string()
      << std::endl;
}

}  // namespace

SweepOutcome report_sweep(const Settings& settings) {
  SweepOutcome sweep;
  sweep.exercises = generate_exercises(settings.root, settings.only);
  sweep.outcomes = judge(settings, sweep.exercises);
  write_report(settings, sweep);
  print_table(settings, sweep);
  return sweep;
}

SweepOutcome run_sweep(const Settings& settings) {
  Budget budget;
  budget.seconds = settings.seconds;
  SweepOutcome sweep;
  sweep.exercises = generate_exercises(settings.root, settings.only);
  const auto& xs = sweep.exercises;
  std::size_t generated = 0;
  for (const auto& x : xs) generated += x.mutants.size();
  say(settings, std::to_string(generated) + " mutants of " + std::to_string(xs.size()) + " exercise(s); " +
                    (settings.sample > 0 ? "a sample of " + std::to_string(settings.sample) + " per exercise"
                                         : std::string("all of them")));

  // 1. Compile each mutant taken to PTX and judge its rules.
  const auto tried = compile_stage(settings, xs, budget, sweep.stopped);

  // 2. The mutants to grade, exercise by exercise, as classes.
  const bool gpu = settings.grade && testing::gpu_present();
  if (settings.grade && !gpu) say(settings, "no GPU (nvidia-smi lists none): the mutants are compiled and judged by rules only");
  std::vector<std::size_t> pending(xs.size(), 0);
  for (std::size_t e = 0; e < xs.size(); ++e) {
    const Paths paths{settings.out, &xs[e]};
    const auto points = rule_points(settings.root, xs[e].exercise_id);
    std::vector<std::size_t> to_grade;
    for (const std::size_t i : tried[e]) {
      const Mutant& m = xs[e].mutants[i];
      const Verdict v = read_verdict(paths.verdict(m), hex(hash_text(apply(xs[e].source, m))));
      if (!v.valid || !v.compiled) continue;
      if (rules_kill(v, points) && !settings.grade_rule_kills) continue;
      to_grade.push_back(i);
    }
    pending[e] = write_class(settings, xs[e], to_grade, gpu);
  }

  // 3. Grade each exercise's class on the GPU, within the budget.
  if (gpu) {
    sweep.graded = true;
    for (std::size_t e = 0; e < xs.size() && !sweep.stopped; ++e) {
      if (pending[e] == 0) continue;
      if (budget.over()) {
        sweep.stopped = true;
        break;
      }
      const Paths paths{settings.out, &xs[e]};
      std::vector<std::string> args = {settings.cdplab};
      if (settings.build_jobs > 0) args.insert(args.end(), {"-j", std::to_string(settings.build_jobs)});
      args.insert(args.end(), {"grade", paths.class_dir().string(), "--only", xs[e].exercise_id, "--out",
                               paths.grades_dir().string(), "--parallel", std::to_string(settings.parallel)});
      say(settings, xs[e].key() + ": grading " + std::to_string(pending[e]) + " mutant(s): " + process::command_line(args));
      process::Options options;
      options.timeout_seconds = settings.seconds > 0 ? std::max(1.0, budget.left()) : 0;
      options.output_limit = 4 << 20;
      const auto ran = process::run(args, options);
      say(settings, xs[e].key() + ": " + (ran.timed_out ? "stopped at the end of the budget after " : "graded in ") +
                        std::to_string(static_cast<int>(ran.seconds)) + " s");
      if (!ran.started) throw std::runtime_error("cannot start " + settings.cdplab);
      if (!ran.timed_out && ran.exit_code != 0 && ran.exit_code != 3)
        say(settings, "cdplab grade ended with " + ran.describe() + ":\n" + tail(ran.output, 3000));
      if (!settings.keep_work) fs::remove_all(paths.grades_dir() / "work");
      if (ran.timed_out) sweep.stopped = true;
    }
  }

  // 4. The report.
  sweep.outcomes = judge(settings, xs);
  write_report(settings, sweep);
  print_table(settings, sweep);
  if (sweep.stopped) say(settings, "the budget ran out: run the same command again to go on");
  return sweep;
}

}  // namespace cdplab::sweep
