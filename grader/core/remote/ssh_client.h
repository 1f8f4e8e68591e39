/// @file ssh_client.h
/// @brief A check sent to the course's GPU server over SSH (remote/protocol.h): the student's
///        exercise files go as a tar archive on ssh's standard input, the server's progress lines
///        come back on its standard error and the report on its standard output.
#pragma once

#include "remote/course.h"
#include "remote/protocol.h"

#include "process/process.h"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace cdplab::remote {

/// The ssh command line of a request: BatchMode (no password prompt that would hang), keep-alives
/// that notice a dead connection within a minute, the target's own options, then the host and the
/// request's words.
std::vector<std::string> ssh_command(const SshTarget& target, const std::string& request_line);

/// One line for an ssh run that gave no reply: no such host, a refused key, a key whose line runs
/// no cdplab (no forced command), a connection lost halfway.
std::string explain_ssh_failure(const process::Result& run, const std::string& host);

/// Sends `archive` with `request` and returns the report the server wrote. Each progress line of
/// the server goes to `progress`. Throws RemoteError with one line when no report came back.
grading::GradeReport check_over_ssh(const SshTarget& target, const Request& request,
                                    const std::filesystem::path& archive,
                                    const std::function<void(const std::string& line)>& progress);

/// Calls `line` with each whole line of the pieces given to it, then the rest at the end.
class LineSplitter {
 public:
  explicit LineSplitter(std::function<void(const std::string&)> line) : line_(std::move(line)) {}
  ~LineSplitter() { flush(); }
  void operator()(const std::string& piece);
  void flush();

 private:
  std::function<void(const std::string&)> line_;
  std::string pending_;
};

}  // namespace cdplab::remote
