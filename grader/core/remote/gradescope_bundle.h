/// @file gradescope_bundle.h
/// @brief Gradescope's autograder for a CDP course whose GPUs are elsewhere: a zip with setup.sh
///        and run_autograder (Gradescope's documented layout) that sends each submission to the
///        course's GPU server over SSH, as `cdplab check` does, with a grading key of its own.
///
/// What the zip holds:
/// - `setup.sh`: installs the OpenSSH client (Gradescope's images are Ubuntu);
/// - `run_autograder`: finds the exercise files in /autograder/submission (laid out like chapters/
///   at any depth, or loose files, matched by name), packs them, runs the request over ssh and
///   writes what the server answers, Gradescope's results.json, to /autograder/results/; where no
///   answer comes, a results.json that says why;
/// - `settings.sh` (the server, its port, the login and the request), `exercises.tsv` (each
///   exercise's chapter and file), `grading_key` (the private key) and `known_hosts` (the server's
///   host key: the autograder trusts that server alone).
/// The server's authorized_keys runs `cdplab serve` for that key (docs/remote-gpu.md).
///
/// With the project in it (`project/`, for an autograder image that has an NVIDIA GPU and the CUDA
/// toolkit), setup.sh builds it, and run_autograder grades there with `cdplab grade` whenever the
/// machine shows a GPU; without one it still asks the server.
#pragma once

#include "batch/archive.h"
#include "remote/course.h"

#include <string>
#include <utility>
#include <vector>

namespace cdplab::remote {

struct BundleSettings {
  SshTarget ssh;                    ///< the course's GPU server
  std::string private_key;          ///< the grading key's private half
  std::string known_hosts;          ///< the server's host key line(s)
  std::string visibility = "visible";
  std::vector<std::string> names;   ///< the exercises graded; empty: all
  std::vector<std::pair<std::string, std::string>> exercises;  ///< (chapter, file) of each graded file
  /// The project's files (names relative to the project), to grade on the autograder's own GPU;
  /// empty: the server grades every submission.
  std::vector<batch::PackedFile> project;
};

/// The files of the zip.
std::vector<batch::PackedFile> bundle_files(const BundleSettings& settings);

/// The server's host key lines as ssh-keyscan reads them (for known_hosts); empty when none.
std::string scan_host_key(const SshTarget& ssh);

}  // namespace cdplab::remote
