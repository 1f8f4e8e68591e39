#include "progress.h"

#include <cstdint>
#include <fstream>
#include <sstream>

namespace cdplab::cli {

std::string fingerprint(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  std::ostringstream out;
  out << std::hex << h;
  return out.str();
}

Progress::Progress(std::filesystem::path build_dir) : file_(std::move(build_dir) / "cdplab-progress.json") {
  std::ifstream in(file_);
  if (in) data_ = nlohmann::json::parse(in, nullptr, false);
  if (!data_.is_object()) data_ = nlohmann::json::object();
}

void Progress::record(const grading::ExerciseResult& result, const std::string& source_text) {
  bool failed = !result.problem.empty();
  bool skipped = false;
  for (const auto& item : result.items) {
    failed = failed || item.outcome == grading::Outcome::failed;
    skipped = skipped || item.outcome == grading::Outcome::skipped;
  }
  data_["exercises"][result.id] = {
      {"gpu_pending", !failed && skipped},
      {"points", result.points()},
      {"max_points", result.max_points()},
      {"passed", result.all_passed()},
      {"problem", result.problem},
      {"source", fingerprint(source_text)},
  };
}

const nlohmann::json* Progress::last(const std::string& id) const {
  if (!data_.contains("exercises") || !data_["exercises"].contains(id)) return nullptr;
  return &data_["exercises"][id];
}

bool Progress::source_changed(const std::string& id, const std::string& source_text) const {
  const auto* entry = last(id);
  return entry == nullptr || entry->value("source", "") != fingerprint(source_text);
}

int Progress::hints_seen(const std::string& id) const {
  if (!data_.contains("hints") || !data_["hints"].contains(id)) return 0;
  return data_["hints"][id].get<int>();
}

void Progress::set_hints_seen(const std::string& id, int count) { data_["hints"][id] = count; }

void Progress::save() const {
  std::filesystem::create_directories(file_.parent_path());
  std::ofstream(file_) << data_.dump(2) << "\n";
}

}  // namespace cdplab::cli
