#include "batch/slurm.h"

#include "batch/batch.h"

#include "files/files.h"
#include "process/process.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace cdplab::batch::slurm {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool has_line_break(const std::string& text) { return text.find_first_of("\n\r") != std::string::npos; }

/// Writes a file whole: a reader (or a task on another node) never sees half of it.
void write_file(const fs::path& path, const std::string& text) {
  const fs::path partial = path.string() + ".partial";
  {
    std::ofstream out(partial, std::ios::binary);
    out << text;
    if (!out) throw Error("cannot write " + path.string());
  }
  fs::rename(partial, path);
}

/// One `--option=value` word per value, so that a value starting with a dash stays a value.
void append_repeated(std::string& line, const std::string& option, const std::vector<std::string>& values) {
  for (const auto& value : values) line += " " + shell_quote(option + "=" + value);
}

/// The #SBATCH lines every job of a run shares: its log, its folder, the account, the partition.
std::string common_directives(const std::string& job_name, const std::string& log_pattern, const Command& command,
                              const Resources& resources) {
  std::string out = directive("job-name", job_name);
  out += directive("output", log_pattern);
  out += directive("chdir", command.out_dir.string());
  if (!resources.partition.empty()) out += directive("partition", resources.partition);
  if (!resources.account.empty()) out += directive("account", resources.account);
  return out;
}

/// The more sbatch options given, last: a later #SBATCH line overrides an earlier one.
std::string extra_directives(const Resources& resources) {
  std::string out;
  for (const auto& arg : resources.sbatch_args) out += extra_directive(arg);
  return out;
}

/// A job's command: this cdplab on the class and its results folder, then `mode_args`.
std::string cdplab_line(const Command& command, const std::string& jobs, const std::string& mode_args) {
  return "exec " + shell_quote(command.cdplab.string()) + " -j " + jobs + " grade " +
         shell_quote(command.class_dir.string()) + " " + shell_quote("--out=" + command.out_dir.string()) + " " +
         mode_args;
}

}  // namespace

Layout::Layout(const fs::path& out_dir)
    : dir(out_dir / "slurm"),
      listing(dir / "submissions.txt"),
      array_script(dir / "grade.sbatch"),
      merge_script(dir / "merge.sbatch"),
      logs(dir / "logs"),
      done(dir / "done") {}

fs::path Layout::task_log(std::size_t index) const { return logs / (std::to_string(index) + ".out"); }
fs::path Layout::merge_log() const { return logs / "merge.out"; }
fs::path Layout::done_marker(std::size_t index) const { return done / std::to_string(index); }

fs::path this_executable() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error) throw Error("cannot find this cdplab executable (/proc/self/exe: " + error.message() + ")");
  return self;
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string directive(const std::string& option, const std::string& value) {
  if (has_line_break(value)) throw Error("--" + option + " cannot hold a line break");
  std::string quoted;
  for (const char c : value) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return "#SBATCH --" + option + "=\"" + quoted + "\"\n";
}

std::string extra_directive(const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-' || has_line_break(arg))
    throw Error("--sbatch-arg takes one sbatch option, such as --sbatch-arg=--qos=normal (found '" + arg + "')");
  const std::size_t equals = arg.find('=');
  const std::string name = arg.substr(0, equals);
  if (name.size() < 3 || name.rfind("--", 0) != 0 || name.find_first_of(" \t\"'\\") != std::string::npos)
    throw Error("--sbatch-arg takes an sbatch option by its long name, such as --sbatch-arg=--qos=normal (found '" +
                arg + "')");
  if (equals == std::string::npos) return "#SBATCH " + name + "\n";
  return directive(name.substr(2), arg.substr(equals + 1));
}

std::string output_pattern(const fs::path& path) {
  const std::string text = path.string();
  if (text.find('\\') != std::string::npos || has_line_break(text))
    throw Error("Slurm cannot write its logs to " + text + ": a backslash or a line break in the path");
  std::string out;
  for (const char c : text) out += c == '%' ? std::string("%%") : std::string(1, c);
  return out;
}

void check_resources(const Resources& resources) {
  const std::pair<const char*, const std::string*> named[] = {{"partition", &resources.partition},
                                                               {"gres", &resources.gres},
                                                               {"time", &resources.time},
                                                               {"mem", &resources.mem},
                                                               {"account", &resources.account}};
  for (const auto& [option, value] : named) directive(option, *value);
  for (const auto& arg : resources.sbatch_args) extra_directive(arg);
}

std::string index_ranges(const std::vector<std::size_t>& indices) {
  std::string out;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(indices[i]);
    if (j > i) out += "-" + std::to_string(indices[j]);
    i = j + 1;
  }
  return out;
}

std::string listing(const std::vector<Submission>& submissions) {
  std::string out;
  for (std::size_t i = 0; i < submissions.size(); ++i) {
    const auto& s = submissions[i];
    if (s.name.find('\t') != std::string::npos || has_line_break(s.name) || has_line_break(s.source.string()))
      throw Error("the submission '" + s.name + "' has a tab or a line break in its name: rename it to grade it on Slurm");
    out += std::to_string(i) + "\t" + s.name + "\t" + s.source.string() + "\n";
  }
  return out;
}

std::vector<Submission> read_listing(const std::string& text) {
  std::vector<Submission> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const std::size_t tab1 = line.find('\t');
    const std::size_t tab2 = tab1 == std::string::npos ? tab1 : line.find('\t', tab1 + 1);
    if (tab2 == std::string::npos || line.substr(0, tab1) != std::to_string(out.size()))
      throw Error("submissions.txt, line " + std::to_string(out.size() + 1) + ": expected '" +
                  std::to_string(out.size()) + "<TAB>student<TAB>source', found '" + line + "'");
    Submission s;
    s.name = line.substr(tab1 + 1, tab2 - tab1 - 1);
    s.source = line.substr(tab2 + 1);
    s.archive = !fs::is_directory(s.source);
    out.push_back(s);
  }
  return out;
}

std::string array_script(const Command& command, const Resources& resources, const std::vector<std::size_t>& tasks,
                         const Layout& layout) {
  std::string out = "#!/bin/bash\n";
  out += "# Grades a class on Slurm, one array task per submission: task INDEX grades line INDEX of\n";
  out += "# submissions.txt beside this file. Written and submitted by cdplab grade --slurm.\n";
  // %a: the task's index (the folder's own % signs are doubled, so they stay literal).
  out += common_directives("cdplab-grade", output_pattern(layout.logs) + "/%a.out", command, resources);
  out += directive("array", index_ranges(tasks));
  out += resource_directives(resources);
  out += "\nset -u\n";
  std::string mode = "--slurm-task=\"${SLURM_ARRAY_TASK_ID}\"";
  append_repeated(mode, "--only", command.only);
  if (command.force) mode += " --force";
  append_repeated(mode, "--regrade", command.regrade);
  if (command.sanitize) mode += " --sanitize";
  if (command.process_per_check) mode += " --process-per-check";
  if (command.no_sandbox) mode += " --no-sandbox";
  if (command.keep_work) mode += " --keep-work";
  if (command.visibility != "visible") mode += " --gradescope-visibility " + command.visibility;  // one of four words
  // Build with the CPUs Slurm gave the task, unless cdplab -j said otherwise.
  const std::string jobs = command.build_jobs > 0 ? std::to_string(command.build_jobs) : "\"${SLURM_CPUS_PER_TASK:-1}\"";
  out += cdplab_line(command, jobs, mode) + "\n";
  return out;
}

std::string merge_script(const Command& command, const Resources& resources, const Layout& layout) {
  std::string out = "#!/bin/bash\n";
  out += "# Rewrites the gradebook and the class summary from the results of the grading tasks.\n";
  out += "# Submitted by cdplab grade --slurm with --dependency=afterany:<the grading array>.\n";
  out += common_directives("cdplab-merge", output_pattern(layout.merge_log()), command, resources);
  out += directive("time", "10:00");  // reading the results takes seconds
  out += directive("cpus-per-task", "1");
  out += extra_directives(resources);
  out += "\nset -u\n";
  out += cdplab_line(command, "1", "--slurm-merge") + "\n";
  return out;
}

std::string resource_directives(const Resources& resources) {
  std::string out;
  if (!resources.gres.empty()) out += directive("gres", resources.gres);
  if (!resources.time.empty()) out += directive("time", resources.time);
  if (resources.cpus_per_task > 0) out += directive("cpus-per-task", std::to_string(resources.cpus_per_task));
  if (!resources.mem.empty()) out += directive("mem", resources.mem);
  return out + extra_directives(resources);
}

std::optional<std::string> parse_job_id(const std::string& output) {
  std::optional<std::string> found;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    const std::string id = line.substr(0, line.find(';'));
    if (!id.empty() && std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; })) found = id;
  }
  return found;
}

std::string submit(const Tools& tools, const fs::path& script, const std::vector<std::string>& args,
                   const std::string& what) {
  std::vector<std::string> argv = {tools.sbatch, "--parsable"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(script.string());
  const auto result = process::run(argv, {"", {}, 120, 64 << 10});
  if (!result.started)
    throw Error("cannot run " + tools.sbatch + " to submit " + what +
                " (is this a Slurm login node? Slurm's commands must be on the PATH)");
  const auto id = parse_job_id(result.output);
  if (!result.ok() || !id)
    throw Error("sbatch did not take " + what + " (" + result.describe() + "):\n" + result.output);
  return *id;
}

std::vector<std::string> queued_jobs(const Tools& tools, const std::vector<std::string>& ids) {
  std::string joined;
  for (const auto& id : ids) joined += (joined.empty() ? "" : ",") + id;
  const auto result = process::run({tools.squeue, "--noheader", "--format=%i", "--jobs=" + joined}, {"", {}, 60, 1 << 20});
  // A job that ended long ago is forgotten; asked for alone, squeue then calls its id invalid.
  if (!result.ok() && result.output.find("Invalid job id") != std::string::npos) return {};
  if (!result.started) throw Error("cannot run " + tools.squeue + " (Slurm's commands must be on the PATH)");
  if (!result.ok()) throw Error("squeue failed (" + result.describe() + "): " + result.output);
  std::vector<std::string> out;
  std::istringstream in(result.output);
  for (std::string line; std::getline(in, line);) {
    line.erase(std::remove_if(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\r'; }), line.end());
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

bool wait_for_jobs(const Tools& tools, const std::vector<std::string>& ids, double timeout_seconds,
                   double poll_seconds, const std::function<void(const std::vector<std::string>&)>& on_poll) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds);
  std::string last_problem;
  while (true) {
    try {
      const auto queued = queued_jobs(tools, ids);
      last_problem.clear();
      if (on_poll) on_poll(queued);
      if (queued.empty()) return true;
    } catch (const Error& error) {
      last_problem = error.what();  // slurmctld may be busy for a moment: ask again
    }
    if (Clock::now() >= deadline) {
      if (!last_problem.empty()) throw Error(last_problem);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_seconds));
  }
}

std::optional<JobState> job_state(const Tools& tools, const std::string& id) {
  const auto result = process::run({tools.squeue, "--noheader", "--format=%T|%r|%N|%P", "--jobs=" + id}, {"", {}, 60, 1 << 16});
  if (!result.ok() && result.output.find("Invalid job id") != std::string::npos) return std::nullopt;
  if (!result.started) throw Error("cannot run " + tools.squeue + " (Slurm's commands must be on the PATH)");
  if (!result.ok()) throw Error("squeue failed (" + result.describe() + "): " + result.output);
  std::istringstream in(result.output);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> fields;
    std::istringstream parts(line);
    for (std::string field; std::getline(parts, field, '|');) fields.push_back(field);
    if (fields.size() < 4 || fields[0].empty()) continue;
    return JobState{fields[0], fields[1], fields[2], fields[3]};
  }
  return std::nullopt;
}

int queue_position(const Tools& tools, const std::string& id, const std::string& partition) {
  std::vector<std::string> argv = {tools.squeue, "--noheader", "--states=PENDING", "--sort=-p,i", "--format=%i"};
  if (!partition.empty()) argv.push_back("--partition=" + partition);
  const auto result = process::run(argv, {"", {}, 60, 1 << 20});
  if (!result.ok()) return 0;
  std::istringstream in(result.output);
  int position = 0;
  for (std::string line; std::getline(in, line);) {
    line.erase(std::remove_if(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\r'; }), line.end());
    if (line.empty()) continue;
    ++position;
    if (line == id) return position;
  }
  return 0;
}

std::string final_state(const Tools& tools, const std::string& id) {
  const auto result = process::run({tools.scontrol, "--oneliner", "show", "job", id}, {"", {}, 60, 1 << 16});
  if (!result.ok()) return "";
  const auto at = result.output.find("JobState=");
  if (at == std::string::npos) return "";
  const auto start = at + std::string("JobState=").size();
  return result.output.substr(start, result.output.find_first_of(" \n", start) - start);
}

bool cancel(const Tools& tools, const std::string& id) {
  return process::run({tools.scancel, id}, {"", {}, 60, 1 << 16}).ok();
}

std::vector<std::size_t> tasks_to_grade(const std::vector<Submission>& submissions, const fs::path& out_dir,
                                        bool force, bool only, const std::vector<std::string>& regrade,
                                        const std::vector<const manifest::Exercise*>& exercises) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < submissions.size(); ++i) {
    const auto& name = submissions[i].name;
    const bool asked = force || only || std::find(regrade.begin(), regrade.end(), name) != regrade.end();
    const auto kept = kept_result(out_dir / "students" / student_folder(name));
    if (asked || !kept || !grades_all_of(*kept, exercises)) out.push_back(i);
  }
  return out;
}

Submitted write_and_submit(const std::vector<Submission>& submissions, const std::vector<std::size_t>& tasks,
                           const Command& command, const Resources& resources, const Tools& tools) {
  if (tasks.empty()) throw std::logic_error("write_and_submit: no task to submit");
  const Layout layout(command.out_dir);
  // Everything that can be refused is refused before a file is touched.
  const std::string list = listing(submissions);
  const std::string grade = array_script(command, resources, tasks, layout);
  const std::string merge = merge_script(command, resources, layout);

  fs::create_directories(layout.logs);
  fs::create_directories(layout.done);
  for (const std::size_t task : tasks) fs::remove(layout.done_marker(task));
  write_file(layout.listing, list);
  write_file(layout.array_script, grade);
  write_file(layout.merge_script, merge);
  Submitted submitted;
  submitted.files = {layout.listing, layout.array_script, layout.merge_script, layout.logs};

  try {
    submitted.array_id = submit(tools, layout.array_script, {}, "the grading jobs");
  } catch (const Error& error) {
    throw Error(std::string(error.what()) + "\nNothing was submitted and no result was touched; the scripts are in " +
                layout.dir.string() + " (submit them by hand: sbatch " + shell_quote(layout.array_script.string()) +
                ", then sbatch --dependency=afterany:<its job id> " + shell_quote(layout.merge_script.string()) + ")");
  }
  try {
    submitted.merge_id =
        submit(tools, layout.merge_script, {"--dependency=afterany:" + submitted.array_id}, "the merge job");
  } catch (const Error& error) {
    throw Error(std::string(error.what()) + "\nThe grading jobs run (job array " + submitted.array_id +
                "); once they have ended, write the gradebook with: " + shell_quote(command.cdplab.string()) +
                " grade " + shell_quote(command.class_dir.string()) + " " +
                shell_quote("--out=" + command.out_dir.string()) + " --slurm-merge");
  }
  return submitted;
}

void mark_done(const Layout& layout, std::size_t index, const std::string& summary) {
  fs::create_directories(layout.done);
  write_file(layout.done_marker(index), summary + "\n");
}

std::optional<std::string> done_summary(const Layout& layout, std::size_t index) {
  const fs::path marker = layout.done_marker(index);
  if (!fs::exists(marker)) return std::nullopt;
  std::string text = files::read_text(marker);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

}  // namespace cdplab::batch::slurm
