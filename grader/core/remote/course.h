/// @file course.h
/// @brief What a course gives its students beyond the workbook, read from `course.toml` at the
///        project's (and the release's) top: where the GPU checks run when a student's machine has
///        none (a Slurm cluster, or a lab GPU server reached over SSH), what to tell a student who
///        has neither, and how the course's GPU server serves checks (`cdplab serve`).
///
/// A student overrides the course's remote with `cdplab check --remote SPEC` or the environment
/// variable CDPLAB_REMOTE (the option first), and keeps everything on this machine with
/// `--local`. SPEC is `none`, `slurm`, `ssh` (the course's settings of that kind) or
/// `ssh://[user@]host[:port]`. docs/remote-gpu.md describes every setting.
#pragma once

#include "batch/slurm.h"

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace cdplab::remote {

/// A course.toml that cannot be used, or a remote spec that names no remote; the message names
/// the file or the option and the setting.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Kind { none, ssh, slurm };

/// A lab GPU server whose `authorized_keys` runs `cdplab serve` for the student's key.
struct SshTarget {
  std::string host;
  std::string user;                   ///< empty: ssh's own choice (~/.ssh/config, the login name)
  int port = 0;                       ///< 0: ssh's own choice
  std::string identity_file;          ///< empty: ssh's own keys
  std::vector<std::string> options;   ///< more ssh arguments ("-o", "ConnectTimeout=10")
  double timeout_seconds = 1800;      ///< how long the client waits for the report
  std::string program = "ssh";        ///< the ssh client
};

/// A Slurm cluster whose login node shares its file system with the GPU nodes.
struct SlurmTarget {
  batch::slurm::Resources resources;  ///< each check job's #SBATCH lines
  std::vector<std::string> setup;     ///< shell lines the job runs first ("module load cuda/13.0")
};

/// Where `cdplab check` sends the work when this machine has no usable GPU.
struct Remote {
  Kind kind = Kind::none;
  SshTarget ssh;
  SlurmTarget slurm;
  std::string origin;  ///< where it was set: "course.toml", "--remote", "CDPLAB_REMOTE"; empty: nowhere
};

/// How the course's GPU server serves checks (`cdplab serve`; the key's line may override each).
struct ServeSettings {
  std::filesystem::path work;        ///< every student's folder below it; empty: <project>/build/serve
  double time_limit_seconds = 900;   ///< one check, from its unpacking to its report
  int per_student = 1;               ///< checks of one student graded at once
  int queue_per_student = 3;         ///< checks of one student waiting at once; more are refused
  int gpus = 1;                      ///< GPUs the checks run on (CUDA_VISIBLE_DEVICES 0..gpus-1)
  int share_gpu = 2;                 ///< checks that share one GPU, as `cdplab grade --share-gpu`
  std::uint64_t upload_bytes = std::uint64_t{16} << 20;  ///< the largest submission received
};

struct Course {
  std::string name;      ///< the course's name, shown in messages
  std::string gpu_help;  ///< what a student without a GPU and without a remote is told to do
  Remote remote;
  ServeSettings serve;
};

/// Reads course.toml; a missing file is a course without a remote. Throws ConfigError.
Course read_course(const std::filesystem::path& file);

/// The remote a SPEC names (see the file comment), the course's settings filling in what it
/// leaves out. Throws ConfigError.
Remote parse_remote_spec(const std::string& spec, const Course& course, const std::string& origin);

/// The remote in force: `option` (--remote) if given, else `env` (CDPLAB_REMOTE) if set and not
/// empty, else the course's.
Remote choose_remote(const Course& course, const std::string& option, const char* env);

/// One line naming a remote: "ssh gpulab.example.edu (course.toml)", "Slurm, partition gpu (--remote)".
std::string describe(const Remote& remote);

}  // namespace cdplab::remote
