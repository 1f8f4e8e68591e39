// Observed steps (observe.h): the process's mode, the observation files, and the running check's
// record or replay. No doctest and no CUDA call here: the harness drives it around each check
// (results_log.cpp), and the project's tests use it as a library.
#include "observe.h"

#include "cdplab/check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace cdplab::harness {

namespace {

struct ProcessMode {
  ObserveMode mode = ObserveMode::direct;
  std::string dir;
};

const ProcessMode& process_mode() {
  static const ProcessMode mode = [] {
    ProcessMode m;
    const char* judge = std::getenv("CDPLAB_JUDGE_DIR");
    const char* record = std::getenv("CDPLAB_OBSERVATIONS_DIR");
    if (judge != nullptr && *judge != '\0') {
      m.mode = ObserveMode::judge;
      m.dir = judge;
    } else if (record != nullptr && *record != '\0') {
      m.mode = ObserveMode::record;
      m.dir = record;
    }
    return m;
  }();
  return mode;
}

// Read before any static initialiser of the code under test runs, as results_log.cpp takes its
// token: the mode is the grader's to set, not the exercise's to change.
__attribute__((constructor(101))) void read_mode_early() { (void)process_mode(); }

}  // namespace

ObserveMode observe_mode() { return process_mode().mode; }

const std::string& observe_dir() { return process_mode().dir; }

namespace observe {
namespace {

constexpr char kMagic[8] = {'C', 'D', 'P', 'L', 'O', 'B', 'S', '1'};
constexpr std::uint32_t kFlagSanitizer = 1;

/// The running check's observations in this process.
struct Session {
  bool active = false;
  ObserveMode mode = ObserveMode::direct;
  CheckIdentity id;
  std::string path;
  int fd = -1;
  int observations = 0;
  int depth = 0;  // record: steps running now (only the outermost is recorded)
  // record
  bool write_failed = false;
  // judge
  std::uint64_t size = 0;      // of the file, when it was opened
  std::uint64_t offset = 0;    // of the next record
  bool missing = false;        // no file: the runner never started the check
  std::optional<ObservationProblem> problem;  // the first problem met; every later step meets it too
};

Session& session() {
  static Session s;
  return s;
}

void close_file(Session& s) {
  if (s.fd >= 0) ::close(s.fd);
  s.fd = -1;
}

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t wrote = ::write(fd, data, size);
    if (wrote < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += wrote;
    size -= static_cast<std::size_t>(wrote);
  }
  return true;
}

void put_string(Encoder& out, const std::string& text) {
  out.u64(text.size());
  out.bytes(text.data(), text.size());
}

void record_write(Session& s, const std::string& head, const std::string& payload) {
  if (s.fd < 0 || s.write_failed) return;
  if (!write_all(s.fd, head.data(), head.size()) || !write_all(s.fd, payload.data(), payload.size())) {
    s.write_failed = true;
    std::fprintf(stderr, "cdplab: cannot record the steps of check \"%s\" in %s: %s\n", s.id.check.c_str(),
                 s.path.c_str(), std::strerror(errno));
  }
}

void write_record(Session& s, RecordKind kind, const char* label, const std::string& payload) {
  Encoder head;
  const auto byte = static_cast<std::uint8_t>(kind);
  head.bytes(&byte, 1);
  put_string(head, label);
  head.u64(payload.size());
  record_write(s, head.buffer(), payload);
}

// ----- judge: reading ------------------------------------------------------------------

/// Why the file cannot be read further: it ends (the runner stopped) or is inconsistent.
struct ReadStop {
  bool ended = false;  ///< the file ends inside what was being read
  std::string why;
};

/// Reads exactly `size` bytes at the session's offset; throws ReadStop.
void read_exact(Session& s, void* out, std::uint64_t size) {
  if (size > s.size - s.offset) throw ReadStop{true, "the file ends"};
  auto* at = static_cast<char*>(out);
  std::uint64_t left = size;
  while (left > 0) {
    const ssize_t got = ::pread(s.fd, at, static_cast<std::size_t>(left), static_cast<off_t>(s.offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) throw ReadStop{true, "the file ends"};
    at += got;
    left -= static_cast<std::uint64_t>(got);
    s.offset += static_cast<std::uint64_t>(got);
  }
}

std::uint64_t read_u64(Session& s) {
  std::uint64_t value = 0;
  read_exact(s, &value, sizeof value);
  return value;
}

std::string read_string(Session& s, std::uint64_t max_bytes, const char* what) {
  const std::uint64_t length = read_u64(s);
  if (length > max_bytes) throw ReadStop{false, std::string(what) + " is " + std::to_string(length) + " bytes long"};
  if (length > s.size - s.offset) throw ReadStop{true, "the file ends"};
  std::string text(static_cast<std::size_t>(length), '\0');
  read_exact(s, text.data(), length);
  return text;
}

struct RawRecord {
  RecordKind kind = RecordKind::value;
  std::string label;
  std::string payload;
};

bool known_kind(std::uint8_t kind) {
  switch (static_cast<RecordKind>(kind)) {
    case RecordKind::value:
    case RecordKind::end:
    case RecordKind::not_implemented:
    case RecordKind::cuda_error:
    case RecordKind::device_launch_error:
    case RecordKind::invalid_argument:
    case RecordKind::out_of_range:
    case RecordKind::runtime_error:
    case RecordKind::unknown:
      return true;
  }
  return false;
}

/// The next record; throws ReadStop.
RawRecord read_record(Session& s) {
  RawRecord record;
  std::uint8_t kind = 0;
  read_exact(s, &kind, 1);
  if (!known_kind(kind)) throw ReadStop{false, "a record of unknown kind " + std::to_string(kind)};
  record.kind = static_cast<RecordKind>(kind);
  record.label = read_string(s, kMaxLabelBytes, "a step's label");
  const std::uint64_t length = read_u64(s);
  if (length > kMaxRecordBytes) {
    throw ReadStop{false, "step \"" + record.label + "\" records " + std::to_string(length) +
                              " bytes, more than a record may hold"};
  }
  if (length > s.size - s.offset) throw ReadStop{true, "the file ends"};
  record.payload.resize(static_cast<std::size_t>(length));
  read_exact(s, record.payload.data(), length);
  return record;
}

const char* const kMismatch = "the run's record of this check does not match its steps";

ObservationProblem mismatch(const std::string& detail) { return {false, std::string(kMismatch) + ": " + detail}; }

ObservationProblem corrupt(const std::string& detail) {
  return {false, "the run's record of this check is corrupt: " + detail};
}

/// Judge: opens the file and checks its header against the running check.
void open_for_judging(Session& s) {
  s.fd = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (s.fd < 0) {
    s.missing = true;
    return;
  }
  struct stat info {};
  if (::fstat(s.fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    s.problem = corrupt("it is not a regular file");
    return;
  }
  s.size = static_cast<std::uint64_t>(info.st_size);
  s.offset = 0;
  try {
    char magic[sizeof kMagic];
    read_exact(s, magic, sizeof magic);
    if (std::memcmp(magic, kMagic, sizeof magic) != 0) throw ReadStop{false, "it is not an observation file"};
    std::uint32_t version = 0;
    std::uint32_t flags = 0;
    read_exact(s, &version, sizeof version);
    read_exact(s, &flags, sizeof flags);
    if (version != kFormatVersion) {
      throw ReadStop{false, "format version " + std::to_string(version) + ", expected " +
                                std::to_string(kFormatVersion)};
    }
    const std::uint64_t seed = read_u64(s);
    const std::string suite = read_string(s, kMaxLabelBytes, "the suite's name");
    const std::string check = read_string(s, kMaxLabelBytes, "the check's name");
    const std::string device = read_string(s, kMaxLabelBytes, "the device's name");
    if (suite != s.id.suite || check != s.id.check) {
      s.problem = mismatch("it records check \"" + check + "\" of suite \"" + suite + "\"");
    } else if (seed != s.id.seed) {
      s.problem = mismatch("it was recorded with seed " + std::to_string(seed) + ", this check runs with seed " +
                           std::to_string(s.id.seed));
    } else if (((flags & kFlagSanitizer) != 0) != s.id.under_sanitizer) {
      s.problem = mismatch(s.id.under_sanitizer ? "it was not recorded under compute-sanitizer"
                                                : "it was recorded under compute-sanitizer (smaller inputs)");
    }
    s.id.device = device;
  } catch (const ReadStop& stop) {
    if (stop.ended) {
      s.problem = ObservationProblem{true, "the run's record of this check ends in its header (the run stopped as the "
                                           "check began)"};
    } else {
      s.problem = corrupt(stop.why);
    }
  }
}

/// Record: makes the check's file (its folder first) and writes the header.
void open_for_recording(Session& s) {
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(s.path).parent_path(), error);
  s.fd = ::open(s.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (s.fd < 0) {
    std::fprintf(stderr, "cdplab: cannot record the steps of check \"%s\" in %s: %s\n", s.id.check.c_str(),
                 s.path.c_str(), std::strerror(errno));
    return;
  }
  Encoder head;
  head.bytes(kMagic, sizeof kMagic);
  const std::uint32_t version = kFormatVersion;
  const std::uint32_t flags = s.id.under_sanitizer ? kFlagSanitizer : 0;
  head.bytes(&version, sizeof version);
  head.bytes(&flags, sizeof flags);
  head.u64(s.id.seed);
  put_string(head, s.id.suite);
  put_string(head, s.id.check);
  put_string(head, s.id.device);
  record_write(s, head.buffer(), std::string());
}

std::string in_quotes(const std::string& label) { return "\"" + label + "\""; }

/// Ends the running check (judge) with `problem`, unless an earlier one did.
[[noreturn]] void stop_check(const ObservationProblem& problem) {
  Session& s = session();
  if (s.active && !s.problem) s.problem = problem;
  throw problem;
}

}  // namespace

std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string observation_path(const std::string& dir, const std::string& suite, const std::string& check) {
  std::string folder = suite;
  for (char& c : folder)
    if (c == '/') c = '.';
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.obs", static_cast<unsigned long long>(fnv1a64(check)));
  return (std::filesystem::path(dir) / folder / name).string();
}

std::pair<RecordKind, std::string> encode_exception(std::exception_ptr error) {
  Encoder out;
  const auto message = [&](const char* what) { put_string(out, what); };
  RecordKind kind = RecordKind::unknown;
  try {
    std::rethrow_exception(error);
  } catch (const cdplab::NotImplemented& e) {
    kind = RecordKind::not_implemented;
    message(e.what());
  } catch (const cdplab::CudaError& e) {
    kind = RecordKind::cuda_error;
    const auto code = static_cast<std::int32_t>(e.code());
    out.bytes(&code, sizeof code);
    message(e.what());
  } catch (const cdplab::DeviceLaunchError& e) {
    kind = RecordKind::device_launch_error;
    const auto code = static_cast<std::int32_t>(e.code());
    const auto failures = static_cast<std::int32_t>(e.failures());
    out.bytes(&code, sizeof code);
    out.bytes(&failures, sizeof failures);
    message(e.what());
  } catch (const std::invalid_argument& e) {
    kind = RecordKind::invalid_argument;
    message(e.what());
  } catch (const std::out_of_range& e) {
    kind = RecordKind::out_of_range;
    message(e.what());
  } catch (const std::exception& e) {
    kind = RecordKind::runtime_error;
    message(e.what());
  } catch (...) {
    kind = RecordKind::unknown;
  }
  return {kind, std::move(out.buffer())};
}

void rethrow_recorded(RecordKind kind, const std::string& payload) {
  Decoder in(payload.data(), payload.size());
  std::int32_t code = 0;
  std::int32_t failures = 0;
  std::string message;
  try {
    if (kind == RecordKind::cuda_error || kind == RecordKind::device_launch_error) in.bytes(&code, sizeof code);
    if (kind == RecordKind::device_launch_error) in.bytes(&failures, sizeof failures);
    if (kind != RecordKind::unknown) Codec<std::string>::decode(in, message);
    if (in.left() != 0) throw DecodeError("trailing bytes");
  } catch (const DecodeError& error) {
    stop_check(corrupt(std::string("a recorded exception does not decode (") + error.what() + ")"));
  }
  switch (kind) {
    case RecordKind::not_implemented: throw cdplab::NotImplemented(message);
    case RecordKind::cuda_error: throw cdplab::CudaError(static_cast<cudaError_t>(code), message);
    case RecordKind::device_launch_error:
      throw cdplab::DeviceLaunchError(static_cast<cudaError_t>(code), failures, message);
    case RecordKind::invalid_argument: throw std::invalid_argument(message);
    case RecordKind::out_of_range: throw std::out_of_range(message);
    case RecordKind::runtime_error: throw std::runtime_error(message);
    case RecordKind::unknown: throw std::runtime_error("an unknown exception");
    default: break;
  }
  stop_check(corrupt("a record of kind " + std::to_string(static_cast<int>(kind)) + " holds no exception"));
}

std::string begin_check(ObserveMode mode, const std::string& dir, const CheckIdentity& id) {
  Session& s = session();
  close_file(s);
  s = Session{};
  s.active = true;
  s.mode = mode;
  s.id = id;
  if (mode == ObserveMode::direct) return id.device;
  s.path = observation_path(dir, id.suite, id.check);
  if (mode == ObserveMode::record) {
    open_for_recording(s);
    return id.device;
  }
  open_for_judging(s);
  return s.id.device;
}

CheckOutcome end_check(bool gpu_check, bool skipped) {
  Session& s = session();
  CheckOutcome outcome;
  outcome.observations = s.observations;
  if (!s.active) return outcome;
  s.active = false;
  if (s.mode == ObserveMode::record) {
    write_record(s, RecordKind::end, "", std::string());
    close_file(s);
    return outcome;
  }
  if (s.mode != ObserveMode::judge) return outcome;
  if (!s.problem && s.missing) {
    s.problem = ObservationProblem{true, "the run left no record of this check (it was skipped, or stopped before "
                                         "the check began)"};
  }
  if (!s.problem) {
    try {
      const RawRecord next = read_record(s);
      if (next.kind != RecordKind::end) {
        s.problem = mismatch("the check has ended, the record goes on with step " + in_quotes(next.label));
      } else if (!next.label.empty() || !next.payload.empty() || s.offset != s.size) {
        s.problem = corrupt("there is more after the end of the check");
      }
    } catch (const ReadStop& stop) {
      s.problem = stop.ended ? ObservationProblem{true, "the run's record of this check ends before the check "
                                                        "finished (the run stopped during the check)"}
                             : corrupt(stop.why);
    }
  }
  close_file(s);
  if (s.problem) {
    outcome.kind = s.problem->unobserved ? CheckOutcome::Kind::unobserved : CheckOutcome::Kind::failed;
    outcome.message = s.problem->message;
    return outcome;
  }
  if (gpu_check && !skipped && s.observations == 0) {
    outcome.kind = CheckOutcome::Kind::failed;
    outcome.message = "grader error: the check observed nothing (every step that uses the GPU belongs in observed())";
  }
  return outcome;
}

void abandon_check() {
  Session& s = session();
  s.active = false;
  close_file(s);
}

ObserveMode step_mode() {
  const Session& s = session();
  if (s.active) return s.mode;
  // Outside a check: a judge still runs no step; anything else runs it.
  return observe_mode() == ObserveMode::judge ? ObserveMode::judge : ObserveMode::direct;
}

std::string running_problem() {
  const Session& s = session();
  return s.problem ? s.problem->message : std::string();
}

namespace detail {

void record(const char* what, RecordKind kind, const std::string& payload) noexcept {
  Session& s = session();
  if (!s.active || s.mode != ObserveMode::record) return;
  ++s.observations;
  try {
    write_record(s, kind, what, payload);
  } catch (...) {  // std::bad_alloc: the file then ends here, and the check goes unobserved
    s.write_failed = true;
  }
}

void record_exception(const char* what, std::exception_ptr error) noexcept {
  try {
    const auto [kind, payload] = encode_exception(error);
    record(what, kind, payload);
  } catch (...) {
    session().write_failed = true;
  }
}

Replayed replay(const char* what) {
  Session& s = session();
  if (!s.active) {
    throw ObservationProblem{false, std::string("grader error: step \"") + what +
                                        "\" was met outside a check, where a judge cannot replay it"};
  }
  if (s.problem) throw *s.problem;
  if (s.missing) {
    s.problem = ObservationProblem{true, "the run left no record of this check (it was skipped, or stopped before "
                                         "the check began)"};
    throw *s.problem;
  }
  try {
    RawRecord record = read_record(s);
    if (record.kind == RecordKind::end) {
      s.problem = mismatch("the record ends the check where the check goes on with step " + in_quotes(what));
    } else if (record.label != what) {
      s.problem = mismatch("the check's next step is " + in_quotes(what) + ", the record's " + in_quotes(record.label));
    } else {
      ++s.observations;
      return Replayed{record.kind, std::move(record.payload)};
    }
  } catch (const ReadStop& stop) {
    s.problem = stop.ended ? ObservationProblem{true, "the run's record of this check ends before step " +
                                                          in_quotes(what) + " (the run stopped during the check)"}
                           : corrupt(stop.why);
  }
  throw *s.problem;
}

void undecodable(const char* what, const std::string& why) {
  stop_check(corrupt("the value of step " + in_quotes(what) + " does not decode (" + why + ")"));
}

StepDepth::StepDepth() { ++session().depth; }
StepDepth::~StepDepth() { --session().depth; }
bool StepDepth::inside_step() { return session().depth > 0; }

}  // namespace detail
}  // namespace observe
}  // namespace cdplab::harness
