/// @file sandbox.h
/// @brief A box for untrusted programs: a command line wrapped in bubblewrap (bwrap), so that it
///        sees only the folders it is given, writes only where it may, and reaches no network.
///
/// Every box has the same base: /usr read-only (with the CUDA toolkit under /usr/local), the
/// /bin, /lib, /lib64, /sbin links or folders as the host has them, a few files of /etc (not all
/// of /etc: inside a user namespace root's files look owned by the box's user), its own /proc,
/// a minimal /dev with the NVIDIA devices, /sys read-only (the CUDA driver reads it), a private
/// /tmp, no network, no capabilities, a user of its own when the kernel allows user namespaces.
/// HOME and TMPDIR are /tmp; the rest of the environment is kept (CUDA_VISIBLE_DEVICES, the
/// grader's variables). A Box adds what one command may see: folders and files read-only or
/// writable, each at its own path, and paths hidden inside them.
///
/// What a submission's box holds is in sandbox/submission.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cdplab::sandbox {

/// What one box shows besides its base. Every path is absolute and appears at the same path in
/// the box, but for those of read_only_at and writable_at, which appear where they say.
struct Box {
  std::vector<std::string> read_only;  ///< folders and files bound read-only
  std::vector<std::string> writable;   ///< folders and files bound writable
  /// Paths inside a bound folder that the box must not show: a folder becomes an empty read-only
  /// folder, a file an empty file (/dev/null). Paths that do not exist are left out.
  std::vector<std::string> hidden;
  std::vector<std::string> devices;    ///< device files bound as they are (the GPUs: gpu_devices())
  std::string working_directory;       ///< where the command starts; empty: where the caller is
  std::string bwrap = "bwrap";         ///< the bubblewrap program (looked up in PATH)
  /// Folders shown at another path in the box (host path, path in the box): a generic name such as
  /// /build, so that a program of the box cannot learn where the grading machine keeps them.
  std::vector<std::pair<std::string, std::string>> read_only_at;
  std::vector<std::pair<std::string, std::string>> writable_at;
};

/// Where `host_path` appears in `box`: under the box path of the folder of read_only_at or
/// writable_at that holds it, or at its own path.
std::string path_in(const Box& box, const std::string& host_path);

/// Whether a box can start on this machine, and how.
struct Probe {
  bool ok = false;              ///< bwrap started a box and ran `true` in it
  bool user_namespace = false;  ///< the box runs as a user of its own (--unshare-user --uid/--gid)
  std::string problem;          ///< when not ok: why, in words, with what to do about it
};

/// Runs `bwrap ... true` once per program (with a user namespace first, then without) and
/// remembers the answer for the life of the process. Thread-safe.
const Probe& probe(const std::string& bwrap = "bwrap");

/// The bubblewrap program to use: $CDPLAB_BWRAP when set (tests name a fake one), else "bwrap".
std::string bwrap_program();

/// The user and group the box's commands run as when it has a user namespace.
constexpr int kBoxUser = 1000;

/// `argv` run inside `box`: the bwrap command line. probe(box.bwrap) must be ok (it decides
/// whether the box gets a user namespace); when it is not, the command line is still built and
/// will fail the way the probe did.
std::vector<std::string> wrap(const Box& box, const std::vector<std::string>& argv);

/// The NVIDIA device files of this machine: /dev/nvidia* (nvidiactl, nvidia-uvm, nvidia0, ...)
/// and /dev/nvidia-caps*; empty without the driver.
std::vector<std::string> gpu_devices();

/// The folder a program or package path was installed into, to bind read-only: the part before
/// its first bin/, lib/, lib64/, libexec/, share/ or include/ folder ("/opt/cuda-12.4/bin/nvcc"
/// -> "/opt/cuda-12.4", "/opt/deps/lib/cmake/doctest" -> "/opt/deps"); a path without one is
/// its own prefix when it is a folder, else its folder. Lexical: nothing is read.
std::string install_prefix(const std::string& path, bool is_directory);

/// How feedback names the grading machine's paths (scrub_paths).
struct PathNames {
  std::string submission;  ///< the submission's folder: removed, so paths are relative to it
  std::string build;       ///< the submission's build tree: "<build>"
  std::string kit;         ///< the project (the grading kit): "<kit>"
  std::string cuda;        ///< the CUDA toolkit's root: "<cuda>"
  std::string home;        ///< the home folder of the user grading: "~"
};

/// `text` with every absolute path under one of `names` rewritten: the submission's folder to
/// nothing ("/srv/class/alice/01-fundamentals/child_grids.cu:12" ->
/// "01-fundamentals/child_grids.cu:12"; the folder itself to "."), the build tree to "<build>",
/// the project to "<kit>", the CUDA toolkit to "<cuda>", the home folder to "~". The longest
/// match wins (a build tree inside the project is "<build>"), a path is matched only as a whole
/// name ("/work/main" is not found in "/work/main2"), and each name is also matched as its real
/// path when that differs (a link such as /usr/local/cuda).
std::string scrub_paths(const std::string& text, const PathNames& names);

}  // namespace cdplab::sandbox
