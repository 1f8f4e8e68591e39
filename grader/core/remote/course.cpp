#include "remote/course.h"

#include <toml++/toml.h>

#include <cctype>
#include <initializer_list>
#include <sstream>

namespace cdplab::remote {
namespace {

namespace fs = std::filesystem;

/// Reads settings of one table of course.toml, naming the file and the key in every error.
class Settings {
 public:
  Settings(const toml::table* table, std::string where) : table_(table), where_(std::move(where)) {}

  std::string text(const char* key, const std::string& fallback = {}) const {
    const toml::node* node = find(key);
    if (node == nullptr) return fallback;
    const auto value = node->value<std::string>();
    if (!value) fail(key, "must be a string");
    if (value->find_first_of("\n\r") != std::string::npos) fail(key, "must be one line");
    return *value;
  }

  std::vector<std::string> list(const char* key) const {
    std::vector<std::string> out;
    const toml::node* node = find(key);
    if (node == nullptr) return out;
    const auto* array = node->as_array();
    if (array == nullptr) fail(key, "must be a list of strings");
    for (const auto& element : *array) {
      const auto value = element.value<std::string>();
      if (!value || value->find_first_of("\n\r") != std::string::npos) fail(key, "must be a list of one-line strings");
      out.push_back(*value);
    }
    return out;
  }

  double number(const char* key, double fallback, double least, double most) const {
    const toml::node* node = find(key);
    if (node == nullptr) return fallback;
    const auto value = node->value<double>();
    if (!value || *value < least || *value > most) {
      std::ostringstream range;
      range << "must be a number from " << least << " to " << most;
      fail(key, range.str());
    }
    return *value;
  }

  int whole(const char* key, int fallback, int least, int most) const {
    const double value = number(key, fallback, least, most);
    if (value != static_cast<int>(value)) fail(key, "must be a whole number");
    return static_cast<int>(value);
  }

  [[noreturn]] void fail(const char* key, const std::string& what) const {
    throw ConfigError(where_ + "." + key + " " + what);
  }

 private:
  const toml::node* find(const char* key) const { return table_ == nullptr ? nullptr : table_->get(key); }

  const toml::table* table_;
  std::string where_;
};

/// The table `dotted` ("remote.ssh") of course.toml, whose last part `key` is in `parent`.
const toml::table* subtable(const toml::table& parent, const char* key, const std::string& file,
                            const std::string& dotted) {
  const toml::node* node = parent.get(key);
  if (node == nullptr) return nullptr;
  if (!node->is_table()) throw ConfigError(file + ": " + dotted + " must be a table ([" + dotted + "])");
  return node->as_table();
}

/// A key course.toml does not know is a typo (a setting that would silently not apply).
void reject_unknown(const toml::table* table, std::initializer_list<const char*> known, const std::string& file,
                    const std::string& dotted) {
  if (table == nullptr) return;
  for (const auto& [key, node] : *table) {
    bool found = false;
    for (const char* name : known) found = found || key.str() == name;
    if (!found) {
      std::string names;
      for (const char* name : known) names += (names.empty() ? "" : ", ") + std::string(name);
      throw ConfigError(file + ": " + dotted + " has no setting '" + std::string(key.str()) + "' (it has " + names + ")");
    }
  }
}

Kind kind_named(const std::string& name, const std::string& where) {
  if (name == "none" || name.empty()) return Kind::none;
  if (name == "ssh") return Kind::ssh;
  if (name == "slurm") return Kind::slurm;
  throw ConfigError(where + " is \"" + name + "\"; it is \"ssh\", \"slurm\" or \"none\"");
}

/// "ssh://[user@]host[:port]" into `ssh`; false when `spec` is not of that form.
bool parse_ssh_url(const std::string& spec, SshTarget& ssh) {
  const std::string scheme = "ssh://";
  if (spec.rfind(scheme, 0) != 0) return false;
  std::string rest = spec.substr(scheme.size());
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (const auto at = rest.rfind('@'); at != std::string::npos) {
    ssh.user = rest.substr(0, at);
    rest = rest.substr(at + 1);
  }
  if (const auto colon = rest.rfind(':'); colon != std::string::npos) {
    const std::string port = rest.substr(colon + 1);
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return false;
    ssh.port = std::stoi(port);
    if (ssh.port < 1 || ssh.port > 65535) return false;
    rest = rest.substr(0, colon);
  }
  ssh.host = rest;
  // A host or user that ssh would read as an option, or that holds blanks, is no host.
  const auto plain = [](const std::string& word) {
    if (word.empty() || word[0] == '-') return false;
    for (const char c : word)
      if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c))) return false;
    return true;
  };
  return plain(ssh.host) && (ssh.user.empty() || plain(ssh.user));
}

}  // namespace

Course read_course(const fs::path& file) {
  Course course;
  std::error_code error;
  if (!fs::exists(file, error)) return course;
  toml::table root;
  try {
    root = toml::parse_file(file.string());
  } catch (const toml::parse_error& parse) {
    std::ostringstream where;
    where << file.string() << ":" << parse.source().begin.line << ": " << parse.description();
    throw ConfigError(where.str());
  }
  const std::string name = file.string();
  reject_unknown(&root, {"course", "remote", "serve"}, name, "the file");
  const Settings top(subtable(root, "course", name, "course"), name + ": course");
  course.name = top.text("name");
  course.gpu_help = top.text("gpu_help");
  reject_unknown(subtable(root, "course", name, "course"), {"name", "gpu_help"}, name, "course");

  const toml::table* remote_table = subtable(root, "remote", name, "remote");
  const Settings remote(remote_table, name + ": remote");
  reject_unknown(remote_table, {"kind", "ssh", "slurm"}, name, "remote");
  course.remote.kind = kind_named(remote.text("kind", "none"), name + ": remote.kind");
  if (course.remote.kind != Kind::none) course.remote.origin = "course.toml";

  const toml::table* ssh_table = remote_table ? subtable(*remote_table, "ssh", name, "remote.ssh") : nullptr;
  const Settings ssh(ssh_table, name + ": remote.ssh");
  reject_unknown(ssh_table, {"host", "user", "port", "identity_file", "options", "timeout_seconds"}, name, "remote.ssh");
  SshTarget& target = course.remote.ssh;
  target.host = ssh.text("host");
  target.user = ssh.text("user");
  target.port = ssh.whole("port", 0, 0, 65535);
  target.identity_file = ssh.text("identity_file");
  target.options = ssh.list("options");
  target.timeout_seconds = ssh.number("timeout_seconds", target.timeout_seconds, 10, 86400);
  if (course.remote.kind == Kind::ssh && target.host.empty())
    throw ConfigError(name + ": remote.kind is \"ssh\" but remote.ssh.host is not set");

  const toml::table* slurm_table = remote_table ? subtable(*remote_table, "slurm", name, "remote.slurm") : nullptr;
  const Settings slurm(slurm_table, name + ": remote.slurm");
  reject_unknown(slurm_table, {"partition", "gres", "time", "cpus_per_task", "mem", "account", "sbatch_args", "setup"},
                 name, "remote.slurm");
  auto& resources = course.remote.slurm.resources;
  resources.partition = slurm.text("partition");
  resources.gres = slurm.text("gres");
  resources.time = slurm.text("time");
  resources.cpus_per_task = slurm.whole("cpus_per_task", 0, 0, 4096);
  resources.mem = slurm.text("mem");
  resources.account = slurm.text("account");
  resources.sbatch_args = slurm.list("sbatch_args");
  course.remote.slurm.setup = slurm.list("setup");
  try {
    batch::slurm::check_resources(resources);
  } catch (const batch::slurm::Error& problem) {
    throw ConfigError(name + ": remote.slurm: " + problem.what());
  }

  const Settings serve(subtable(root, "serve", name, "serve"), name + ": serve");
  reject_unknown(subtable(root, "serve", name, "serve"),
                 {"work", "time_limit_seconds", "per_student", "queue_per_student", "gpus", "share_gpu", "upload_mib"},
                 name, "serve");
  ServeSettings& s = course.serve;
  if (const std::string work = serve.text("work"); !work.empty()) s.work = work;
  s.time_limit_seconds = serve.number("time_limit_seconds", s.time_limit_seconds, 10, 86400);
  s.per_student = serve.whole("per_student", s.per_student, 1, 64);
  s.queue_per_student = serve.whole("queue_per_student", s.queue_per_student, 1, 100000);
  s.gpus = serve.whole("gpus", s.gpus, 1, 64);
  s.share_gpu = serve.whole("share_gpu", s.share_gpu, 1, 16);
  s.upload_bytes = static_cast<std::uint64_t>(serve.number("upload_mib", 16, 1, 1024) * (1 << 20));
  return course;
}

Remote parse_remote_spec(const std::string& spec, const Course& course, const std::string& origin) {
  Remote remote = course.remote;
  remote.origin = origin;
  if (spec == "none") {
    remote.kind = Kind::none;
    return remote;
  }
  if (spec == "slurm") {
    remote.kind = Kind::slurm;
    return remote;
  }
  if (spec == "ssh") {
    if (course.remote.ssh.host.empty())
      throw ConfigError(origin + " ssh: course.toml names no server (remote.ssh.host); give one: ssh://user@host");
    remote.kind = Kind::ssh;
    return remote;
  }
  SshTarget target = course.remote.ssh;  // its key, options and time limit; host, user and port from the spec
  target.user.clear();
  target.port = 0;
  if (!parse_ssh_url(spec, target))
    throw ConfigError(origin + " \"" + spec + "\" names no remote: it is none, slurm, ssh, or ssh://[user@]host[:port]");
  remote.kind = Kind::ssh;
  remote.ssh = target;
  return remote;
}

Remote choose_remote(const Course& course, const std::string& option, const char* env) {
  if (!option.empty()) return parse_remote_spec(option, course, "--remote");
  if (env != nullptr && *env != '\0') return parse_remote_spec(env, course, "CDPLAB_REMOTE");
  return course.remote;
}

std::string describe(const Remote& remote) {
  std::string text;
  switch (remote.kind) {
    case Kind::none: text = "none"; break;
    case Kind::ssh:
      text = "ssh " + (remote.ssh.user.empty() ? "" : remote.ssh.user + "@") + remote.ssh.host +
             (remote.ssh.port > 0 ? ":" + std::to_string(remote.ssh.port) : "");
      break;
    case Kind::slurm:
      text = "Slurm" + (remote.slurm.resources.partition.empty() ? std::string()
                                                                 : ", partition " + remote.slurm.resources.partition);
      break;
  }
  return remote.origin.empty() ? text : text + " (" + remote.origin + ")";
}

}  // namespace cdplab::remote
