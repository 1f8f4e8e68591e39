// A student without a GPU gets the GPU's verdict (remote/): the course's settings, the request and
// reply the client and the server exchange, the server's refusals before it grades anything, the
// lines a failed remote check ends with, the Slurm job script, the Gradescope bundle, and the
// pieces they stand on (archives written, GPU turns across processes, programs fed from files).
// The end-to-end tests are remote/run-ssh-test.sh and slurm/run-check-test.sh.
#include "batch/archive.h"
#include "files/files.h"
#include "grading/gpu_turns.h"
#include "manifest/manifest.h"
#include "process/process.h"
#include "remote/course.h"
#include "remote/gradescope_bundle.h"
#include "remote/local_gpu.h"
#include "remote/protocol.h"
#include "remote/serve.h"
#include "remote/slurm_check.h"
#include "remote/ssh_client.h"
#include "report/report.h"
#include "test_folders.h"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

namespace fs = std::filesystem;
namespace remote = cdplab::remote;
using cdplab::testing::empty_folder;
using cdplab::testing::write_file;

namespace {

const fs::path kRoot = CDPLAB_SOURCE_DIR;

fs::path test_dir(const std::string& name) { return empty_folder(fs::path(CDPLAB_TEST_BINARY_DIR) / "remote" / name); }

/// The message course.toml `text` is refused with; empty when it is read.
std::string course_problem(const std::string& text) {
  const fs::path file = test_dir("course") / "course.toml";
  write_file(file, text);
  try {
    remote::read_course(file);
    return "";
  } catch (const remote::ConfigError& error) {
    return error.what();
  }
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("remote: course.toml names the course's remote, and no file is a course without one") {
  CHECK(remote::read_course(test_dir("no-course") / "course.toml").remote.kind == remote::Kind::none);
  // The project's own course.toml (the template a release carries) is read.
  CHECK_NOTHROW(remote::read_course(kRoot / "course.toml"));

  const fs::path file = test_dir("full-course") / "course.toml";
  write_file(file, R"(
[course]
name = "GPU programming"
gpu_help = "Log in to the cluster and run ./cdplab there."
[remote]
kind = "slurm"
[remote.ssh]
host = "gpulab.example.edu"
port = 2222
options = ["-o", "ConnectTimeout=5"]
[remote.slurm]
partition = "gpu"
gres = "gpu:1"
time = "15:00"
cpus_per_task = 4
setup = ["module load cuda/13.0"]
[serve]
time_limit_seconds = 600
per_student = 2
gpus = 4
share_gpu = 1
)");
  const auto course = remote::read_course(file);
  CHECK(course.name == "GPU programming");
  CHECK(course.gpu_help == "Log in to the cluster and run ./cdplab there.");
  CHECK(course.remote.kind == remote::Kind::slurm);
  CHECK(course.remote.origin == "course.toml");
  CHECK(course.remote.ssh.port == 2222);
  CHECK(course.remote.ssh.options == std::vector<std::string>{"-o", "ConnectTimeout=5"});
  CHECK(course.remote.slurm.resources.partition == "gpu");
  CHECK(course.remote.slurm.resources.cpus_per_task == 4);
  CHECK(course.remote.slurm.setup == std::vector<std::string>{"module load cuda/13.0"});
  CHECK(course.serve.time_limit_seconds == 600);
  CHECK(course.serve.per_student == 2);
  CHECK(course.serve.gpus == 4);
  CHECK(course.serve.share_gpu == 1);
  CHECK(course.serve.queue_per_student == 3);  // a default
  CHECK(remote::describe(course.remote) == "Slurm, partition gpu (course.toml)");
}

TEST_CASE("remote: a course.toml that cannot be used is refused with the setting named") {
  CHECK(contains(course_problem("[remote]\nkind = \"ftp\"\n"), "remote.kind is \"ftp\""));
  CHECK(contains(course_problem("[remote]\nkind = \"ssh\"\n"), "remote.ssh.host is not set"));
  CHECK(contains(course_problem("[remote.slurm]\npartiton = \"gpu\"\n"), "remote.slurm has no setting 'partiton'"));
  CHECK(contains(course_problem("[remote.ssh]\nport = \"22\"\n"), "remote.ssh.port must be a number"));
  CHECK(contains(course_problem("[remote.ssh]\nport = 70000\n"), "remote.ssh.port must be a number from 0 to 65535"));
  CHECK(contains(course_problem("[serve]\ngpus = 1.5\n"), "serve.gpus must be a whole number"));
  CHECK(contains(course_problem("[serve]\nqueue_per_student = 0\n"), "serve.queue_per_student"));
  CHECK(contains(course_problem("[remote.slurm]\nsbatch_args = [\"qos=normal\"]\n"), "remote.slurm"));
  CHECK(contains(course_problem("remote = 3\n"), "remote must be a table"));
  CHECK(contains(course_problem("[remote\n"), "course.toml:1"));  // a parse error names its line
  CHECK(contains(course_problem("[grading]\n"), "has no setting 'grading'"));
  CHECK(course_problem("[course]\nname = \"x\"\n").empty());
}

TEST_CASE("remote: --remote and CDPLAB_REMOTE override the course's remote, the option first") {
  remote::Course course;
  course.remote.kind = remote::Kind::slurm;
  course.remote.origin = "course.toml";
  course.remote.ssh.host = "gpulab.example.edu";
  course.remote.ssh.identity_file = "~/.ssh/course";
  CHECK(remote::choose_remote(course, "", nullptr).kind == remote::Kind::slurm);
  CHECK(remote::choose_remote(course, "", "").kind == remote::Kind::slurm);
  const auto from_env = remote::choose_remote(course, "", "ssh");
  CHECK(from_env.kind == remote::Kind::ssh);
  CHECK(from_env.ssh.host == "gpulab.example.edu");
  CHECK(from_env.origin == "CDPLAB_REMOTE");
  CHECK(remote::choose_remote(course, "none", "ssh").kind == remote::Kind::none);
  const auto url = remote::choose_remote(course, "ssh://ada@lab.example.org:2200", "slurm");
  CHECK(url.kind == remote::Kind::ssh);
  CHECK(url.ssh.user == "ada");
  CHECK(url.ssh.host == "lab.example.org");
  CHECK(url.ssh.port == 2200);
  CHECK(url.ssh.identity_file == "~/.ssh/course");  // the course's key goes with its server's settings
  CHECK(remote::describe(url) == "ssh ada@lab.example.org:2200 (--remote)");
  const auto plain = remote::parse_remote_spec("ssh://lab.example.org", course, "--remote");
  CHECK(plain.ssh.user.empty());
  CHECK(plain.ssh.port == 0);
  for (const char* bad : {"ftp://x", "ssh://", "ssh://-oProxyCommand=x", "ssh://a b", "ssh://h:0", "ssh://h:99999",
                          "ssh://h:22x", "lab.example.org"}) {
    INFO(bad);
    CHECK_THROWS_AS(remote::parse_remote_spec(bad, course, "--remote"), remote::ConfigError);
  }
  remote::Course without_server;
  CHECK_THROWS_WITH_AS(remote::parse_remote_spec("ssh", without_server, "--remote"),
                       doctest::Contains("names no server"), remote::ConfigError);
}

TEST_CASE("remote: a request is a line of plain words, read back as written, and nothing else is served") {
  remote::Request request;
  request.seed = 42;
  request.names = {"child-grids", "02-bezier"};
  CHECK(remote::request_line(request) == "cdplab-check 1 --seed 42 child-grids 02-bezier");
  const auto read = remote::parse_request(remote::request_line(request));
  CHECK(read.seed == 42u);
  CHECK(read.names == request.names);
  CHECK(read.format == "report");
  request.format = "gradescope";
  request.visibility = "after_due_date";
  const auto graded = remote::parse_request(remote::request_line(request));
  CHECK(graded.format == "gradescope");
  CHECK(graded.visibility == "after_due_date");
  CHECK_FALSE(remote::parse_request("cdplab-check 1").seed.has_value());

  const auto refused = [](const std::string& line) {
    try {
      remote::parse_request(line);
      return std::string();
    } catch (const remote::RequestError& error) {
      return std::string(error.what());
    }
  };
  CHECK(contains(refused(""), "no shell"));
  CHECK(contains(refused("bash -i"), "asked for: bash"));
  CHECK(contains(refused("/bin/sh -c id"), "asked for: another program"));
  CHECK(contains(refused("cdplab-check"), "version 1"));
  CHECK(contains(refused("cdplab-check 2 child-grids"), "version 1"));
  CHECK(contains(refused("cdplab-check 1 --student alice"), "unknown option --student"));
  CHECK(contains(refused("cdplab-check 1 child-grids;id"), "letters, digits"));
  CHECK(contains(refused("cdplab-check 1 $(id)"), "letters, digits"));
  CHECK(contains(refused("cdplab-check 1 --seed"), "needs a value"));
  CHECK(contains(refused("cdplab-check 1 --seed -1"), "whole number"));
  CHECK(contains(refused("cdplab-check 1 --seed 123456789012345678901"), "whole number"));
  CHECK(contains(refused("cdplab-check 1 --format html"), "report or gradescope"));
  CHECK(contains(refused("cdplab-check 1 --visibility everyone"), "visible, hidden"));
}

TEST_CASE("remote: a reply carries a report or one line; anything else is no reply") {
  cdplab::grading::GradeReport report;
  report.device = "NVIDIA H100 80GB HBM3";
  report.ran_on = "gpulab, over SSH";
  report.seed = 7;
  const auto reply = remote::parse_reply(remote::report_reply(report));
  REQUIRE(reply.report.has_value());
  CHECK(reply.report->device == report.device);
  CHECK(reply.report->ran_on == report.ran_on);
  CHECK(reply.error.empty());
  const auto error = remote::parse_reply(remote::error_reply("stopped after 900 s", {}));
  CHECK_FALSE(error.report.has_value());
  CHECK(error.error == "stopped after 900 s");
  const std::string whole = remote::report_reply(report);
  CHECK_THROWS(remote::parse_reply(whole.substr(0, whole.size() / 2)));  // cut short
  CHECK_THROWS(remote::parse_reply(""));
  CHECK_THROWS(remote::parse_reply("{\"score\": 3}"));
  // For Gradescope, an error is a results.json that says why.
  remote::Request gradescope;
  gradescope.format = "gradescope";
  gradescope.visibility = "hidden";
  const auto results = nlohmann::json::parse(remote::error_reply("no GPU server", gradescope));
  CHECK(results["score"] == 0.0);
  CHECK(results["tests"].empty());
  CHECK(results["visibility"] == "hidden");
  CHECK(results["output"] == "Not graded: no GPU server");
}

TEST_CASE("remote: an ssh run that brought no report ends in one line that says why") {
  cdplab::process::Result run;
  run.started = true;
  run.exit_code = 255;
  const auto line = [&](const std::string& said) {
    run.output = said;
    return remote::explain_ssh_failure(run, "gpulab");
  };
  CHECK(contains(line("ssh: Could not resolve hostname gpulab: Name or service not known\n"), "no such host: gpulab"));
  CHECK(contains(line("ada@gpulab: Permission denied (publickey).\n"), "gpulab refused your key"));
  CHECK(contains(line("Host key verification failed.\n"), "host key"));
  CHECK(contains(line("ssh: connect to host gpulab port 22: Connection refused\n"), "cannot reach gpulab"));
  CHECK(contains(line("Connection to gpulab closed by remote host.\n"), "was lost before the report came back"));
  run.exit_code = 127;
  CHECK(contains(line("bash: line 1: cdplab-check: command not found\n"), "has no forced command"));
  run.exit_code = -1;
  run.signal = 9;
  CHECK(contains(line(""), "was lost before the report came back"));
  run.signal = 0;
  run.timed_out = true;
  CHECK(contains(line(""), "remote.ssh.timeout_seconds"));
  run.timed_out = false;
  run.started = false;
  CHECK(contains(line(""), "cannot start ssh"));
  // BatchMode, keep-alives, the port, the key, then the host and the request as one word.
  remote::SshTarget target;
  target.host = "gpulab";
  target.user = "ada";
  target.port = 2222;
  target.identity_file = "/home/ada/.ssh/course";
  const auto argv = remote::ssh_command(target, "cdplab-check 1 child-grids");
  CHECK(argv.front() == "ssh");
  CHECK(std::find(argv.begin(), argv.end(), "BatchMode=yes") != argv.end());
  CHECK(argv[argv.size() - 3] == "--");
  CHECK(argv[argv.size() - 2] == "gpulab");
  CHECK(argv.back() == "cdplab-check 1 child-grids");
}

TEST_CASE("remote: a Slurm check's script and the line for a job that ended without a report") {
  remote::SlurmCheck check;
  check.job_dir = "/home/ada/cdp lab/build/student/remote/1";
  check.cdplab = "/home/ada/cdp lab/build/student/grader/cli/cdplab";
  check.target.resources.partition = "gpu";
  check.target.resources.gres = "gpu:1";
  check.target.resources.time = "10:00";
  check.target.setup = {"module load cuda/13.0"};
  check.worker_args = {"--report", (check.job_dir / "report.json").string(), "--", "child-grids"};
  const std::string script = remote::check_script(check);
  CHECK(contains(script, "#SBATCH --partition=\"gpu\"\n"));
  CHECK(contains(script, "#SBATCH --gres=\"gpu:1\"\n"));
  CHECK(contains(script, "#SBATCH --output=\"/home/ada/cdp lab/build/student/remote/1/job.out\"\n"));
  CHECK(contains(script, "\nmodule load cuda/13.0\nexec '/home/ada/cdp lab/build/student/grader/cli/cdplab' remote-check "
                         "'/home/ada/cdp lab/build/student/remote/1/submission' '--report'"));
  CHECK(contains(script, " '--' 'child-grids'\n"));
  const fs::path log = "/home/ada/job.out";
  CHECK(contains(remote::explain_job_end("12", "CANCELLED", log), "Slurm job 12 was cancelled"));
  CHECK(contains(remote::explain_job_end("12", "CANCELLED+", log), "was cancelled"));
  CHECK(contains(remote::explain_job_end("12", "TIMEOUT", log), "time limit"));
  CHECK(contains(remote::explain_job_end("12", "OUT_OF_MEMORY", log), "remote.slurm.mem"));
  CHECK(contains(remote::explain_job_end("12", "NODE_FAIL", log), "node failed"));
  CHECK(contains(remote::explain_job_end("12", "", log), "Slurm no longer knows"));
  for (const auto& [n, text] : std::vector<std::pair<int, std::string>>{
           {1, "1st"}, {2, "2nd"}, {3, "3rd"}, {4, "4th"}, {11, "11th"}, {12, "12th"}, {13, "13th"}, {21, "21st"}, {112, "112th"}})
    CHECK(remote::ordinal(n) == text);
}

TEST_CASE("remote: the Gradescope bundle holds its two scripts, the server's settings and nothing of the project") {
  remote::BundleSettings settings;
  settings.ssh.host = "gpulab.example.edu";
  settings.ssh.port = 2222;
  settings.ssh.user = "cdplab";
  settings.private_key = "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----";
  settings.known_hosts = "gpulab.example.edu ssh-ed25519 AAAA\n";
  settings.visibility = "after_published";
  settings.names = {"child-grids"};
  settings.exercises = {{"01-fundamentals", "child_grids.cu"}};
  const auto files = remote::bundle_files(settings);
  std::map<std::string, const cdplab::batch::PackedFile*> by_name;
  for (const auto& file : files) by_name[file.name] = &file;
  REQUIRE(by_name.size() == 6);
  CHECK(by_name["setup.sh"]->executable);
  CHECK(by_name["run_autograder"]->executable);
  CHECK_FALSE(by_name["grading_key"]->executable);
  CHECK(by_name["grading_key"]->contents.back() == '\n');  // ssh refuses a key without its last line end
  const std::string& values = by_name["settings.sh"]->contents;
  CHECK(contains(values, "HOST='gpulab.example.edu'\n"));
  CHECK(contains(values, "PORT='2222'\n"));
  CHECK(contains(values, "LOGIN='cdplab'\n"));
  CHECK(contains(values, "REQUEST='cdplab-check 1 --format gradescope --visibility after_published child-grids'\n"));
  CHECK(by_name["exercises.tsv"]->contents == "01-fundamentals\tchild_grids.cu\n");
  CHECK(contains(by_name["run_autograder"]->contents, "StrictHostKeyChecking=yes"));
  CHECK(contains(by_name["run_autograder"]->contents, "results=\"$root/results/results.json\""));

  CHECK(contains(values, "NAMES='child-grids'\n"));
  // With the project, under project/ (setup.sh builds it there).
  settings.project = {{"cdplab", "#!/bin/sh\n", true}, {"solutions/01-fundamentals/child_grids.cu", "// x\n", false}};
  const auto with_project = remote::bundle_files(settings);
  REQUIRE(with_project.size() == 8);
  CHECK(with_project[6].name == "project/cdplab");
  CHECK(with_project[6].executable);
  CHECK(with_project[7].name == "project/solutions/01-fundamentals/child_grids.cu");

  // Written as a zip (Gradescope's format), and read back whole with the scripts executable.
  const fs::path dir = test_dir("bundle");
  cdplab::batch::pack_archive(files, dir / "autograder.zip", /*zip=*/true);
  CHECK(cdplab::batch::unpack_archive(dir / "autograder.zip", dir / "unpacked").empty());
  CHECK(cdplab::files::read_text(dir / "unpacked" / "settings.sh") == values);
  cdplab::batch::pack_archive(files, dir / "autograder.tar");
  CHECK(cdplab::batch::unpack_archive(dir / "autograder.tar", dir / "from-tar").empty());
  CHECK(cdplab::files::read_text(dir / "from-tar" / "exercises.tsv") == "01-fundamentals\tchild_grids.cu\n");
}

TEST_CASE("remote: GPU turns shared through a lock file: shared beside shared, alone beside nobody") {
  const fs::path file = test_dir("turns") / "gpu-0.turns";
  cdplab::grading::GpuTurns mine;
  mine.set_lock_file(file);
  // What another process could take now, asked without waiting (a descriptor of its own).
  const auto could_take = [&](int operation) {
    const int fd = open(file.c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(fd >= 0);
    const bool took = flock(fd, operation | LOCK_NB) == 0;
    close(fd);
    return took;
  };
  CHECK(could_take(LOCK_EX));
  mine.share();
  CHECK(could_take(LOCK_SH));
  CHECK_FALSE(could_take(LOCK_EX));
  mine.share();  // a second turn of this process holds nothing more
  mine.end_share();
  CHECK_FALSE(could_take(LOCK_EX));
  mine.end_share();
  CHECK(could_take(LOCK_EX));
  mine.take_alone();
  CHECK_FALSE(could_take(LOCK_SH));
  mine.end_alone();
  CHECK(could_take(LOCK_EX));
  CHECK(fs::exists(file.string() + ".gate"));
}

TEST_CASE("process: stdin from a file, stdout into a file, and SIGTERM before SIGKILL") {
  const fs::path dir = test_dir("process-files");
  write_file(dir / "in.txt", "from a file\n");
  cdplab::process::Options options;
  options.stdin_file = (dir / "in.txt").string();
  options.stdout_file = (dir / "out.txt").string();
  const auto result = cdplab::process::run({"sh", "-c", "cat; echo on stderr >&2"}, options);
  CHECK(result.ok());
  CHECK(cdplab::files::read_text(dir / "out.txt") == "from a file\n");
  CHECK(result.output == "on stderr\n");  // stderr alone
  options.stdin_file = (dir / "missing.txt").string();
  CHECK_FALSE(cdplab::process::run({"true"}, options).started);

  // A program given a grace period ends its own work on SIGTERM.
  cdplab::process::Options graceful;
  graceful.timeout_seconds = 0.5;
  graceful.grace_seconds = 10;
  const fs::path marker = dir / "ended-cleanly";
  const auto stopped = cdplab::process::run(
      {"sh", "-c", "trap 'touch \"$0\"; exit 0' TERM; while :; do sleep 0.05; done", marker.string()}, graceful);
  CHECK(stopped.timed_out);
  CHECK(fs::exists(marker));
  CHECK(stopped.seconds < 10);
}

TEST_CASE("remote: CUDA_VISIBLE_DEVICES= hides every GPU from check, which says so") {
  const char* before = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string kept = before ? before : "";
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  CHECK(remote::local_gpu_problem(CDPLAB_CLI) == "CUDA_VISIBLE_DEVICES hides every GPU");
  setenv("CUDA_VISIBLE_DEVICES", "-1", 1);
  CHECK(remote::local_gpu_problem(CDPLAB_CLI) == "CUDA_VISIBLE_DEVICES hides every GPU");
  if (before) setenv("CUDA_VISIBLE_DEVICES", kept.c_str(), 1);
  else unsetenv("CUDA_VISIBLE_DEVICES");
  // The probe itself answers in one line, whatever this machine has.
  const std::string here = remote::local_gpu_problem(CDPLAB_CLI);
  CHECK(here.find('\n') == std::string::npos);
}

// A check with a remote configured asks whether this machine has a GPU twice (to go there, then
// what to skip): a probe that found one, a process that starts the driver, runs once. One that
// found none runs again (a watch outlives a GPU busy in exclusive mode).
TEST_CASE("remote: the local GPU probe runs once per process where it found a GPU, again where not") {
  const fs::path dir = test_dir("probe-once");
  const auto probe_counted = [&](const std::string& name, const std::string& body) {
    const fs::path probe = dir / name;
    std::ofstream(probe) << "#!/bin/sh\necho probed >> '" << (dir / (name + ".count")).string() << "'\n" << body;
    fs::permissions(probe, fs::perms::owner_all);
    return probe.string();
  };
  const auto count = [&](const std::string& name) {
    std::ifstream in(dir / (name + ".count"));
    int lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    return lines;
  };
  const std::string found = probe_counted("gpu-here", "exit 0\n");
  CHECK(remote::local_gpu_problem(found).empty());
  CHECK(remote::local_gpu_problem(found).empty());
  CHECK(count("gpu-here") == 1);
  const std::string none = probe_counted("no-gpu", "echo 'the fake driver finds no GPU'\nexit 1\n");
  CHECK(remote::local_gpu_problem(none) == "the fake driver finds no GPU");
  CHECK(remote::local_gpu_problem(none) == "the fake driver finds no GPU");
  CHECK(count("no-gpu") == 2);
}

TEST_CASE("remote: cdplab serve refuses what it cannot serve before it reads or grades anything") {
  const auto book = cdplab::manifest::load_workbook(kRoot);
  const fs::path dir = test_dir("serve");
  remote::ServeOptions options;
  options.student = "alice";
  options.settings.work = dir / "work";
  options.cdplab = CDPLAB_CLI;
  // serve_with INPUT REQUEST: the exit status; the reply and stderr in reply.txt and said.txt.
  const auto serve_with = [&](const std::string& input, const char* request) {
    write_file(dir / "in.bin", input);
    const int in = open((dir / "in.bin").c_str(), O_RDONLY | O_CLOEXEC);
    const int out = open((dir / "reply.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const int err = open((dir / "said.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const int status = remote::serve(options, book, request, in, out, err);
    close(in);
    close(out);
    close(err);
    return status;
  };
  const auto reply = [&] { return cdplab::files::read_text(dir / "reply.txt"); };
  CHECK(serve_with("", nullptr) == remote::kRefused);
  CHECK(contains(reply(), "no shell"));
  CHECK(serve_with("", "cdplab-check 1 no-such-exercise") == remote::kRefused);
  CHECK(contains(reply(), "no chapter or exercise named no-such-exercise"));
  CHECK(serve_with("", "cdplab-check 1 child-grids") == remote::kRefused);
  CHECK(contains(reply(), "no submission arrived"));
  options.settings.upload_bytes = 1024;
  CHECK(serve_with(std::string(4096, 'x'), "cdplab-check 1 child-grids") == remote::kRefused);
  CHECK(contains(reply(), "larger than"));
  options.settings.upload_bytes = 1 << 20;
  CHECK(serve_with("not an archive", "cdplab-check 1 child-grids") == remote::kRefused);
  CHECK(contains(reply(), "your submission was refused"));
  // Every request left a line in the log and no folder behind.
  const std::string log = cdplab::files::read_text(options.settings.work / "serve.log");
  CHECK(std::count(log.begin(), log.end(), '\n') == 5);
  CHECK(fs::is_empty(options.settings.work / "students" / "alice" / "requests"));
  // A key's line without a plain student name is the administrator's slip: nothing is read.
  for (const char* name : {"", "../bob", "a b", ".hidden"}) {
    options.student = name;
    CHECK(serve_with("", "cdplab-check 1") == remote::kMisconfigured);
  }
  CHECK(remote::plain_student_name("alice.b-2_c"));
}

TEST_CASE("remote: check refuses a remote it cannot use, in one line, before anything is sent") {
  const auto check_with = [](const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
    cdplab::process::Options options;
    options.timeout_seconds = 300;
    options.env = env;
    std::vector<std::string> argv = {CDPLAB_CLI, "check", "child-grids"};
    argv.insert(argv.end(), args.begin(), args.end());
    return cdplab::process::run(argv, options);
  };
  const auto bad = check_with({"--remote", "ftp://gpulab"});
  CHECK(bad.exit_code == 2);
  CHECK(contains(bad.output, "--remote \"ftp://gpulab\" names no remote"));
  const auto both = check_with({"--remote", "slurm", "--local"});
  CHECK(both.exit_code == 2);
  const auto from_env = check_with({}, {{"CDPLAB_REMOTE", "gpulab"}});
  CHECK(from_env.exit_code == 2);
  CHECK(contains(from_env.output, "CDPLAB_REMOTE \"gpulab\" names no remote"));
  // No such host: one line, status 2, nothing of the student's touched (ssh's own error).
  const auto nowhere = check_with({"--remote", "ssh://nobody@no-such-host.invalid"}, {{"CUDA_VISIBLE_DEVICES", ""}});
  CHECK(nowhere.exit_code == 2);
  CHECK(contains(nowhere.output, "no such host: no-such-host.invalid"));
}
