#include "sandbox/sandbox.h"

#include "process/process.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>

#include <unistd.h>

namespace cdplab::sandbox {
namespace {

/// Whether an environment variable of the grader's goes into a box: the locale, the paths of
/// programs and libraries, and the CUDA, CMake, CTest, build tool and cdplab variables.
bool passes_into_box(const std::string& name) {
  static const char* const exact[] = {"PATH", "LANG", "LANGUAGE", "TERM", "TZ", "LD_LIBRARY_PATH", "CC", "CXX",
                                      "CUDACXX", "CUDAHOSTCXX", "SOURCE_DATE_EPOCH", "HOME", "TMPDIR"};
  static const char* const prefixes[] = {"LC_", "CUDA_", "NVIDIA_", "CDPLAB_", "CMAKE_", "CTEST_", "NINJA_"};
  for (const char* e : exact)
    if (name == e) return true;
  for (const char* p : prefixes)
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

namespace fs = std::filesystem;

/// `path` with every link resolved (as far as it exists), without a trailing slash.
std::string real_path(const std::string& path) {
  std::error_code error;
  fs::path real = fs::weakly_canonical(path, error);
  if (error) real = fs::path(path).lexically_normal();
  std::string out = real.string();
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

/// Number of names in an absolute path: binds of outer folders are mounted before inner ones.
std::size_t depth(const std::string& path) {
  return static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

std::vector<std::string> by_depth(std::vector<std::string> paths) {
  for (auto& p : paths) p = fs::path(p).lexically_normal().string();
  for (auto& p : paths)
    if (p.size() > 1 && p.back() == '/') p.pop_back();
  std::stable_sort(paths.begin(), paths.end(),
                   [](const std::string& a, const std::string& b) { return depth(a) < depth(b); });
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  return paths;
}

/// A search path (PATH, LD_LIBRARY_PATH) of the grader's with only the folders the box shows:
/// the system's and those bound into it. The rest names the grading machine's layout, and would
/// find nothing there anyway.
std::string path_in_box(const char* value, const Box& box) {
  if (value == nullptr) return "";
  std::vector<std::string> shown = {"/usr", "/bin", "/sbin", "/lib", "/lib64"};
  shown.insert(shown.end(), box.read_only.begin(), box.read_only.end());
  shown.insert(shown.end(), box.writable.begin(), box.writable.end());
  std::string out;
  std::istringstream entries(value);
  for (std::string entry; std::getline(entries, entry, ':');) {
    const std::string normal = fs::path(entry).lexically_normal().string();
    const bool inside = std::any_of(shown.begin(), shown.end(), [&](const std::string& folder) {
      const std::string f = fs::path(folder).lexically_normal().string();
      return normal == f || normal.rfind(f + (f.back() == '/' ? "" : "/"), 0) == 0;
    });
    if (inside && !entry.empty()) out += (out.empty() ? "" : ":") + entry;
  }
  return out;
}

/// The base of every box, then the box's own binds and hidden paths, then the namespaces.
std::vector<std::string> command_line(const Box& box, const std::vector<std::string>& argv, bool user_namespace) {
  std::vector<std::string> out = {box.bwrap, "--ro-bind", "/usr", "/usr"};
  std::error_code error;
  // /bin, /lib, ... as the host has them: links into /usr on a merged-/usr system, else folders.
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    const auto status = fs::symlink_status(top, error);
    if (error || !fs::exists(status)) {
      error.clear();
      continue;
    }
    if (fs::is_symlink(status)) out.insert(out.end(), {"--symlink", fs::read_symlink(top, error).string(), top});
    else out.insert(out.end(), {"--ro-bind", top, top});
  }
  // Only what programs need of /etc. Inside a user namespace root's files look owned by the box's
  // user, so all of /etc would show it files only root may read (/etc/shadow).
  for (const char* file : {"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
                           "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/localtime", "/etc/os-release"}) {
    if (fs::exists(file, error)) out.insert(out.end(), {"--ro-bind", file, file});
  }
  // The box's /tmp lives in memory: a size keeps a submission from filling the machine's.
  out.insert(out.end(), {"--proc", "/proc", "--dev", "/dev", "--ro-bind", "/sys", "/sys", "--size", "1073741824",
                         "--tmpfs", "/tmp"});
  for (const auto& device : box.devices) out.insert(out.end(), {"--dev-bind", device, device});

  // The box's own binds, outer folders first so that inner ones are mounted over them.
  struct Bind {
    std::string from, to;
    bool writable;
  };
  std::vector<Bind> binds;
  const auto normal = [](const std::string& p) { return fs::path(p).lexically_normal().string(); };
  // A folder named through a link (a build tree on a cluster's scratch disk, build/ -> /scratch/...)
  // is bound at its real path: bwrap cannot make a mount point through a link. Its name still
  // works in the box when the link is inside another folder the box shows; otherwise the folder
  // is bound at that name too.
  struct SamePath {
    std::string named, real;
    bool writable;
  };
  std::vector<SamePath> same_path;
  for (const auto& p : box.read_only) same_path.push_back({normal(p), real_path(p), false});
  for (const auto& p : box.writable) same_path.push_back({normal(p), real_path(p), true});
  for (const auto& folder : same_path) {
    binds.push_back({folder.real, folder.real, folder.writable});
    if (folder.named == folder.real) continue;
    const bool shown_through_link = std::any_of(same_path.begin(), same_path.end(), [&](const SamePath& other) {
      return folder.named.rfind(other.named + "/", 0) == 0;
    });
    if (!shown_through_link) binds.push_back({folder.real, folder.named, folder.writable});
  }
  for (const auto& [from, to] : box.read_only_at) binds.push_back({real_path(from), normal(to), false});
  for (const auto& [from, to] : box.writable_at) binds.push_back({real_path(from), normal(to), true});
  std::stable_sort(binds.begin(), binds.end(), [](const Bind& a, const Bind& b) { return depth(a.to) < depth(b.to); });
  for (const auto& b : binds) out.insert(out.end(), {b.writable ? "--bind" : "--ro-bind", b.from, b.to});
  for (const auto& path : by_depth(box.hidden)) {
    const auto status = fs::status(path, error);
    if (error || !fs::exists(status)) {
      error.clear();
      continue;
    }
    if (fs::is_directory(status)) out.insert(out.end(), {"--tmpfs", path, "--remount-ro", path});
    else out.insert(out.end(), {"--ro-bind", "/dev/null", path});
  }

  out.push_back("--unshare-all");  // user (when it can), IPC, PID, network, UTS, cgroup
  if (user_namespace) {
    out.insert(out.end(), {"--unshare-user", "--uid", std::to_string(kBoxUser), "--gid", std::to_string(kBoxUser),
                           "--disable-userns"});
  }
  // Only the variables a build and a check need go in: the grader's environment may hold secrets,
  // and what a program of the box prints can reach the feedback.
  for (char** variable = environ; variable != nullptr && *variable != nullptr; ++variable) {
    const std::string entry = *variable;
    const std::string name = entry.substr(0, entry.find('='));
    if (!name.empty() && !passes_into_box(name)) out.insert(out.end(), {"--unsetenv", name});
  }
  out.insert(out.end(), {"--cap-drop", "ALL", "--die-with-parent", "--new-session", "--setenv", "HOME", "/tmp",
                         "--setenv", "TMPDIR", "/tmp"});
  const std::string path = path_in_box(std::getenv("PATH"), box);
  out.insert(out.end(), {"--setenv", "PATH", path.empty() ? "/usr/bin:/bin" : path});
  if (const char* libraries = std::getenv("LD_LIBRARY_PATH")) {
    const std::string shown = path_in_box(libraries, box);
    if (shown.empty()) out.insert(out.end(), {"--unsetenv", "LD_LIBRARY_PATH"});
    else out.insert(out.end(), {"--setenv", "LD_LIBRARY_PATH", shown});
  }
  if (!box.working_directory.empty()) out.insert(out.end(), {"--chdir", box.working_directory});
  out.push_back("--");
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

/// The last lines of what bwrap said, for a message.
std::string quoted_output(const std::string& output) {
  std::string text = output;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.size() > 600) text = "..." + text.substr(text.size() - 600);
  return text;
}

Probe run_probe(const std::string& bwrap) {
  Box box;
  box.bwrap = bwrap;
  process::Options options;
  options.timeout_seconds = 30;
  Probe probe;
  const auto with_user = process::run(command_line(box, {"true"}, true), options);
  if (with_user.ok()) {
    probe.ok = true;
    probe.user_namespace = true;
    return probe;
  }
  if (!with_user.started) {
    probe.problem = "bubblewrap (" + bwrap + ") is not installed or not in PATH: install the distribution's "
                    "bubblewrap package (Debian, Ubuntu: apt-get install bubblewrap; Fedora, RHEL: dnf install "
                    "bubblewrap)";
    return probe;
  }
  // Without a user namespace of its own: works where bwrap is setuid, or for root.
  const auto without = process::run(command_line(box, {"true"}, false), options);
  if (without.ok()) {
    probe.ok = true;
    return probe;
  }
  const std::string said = quoted_output(with_user.output.empty() ? without.output : with_user.output);
  const bool user_namespaces_off = said.find("namespace") != std::string::npos ||
                                   said.find("uid map") != std::string::npos ||
                                   said.find("uid_map") != std::string::npos;
  if (user_namespaces_off) {
    probe.problem = "bubblewrap cannot create the box: user namespaces are disabled for this user (bwrap said: \"" +
                    said + "\"). An administrator can allow them with the sysctl kernel.unprivileged_userns_clone=1 "
                    "(Debian, older Ubuntu) or user.max_user_namespaces above 0 (RHEL, Rocky), or on Ubuntu 24.04 "
                    "and later with an AppArmor profile for bwrap (kernel.apparmor_restrict_unprivileged_userns)";
  } else {
    probe.problem = "bubblewrap cannot start a box here (" + with_user.describe() + "; bwrap said: \"" + said + "\")";
  }
  return probe;
}

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == '~' || c == '+';
}

}  // namespace

const Probe& probe(const std::string& bwrap) {
  static std::mutex mutex;
  static std::map<std::string, Probe> known;
  std::lock_guard<std::mutex> lock(mutex);
  const auto it = known.find(bwrap);
  if (it != known.end()) return it->second;
  return known.emplace(bwrap, run_probe(bwrap)).first->second;
}

std::string bwrap_program() {
  const char* named = std::getenv("CDPLAB_BWRAP");
  return named != nullptr && *named != '\0' ? named : "bwrap";
}

std::string path_in(const Box& box, const std::string& host_path) {
  // Both as named and with links resolved: the box binds real paths.
  for (const std::string& path : {fs::path(host_path).lexically_normal().string(), real_path(host_path)}) {
    for (const auto* list : {&box.read_only_at, &box.writable_at}) {
      for (const auto& [from, to] : *list) {
        for (const std::string& folder : {fs::path(from).lexically_normal().string(), real_path(from)}) {
          if (path == folder) return to;
          if (path.rfind(folder + "/", 0) == 0) return (fs::path(to) / path.substr(folder.size() + 1)).string();
        }
      }
    }
  }
  return host_path;
}

std::vector<std::string> wrap(const Box& box, const std::vector<std::string>& argv) {
  return command_line(box, argv, probe(box.bwrap).user_namespace);
}

std::vector<std::string> gpu_devices() {
  std::vector<std::string> devices;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/dev", error)) {
    if (entry.path().filename().string().rfind("nvidia", 0) == 0) devices.push_back(entry.path().string());
  }
  std::sort(devices.begin(), devices.end());
  return devices;
}

std::string install_prefix(const std::string& path, bool is_directory) {
  const fs::path p = fs::path(path).lexically_normal();
  fs::path prefix = p.root_path();
  bool first = true;
  for (const auto& part : p.relative_path()) {
    const std::string name = part.string();
    if (!first && (name == "bin" || name == "sbin" || name == "lib" || name == "lib32" || name == "lib64" ||
                   name == "libexec" || name == "share" || name == "include"))
      return prefix.string();
    prefix /= part;
    first = false;
  }
  return is_directory ? p.string() : p.parent_path().string();
}

std::string scrub_paths(const std::string& text, const PathNames& names) {
  // Every spelling of every name, longest first.
  std::vector<std::pair<std::string, std::string>> rules;  // path, replacement
  const auto add = [&](const std::string& path, const std::string& replacement) {
    if (path.empty() || path[0] != '/') return;
    std::string p = fs::path(path).lexically_normal().string();
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    if (p == "/") return;
    rules.emplace_back(p, replacement);
    std::error_code error;
    const auto real = fs::weakly_canonical(p, error);
    if (!error && real.string() != p && real.string() != "/") rules.emplace_back(real.string(), replacement);
  };
  add(names.submission, "");
  add(names.build, "<build>");
  add(names.kit, "<kit>");
  add(names.cuda, "<cuda>");
  add(names.home, "~");
  std::stable_sort(rules.begin(), rules.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  if (rules.empty()) return text;

  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    // A path starts at a '/' that does not continue a name: "-I/x" and " /x" do, "a/x" does not.
    const bool starts = text[i] == '/' &&
                        (i == 0 || !(name_char(text[i - 1]) || text[i - 1] == '/') ||
                         (i >= 2 && text[i - 2] == '-' && std::isalpha(static_cast<unsigned char>(text[i - 1]))));
    bool replaced = false;
    if (starts) {
      for (const auto& [path, replacement] : rules) {
        if (text.compare(i, path.size(), path) != 0) continue;
        const std::size_t end = i + path.size();
        // A whole name: what follows is the end, a separator, or not part of a name ("x.cu:12" ends
        // the path at ':'; a full stop ending a sentence is not part of it).
        const bool sentence_end = end < text.size() && text[end] == '.' &&
                                  (end + 1 == text.size() || std::isspace(static_cast<unsigned char>(text[end + 1])));
        if (end < text.size() && text[end] != '/' && name_char(text[end]) && !sentence_end) continue;
        if (end < text.size() && text[end] == '/' && replacement.empty()) {
          i = end + 1;  // "<submission>/01-fundamentals/x.cu" -> "01-fundamentals/x.cu"
        } else {
          out += replacement.empty() ? "." : replacement;
          i = end;
        }
        replaced = true;
        break;
      }
    }
    if (!replaced) out += text[i++];
  }
  return out;
}

}  // namespace cdplab::sandbox
