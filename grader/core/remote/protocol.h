/// @file protocol.h
/// @brief What a client and the course's GPU server say to each other (`cdplab serve`).
///
/// The client runs `ssh HOST cdplab-check 1 [--seed N] [--format F] [--visibility V] [NAME...]`
/// with the submission, a tar archive of its exercise files laid out like chapters/, on standard
/// input. The server's `authorized_keys` line runs `cdplab serve --student NAME` whatever the
/// client asked for; serve reads the request from SSH_ORIGINAL_COMMAND, where sshd puts it. The
/// request's words are plain (letters, digits, `.`, `_`, `-`), so no shell ever reads them.
/// The server writes one JSON document to standard output, the reply, and its progress lines to
/// standard error:
/// - format `report` (the default): `{"cdplab_remote": 1, "report": {...}}` (the report as
///   report::to_json writes it) or `{"cdplab_remote": 1, "error": "one line"}`;
/// - format `gradescope`: Gradescope's results.json itself, also for an error (score 0, the
///   message as its output), so that an autograder writes what it gets.
#pragma once

#include "results/results.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cdplab::remote {

inline constexpr const char* kRequestWord = "cdplab-check";
inline constexpr int kProtocolVersion = 1;

/// A check that a remote could not give back: one line that says what happened and that nothing
/// of the student's was changed.
class RemoteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A request that cannot be served; the message is for the client.
class RequestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Request {
  std::optional<std::uint64_t> seed;  ///< the checks' seed; none: the server's choice
  std::string format = "report";      ///< report or gradescope
  std::string visibility = "visible"; ///< Gradescope's visibility of the results
  std::vector<std::string> names;     ///< chapters or exercises; all when empty
};

/// The command line a client asks the server to run.
std::string request_line(const Request& request);

/// Reads a request (SSH_ORIGINAL_COMMAND). Throws RequestError for anything else: an empty line (a
/// login asking for a shell), another command, another version, an unknown option, a word that is
/// not plain.
Request parse_request(const std::string& line);

/// The reply that carries a report.
std::string report_reply(const grading::GradeReport& report);
/// The reply that carries an error, in the request's format.
std::string error_reply(const std::string& message, const Request& request);

/// What a client reads back.
struct Reply {
  std::optional<grading::GradeReport> report;
  std::string error;
};

/// Reads a reply of format `report`. Throws std::runtime_error when `text` is none (empty, cut
/// short, not JSON, not a reply).
Reply parse_reply(const std::string& text);

}  // namespace cdplab::remote
