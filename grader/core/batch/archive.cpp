#include "batch/archive.h"

#include "batch/submissions.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <memory>
#include <stdexcept>
#include <vector>

namespace cdplab::batch {
namespace {

namespace fs = std::filesystem;

std::string mib(std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

/// What a member of this type is, in words; empty for the two kinds that are unpacked.
std::string refused_type(archive_entry* entry) {
  if (archive_entry_hardlink(entry) != nullptr)
    return std::string("a hard link (to ") + archive_entry_hardlink(entry) + ")";
  switch (archive_entry_filetype(entry)) {
    case AE_IFREG:
    case AE_IFDIR: return "";
    case AE_IFLNK: {
      const char* target = archive_entry_symlink(entry);
      return std::string("a symbolic link (to ") + (target != nullptr ? target : "?") + ")";
    }
    case AE_IFCHR:
    case AE_IFBLK: return "a device";
    case AE_IFIFO: return "a FIFO";
    case AE_IFSOCK: return "a socket";
    default: return "a member that is neither a file nor a folder";
  }
}

/// Writes the member's data into a new file at `path`, counting what it reads; returns why not.
std::string write_member(archive* in, const fs::path& path, const std::string& name, const UnpackLimits& limits,
                         std::uint64_t& total) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return "it holds " + name + " twice, or a file where a folder of that name was";
  std::uint64_t size = 0;
  std::vector<char> buffer(1 << 16);
  std::string problem;
  for (;;) {
    const la_ssize_t got = archive_read_data(in, buffer.data(), buffer.size());
    if (got == 0) break;
    if (got < 0) {
      problem = std::string("it cannot be read at ") + name + " (" + archive_error_string(in) + ")";
      break;
    }
    size += static_cast<std::uint64_t>(got);
    total += static_cast<std::uint64_t>(got);
    if (size > limits.file_bytes) {
      problem = name + " unpacks to more than " + mib(limits.file_bytes) + " (the limit for one file)";
      break;
    }
    if (total > limits.total_bytes) {
      problem = "it unpacks to more than " + mib(limits.total_bytes) + " (the limit for a whole archive)";
      break;
    }
    for (la_ssize_t done = 0; done < got;) {
      const ssize_t wrote = ::write(fd, buffer.data() + done, static_cast<std::size_t>(got - done));
      if (wrote <= 0) {
        problem = "the grader could not write " + name;
        break;
      }
      done += wrote;
    }
    if (!problem.empty()) break;
  }
  ::close(fd);
  return problem;
}

}  // namespace

std::string unpack_archive(const fs::path& archive_path, const fs::path& into, const UnpackLimits& limits) {
  const std::string archive_name = archive_path.filename().string();
  const auto refused = [&](const std::string& why) { return "the archive " + archive_name + " was not unpacked: " + why; };
  std::unique_ptr<archive, int (*)(archive*)> in(archive_read_new(), archive_read_free);
  archive_read_support_filter_gzip(in.get());
  archive_read_support_format_tar(in.get());
  archive_read_support_format_gnutar(in.get());
  archive_read_support_format_zip(in.get());
  if (archive_read_open_filename(in.get(), archive_path.c_str(), 1 << 16) != ARCHIVE_OK)
    return "the archive " + archive_name + " cannot be read (" + archive_error_string(in.get()) + ")";
  std::error_code error;
  fs::create_directories(into, error);
  std::uint64_t members = 0;
  std::uint64_t total = 0;
  for (;;) {
    archive_entry* entry = nullptr;
    const int status = archive_read_next_header(in.get(), &entry);
    if (status == ARCHIVE_EOF) break;
    if (status != ARCHIVE_OK && status != ARCHIVE_WARN)
      return "the archive " + archive_name + " cannot be read (" + archive_error_string(in.get()) + ")";
    const char* raw = archive_entry_pathname(entry);
    std::string name = raw != nullptr ? raw : "";
    while (name.size() > 1 && name.back() == '/') name.pop_back();
    if (name.rfind("./", 0) == 0) name = name.substr(2);
    if (name.empty() || name == ".") continue;
    if (++members > limits.members)
      return refused("it holds more than " + std::to_string(limits.members) + " files and folders (the limit)");
    if (!is_safe_member(name)) return refused("it holds a path that leaves its folder (" + name + ")");
    if (const std::string type = refused_type(entry); !type.empty())
      return refused(name + " is " + type + ": only files and folders are unpacked");
    if (archive_entry_size_is_set(entry) && static_cast<std::uint64_t>(archive_entry_size(entry)) > limits.file_bytes)
      return refused(name + " is larger than " + mib(limits.file_bytes) + " (the limit for one file)");
    const fs::path path = into / name;
    if (archive_entry_filetype(entry) == AE_IFDIR) {
      fs::create_directories(path, error);
      if (error || fs::is_symlink(fs::symlink_status(path))) return refused("the folder " + name + " cannot be made");
      continue;
    }
    fs::create_directories(path.parent_path(), error);
    if (error) return refused("the folder of " + name + " cannot be made (a file of that name?)");
    if (const std::string problem = write_member(in.get(), path, name, limits, total); !problem.empty())
      return refused(problem);
  }
  return "";
}

void pack_archive(const std::vector<PackedFile>& files, const fs::path& archive, bool zip) {
  const std::unique_ptr<::archive, decltype(&archive_write_free)> out(archive_write_new(), archive_write_free);
  if (!out) throw std::runtime_error("cannot make an archive writer");
  const auto check = [&](int status, const std::string& what) {
    if (status != ARCHIVE_OK)
      throw std::runtime_error("cannot write " + archive.string() + ": " + what + " (" +
                               (archive_error_string(out.get()) ? archive_error_string(out.get()) : "?") + ")");
  };
  check(zip ? archive_write_set_format_zip(out.get()) : archive_write_set_format_pax_restricted(out.get()), "format");
  check(archive_write_open_filename(out.get(), archive.c_str()), "open");
  const std::unique_ptr<archive_entry, decltype(&archive_entry_free)> entry(archive_entry_new(), archive_entry_free);
  for (const auto& file : files) {
    archive_entry_clear(entry.get());
    archive_entry_set_pathname(entry.get(), file.name.c_str());
    archive_entry_set_filetype(entry.get(), AE_IFREG);
    archive_entry_set_perm(entry.get(), file.executable ? 0755 : 0644);
    archive_entry_set_size(entry.get(), static_cast<la_int64_t>(file.contents.size()));
    archive_entry_set_mtime(entry.get(), time(nullptr), 0);
    check(archive_write_header(out.get(), entry.get()), file.name);
    if (!file.contents.empty() &&
        archive_write_data(out.get(), file.contents.data(), file.contents.size()) !=
            static_cast<la_ssize_t>(file.contents.size()))
      check(ARCHIVE_FATAL, file.name);
  }
  check(archive_write_close(out.get()), "close");
}

}  // namespace cdplab::batch
