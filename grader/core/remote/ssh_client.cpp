#include "remote/ssh_client.h"

#include "files/files.h"

#include <unistd.h>

#include <cstdio>

namespace cdplab::remote {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

/// The last line of ssh's own words (its messages start "ssh: " or name the host).
std::string last_line(const std::string& text) {
  std::string line = files::last_lines(text, 1);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

}  // namespace

void LineSplitter::operator()(const std::string& piece) {
  pending_ += piece;
  for (auto end = pending_.find('\n'); end != std::string::npos; end = pending_.find('\n')) {
    std::string line = pending_.substr(0, end);
    pending_.erase(0, end + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    line_(line);
  }
}

void LineSplitter::flush() {
  if (!pending_.empty()) line_(pending_);
  pending_.clear();
}

std::vector<std::string> ssh_command(const SshTarget& target, const std::string& request_line) {
  std::vector<std::string> argv = {target.program,
                                   "-T",  // no terminal: the reply is bytes, not a screen
                                   "-o", "BatchMode=yes",
                                   "-o", "ServerAliveInterval=15",
                                   "-o", "ServerAliveCountMax=4",
                                   "-o", "ConnectTimeout=20"};
  if (target.port > 0) argv.insert(argv.end(), {"-p", std::to_string(target.port)});
  if (!target.user.empty()) argv.insert(argv.end(), {"-l", target.user});
  if (!target.identity_file.empty()) argv.insert(argv.end(), {"-i", target.identity_file, "-o", "IdentitiesOnly=yes"});
  argv.insert(argv.end(), target.options.begin(), target.options.end());
  argv.push_back("--");
  argv.push_back(target.host);
  argv.push_back(request_line);
  return argv;
}

std::string explain_ssh_failure(const process::Result& run, const std::string& host) {
  const std::string& said = run.output;
  const std::string nothing_lost = "; nothing of yours was changed";
  if (!run.started) return "cannot start ssh (is the OpenSSH client installed?)" + nothing_lost;
  if (run.cancelled) return "the check on " + host + " was stopped (Ctrl-C)" + nothing_lost;
  if (run.timed_out) return "no report from " + host + " after " + std::to_string(static_cast<int>(run.seconds)) +
                            " s (remote.ssh.timeout_seconds); the server may still be busy: check again later" + nothing_lost;
  if (contains(said, "Could not resolve hostname") || contains(said, "Name or service not known"))
    return "no such host: " + host + " (check remote.ssh.host in course.toml, or --remote)";
  if (contains(said, "Permission denied"))
    return host + " refused your key (" + last_line(said) + "): send your public key to your instructor, or name the key "
           "with remote.ssh.identity_file or ~/.ssh/config";
  if (contains(said, "Host key verification failed") || contains(said, "REMOTE HOST IDENTIFICATION HAS CHANGED"))
    return "ssh does not know " + host + "'s host key, or it changed: connect once with `ssh " + host +
           "` to check and accept it (ask your instructor for its fingerprint)";
  if (contains(said, "Connection refused") || contains(said, "Connection timed out") ||
      contains(said, "No route to host") || contains(said, "Network is unreachable"))
    return "cannot reach " + host + ": " + last_line(said) + nothing_lost;
  if (run.exit_code == 127 && (contains(said, "cdplab-check") || contains(said, "not found")))
    return host + " ran no cdplab for your key: its line in the server's authorized_keys has no forced command "
           "(command=\"cdplab serve ...\"); tell your instructor (docs/remote-gpu.md, \"The GPU server\")";
  if (run.exit_code == 255 || run.signal != 0)
    return "the connection to " + host + " was lost before the report came back (" + last_line(said) + ")" + nothing_lost +
           ": check again";
  return host + " sent no report (" + run.describe() + (said.empty() ? "" : ": " + last_line(said)) + ")" + nothing_lost;
}

grading::GradeReport check_over_ssh(const SshTarget& target, const Request& request, const fs::path& archive,
                                    const std::function<void(const std::string& line)>& progress) {
  std::error_code missing;
  if (!fs::is_regular_file(archive, missing))
    throw RemoteError("cannot read the archive of your files (" + archive.string() + "); nothing of yours was changed");
  const fs::path reply_file = archive.string() + ".reply";
  process::Options options;
  options.stdin_file = archive.string();
  options.stdout_file = reply_file.string();
  options.timeout_seconds = target.timeout_seconds;
  LineSplitter lines([&](const std::string& line) {
    if (progress) progress(line);
  });
  options.on_output = [&](const std::string& piece) { lines(piece); };
  const auto run = process::run(ssh_command(target, request_line(request)), options);
  lines.flush();
  std::string raw;
  std::error_code error;
  if (fs::exists(reply_file, error)) raw = files::read_text(reply_file);
  fs::remove(reply_file, error);
  const std::string host = target.host;
  if (!raw.empty() && !run.cancelled) {
    try {
      const Reply reply = parse_reply(raw);
      if (!reply.error.empty()) throw RemoteError(host + ": " + reply.error);
      return *reply.report;
    } catch (const RemoteError&) {
      throw;
    } catch (const std::exception&) {
      // Cut short or not a reply: the exit status and ssh's words say why below.
    }
  }
  throw RemoteError(explain_ssh_failure(run, host));
}

}  // namespace cdplab::remote
