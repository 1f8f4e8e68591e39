#include "remote/protocol.h"

#include "report/report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <sstream>

namespace cdplab::remote {
namespace {

using nlohmann::json;

bool plain_word(const std::string& word) {
  if (word.empty() || word.size() > 128) return false;
  for (const char c : word)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  return true;
}

std::string text(const json& value) {
  return value.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace

std::string request_line(const Request& request) {
  std::string line = std::string(kRequestWord) + " " + std::to_string(kProtocolVersion);
  if (request.seed) line += " --seed " + std::to_string(*request.seed);
  if (request.format != "report") line += " --format " + request.format;
  if (request.visibility != "visible") line += " --visibility " + request.visibility;
  for (const auto& name : request.names) line += " " + name;
  return line;
}

Request parse_request(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  if (words.empty())
    throw RequestError("this key runs cdplab checks only, no shell: `cdplab check` sends them");
  if (words[0] != kRequestWord)
    throw RequestError("this key runs cdplab checks only (asked for: " + (plain_word(words[0]) ? words[0] : "another program") + ")");
  if (words.size() < 2 || words[1] != std::to_string(kProtocolVersion))
    throw RequestError("this server speaks version " + std::to_string(kProtocolVersion) +
                       " of the check protocol; update cdplab (the course's release) and check again");
  Request request;
  for (std::size_t i = 2; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (!plain_word(word)) throw RequestError("a request's words are letters, digits, '.', '_' and '-' only");
    const auto value = [&]() -> const std::string& {
      if (i + 1 >= words.size()) throw RequestError(word + " needs a value");
      return words[++i];
    };
    if (word == "--seed") {
      const std::string& seed = value();
      if (seed.find_first_not_of("0123456789") != std::string::npos || seed.size() > 19)
        throw RequestError("--seed takes a whole number");
      request.seed = std::stoull(seed);
    } else if (word == "--format") {
      request.format = value();
      if (request.format != "report" && request.format != "gradescope")
        throw RequestError("--format is report or gradescope");
    } else if (word == "--visibility") {
      request.visibility = value();
      const auto& known = report::kGradescopeVisibilities;
      if (std::find(std::begin(known), std::end(known), request.visibility) == std::end(known))
        throw RequestError("--visibility is visible, hidden, after_due_date or after_published");
    } else if (word.rfind("-", 0) == 0) {
      throw RequestError("unknown option " + word);
    } else {
      request.names.push_back(word);
    }
  }
  return request;
}

std::string report_reply(const grading::GradeReport& report) {
  return text({{"cdplab_remote", kProtocolVersion}, {"report", report::to_json(report)}});
}

std::string error_reply(const std::string& message, const Request& request) {
  if (request.format == "gradescope") {
    return text({
        {"score", 0.0},
        {"output", "Not graded: " + message},
        {"output_format", "text"},
        {"visibility", request.visibility},
        {"tests", json::array()},
    });
  }
  return text({{"cdplab_remote", kProtocolVersion}, {"error", message}});
}

Reply parse_reply(const std::string& raw) {
  const json object = json::parse(raw);  // throws for text cut short
  if (!object.is_object() || !object.contains("cdplab_remote")) throw std::runtime_error("not a reply of cdplab serve");
  Reply reply;
  if (object.contains("error")) {
    reply.error = object["error"].is_string() ? object["error"].get<std::string>() : "the server's error is not text";
    return reply;
  }
  if (!object.contains("report")) throw std::runtime_error("the reply holds no report");
  reply.report = report::from_json(object["report"]);
  return reply;
}

}  // namespace cdplab::remote
