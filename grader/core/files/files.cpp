#include "files/files.h"

#include <fstream>
#include <sstream>

namespace cdplab::files {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace cdplab::files
