// Hostile submissions: a class of them, each the solution of child_grids.cu with one thing done
// wrong on purpose, graded by `cdplab grade` like any class. Each must get its expected verdict,
// and no case may stop the batch. The cases that need a kernel to run are graded only where a
// GPU is present (on a machine without one they would only be skipped).
#include "gpu_present.h"
#include "files/files.h"
#include "process/process.h"
#include "batch/submissions.h"
#include "report/report.h"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace fs = std::filesystem;
using cdplab::grading::Outcome;

namespace {

const fs::path kRoot = CDPLAB_SOURCE_DIR;
const fs::path kWork = fs::path(CDPLAB_TEST_BINARY_DIR) / "hostile";
/// A file of the grading machine outside every box: no feedback may quote it.
const fs::path kSecret = fs::temp_directory_path() / "cdplab-hostile-secret.txt";
const std::string kSecretLine = "EXAM-ANSWER-KEY: the instructor's eyes only";
/// The port a hostile submission tries to reach on the grading machine's loopback.
constexpr int kListenPort = 47913;

/// One hostile submission: how it is made from the solution, and what its grade must show.
struct HostileCase {
  std::string name;
  bool needs_gpu;
  std::function<std::string(std::string)> make;  ///< solution text -> hostile text
  std::string expect;                             ///< in the exercise's problem or every failed item's feedback
};

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "the solution no longer holds: ", from);
  return text.replace(at, from.size(), to);
}

const std::string kChildLine = "if (j < end) out[j] = values[j] * 2.0f + static_cast<float>(item);";
const std::string kEntry = "  check_offsets(offsets, values.size());";

std::vector<HostileCase> hostile_cases() {
  return {
      {"compile-error", false, [](std::string s) { return s + "\nthis line is not C++;\n"; }, "does not compile"},
      {"calls-the-oracle", false,
       [](std::string s) {
         return s + "\nnamespace cdplab::fundamentals { float peek() { return cdplab::oracle::tolerance(); } }\n";
       },
       "refers to the grader's own code"},
      // The same call where the source scan cannot see it: a namespace alias, no "oracle::" in
      // the text. The compiled exercise still names the oracle's function.
      {"hides-an-oracle-call", false,
       [](std::string s) {
         return "#include <vector>\nnamespace cdplab { namespace oracle { namespace fundamentals {\n"
                "std::vector<float> expected_expansion(const std::vector<unsigned>&, const std::vector<float>&);\n"
                "} } }\n" +
                replace(s, kEntry,
                        "  namespace reference = cdplab::oracle;\n"
                        "  if (values.size() == 1) return reference::fundamentals::expected_expansion(offsets, values);\n" +
                            kEntry);
       },
       "calls the grader's own code"},
      // Default deny: a launch through a device-runtime entry point no hook observes (the
      // per-thread default stream's launch, called by name) is refused before any check runs.
      {"launches-through-an-unhooked-entry-point", false,
       [](std::string s) {
         return replace(s, "expand_child<<<blocks, kChildThreads>>>(values, out, begin, end, item);",
                        "void* buffer = cudaGetParameterBufferV2(reinterpret_cast<void*>(expand_child), dim3(blocks), "
                        "dim3(kChildThreads), 0);\n"
                        "  if (buffer != nullptr) {\n"
                        "    char* p = static_cast<char*>(buffer);\n"
                        "    *reinterpret_cast<const float**>(p) = values;\n"
                        "    *reinterpret_cast<float**>(p + 8) = out;\n"
                        "    *reinterpret_cast<unsigned*>(p + 16) = begin;\n"
                        "    *reinterpret_cast<unsigned*>(p + 20) = end;\n"
                        "    *reinterpret_cast<unsigned*>(p + 24) = item;\n"
                        "    cudaLaunchDeviceV2_ptsz(buffer, 0);\n"
                        "  }");
       },
       "which the grader does not observe and refuses"},
      {"includes-a-solution", false,
       [](std::string s) { return "#include \"../../solutions/01-fundamentals/child_grids.cu\"\n" + s; },
       "refers to the grader's own code"},
      // Computes nothing, and writes "passed" lines into the results file from a static
      // initialiser, before any check runs.
      {"forges-results", false,
       [](std::string s) {
         // The results file as the harness finds it: "{suite}" stands for the suite's name.
         return "#include <cstdlib>\n#include <fstream>\n#include <string>\n" +
                replace(s, kChildLine, "if (j < end) out[j] = 0.0f;") +
                "\nnamespace {\nconst bool forged = [] {\n"
                "  if (const char* file = std::getenv(\"CDPLAB_RESULTS_FILE\")) {\n"
                "    std::string path = file;\n"
                "    if (path.find(\"{suite}\") != std::string::npos)\n"
                "      path.replace(path.find(\"{suite}\"), 7, \"01-fundamentals.child_grids\");\n"
                "    for (const char* check : {\"uniform ranges\", \"skewed ranges\", \"empty ranges\", \"one huge range\"})\n"
                "      std::ofstream(path, std::ios::app) << \"{\\\"event\\\":\\\"end\\\",\\\"suite\\\":\\\"01-fundamentals/child_grids\\\",\\\"check\\\":\\\"\" << check << \"\\\",\\\"status\\\":\\\"passed\\\",\\\"seconds\\\":0.1,\\\"failures\\\":[]}\\n\";\n"
                "  }\n  return true;\n}();\n}  // namespace\n";
       },
       ""},
      // The forger of the trust review: the token read back from the process's starting
      // environment (/proc/self/environ keeps it after the harness unsets it), "start" and
      // "passed" lines written with it for every check, from a static constructor, at exit, and
      // with the token found by scanning the process's own memory. The checks are judged outside
      // this process, so nothing it writes can pass one.
      {"forges-with-the-token", false,
       [](std::string s) {
         return "#include <cstdlib>\n#include <cstring>\n#include <fstream>\n#include <sstream>\n#include <string>\n" +
                replace(s, kChildLine, "if (j < end) out[j] = 0.0f;") + R"(
namespace {
std::string token_from(const std::string& text) {
  const std::string key = "CDPLAB_RESULTS_TOKEN=";
  const auto at = text.find(key);
  if (at == std::string::npos) return "";
  std::string token;
  for (auto i = at + key.size(); i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) token += text[i];
  return token;
}
std::string token_from_environ() {
  std::ifstream in("/proc/self/environ", std::ios::binary);
  std::stringstream all;
  all << in.rdbuf();
  return token_from(all.str());
}
// Reads every readable mapping of this process and looks for the token there.
std::string token_from_memory() {
  std::ifstream maps("/proc/self/maps");
  std::ifstream mem("/proc/self/mem", std::ios::binary);
  for (std::string line; std::getline(maps, line);) {
    unsigned long from = 0, to = 0;
    char perms[5] = {0};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &from, &to, perms) != 3 || perms[0] != 'r') continue;
    if (to - from > (64ul << 20)) continue;
    std::string chunk(to - from, '\0');
    mem.clear();
    mem.seekg(static_cast<std::streamoff>(from));
    if (!mem.read(&chunk[0], static_cast<std::streamsize>(chunk.size()))) continue;
    const std::string token = token_from(chunk);
    if (!token.empty()) return token;
  }
  return "";
}
void forge(const std::string& token) {
  const char* file = std::getenv("CDPLAB_RESULTS_FILE");
  if (file == nullptr) return;
  std::string path = file;
  if (path.find("{suite}") != std::string::npos) path.replace(path.find("{suite}"), 7, "01-fundamentals.child_grids");
  std::ofstream out(path, std::ios::app);
  for (const char* check : {"uniform ranges", "skewed ranges", "empty ranges", "one huge range"}) {
    out << "{"event":"start","suite":"01-fundamentals/child_grids","check":"" << check
        << "","seed":1,"device":"forged","token":"" << token << ""}
";
    out << "{"event":"end","suite":"01-fundamentals/child_grids","check":"" << check
        << "","status":"passed","seconds":0.1,"failures":[],"token":"" << token << ""}
";
  }
}
struct Forger {
  Forger() { forge(token_from_environ()); }
  ~Forger() {
    forge(token_from_environ());
    forge(token_from_memory());
  }
} forger;
}  // namespace
)";
       },
       ""},
      // The reference reached through a macro, where no text names it; and a file of the grading
      // machine reached the same way, whose first line the compiler's complaint would quote.
      {"includes-a-solution-by-macro", false,
       [](std::string) {
         return "#define MY_HELPERS \"" + (kRoot / "solutions/01-fundamentals/child_grids.cu").string() +
                "\"\n#include MY_HELPERS\n";
       },
       ""},
      {"includes-a-secret-file", false,
       [](std::string s) { return "#include \"" + kSecret.string() + "\"\n" + s; }, ""},
      // Host code that reaches outside its box from a static constructor (it runs with or
      // without a GPU): writes and deletes files of the grading machine, reads another student's
      // copy (and would keep it in its own build tree), and opens a network connection.
      {"host-code-reaches-out", false,
       [](std::string s) {
         // Its kernels compute nothing, so that no check passes where a GPU runs them.
         return "#include <arpa/inet.h>\n#include <sys/socket.h>\n#include <unistd.h>\n#include <cstdio>\n"
                "#include <fstream>\n#include <sstream>\n" + replace(s, kChildLine, "if (j < end) out[j] = 0.0f;") + R"(
namespace {
const bool reached = [] {
  std::ofstream(")" + (kWork / "canary-written").string() + R"(") << "written from a submission";
  std::remove(")" + (kWork / "canary-to-delete").string() + R"(");
  std::ifstream other(")" + (kWork / "class" / "compile-error" / "01-fundamentals" / "child_grids.cu").string() + R"(");
  if (other) {
    std::stringstream text;
    text << other.rdbuf();
    std::ofstream("stolen-copy.txt") << text.str();
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons()" + std::to_string(kListenPort) + R"();
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) {
    const char hello[] = "hello from a submission";
    (void)!write(fd, hello, sizeof hello);
  }
  if (fd >= 0) close(fd);
  return true;
}();
}  // namespace
)";
       },
       ""},
      // Tampers with its own build tree, from a static constructor (it runs while the build lists
      // the suite's checks, and in every check process, with or without a GPU): CTest files that
      // would run a command when CTest reads them, a build tool of its own in the CMake cache, and
      // links in place of the grader's results and records folders, to another student's.
      {"tampers-with-its-build-tree", false,
       [](std::string s) {
         return "#include <unistd.h>\n#include <filesystem>\n#include <fstream>\n" +
                replace(s, kChildLine, "if (j < end) out[j] = 0.0f;") + R"(
namespace {
const bool tampered = [] {
  namespace fs = std::filesystem;
  std::error_code e;
  fs::path tree = fs::read_symlink("/proc/self/exe", e).parent_path();
  while (!tree.empty() && tree != tree.root_path() && !fs::exists(tree / "CMakeCache.txt")) tree = tree.parent_path();
  if (!fs::exists(tree / "CMakeCache.txt")) return false;
  for (const auto& entry : fs::recursive_directory_iterator(tree, e))
    if (entry.path().filename() == "CTestTestfile.cmake")
      std::ofstream(entry.path(), std::ios::app) << "\nexecute_process(COMMAND /bin/sh -c \"echo run > )" +
                (kWork / "canary-ctest").string() + R"(\")\n";
  std::ofstream(tree / "tamper-make.sh") << "#!/bin/sh\necho run > )" + (kWork / "canary-make").string() + R"(\n";
  fs::permissions(tree / "tamper-make.sh", fs::perms::owner_all, e);
  std::ofstream(tree / "CMakeCache.txt", std::ios::app) << "CMAKE_MAKE_PROGRAM:FILEPATH=" << (tree / "tamper-make.sh").string() << "\n";
  for (const char* folder : {"cdplab-results", "cdplab-observations"}) {
    fs::remove_all(tree / folder, e);
    fs::create_directory_symlink(")" + (kWork / "victim").string() + R"(", tree / folder, e);
  }
  return true;
}();
}  // namespace
)";
       },
       ""},
      // Its kernels compute nothing; its entry point computes every answer on the host and prints
      // a fake pass. The grading suite runs the workbook's entry point with these kernels, so the
      // host computation never runs (before the grader's process became the host it earned 13/13).
      {"computes-on-the-host", true,
       [](std::string s) {
         return "#include <cstdio>\n" + replace(replace(s, kChildLine, "if (j < end) out[j] = 0.0f;"), kEntry,
                        "  std::printf(\"[doctest] Status: SUCCESS!\\nPASSED\\n\");\n"
                        "  std::vector<float> out(values.size());\n"
                        "  for (std::size_t i = 0; i + 1 < offsets.size(); ++i)\n"
                        "    for (unsigned j = offsets[i]; j < offsets[i + 1]; ++j) out[j] = values[j] * 2.0f + i;\n"
                        "  return out;\n" + kEntry);
       },
       ""},
      {"exits-early", true,
       [](std::string s) {
         return "#include <cstdlib>\n" + replace(replace(s, kChildLine, "if (j < end) out[j] = 0.0f;"), kEntry,
                                                 "  std::exit(0);\n" + kEntry);
       },
       ""},
      // Device code that names the grader's counters to forge the launch counts: a variable of
      // another module, refused before any check runs (and the names are drawn per process, so
      // the code would not link either).
      {"forges-the-counters", false,
       [](std::string s) {
         return "extern \"C\" __device__ unsigned long long cdplab_hook_counts[15];\n" +
                replace(s, kChildLine,
                        "if (j < end) out[j] = values[j] * 2.0f + static_cast<float>(item);\n"
                        "  if (j == 0) cdplab_hook_counts[0] = 0;");
       },
       "which the grader does not observe and refuses"},
      {"kernel-never-ends", true,
       [](std::string s) {
         // __nanosleep keeps the compiler from removing the loop; out is never null.
         return replace(s, kChildLine, "while (out != nullptr) __nanosleep(1000);\n  " + kChildLine);
       },
       "stopped after"},
      {"unbounded-recursion", true,
       [](std::string s) {
         return replace(s, "  if (begin == end) return;",
                        "  expand_parent<<<1, 32>>>(offsets, items, values, out);\n  if (begin == end) return;");
       },
       ""},
      {"exhausts-the-heap", true,
       [](std::string s) {
         return replace(s, kChildLine,
                        "float* scratch = static_cast<float*>(malloc(1 << 20));\n"
                        "  scratch[threadIdx.x] = 1.0f;\n  " + kChildLine);
       },
       ""},
      {"writes-out-of-bounds", true,
       [](std::string s) { return replace(s, kChildLine, "out[j + (1u << 30)] = 1.0f;\n  " + kChildLine); }, ""},
  };
}

/// Grades every submission in class_dir with `cdplab grade`, limited to the exercise `only`.
void grade_class(const fs::path& class_dir, const fs::path& out_dir, const std::string& only,
                 const std::vector<std::string>& more = {}, const std::map<std::string, std::string>& env = {}) {
  cdplab::process::Options options;
  options.timeout_seconds = 1800;
  options.env = env;
  std::vector<std::string> command{CDPLAB_CLI, "grade", class_dir.string(), "--only", only, "--out", out_dir.string(),
                                   "--parallel", "2",
                                   "--keep-work"};  // the tests look into the build trees for what the submissions wrote
  command.insert(command.end(), more.begin(), more.end());
  const auto ran = cdplab::process::run(command, options);
  INFO(ran.output);
  REQUIRE(ran.started);
  CHECK_FALSE(ran.timed_out);
}

cdplab::grading::GradeReport student_report(const fs::path& out_dir, const std::string& student) {
  std::ifstream in(out_dir / "students" / student / "result.json");
  REQUIRE_MESSAGE(in, "no result for ", student);
  return cdplab::report::from_json(nlohmann::json::parse(in));
}

/// A TCP listener on the grading machine's loopback; contacted() tells whether anyone connected.
class Listener {
 public:
  explicit Listener(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    const int yes = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_port = htons(static_cast<uint16_t>(port));
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE_MESSAGE(bind(fd_, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0, "port ", port, " is taken");
    REQUIRE(listen(fd_, 8) == 0);
  }
  ~Listener() { close(fd_); }
  bool contacted() const {
    const int client = accept(fd_, nullptr, nullptr);
    if (client < 0) return false;
    close(client);
    return true;
  }

 private:
  int fd_ = -1;
};

using cdplab::testing::gpu_present;

}  // namespace

TEST_CASE("hostile submissions get their verdicts and never stop the batch") {
  const bool gpu = gpu_present();
  const std::string solution = cdplab::files::read_text(kRoot / "solutions/01-fundamentals/child_grids.cu");
  const fs::path class_dir = kWork / "class";
  const fs::path out_dir = kWork / "grades";
  fs::remove_all(class_dir);
  fs::remove_all(out_dir);
  fs::create_directories(kWork);
  fs::remove(kWork / "canary-written");
  std::ofstream(kWork / "canary-to-delete") << "must survive the batch";
  std::ofstream(kSecret) << kSecretLine << "\n";
  const Listener listener(kListenPort);
  // Another student's results and records, which a link from a hostile tree would lead to.
  fs::remove_all(kWork / "victim");
  fs::create_directories(kWork / "victim" / "01-fundamentals.child_grids");
  std::ofstream(kWork / "victim" / "01-fundamentals.child_grids.jsonl") << "{}\n";
  std::ofstream(kWork / "victim" / "01-fundamentals.child_grids" / "kept.obs") << "kept";
  fs::remove(kWork / "canary-ctest");
  fs::remove(kWork / "canary-make");
  std::vector<HostileCase> cases;
  for (auto& c : hostile_cases()) {
    if (c.needs_gpu && !gpu) continue;
    fs::create_directories(class_dir / c.name / "01-fundamentals");
    std::ofstream(class_dir / c.name / "01-fundamentals" / "child_grids.cu") << c.make(solution);
    cases.push_back(c);
  }
  // A check that hangs is stopped after 10 s, not the build's 30: a submission whose kernels never
  // end costs each of its checks that long, twice (beside the others, then alone).
  grade_class(class_dir, out_dir, "child-grids", {}, {{"CDPLAB_CHECK_SECONDS", "10"}});

  for (const auto& c : cases) {
    INFO("case ", c.name);
    const auto report = student_report(out_dir, c.name);
    REQUIRE(report.exercises.size() == 1);
    const auto& e = report.exercises.front();
    std::string said = e.problem;
    for (const auto& item : e.items) {
      INFO(item.name, ": ", item.feedback);
      // A hostile submission never earns a check. (Its rules may pass: forged results do not
      // change the code's launch graph.)
      if (item.kind == cdplab::grading::ItemKind::check) CHECK(item.outcome != Outcome::passed);
      said += "\n" + item.feedback;
    }
    if (!c.expect.empty()) CHECK_MESSAGE(said.find(c.expect) != std::string::npos, said);
    CHECK(report.points() < report.max_points());
    // Nothing of the grading machine in the feedback: not the secret, not the grader's folders.
    CHECK(said.find(kSecretLine) == std::string::npos);
    CHECK(e.build_log.find(kSecretLine) == std::string::npos);
    CHECK(said.find(kRoot.string()) == std::string::npos);
    CHECK(e.build_log.find(kRoot.string()) == std::string::npos);
    if (c.name == "includes-a-solution-by-macro") CHECK(report.points() == 0);
  }
  // Nothing outside the boxes changed, no other student's file was read, no connection made.
  CHECK_FALSE(fs::exists(kWork / "canary-written"));
  CHECK(fs::exists(kWork / "canary-to-delete"));
  for (const auto& entry : fs::recursive_directory_iterator(out_dir / "work"))
    CHECK_MESSAGE(entry.path().filename() != "stolen-copy.txt", entry.path().string());
  CHECK_MESSAGE(!listener.contacted(), "a submission reached a listener on the grading machine's loopback");
  // What a submission wrote into its build tree never ran outside its box, and no link was followed.
  CHECK_FALSE(fs::exists(kWork / "canary-ctest"));
  CHECK_FALSE(fs::exists(kWork / "canary-make"));
  CHECK(fs::exists(kWork / "victim" / "01-fundamentals.child_grids.jsonl"));
  CHECK(fs::exists(kWork / "victim" / "01-fundamentals.child_grids" / "kept.obs"));
  fs::remove(kSecret);
  if (!gpu) MESSAGE("no GPU: only the cases that need no kernel to run were graded");
}

// The only code of a student's that runs on the host while a file is graded is its host parts
// (cdplab/host_part.h), in a box and a process of their own. Each case below attacks the machine
// from the pools exercise's host part; each must fail its own grading within the time limits and
// leave the machine as it was, and an honest classmate graded beside them keeps full marks.
namespace {

const std::string kPoolsAnswer = "  return reserve_pending_launches(std::size_t{children} + kPoolMargin);";

std::vector<HostileCase> host_part_cases() {
  const auto in_host_part = [](const std::string& includes, const std::string& body) {
    return [includes, body](std::string s) { return includes + replace(s, kPoolsAnswer, body + kPoolsAnswer); };
  };
  return {
      // A fork bomb: 2^12 processes that each wait a minute (bounded, so that a failed defence
      // cannot take the machine down with the test). Its process waits for them: it never
      // answers unless the grader ends them.
      {"host-part-fork-bomb", true,
       in_host_part("#include <sys/wait.h>\n#include <unistd.h>\n",
                    "  const pid_t first = getpid();\n"
                    "  for (int i = 0; i < 12; ++i) (void)fork();\n"
                    "  if (getpid() != first) { sleep(60); _exit(0); }\n"
                    "  while (wait(nullptr) > 0) {}\n"),
       "more than 16 processes"},
      // 100 GB of host memory, touched.
      {"host-part-allocates-100-GB", true,
       in_host_part("#include <vector>\n",
                    "  std::vector<char> big(std::size_t{100} << 30, 1);\n"
                    "  if (big[children] != 1) return 0;\n"),
       "bad_alloc"},  // thrown in the host part, and reported as its exception
      // A device heap of 100 GB, asked for from the host part (its only way to the GPU's memory).
      {"host-part-asks-for-a-100-GB-heap", true,
       in_host_part("", "  CDPLAB_CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, std::size_t{100} << 30));\n"),
       "more than the grader allows"},
      // Writes files wherever it can, each under the size limit of one file, until nothing more
      // goes (at most 8 GiB, for the same reason as the bomb), then never returns, deaf to SIGTERM.
      {"host-part-fills-the-disk-and-never-returns", true,
       in_host_part("#include <csignal>\n#include <cstdio>\n#include <string>\n#include <unistd.h>\n",
                    "  std::signal(SIGTERM, SIG_IGN);\n"
                    "  static char chunk[1 << 20];\n"
                    "  std::size_t written = 0;\n"
                    "  for (const char* dir : {\"/tmp\", \"/parts\", \"/build\", \".\"}) {\n"
                    "    for (int file = 0; written < (std::size_t{8} << 30); ++file) {\n"
                    "      std::FILE* out = std::fopen((std::string(dir) + \"/fill-\" + std::to_string(file)).c_str(), \"wb\");\n"
                    "      if (out == nullptr) break;\n"
                    "      std::size_t in_file = 0;\n"
                    "      while (in_file < (std::size_t{48} << 20) && std::fwrite(chunk, 1, sizeof chunk, out) == sizeof chunk)\n"
                    "        in_file += sizeof chunk;\n"
                    "      written += in_file;\n"
                    "      std::fclose(out);\n"
                    "      if (in_file == 0) break;\n"
                    "    }\n"
                    "  }\n"
                    "  for (;;) pause();\n"),
       "no answer within|stopped after"},  // the host part's wait or the check's own limit, whichever ends first
  };
}

/// The processes of this machine whose command line holds `word` as an argument.
int processes_with_argument(const std::string& word) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string argument;
    bool first = true;
    while (std::getline(in, argument, '\0')) {
      if (!first && argument == word) ++count;
      first = false;
    }
  }
  return count;
}

/// Free bytes of the file system that holds `dir`.
std::uintmax_t free_bytes(const fs::path& dir) {
  std::error_code error;
  return fs::space(dir, error).available;
}

}  // namespace

TEST_CASE("hostile submissions: host parts that fork, allocate 100 GB, fill the disk or never return fail alone") {
  if (!gpu_present()) {
    MESSAGE("CDPLAB_TEST_SKIPPED: no GPU: a host part is called only by checks that run kernels");
    return;
  }
  const std::string solution = cdplab::files::read_text(kRoot / "solutions/05-streams-and-pools/pools.cu");
  const fs::path class_dir = kWork / "host-parts-class";
  const fs::path out_dir = kWork / "host-parts-grades";
  fs::remove_all(class_dir);
  fs::remove_all(out_dir);
  auto cases = host_part_cases();
  cases.push_back({"honest", true, [](std::string s) { return s; }, ""});
  for (const auto& c : cases) {
    fs::create_directories(class_dir / c.name / "05-streams-and-pools");
    std::ofstream(class_dir / c.name / "05-streams-and-pools" / "pools.cu") << c.make(solution);
  }
  const std::uintmax_t free_before = free_bytes(kWork);
  // A check waits 5 s for a host part's answer, not 30: the case that never returns costs each
  // check that long.
  grade_class(class_dir, out_dir, "pools", {}, {{"CDPLAB_HOST_PART_SECONDS", "5"}});

  for (const auto& c : cases) {
    INFO("case ", c.name);
    const auto report = student_report(out_dir, c.name);
    REQUIRE(report.exercises.size() == 1);
    const auto& e = report.exercises.front();
    std::string said = e.problem;
    for (const auto& item : e.items) said += "\n" + item.feedback;
    if (c.name == "honest") {
      CHECK_MESSAGE(report.points() == report.max_points(), said);  // graded as it would be alone
      // Its check processes shared one linked cubin (one hook tag for the exercise's run), written
      // whole: one file, no part left.
      std::vector<std::string> linked;
      for (const auto& entry : fs::recursive_directory_iterator(out_dir / "work" / c.name))
        if (entry.path().parent_path().filename() == "05-streams-and-pools.pools" &&
            entry.path().parent_path().parent_path().filename().string().find("-linked") != std::string::npos)
          linked.push_back(entry.path().filename().string());
      INFO("linked: ", linked.size());
      CHECK(linked.size() == 1);
      CHECK((linked.empty() || linked.front().find(".cubin") == linked.front().size() - 6));
      continue;
    }
    for (const auto& item : e.items)
      if (item.kind == cdplab::grading::ItemKind::check) CHECK(item.outcome != Outcome::passed);
    const auto bar = c.expect.find('|');
    const bool says = said.find(c.expect.substr(0, bar)) != std::string::npos ||
                      (bar != std::string::npos && said.find(c.expect.substr(bar + 1)) != std::string::npos);
    CHECK_MESSAGE(says, said);
  }
  // No process of theirs is left (an ended one may take a moment to be reaped), and the disk has
  // not lost what a filler would have written.
  for (int look = 0; look < 300 && processes_with_argument("/parts") > 0; ++look)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(processes_with_argument("/parts") == 0);
  CHECK(free_bytes(kWork) + (std::uintmax_t{2} << 30) > free_before);
}

// Without the box (--no-sandbox), the solutions can be read: what the compiler opened, from the
// build tool's record, is what refuses a submission that includes one, for each of its exercises.
TEST_CASE("without the box, a submission that includes a solution is refused by what its compiler read") {
  const fs::path class_dir = kWork / "unboxed-class";
  const fs::path out_dir = kWork / "unboxed-grades";
  fs::remove_all(class_dir);
  fs::remove_all(out_dir);
  fs::create_directories(class_dir / "peeker" / "01-fundamentals");
  for (const char* stem : {"child_grids", "recursive_reduction"})
    std::ofstream(class_dir / "peeker" / "01-fundamentals" / (std::string(stem) + ".cu"))
        << "#define MY_HELPERS \"" << (kRoot / "solutions/01-fundamentals" / (std::string(stem) + ".cu")).string()
        << "\"\n#include MY_HELPERS\n";
  grade_class(class_dir, out_dir, "child-grids", {"--only", "recursive-reduction", "--no-sandbox"});
  const auto report = student_report(out_dir, "peeker");
  REQUIRE(report.exercises.size() == 2);
  for (const auto& e : report.exercises) {
    INFO("exercise ", e.id, ": ", e.problem);
    CHECK(e.problem.find("the compiler read solutions/01-fundamentals/" + e.file.substr(e.file.find('/') + 1)) !=
          std::string::npos);
  }
  CHECK(report.points() == 0);
}

// A suite's checks share one process, and a check that does not pass there runs again in a
// process of its own, which decides it (grading/shared_process.h). Each check of child-grids calls
// the exercise once; a submission that fails every call after the first in a process passes each
// check alone, so it must keep full marks. Its log must show the shared process ending at its
// second check, and that check and the ones after it each starting in a process of their own.
TEST_CASE("checks share a suite process, and one that fails there is decided alone") {
  if (!gpu_present()) {
    MESSAGE("CDPLAB_TEST_SKIPPED: no GPU, and shared processes only matter where checks run");
    return;
  }
  const std::string solution = cdplab::files::read_text(kRoot / "solutions/01-fundamentals/child_grids.cu");
  // The state lives in device memory: the check process runs the workbook's host code, and the
  // loaded device code keeps its variables from one call to the next in a process.
  const std::string first_call_only = replace(
      replace(replace(solution, "inline constexpr unsigned kChildThreads = 256;",
                      "inline constexpr unsigned kChildThreads = 256;\n__device__ unsigned calls_in_this_process = 0;"),
              "  if (item >= items) return;",
              "  if (item == 0) atomicAdd(&calls_in_this_process, 1u);\n  if (item >= items) return;"),
      kChildLine,
      "if (j < end) out[j] = calls_in_this_process > 1 ? -1.0f : values[j] * 2.0f + static_cast<float>(item);");
  const fs::path class_dir = kWork / "shared-class";
  const fs::path out_dir = kWork / "shared-grades";
  fs::remove_all(class_dir);
  fs::remove_all(out_dir);
  for (const auto& [name, text] : {std::pair{std::string("reference"), solution},
                                   std::pair{std::string("first-call-only"), first_call_only}}) {
    fs::create_directories(class_dir / name / "01-fundamentals");
    std::ofstream(class_dir / name / "01-fundamentals" / "child_grids.cu") << text;
  }
  grade_class(class_dir, out_dir, "child-grids");

  for (const std::string student : {"reference", "first-call-only"}) {
    INFO("student ", student);
    const auto report = student_report(out_dir, student);
    CHECK(report.points() == report.max_points());
    // The processes each check started in, in the order of the log; the first is the shared one.
    std::map<std::string, std::vector<std::string>> pids;
    std::string shared;
    std::ifstream log(out_dir / "work" / student / "build-results" / "01-fundamentals.child_grids.jsonl");
    REQUIRE(log);
    for (std::string line; std::getline(log, line);) {
      const auto record = nlohmann::json::parse(line);
      if (record.value("event", "") != "start") continue;
      const std::string pid = record.value("process", "");  // PIDs repeat: each process has a namespace
      REQUIRE_FALSE(pid.empty());
      if (shared.empty()) shared = pid;
      pids[record.value("check", "")].push_back(pid);
    }
    std::size_t checks = 0;  // child-grids' GPU checks, as its report lists them
    for (const auto& exercise : report.exercises)
      for (const auto& item : exercise.items) checks += item.kind == cdplab::grading::ItemKind::check ? 1 : 0;
    REQUIRE(checks >= 5);
    REQUIRE(pids.size() == checks);
    int in_shared = 0, twice = 0;
    for (const auto& [check, started] : pids) {
      INFO("check ", check, ": started ", started.size(), " times");
      REQUIRE((started.size() == 1 || started.size() == 2));
      if (started.front() == shared) ++in_shared;
      if (started.size() == 2) {
        ++twice;
        CHECK(started.front() == shared);
        CHECK(started.back() != shared);
      } else if (started.front() != shared) {
        CHECK(std::count(started.begin(), started.end(), shared) == 0);
      }
    }
    CHECK(in_shared == (student == "reference" ? static_cast<int>(checks) : 2));
    CHECK(twice == (student == "reference" ? 0 : 1));
  }
}

// The concurrency check must tell the strategies apart on every run, not on average: a parent
// whose "named streams" launches go into the NULL stream fails "named streams overlap" in each
// of several copies, and the solution passes it in each.
TEST_CASE("the concurrency check fails a NULL-stream parent and passes a named-stream one, every time") {
  if (!gpu_present()) {
    MESSAGE("CDPLAB_TEST_SKIPPED: no GPU, and the concurrency check needs kernels to run");
    return;
  }
  const std::string solution = cdplab::files::read_text(kRoot / "solutions/05-streams-and-pools/concurrency.cu");
  const std::string named_launch = "concurrency_child<<<1, kConcurrencyChildThreads, 0, stream>>>";
  const std::string null_stream =
      replace(solution, named_launch, "concurrency_child<<<1, kConcurrencyChildThreads>>>");
  const fs::path class_dir = kWork / "concurrency-class";
  const fs::path out_dir = kWork / "concurrency-grades";
  fs::remove_all(class_dir);
  fs::remove_all(out_dir);
  constexpr int kCopies = 3;
  for (int copy = 1; copy <= kCopies; ++copy) {
    for (const auto& [name, text] : {std::pair{"named-" + std::to_string(copy), solution},
                                     std::pair{"null-" + std::to_string(copy), null_stream}}) {
      fs::create_directories(class_dir / name / "05-streams-and-pools");
      std::ofstream(class_dir / name / "05-streams-and-pools" / "concurrency.cu") << text;
    }
  }
  grade_class(class_dir, out_dir, "concurrency");

  for (int copy = 1; copy <= kCopies; ++copy) {
    for (const std::string kind : {"named", "null"}) {
      const std::string student = kind + "-" + std::to_string(copy);
      INFO("student ", student);
      const auto report = student_report(out_dir, student);
      REQUIRE(report.exercises.size() == 1);
      const auto& items = report.exercises.front().items;
      const auto overlap = std::find_if(items.begin(), items.end(),
                                        [](const auto& item) { return item.name == "named streams overlap"; });
      REQUIRE(overlap != items.end());
      INFO(overlap->feedback);
      CHECK(overlap->outcome == (kind == "named" ? Outcome::passed : Outcome::failed));
    }
  }
}

// A student's name is whatever the class folder says: quotes, ';', '$', a line break, bytes that
// are no UTF-8, markup, a leading '=' that a spreadsheet takes for a formula. Each is graded (two
// with an exercise that compiles, the rest with the quiz), kept in a folder of plain characters,
// and escaped in every format; the same class graded again keeps every result.
TEST_CASE("a class of odd names is graded, each name escaped in every format") {
  const fs::path class_dir = kWork / "odd-names-class";
  const fs::path out_dir = kWork / "odd-names-grades";
  fs::remove_all(class_dir);
  fs::remove_all(out_dir);
  const std::string quiz = cdplab::files::read_text(kRoot / "solutions/05-streams-and-pools/quiz.toml");
  const std::string child_grids = cdplab::files::read_text(kRoot / "solutions/01-fundamentals/child_grids.cu");
  const std::vector<std::string> names{"quote\"name", "semi;colon", "=1+2", "line\nbreak", "back\\slash",
                                       "dollar$HOME", "\xc3\xbctf8-\xe5\x90\x8d", "bad\xff-byte",
                                       "<img src=x onerror=alert(1)>", "-rf", "a b"};
  for (const auto& name : names) {
    fs::create_directories(class_dir / name / "05-streams-and-pools");
    std::ofstream(class_dir / name / "05-streams-and-pools" / "quiz.toml") << quiz;
    if (name == names[0] || name == names[1]) {
      fs::create_directories(class_dir / name / "01-fundamentals");
      std::ofstream(class_dir / name / "01-fundamentals" / "child_grids.cu") << child_grids;
    }
  }
  grade_class(class_dir, out_dir, "streams-quiz", {"--only", "child-grids"});
  const std::string gradebook = cdplab::files::read_text(out_dir / "gradebook.csv");
  INFO(gradebook);
  for (const auto& name : names) {
    INFO("student ", name);
    const fs::path dir = out_dir / "students" / cdplab::batch::student_folder(name);
    REQUIRE(fs::exists(dir / "result.json"));
    CHECK(cdplab::files::read_text(dir / "student.txt") == name);
    const auto report = student_report(out_dir, cdplab::batch::student_folder(name));
    const bool compiled = name == names[0] || name == names[1];
    for (const auto& e : report.exercises) {
      INFO(e.id, ": ", e.problem);
      if (e.id == "streams-quiz" || compiled) CHECK(e.problem.empty());
    }
    const std::string html = cdplab::files::read_text(dir / "feedback.html");
    CHECK(html.find("<img src=x") == std::string::npos);
    CHECK(cdplab::files::read_text(dir / "junit.xml").find("<img src=x") == std::string::npos);
    CHECK(nlohmann::json::parse(cdplab::files::read_text(dir / "results.json"), nullptr, false).is_object());
  }
  // Every student has a row; no field starts a formula; a quote is doubled inside quotes.
  CHECK(gradebook.find("\n'=1+2,") != std::string::npos);
  CHECK(gradebook.find("\"quote\"\"name\"") != std::string::npos);
  CHECK(gradebook.find("\n=") == std::string::npos);
  CHECK(gradebook.find("\n-rf") == std::string::npos);
  CHECK(gradebook.find("&lt;img") == std::string::npos);  // the CSV holds the name as text, not markup
  std::size_t rows = 0;
  for (const auto& name : names) rows += gradebook.find(cdplab::batch::student_folder(name)) != std::string::npos ? 0 : 1;
  CHECK(rows == names.size());  // the rows name the students, not their folders

  // Graded again: every result is kept, and the gradebook is the same.
  grade_class(class_dir, out_dir, "streams-quiz", {"--only", "child-grids"});
  CHECK(cdplab::files::read_text(out_dir / "gradebook.csv") == gradebook);
  // Graded afresh into another folder, nothing kept: the same gradebook again.
  const fs::path again_dir = kWork / "odd-names-grades-again";
  fs::remove_all(again_dir);
  grade_class(class_dir, again_dir, "streams-quiz", {"--only", "child-grids"});
  CHECK(cdplab::files::read_text(again_dir / "gradebook.csv") == gradebook);
}

// "Graded before (kept)" trusts only what the grader wrote: a result file changed after the
// grading (or planted where none was graded) is graded again.
TEST_CASE("a kept result is one the grader wrote, or the student is graded again") {
  const fs::path class_dir = kWork / "kept-class";
  const fs::path out_dir = kWork / "kept-grades";
  fs::remove_all(class_dir);
  fs::remove_all(out_dir);
  for (const char* name : {"ann", "ben"}) {
    fs::create_directories(class_dir / name / "05-streams-and-pools");
    std::ofstream(class_dir / name / "05-streams-and-pools" / "quiz.toml")
        << cdplab::files::read_text(kRoot / "chapters/05-streams-and-pools/quiz.toml");
  }
  grade_class(class_dir, out_dir, "streams-quiz");
  const auto first = student_report(out_dir, "ann");
  // A forged result for ann: full marks, written by someone other than the grader.
  std::string forged = cdplab::files::read_text(out_dir / "students/ann/result.json");
  auto json = nlohmann::json::parse(forged);
  for (auto& e : json["exercises"])
    for (auto& item : e["items"]) {
      item["points"] = item["max_points"];
      item["outcome"] = "passed";
    }
  std::ofstream(out_dir / "students/ann/result.json") << json.dump(2) << "\n";
  // A result planted for a student never graded.
  fs::create_directories(class_dir / "cat" / "05-streams-and-pools");
  std::ofstream(class_dir / "cat" / "05-streams-and-pools" / "quiz.toml")
      << cdplab::files::read_text(kRoot / "chapters/05-streams-and-pools/quiz.toml");
  fs::create_directories(out_dir / "students/cat");
  std::ofstream(out_dir / "students/cat/result.json") << json.dump(2) << "\n";
  grade_class(class_dir, out_dir, "streams-quiz");
  CHECK(student_report(out_dir, "ann").points() == first.points());
  CHECK(student_report(out_dir, "cat").points() == first.points());
  CHECK(student_report(out_dir, "ben").points() == first.points());
}
