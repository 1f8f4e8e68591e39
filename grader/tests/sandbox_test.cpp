// The sandbox of `cdplab grade` (grader/core/sandbox/): what a submission's box shows and hides,
// that it writes only to its build tree and reaches no network, that a time limit ends all of it,
// that an exercise builds in it, what its compiler may have read, how feedback names paths, and
// why a box cannot start. The boxes need bubblewrap and a kernel that lets it start one; where it
// cannot, those tests say CDPLAB_TEST_SKIPPED. No test here needs a GPU.
#include "files/files.h"
#include "grading/build_tree.h"
#include "process/process.h"
#include "sandbox/sandbox.h"
#include "sandbox/submission.h"
#include "test_folders.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using namespace cdplab;

namespace {

const fs::path kRoot = CDPLAB_SOURCE_DIR;
const fs::path kKitBuild = CDPLAB_BINARY_DIR;
const fs::path kWork = fs::path(CDPLAB_TEST_BINARY_DIR) / "sandbox";

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

fs::path fresh(const std::string& name) { return cdplab::testing::empty_folder(kWork / name); }

void write(const fs::path& file, const std::string& text) { cdplab::testing::write_file(file, text); }

/// A script standing in for a program.
std::string script(const fs::path& file, const std::string& body) {
  write(file, "#!/bin/sh\n" + body);
  fs::permissions(file, fs::perms::owner_all, fs::perm_options::replace);
  return file.string();
}

/// The toolchain this build was configured with, as cdplab hands it to the trees it configures
/// (grader/cli/CMakeLists.txt): read back from the build's CMakeCache.txt.
grading::Toolchain this_toolchain() {
  std::map<std::string, std::string> cache;
  std::istringstream in(files::read_text(kKitBuild / "CMakeCache.txt"));
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (line.empty() || line[0] == '#' || line[0] == '/' || eq == std::string::npos) continue;
    cache[line.substr(0, line.find(':'))] = line.substr(eq + 1);
  }
  grading::Toolchain tools;
  tools.cmake = cache["CMAKE_COMMAND"];
  tools.ctest = cache["CMAKE_CTEST_COMMAND"];
  tools.generator = cache["CMAKE_GENERATOR"];
  tools.cache_args = {"-DCMAKE_BUILD_TYPE=" + cache["CMAKE_BUILD_TYPE"],
                      "-DCMAKE_CUDA_COMPILER=" + cache["CMAKE_CUDA_COMPILER"],
                      "-DCMAKE_CXX_COMPILER=" + cache["CMAKE_CXX_COMPILER"],
                      "-DCMAKE_CUDA_ARCHITECTURES=" + cache["CMAKE_CUDA_ARCHITECTURES"],
                      "-DCDPLAB_CHECK_TIMEOUT=" + cache["CDPLAB_CHECK_TIMEOUT"]};
  if (!cache["CMAKE_PREFIX_PATH"].empty()) tools.cache_args.push_back("-DCMAKE_PREFIX_PATH=" + cache["CMAKE_PREFIX_PATH"]);
  return tools;
}

/// Whether boxes can start here; when not, the test says why and is reported skipped.
bool boxes_start() {
  const auto& probe = sandbox::probe();
  if (!probe.ok) MESSAGE("CDPLAB_TEST_SKIPPED: no box can start here: " << probe.problem);
  return probe.ok;
}

process::Result run(const std::vector<std::string>& argv, double seconds = 60) {
  process::Options options;
  options.timeout_seconds = seconds;
  return process::run(argv, options);
}

process::Result boxed_shell(const sandbox::Box& box, const std::string& command, double seconds = 60) {
  return run(sandbox::wrap(box, {"sh", "-c", command}), seconds);
}

/// A class of two students, alice and bob, each with child-grids, and alice's box.
struct TwoStudents {
  fs::path dir, alice, bob, alice_build;
  sandbox::Box box;
};

TwoStudents two_students(const std::string& name) {
  TwoStudents s;
  s.dir = fresh(name);
  s.alice = s.dir / "class" / "alice";
  s.bob = s.dir / "class" / "bob";
  s.alice_build = s.dir / "work" / "alice" / "build";
  for (const auto& student : {s.alice, s.bob}) {
    fs::create_directories(student / "01-fundamentals");
    fs::copy_file(kRoot / "solutions/01-fundamentals/child_grids.cu", student / "01-fundamentals/child_grids.cu");
  }
  fs::create_directories(s.alice_build);
  s.box = sandbox::submission_box({kRoot, kKitBuild}, this_toolchain(), s.alice, s.alice_build);
  return s;
}

}  // namespace

TEST_CASE("sandbox: scrub_paths names no path of the grading machine") {
  sandbox::PathNames names;
  names.submission = "/srv/class/alice";
  names.build = "/srv/lab/build/grade/alice-1234";
  names.kit = "/srv/lab";
  names.cuda = "/opt/cuda-13.0";
  names.home = "/home/prof";
  const auto scrub = [&](const std::string& text) { return sandbox::scrub_paths(text, names); };
  CHECK(scrub("/srv/class/alice/01-fundamentals/child_grids.cu:12: error: x") ==
        "01-fundamentals/child_grids.cu:12: error: x");
  CHECK(scrub("In file included from /srv/lab/starter/include/cdplab/check.h(3),") ==
        "In file included from <kit>/starter/include/cdplab/check.h(3),");
  // The longest name wins: the build tree lies inside the project.
  CHECK(scrub("cd /srv/lab/build/grade/alice-1234/CMakeFiles && x") == "cd <build>/CMakeFiles && x");
  CHECK(scrub("/opt/cuda-13.0/include/cuda_runtime.h:5") == "<cuda>/include/cuda_runtime.h:5");
  CHECK(scrub("see /home/prof/notes.txt") == "see ~/notes.txt");
  CHECK(scrub("-I/srv/lab/starter/include") == "-I<kit>/starter/include");
  CHECK(scrub("'/srv/lab/cmake'") == "'<kit>/cmake'");
  CHECK(scrub("grading /srv/class/alice.") == "grading ..");  // the folder itself, at a sentence's end
  // Only whole names: a longer name, or a path that merely ends the same way, is left alone.
  CHECK(scrub("/srv/lab2/x /srv/labx /srv/class/alicette/y") == "/srv/lab2/x /srv/labx /srv/class/alicette/y");
  CHECK(scrub("/data/srv/lab/x and relative/srv/lab/y") == "/data/srv/lab/x and relative/srv/lab/y");
  CHECK(scrub("no paths here: 3/4 done") == "no paths here: 3/4 done");
  CHECK(scrub("/srv/lab") == "<kit>");
  // Every occurrence, several on a line.
  CHECK(scrub("/srv/lab/a /srv/lab/b:/home/prof/c") == "<kit>/a <kit>/b:~/c");
  // Empty names are ignored; nothing to do gives the text back.
  CHECK(sandbox::scrub_paths("/srv/lab/x", {}) == "/srv/lab/x");
}

TEST_CASE("sandbox: a link's real path is scrubbed too") {
  const fs::path dir = fresh("scrub-links");
  fs::create_directories(dir / "cuda-13.0" / "include");
  fs::create_directory_symlink(dir / "cuda-13.0", dir / "cuda");
  sandbox::PathNames names;
  names.cuda = (dir / "cuda").string();
  CHECK(sandbox::scrub_paths((dir / "cuda-13.0/include/a.h").string() + " " + (dir / "cuda/include/b.h").string(),
                             names) == "<cuda>/include/a.h <cuda>/include/b.h");
}

TEST_CASE("sandbox: install_prefix finds the folder a program or package was installed into") {
  CHECK(sandbox::install_prefix("/opt/cuda-12.4/bin/nvcc", false) == "/opt/cuda-12.4");
  CHECK(sandbox::install_prefix("/opt/deps/lib/cmake/doctest", true) == "/opt/deps");
  CHECK(sandbox::install_prefix("/home/prof/.local/bin/cmake", false) == "/home/prof/.local");
  CHECK(sandbox::install_prefix("/opt/deps", true) == "/opt/deps");
  CHECK(sandbox::install_prefix("/opt/tools/ninja", false) == "/opt/tools");
  CHECK(sandbox::install_prefix("/bin/sh", false) == "/bin");  // no prefix above a top-level bin/
}

TEST_CASE("sandbox: toolchain_paths binds prefixes outside /usr, never one that holds the project") {
  const fs::path dir = fresh("toolchain");
  const auto nvcc = script(dir / "opt/cuda-12.9/bin/nvcc", "exit 0\n");
  const auto cmake = script(dir / "opt/cmake-3.30/bin/cmake", "exit 0\n");
  fs::create_directories(dir / "opt/deps/lib/cmake/doctest");
  grading::Toolchain tools;
  tools.cmake = cmake;
  tools.ctest = "/usr/bin/ctest";
  tools.cache_args = {"-DCMAKE_CUDA_COMPILER=" + nvcc, "-DCMAKE_CXX_COMPILER=/usr/bin/c++",
                      "-DCMAKE_PREFIX_PATH=" + (dir / "opt/deps").string() + ";/usr/local"};
  const auto paths = sandbox::toolchain_paths(tools);
  CHECK(paths == std::vector<std::string>{(dir / "opt/cmake-3.30").string(), (dir / "opt/cuda-12.9").string(),
                                          (dir / "opt/deps").string()});
  // A prefix that would show the project (a compiler kept in the project's own bin/) is narrowed
  // to the program's folder; a program in the project's own folder is not shown at all.
  const auto inside = script(dir / "lab/bin/nvcc", "exit 0\n");
  tools.cache_args = {"-DCMAKE_CUDA_COMPILER=" + inside};
  tools.cmake = "/usr/bin/cmake";
  CHECK(sandbox::toolchain_paths(tools, {}, {dir / "lab"}) == std::vector<std::string>{(dir / "lab/bin").string()});
  CHECK(sandbox::toolchain_paths(tools, {}, {dir / "lab/chapters"}) == std::vector<std::string>{(dir / "lab/bin").string()});
  tools.cache_args = {"-DCMAKE_CUDA_COMPILER=" + script(dir / "lab/nvcc", "exit 0\n")};
  CHECK(sandbox::toolchain_paths(tools, {}, {dir / "lab"}) == std::vector<std::string>{});
  // A program that is a script (pip's ninja) brings its interpreter's prefix.
  const auto python = script(dir / "opt/python-3.12/bin/python3", "exit 0\n");
  tools.cache_args = {"-DCMAKE_MAKE_PROGRAM=" + script(dir / "opt/venv/bin/ninja", "exit 0\n")};
  write(dir / "opt/venv/bin/ninja", "#!" + python + "\nimport ninja\n");
  CHECK(sandbox::toolchain_paths(tools) ==
        std::vector<std::string>{(dir / "opt/python-3.12").string(), (dir / "opt/venv").string()});
}

TEST_CASE("sandbox: probe says why a box cannot start") {
  const fs::path dir = fresh("probe");
  const auto missing = sandbox::probe((dir / "no-such-bwrap").string());
  CHECK_FALSE(missing.ok);
  CHECK(contains(missing.problem, "not installed"));
  CHECK(contains(missing.problem, "bubblewrap"));

  const auto no_userns = sandbox::probe(script(
      dir / "userns-off/bwrap",
      "echo 'bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
      "non-privileged user namespaces.' >&2\nexit 1\n"));
  CHECK_FALSE(no_userns.ok);
  CHECK(contains(no_userns.problem, "user namespaces are disabled"));
  CHECK(contains(no_userns.problem, "kernel.unprivileged_userns_clone"));
  CHECK(contains(no_userns.problem, "user.max_user_namespaces"));
  CHECK(contains(no_userns.problem, "No permissions to creating new namespace"));  // quoted

  const auto other = sandbox::probe(
      script(dir / "other/bwrap", "echo 'bwrap: Can'\"'\"'t mount proc on /newroot/proc: Operation not permitted' >&2\n"
                                  "exit 1\n"));
  CHECK_FALSE(other.ok);
  CHECK(contains(other.problem, "cannot start a box here"));
  CHECK(contains(other.problem, "Can't mount proc on /newroot/proc"));

  // Where only a box without a user namespace starts (a setuid bwrap), that is the box.
  const auto setuid = sandbox::probe(script(
      dir / "setuid/bwrap", "for a in \"$@\"; do [ \"$a\" = --unshare-user ] && { echo 'bwrap: setting up uid map: "
                            "Permission denied' >&2; exit 1; }; done\nexit 0\n"));
  CHECK(setuid.ok);
  CHECK_FALSE(setuid.user_namespace);
  const auto wrapped = sandbox::wrap(sandbox::Box{{}, {}, {}, {}, "", (dir / "setuid/bwrap").string()}, {"true"});
  CHECK(std::find(wrapped.begin(), wrapped.end(), "--unshare-user") == wrapped.end());
  CHECK(std::find(wrapped.begin(), wrapped.end(), "--unshare-all") != wrapped.end());
}

TEST_CASE("sandbox: a box's command line has the base, its binds in order, and the command last") {
  sandbox::Box box;
  box.read_only = {"/srv/lab/grader", "/srv/lab"};
  box.writable = {"/srv/lab/build/x"};
  box.working_directory = "/srv/lab/build/x";
  const auto argv = sandbox::wrap(box, {"ctest", "--test-dir", "."});
  std::string line;
  for (const auto& a : argv) line += a + " ";
  INFO(line);
  CHECK(argv.front() == "bwrap");
  CHECK(contains(line, "--ro-bind /usr /usr "));
  CHECK(contains(line, "--proc /proc --dev /dev --ro-bind /sys /sys --size 1073741824 --tmpfs /tmp "));
  CHECK(contains(line, "--ro-bind /etc/passwd /etc/passwd "));
  CHECK_FALSE(contains(line, "--ro-bind /etc /etc"));
  // Outer folders first, so that inner ones are mounted over them.
  CHECK(line.find("--ro-bind /srv/lab /srv/lab") < line.find("--ro-bind /srv/lab/grader /srv/lab/grader"));
  CHECK(line.find("--ro-bind /srv/lab/grader") < line.find("--bind /srv/lab/build/x /srv/lab/build/x"));
  CHECK(contains(line, "--unshare-all "));
  CHECK(contains(line, "--cap-drop ALL --die-with-parent --new-session --setenv HOME /tmp --setenv TMPDIR /tmp "));
  CHECK(contains(line, "--chdir /srv/lab/build/x -- ctest --test-dir . "));
  // The grader's environment stays out but for what a build and a check need.
  CHECK(contains(line, "--unsetenv HOSTNAME ") == (std::getenv("HOSTNAME") != nullptr));
  CHECK_FALSE(contains(line, "--unsetenv PATH "));
}

TEST_CASE("sandbox: only the variables a build and a check need pass into a box") {
  setenv("CDPLAB_TEST_PASSES", "1", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
  const auto argv = sandbox::wrap(sandbox::Box{}, {"true"});
  std::string line;
  for (const auto& a : argv) line += a + " ";
  INFO(line);
  CHECK(contains(line, "--unsetenv AWS_SECRET_ACCESS_KEY "));
  CHECK_FALSE(contains(line, "--unsetenv CDPLAB_TEST_PASSES "));
  CHECK_FALSE(contains(line, "--unsetenv PATH "));
  unsetenv("CDPLAB_TEST_PASSES");
  unsetenv("AWS_SECRET_ACCESS_KEY");
}

TEST_CASE("sandbox: opened_outside_problem names what the compiler read outside the allowed folders") {
  grading::IndexEntry entry;
  entry.chapter = "05-streams-and-pools";
  entry.stem = "pools";
  entry.library = "/b/libcdplab_exercise_05_streams_and_pools_pools.a";
  const std::vector<std::string> allowed = {"/s", "/b", "/p/starter", "/p/grader/suites/05-streams-and-pools/support",
                                            "/usr"};
  const auto judge = [&](const std::string& listing) {
    return sandbox::opened_outside_problem(listing, entry, allowed, "/p", "/b");
  };
  const std::string clean =
      "ninja: Entering directory `/b'\n"
      "CMakeFiles/cdplab_exercise_05_streams_and_pools_pools.dir/s/05-streams-and-pools/pools.cu.o: #deps 4, deps mtime 1 (VALID)\n"
      "    /s/05-streams-and-pools/pools.cu\n"
      "    /p/starter/include/cdplab/streams.h\n"
      "    /usr/local/cuda/include/cuda_runtime.h\n"
      "    /p/grader/suites/05-streams-and-pools/support/streams_verdicts.h\n"
      "\n"
      // Another target's objects: the grader's own sources are its business.
      "CMakeFiles/cdplab_checks_05_streams_and_pools_pools.dir/p/grader/suites/05-streams-and-pools/pools_test.cpp.o: "
      "#deps 2, deps mtime 1 (VALID)\n"
      "    /p/grader/suites/05-streams-and-pools/pools_test.cpp\n"
      "    /p/grader/oracles/05-streams-and-pools.h\n"
      "\n";
  CHECK(judge(clean) == "");
  CHECK(judge("") == "");  // nothing known of the exercise: nothing to judge

  const std::string stolen =
      clean +
      "CMakeFiles/cdplab_exercise_05_streams_and_pools_pools.dir/s/05-streams-and-pools/pools.cu.o: #deps 4, deps "
      "mtime 1 (VALID)\n"
      "    /s/05-streams-and-pools/pools.cu\n"
      "    /s/05-streams-and-pools/../../p/solutions/05-streams-and-pools/fast_quicksort.cu\n"
      "    /p/grader/oracles/05-streams-and-pools.h\n"
      "    /tmp/instructor-secret.txt\n";
  const auto problem = judge(stolen);
  INFO(problem);
  CHECK(contains(problem, "the compiler read solutions/05-streams-and-pools/fast_quicksort.cu"));
  CHECK(contains(problem, "2 other file(s) (grader/oracles/05-streams-and-pools.h, ...)"));
  // Another chapter's support folder is not this exercise's.
  const auto other_support = judge(
      "CMakeFiles/cdplab_exercise_05_streams_and_pools_pools.dir/x.cu.o: #deps 1, deps mtime 1 (VALID)\n"
      "    /p/grader/suites/04-memory-visibility/support/delayed_child.cu\n");
  CHECK(contains(other_support, "grader/suites/04-memory-visibility/support/delayed_child.cu"));
  // A relative dependency is read from the build tree.
  CHECK(judge("CMakeFiles/cdplab_exercise_05_streams_and_pools_pools.dir/x.cu.o: #deps 1, deps mtime 1 (VALID)\n"
              "    generated/x.h\n") == "");
}

TEST_CASE("sandbox: opened_outside_problem reads the build tree's dependency log with its build tool") {
  // A fake tree: its CMakeCache.txt names a stand-in for ninja that prints a deps listing.
  const fs::path dir = fresh("deps-log");
  const fs::path tree_dir = dir / "build";
  const fs::path submission = dir / "alice";
  fs::create_directories(submission / "01-fundamentals");
  const auto ninja = script(
      dir / "fake-ninja",
      "echo \"ninja: Entering directory \\`$2'\"\n"
      "echo 'CMakeFiles/cdplab_exercise_01_fundamentals_child_grids.dir/a/child_grids.cu.o: #deps 2, deps mtime 1 (VALID)'\n"
      "echo '    " + (submission / "01-fundamentals/child_grids.cu").string() + "'\n"
      "echo '    " + (kRoot / "grader/oracles/01-fundamentals.h").string() + "'\n");
  write(tree_dir / "CMakeCache.txt", "CMAKE_GENERATOR:INTERNAL=Ninja\nCMAKE_MAKE_PROGRAM:FILEPATH=" + ninja + "\n");
  write(tree_dir / "cdplab-index.json",
        "{\"exercise_dir\": \"" + submission.string() + "\", \"exercises\": []}");
  grading::BuildTree tree(kRoot, tree_dir, {});
  tree.load_index();
  grading::IndexEntry entry;
  entry.chapter = "01-fundamentals";
  entry.stem = "child_grids";
  entry.library_target = "cdplab_exercise_01_fundamentals_child_grids";
  const auto problem = sandbox::opened_outside_problem(tree, entry);
  CHECK(contains(problem, "the compiler read grader/oracles/01-fundamentals.h"));

  // A record that cannot be read could hide any file: the exercise is refused, never waved through.
  const auto failing = script(dir / "failing-ninja", "echo 'ninja: error: loading deps log' >&2\nexit 1\n");
  write(tree_dir / "CMakeCache.txt", "CMAKE_GENERATOR:INTERNAL=Ninja\nCMAKE_MAKE_PROGRAM:FILEPATH=" + failing + "\n");
  const auto record = sandbox::build_tool_dependencies(tree);
  CHECK(record.listing.empty());
  CHECK_FALSE(record.problem.empty());
  CHECK(contains(sandbox::opened_outside_problem(tree, entry), "what the compiler read could not be checked"));
  // Another generator keeps no such record: nothing to read, no problem.
  write(tree_dir / "CMakeCache.txt", "CMAKE_GENERATOR:INTERNAL=Unix Makefiles\n");
  CHECK(sandbox::build_tool_dependencies(tree).problem.empty());
}

TEST_CASE("sandbox: a submission's box shows its own work and the kit, and hides the rest") {
  if (!boxes_start()) return;
  const auto s = two_students("hides");
  const std::string solution = (kRoot / "solutions/01-fundamentals/child_grids.cu").string();
  const fs::path secret = fs::temp_directory_path() / ("cdplab-instructor-secret-" + std::to_string(getpid()) + ".txt");
  write(secret, "the exam's answers\n");
  REQUIRE(fs::exists(solution));
  const auto in_box = [&](const std::string& command) { return boxed_shell(s.box, command); };

  // What the box shows: alice's work, the starter kit, the grader (its tests hidden), the kit's pieces.
  const auto own = in_box("cat '" + (s.alice / "01-fundamentals/child_grids.cu").string() + "'");
  INFO(own.output);
  CHECK(own.ok());
  CHECK(in_box("test -f '" + (kRoot / "starter/include/cdplab/check.h").string() + "'").ok());
  CHECK(in_box("test -f '" + (kRoot / "grader/suites/01-fundamentals/child_grids_test.cpp").string() + "'").ok());
  CHECK(in_box("test -d '" + (kKitBuild / "starter/CMakeFiles/cdplab_starter.dir").string() + "'").ok());
  CHECK(in_box("test -f '" + (kKitBuild / "cdplab-grading-kit.cmake").string() + "'").ok());

  // What it hides: the solutions, the project's tests, bob, the kit tree's compiled suites (here
  // built from the solutions), the rest of the project, /tmp files and the home folder.
  const auto cat_solution = in_box("cat '" + solution + "'");
  CHECK_FALSE(cat_solution.ok());
  CHECK_FALSE(contains(cat_solution.output, "__global__"));
  CHECK_FALSE(in_box("test -e '" + (kRoot / "solutions").string() + "'").ok());
  const auto tests = in_box("ls -A '" + (kRoot / "grader/tests").string() + "'");
  CHECK(tests.ok());
  CHECK(tests.output.empty());
  CHECK_FALSE(in_box("cat '" + (kRoot / "grader/tests/hostile_test.cpp").string() + "'").ok());
  CHECK_FALSE(in_box("cat '" + (s.bob / "01-fundamentals/child_grids.cu").string() + "'").ok());
  CHECK_FALSE(in_box("test -e '" + (kKitBuild / "suite_01_fundamentals_child_grids").string() + "'").ok());
  CHECK_FALSE(in_box("test -e '" + (kKitBuild / "CMakeCache.txt").string() + "'").ok());
  CHECK_FALSE(in_box("cat '" + (kRoot / "README.md").string() + "'").ok());
  CHECK_FALSE(in_box("cat '" + secret.string() + "'").ok());
  if (const char* home = std::getenv("HOME"); home != nullptr && fs::exists(home))
    CHECK_FALSE(in_box(std::string("ls '") + home + "'").ok());
  CHECK_FALSE(in_box("cat /etc/shadow").ok());
  fs::remove(secret);
}

TEST_CASE("sandbox: a boxed program writes only to its build tree, and its /tmp is its own") {
  if (!boxes_start()) return;
  const auto s = two_students("writes");
  const auto in_box = [&](const std::string& command) { return boxed_shell(s.box, command); };
  CHECK(in_box("echo built > '" + (s.alice_build / "out.txt").string() + "'").ok());
  CHECK(files::read_text(s.alice_build / "out.txt") == "built\n");
  CHECK_FALSE(in_box("echo x > '" + (s.alice / "01-fundamentals/child_grids.cu").string() + "'").ok());
  CHECK_FALSE(in_box("touch '" + (s.alice / "new.cu").string() + "'").ok());
  CHECK_FALSE(in_box("touch '" + (kRoot / "grader/suites/x.cpp").string() + "'").ok());
  CHECK_FALSE(in_box("touch '" + (kRoot / "grader/tests/x.cpp").string() + "'").ok());  // hidden, and read-only
  CHECK_FALSE(in_box("touch '" + (kKitBuild / "starter/CMakeFiles/cdplab_starter.dir/x").string() + "'").ok());
  CHECK_FALSE(in_box("touch /usr/x").ok());
  CHECK_FALSE(in_box("touch '" + (s.bob / "x").string() + "'").ok());
  CHECK_FALSE(fs::exists(s.bob / "x"));
  const std::string scratch = "/tmp/cdplab-box-scratch-" + std::to_string(getpid());
  CHECK(in_box("echo x > " + scratch + " && cat " + scratch).ok());
  CHECK_FALSE(fs::exists(scratch));
  // HOME and TMPDIR point into the box's own /tmp.
  const auto env = in_box("echo \"$HOME $TMPDIR\"");
  CHECK(env.output == "/tmp /tmp\n");
}

// A build tree on a cluster's scratch disk, reached through a link (build/ -> /scratch/...): the
// box binds it at its real path (bwrap cannot make a mount point through a link), and the name
// through the link still works inside when the link lies in a folder the box shows.
TEST_CASE("sandbox: a folder named through a link is bound at its real path, and its name still works") {
  const fs::path dir = fresh("linked");
  fs::create_directories(dir / "scratch/build/test");
  fs::create_directories(dir / "lab");
  write(dir / "scratch/build/test/suite.txt", "the suite\n");
  fs::create_directory_symlink(dir / "scratch/build", dir / "lab/build");
  sandbox::Box box;
  box.read_only = {(dir / "lab").string(), (dir / "lab/build/test").string()};
  std::string line;
  for (const auto& a : sandbox::wrap(box, {"true"})) line += a + " ";
  INFO(line);
  const std::string real = (dir / "scratch/build/test").string();
  CHECK(contains(line, "--ro-bind " + real + " " + real + " "));
  CHECK_FALSE(contains(line, " " + (dir / "lab/build/test").string() + " "));  // shown through the link in lab/
  // Alone, without the folder that holds the link: bound at both names.
  box.read_only = {(dir / "lab/build/test").string()};
  line.clear();
  for (const auto& a : sandbox::wrap(box, {"true"})) line += a + " ";
  CHECK(contains(line, "--ro-bind " + real + " " + real + " "));
  CHECK(contains(line, "--ro-bind " + real + " " + (dir / "lab/build/test").string() + " "));
  // A folder bound at a box path is found by either name.
  sandbox::Box at;
  at.read_only_at = {{(dir / "lab/build").string(), "/build"}};
  CHECK(sandbox::path_in(at, (dir / "lab/build/test/suite.txt").string()) == "/build/test/suite.txt");
  CHECK(sandbox::path_in(at, (dir / "scratch/build/test/suite.txt").string()) == "/build/test/suite.txt");
  if (!boxes_start()) return;
  box.read_only = {(dir / "lab").string(), (dir / "lab/build/test").string()};
  const auto shown = boxed_shell(box, "cat '" + (dir / "lab/build/test/suite.txt").string() + "'");
  INFO(shown.output);
  CHECK(shown.ok());
  CHECK(shown.output == "the suite\n");
}

TEST_CASE("sandbox: a boxed program reaches no network") {
  if (!boxes_start()) return;
  const auto s = two_students("network");
  // A listener of the host on 127.0.0.1.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(listener >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(::listen(listener, 4) == 0);
  socklen_t length = sizeof address;
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  const std::string connect =
      "exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(ntohs(address.sin_port)) + " && echo connected";
  // From outside the box it connects; from inside it cannot.
  const auto outside = run({"bash", "-c", connect});
  CHECK(outside.ok());
  const auto inside = run(sandbox::wrap(s.box, {"bash", "-c", connect}));
  INFO(inside.output);
  CHECK_FALSE(inside.ok());
  CHECK_FALSE(contains(inside.output, "connected"));
  ::close(listener);
  // The box has a loopback of its own and no other interface.
  const auto interfaces = boxed_shell(s.box, "cat /proc/net/dev");
  CHECK(contains(interfaces.output, "lo:"));
  std::istringstream host(files::read_text("/proc/net/dev"));
  for (std::string line; std::getline(host, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = line.substr(line.find_first_not_of(' '), colon - line.find_first_not_of(' '));
    if (name != "lo") CHECK_FALSE(contains(interfaces.output, name + ":"));
  }
}

TEST_CASE("sandbox: a time limit ends everything the boxed program started") {
  if (!boxes_start()) return;
  const auto s = two_students("time-limit");
  const auto ran = boxed_shell(s.box, "sleep 123.25 & sleep 124.25", 1);
  CHECK(ran.timed_out);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int left = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string cmdline = files::read_text(entry.path() / "cmdline");
    if (contains(cmdline, std::string("sleep\0123.25", 12)) || contains(cmdline, std::string("sleep\0124.25", 12))) ++left;
  }
  CHECK(left == 0);
}

TEST_CASE("sandbox: an exercise builds in its box, and what its compiler read decides") {
  if (!boxes_start()) return;
  const auto tools = this_toolchain();
  std::string kit_problem;
  const std::string kit = grading::BuildTree(kRoot, kKitBuild, tools).prepare_grading_kit(kit_problem);
  REQUIRE_MESSAGE(kit_problem.empty(), kit_problem);
  const std::vector<std::string> args = {kit, "-DCDPLAB_BUILD_TOOLS=OFF", "-DCDPLAB_BUILD_TESTS=OFF",
                                         "-DCDPLAB_BUILD_DOCS=OFF"};
  // Two students with the same work: alice is built in a box, bob without one.
  const auto s = two_students("build");
  const fs::path bob_build = s.dir / "work" / "bob" / "build";
  grading::BuildTree alice(kRoot, s.alice_build, tools);
  grading::BuildTree bob(kRoot, bob_build, tools);
  for (auto* tree : {&alice, &bob}) {
    const auto configured = tree->configure(tree == &alice ? s.alice : s.bob, args);
    INFO(configured.output);
    REQUIRE(configured.ok());
  }
  alice.set_sandbox(sandbox::submission_box({kRoot, kKitBuild}, tools, s.alice, s.alice_build));
  const auto entry = alice.find("01-fundamentals", "child_grids");
  REQUIRE(entry);
  const auto time = [](const grading::BuildTree& tree, const std::vector<std::string>& targets) {
    const auto start = std::chrono::steady_clock::now();
    const auto built = tree.build(targets, 600);
    INFO(built.output);
    CHECK(built.ok());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const std::vector<std::string> targets = {entry->library_target, entry->suite_target};
  const double plain = time(bob, targets);
  const double boxed = time(alice, targets);
  MESSAGE("child-grids' code (and its PTX) and suite built in " << plain << " s without the box, " << boxed << " s in it");
  CHECK(fs::exists(entry->suite_executable));
  CHECK(sandbox::opened_outside_problem(alice, *entry) == "");
  // The box's build ran the build tool without configuring again: every CMake input was there.
  const auto again = alice.build(targets, 600);
  CHECK(again.ok());
  CHECK_FALSE(contains(again.output, "Re-running CMake"));

  // A boxed `true` against a plain one.
  constexpr int kRuns = 20;
  const auto per_run = [&](const std::vector<std::string>& argv) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kRuns; ++i) CHECK(run(argv).ok());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kRuns * 1000;
  };
  const double plain_ms = per_run({"true"});
  const double boxed_ms = per_run(alice.in_box({"true"}));
  MESSAGE("`true`: " << plain_ms << " ms plain, " << boxed_ms << " ms in the box (mean of " << kRuns << ")");

  // An include the source scan cannot see (a macro names it) of a grader header the box shows:
  // it builds, and what the compiler read refuses it.
  const std::string solution = files::read_text(kRoot / "solutions/01-fundamentals/child_grids.cu");
  write(s.alice / "01-fundamentals/child_grids.cu",
        "#define PEEK \"" + (kRoot / "grader/harness/suite_identity.h").string() + "\"\n#include PEEK\n" + solution);
  CHECK(alice.build({entry->library_target}, 600).ok());
  const auto peeked = sandbox::opened_outside_problem(alice, *entry);
  CHECK(contains(peeked, "the compiler read grader/harness/suite_identity.h"));

  // The same of a solution: the box does not show it, so it does not compile there; without the
  // box it compiles, and what the compiler read names it.
  const std::string steal = "#define STEAL \"" + (kRoot / "solutions/01-fundamentals/shared_histogram.cu").string() +
                            "\"\n" + solution + "\n#include STEAL\n";
  write(s.alice / "01-fundamentals/child_grids.cu", steal);
  write(s.bob / "01-fundamentals/child_grids.cu", steal);
  const auto boxed_steal = alice.build({entry->library_target}, 600);
  CHECK_FALSE(boxed_steal.ok());
  CHECK(contains(boxed_steal.output, "shared_histogram.cu"));
  CHECK_FALSE(contains(boxed_steal.output, "__global__ void"));
  const auto bob_entry = bob.find("01-fundamentals", "child_grids");
  REQUIRE(bob_entry);
  const auto plain_steal = bob.build({bob_entry->library_target}, 600);
  INFO(plain_steal.output);
  CHECK(plain_steal.ok());
  const auto stolen = sandbox::opened_outside_problem(bob, *bob_entry);
  CHECK(contains(stolen, "the compiler read solutions/01-fundamentals/shared_histogram.cu"));
}

TEST_CASE("sandbox: path_names of a tree name its submission, tree, project and CUDA toolkit") {
  const fs::path dir = fresh("names");
  write(dir / "build/CMakeCache.txt", "CMAKE_CUDA_COMPILER:FILEPATH=/opt/cuda-13.0/bin/nvcc\n");
  write(dir / "build/cdplab-index.json", "{\"exercise_dir\": \"/srv/class/alice\", \"exercises\": []}");
  grading::BuildTree tree("/srv/lab", dir / "build", {});
  tree.load_index();
  const auto names = sandbox::path_names(tree);
  CHECK(names.submission == "/srv/class/alice");
  CHECK(names.build == (dir / "build").string());
  CHECK(names.kit == "/srv/lab");
  CHECK(names.cuda == "/opt/cuda-13.0");
}

// ---- the command line --------------------------------------------------------------------------

namespace {

process::Result cdplab_cli(std::vector<std::string> args, const std::map<std::string, std::string>& env = {}) {
  args.insert(args.begin(), CDPLAB_CLI);
  process::Options options;
  options.timeout_seconds = 840;
  options.env = env;
  return process::run(args, options);
}

}  // namespace

TEST_CASE("grade --no-sandbox is accepted, and a box that cannot start stops grade with status 2") {
  const fs::path dir = fresh("cli");
  const fs::path submission = dir / "alice";
  fs::create_directories(submission / "01-fundamentals");
  fs::copy_file(kRoot / "solutions/01-fundamentals/child_grids.cu", submission / "01-fundamentals/child_grids.cu");
  const std::map<std::string, std::string> broken = {
      {"CDPLAB_BWRAP", script(dir / "bin/bwrap", "echo 'bwrap: No permissions to creating new namespace, likely "
                                                 "because the kernel does not allow non-privileged user namespaces.' "
                                                 ">&2\nexit 1\n")}};

  // One submission: refused before anything is configured or built.
  const fs::path refused_build = dir / "build-refused";
  const auto refused = cdplab_cli({"grade", submission.string(), "--only", "child-grids", "--build-dir",
                               refused_build.string()}, broken);
  INFO(refused.output);
  CHECK(refused.exit_code == 2);
  CHECK(contains(refused.output, "user namespaces are disabled"));
  CHECK(contains(refused.output, "--no-sandbox"));
  CHECK(contains(refused.output, "a machine given only to grading"));
  CHECK(contains(refused.output, "Apptainer"));
  CHECK_FALSE(fs::exists(refused_build));
  // A class too: no student's work is started.
  fs::create_directories(dir / "class");
  fs::copy(submission, dir / "class" / "alice", fs::copy_options::recursive);
  const auto refused_class =
      cdplab_cli({"grade", (dir / "class").string(), "--only", "child-grids", "--out", (dir / "grades").string()}, broken);
  CHECK(refused_class.exit_code == 2);
  CHECK(contains(refused_class.output, "user namespaces are disabled"));
  CHECK_FALSE(fs::exists(dir / "grades" / "work"));
  // bwrap missing: the message says to install it.
  const auto missing = cdplab_cli({"grade", submission.string(), "--only", "child-grids", "--build-dir",
                               refused_build.string()}, {{"CDPLAB_BWRAP", (dir / "no-such-bwrap").string()}});
  CHECK(missing.exit_code == 2);
  CHECK(contains(missing.output, "bubblewrap"));
  CHECK(contains(missing.output, "not installed"));
  // Quizzes run no code: they need no box.
  const auto quiz = cdplab_cli({"grade", submission.string(), "--only", "streams-quiz", "--quiet", "--build-dir",
                            (dir / "build-quiz").string()}, broken);
  INFO(quiz.output);
  CHECK(quiz.exit_code != 2);

  // --no-sandbox grades without the box, whatever bwrap can do.
  const auto unboxed = cdplab_cli({"grade", submission.string(), "--only", "child-grids", "--no-sandbox", "--build-dir",
                               (dir / "build-unboxed").string(), "--format", "json", "--output",
                               (dir / "unboxed.json").string()}, broken);
  INFO(unboxed.output);
  CHECK((unboxed.exit_code == 0 || unboxed.exit_code == 3));
  CHECK(contains(unboxed.output, "--no-sandbox: the submissions' code is built and run with this account's rights"));
  CHECK(fs::exists(dir / "unboxed.json"));

  // cdplab check never uses the box.
  const auto checked = cdplab_cli({"check", "child-grids", "--quiet"}, broken);
  INFO(checked.output);
  CHECK(checked.exit_code != 2);
}

TEST_CASE("grade builds and runs a submission in its box by default") {
  if (!boxes_start()) return;
  const fs::path dir = fresh("cli-boxed");
  const fs::path submission = dir / "alice";
  fs::create_directories(submission / "01-fundamentals");
  fs::copy_file(kRoot / "solutions/01-fundamentals/child_grids.cu", submission / "01-fundamentals/child_grids.cu");
  // A fake bwrap that logs its calls and hands them on to the real one.
  const std::string real = [] {
    const auto found = run({"sh", "-c", "command -v bwrap"});
    return found.output.substr(0, found.output.find('\n'));
  }();
  const fs::path log = dir / "bwrap.log";
  const auto logging = script(dir / "bin/bwrap", "echo \"$*\" >> '" + log.string() + "'\nexec '" + real + "' \"$@\"\n");
  const auto boxed = cdplab_cli({"grade", submission.string(), "--only", "child-grids", "--build-dir",
                             (dir / "build").string(), "--format", "json", "--output", (dir / "boxed.json").string()},
                            {{"CDPLAB_BWRAP", logging}});
  INFO(boxed.output);
  CHECK((boxed.exit_code == 0 || boxed.exit_code == 3));
  const std::string calls = files::read_text(log);
  INFO(calls);
  CHECK(contains(calls, "--build " + (dir / "build").string()));  // the build ran in the box
  CHECK(contains(calls, "--bind " + (dir / "build").string() + " " + (dir / "build").string()));
  CHECK(contains(calls, "-- " + std::string(CDPLAB_CMAKE) + " --build"));
  // The box that builds the submission's code never shows the solutions (the check box, where only
  // the grader's suites run, shows the project: sandbox::check_box).
  std::istringstream lines(calls);
  for (std::string line; std::getline(lines, line);)
    if (contains(line, " --build")) CHECK_FALSE(contains(line, (kRoot / "solutions").string()));
  const auto report = nlohmann::json::parse(files::read_text(dir / "boxed.json"));
  for (const auto& e : report.at("exercises")) CHECK(e.value("problem", "") == "");
}

TEST_CASE("sandbox: the box's PATH names only folders the box shows") {
  if (!boxes_start()) return;
  const char* old = std::getenv("PATH");
  const std::string saved = old != nullptr ? old : "";
  const std::string secret = "/opt/grading-machine-secret/bin";
  setenv("PATH", (secret + ":" + saved).c_str(), 1);
  sandbox::Box box;
  box.bwrap = sandbox::bwrap_program();
  const auto shown = boxed_shell(box, "echo \"PATH=$PATH\"");
  setenv("PATH", saved.c_str(), 1);
  INFO(shown.output);
  REQUIRE(shown.ok());
  CHECK(shown.output.find(secret) == std::string::npos);
  CHECK(shown.output.find("/usr/bin") != std::string::npos);
}
