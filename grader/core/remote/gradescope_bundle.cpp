#include "remote/gradescope_bundle.h"

#include "batch/slurm.h"
#include "process/process.h"
#include "remote/protocol.h"

namespace cdplab::remote {
namespace {

using batch::slurm::shell_quote;

const char* const kSetup = R"bundle(#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image: the OpenSSH client is all the
# autograder needs (the checks run on the course's GPU server). Written by `cdplab gradescope`.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
here="$(cd "$(dirname "$0")" && pwd)"
packages=(openssh-client ca-certificates)
# With the project: what it builds with (the image must bring the CUDA toolkit, nvcc on the PATH).
if [ -d "$here/project" ]; then
  # (toml++ is fetched by the project's CMake where the image has no package of it.)
  packages+=(cmake ninja-build g++ doctest-dev libcli11-dev nlohmann-json3-dev libarchive-dev bubblewrap)
fi
apt-get update -q
apt-get install -y -q --no-install-recommends "${packages[@]}"
if [ -d "$here/project" ]; then
  if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
  cd "$here/project"
  ./cdplab --help > /dev/null                               # builds the tool (build/student)
  cmake --build build/student --target cdplab_grading_kit   # the grader every submission links
fi
)bundle";

const char* const kRunAutograder = R"bundle(#!/usr/bin/env bash
# Gradescope runs this for each submission. It finds the exercise files in the submission, sends
# them to the course's GPU server over SSH (the server runs `cdplab serve` for this key), and writes
# the server's answer, Gradescope's results.json, into results/. Written by `cdplab gradescope`;
# AUTOGRADER_ROOT moves the whole layout (default /autograder), for a trial run outside Gradescope.
set -uo pipefail
root="${AUTOGRADER_ROOT:-/autograder}"
source_dir="$root/source"
submission="$root/submission"
results="$root/results/results.json"
mkdir -p "$root/results"
# shellcheck source=/dev/null
. "$source_dir/settings.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# not_graded MESSAGE: a results.json that says why nothing was graded (and the same on stderr).
not_graded() {
  local escaped
  escaped="$(printf '%s' "$1" | tr '\n\r\t' '   ' | tr -d '\000-\037' | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')"
  printf '{"score": 0, "output": "Not graded: %s", "output_format": "text", "visibility": "%s", "tests": []}\n' \
    "$escaped" "$VISIBILITY" > "$results"
  echo "cdplab autograder: $1" >&2
  exit 0
}

# Each exercise file: at <chapter>/<file> anywhere in the submission, else a file of that name
# (one only: two of them is ambiguous, and neither is taken).
staging="$work/submission"
mkdir -p "$staging"
found_any=0
while IFS=$'\t' read -r chapter file; do
  [ -n "$chapter" ] || continue
  match="$(find "$submission" -type f -path "*/$chapter/$file" -print 2>/dev/null | head -n 1)"
  if [ -z "$match" ]; then
    matches="$(find "$submission" -type f -name "$file" -print 2>/dev/null)"
    if [ -n "$matches" ] && [ "$(printf '%s\n' "$matches" | wc -l)" = 1 ]; then match="$matches"; fi
  fi
  mkdir -p "$staging/$chapter"
  if [ -n "$match" ]; then
    cp -- "$match" "$staging/$chapter/$file"
    found_any=1
  fi
done < "$source_dir/exercises.tsv"
[ "$found_any" = 1 ] || not_graded "no exercise file was found in the submission (upload your .cu files, or a zip of your chapters folder)"
(cd "$staging" && tar -cf "$work/submission.tar" -- *) || not_graded "the submission could not be packed"

# A GPU here and the project built by setup.sh: grade here, only in the box (the bundle carries the
# solutions and the grading key, which a student's host code must not reach); where the container
# cannot start the box, the server grades. (CDPLAB_AUTOGRADER_LOCAL=1 and CDPLAB_AUTOGRADER_CDPLAB=
# <cdplab> try this way without a GPU.)
cdplab="${CDPLAB_AUTOGRADER_CDPLAB:-$source_dir/project/build/student/grader/cli/cdplab}"
gpus="$(nvidia-smi -L 2>/dev/null || true)"
if [ -x "$cdplab" ] && { [ "${CDPLAB_AUTOGRADER_LOCAL:-0}" = 1 ] || [[ "$gpus" == GPU* ]]; } &&
   bwrap --ro-bind / / true 2>/dev/null; then
  if [ -d /usr/local/cuda/bin ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
  only=()
  for name in $NAMES; do only+=(--only "$name"); done
  "$cdplab" grade "$staging" ${only[@]+"${only[@]}"} --format gradescope --output "$results" \
    --gradescope-visibility "$VISIBILITY" --build-dir "$work/build" -q > /dev/null ||
    [ -s "$results" ] || not_graded "the autograder could not grade here (cdplab grade failed); tell your instructor"
  exit 0
fi

# ssh refuses a private key that others may read.
install -m 600 "$source_dir/grading_key" "$work/key"
port_args=()
[ -z "$PORT" ] || port_args=(-p "$PORT")
login_args=()
[ -z "$LOGIN" ] || login_args=(-l "$LOGIN")
ssh -T -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$source_dir/known_hosts" \
  -o IdentitiesOnly=yes -i "$work/key" -o ConnectTimeout=30 -o ServerAliveInterval=15 -o ServerAliveCountMax=4 \
  ${port_args[@]+"${port_args[@]}"} ${login_args[@]+"${login_args[@]}"} -- "$HOST" "$REQUEST" \
  < "$work/submission.tar" > "$work/results.json" 2> "$work/ssh.err"
status=$?
cat "$work/ssh.err" >&2
# The server answers with a results.json, an error's too; anything else is no answer.
if grep -q '"tests"' "$work/results.json" 2>/dev/null && [ "$(tail -c 2 "$work/results.json" | tr -d '\n ')" = "}" ]; then
  cp "$work/results.json" "$results"
  exit 0
fi
not_graded "the course's GPU server ($HOST) gave no answer (ssh exit status $status: $(tail -n 1 "$work/ssh.err")). Submit again later; if this stays, tell your instructor"
)bundle";

}  // namespace

std::vector<batch::PackedFile> bundle_files(const BundleSettings& settings) {
  Request request;
  request.format = "gradescope";
  request.visibility = settings.visibility;
  request.names = settings.names;
  std::string values = "# The course's GPU server and what the autograder asks of it. Written by `cdplab gradescope`.\n";
  values += "HOST=" + shell_quote(settings.ssh.host) + "\n";
  values += "PORT=" + shell_quote(settings.ssh.port > 0 ? std::to_string(settings.ssh.port) : "") + "\n";
  values += "LOGIN=" + shell_quote(settings.ssh.user) + "\n";
  values += "REQUEST=" + shell_quote(request_line(request)) + "\n";
  values += "VISIBILITY=" + shell_quote(settings.visibility) + "\n";
  std::string names;
  for (const auto& name : settings.names) names += (names.empty() ? "" : " ") + name;
  values += "NAMES=" + shell_quote(names) + "\n";
  std::string table;
  for (const auto& [chapter, file] : settings.exercises) table += chapter + "\t" + file + "\n";
  std::string key = settings.private_key;
  if (!key.empty() && key.back() != '\n') key += "\n";
  std::vector<batch::PackedFile> files = {
      {"setup.sh", kSetup, true},
      {"run_autograder", kRunAutograder, true},
      {"settings.sh", values, false},
      {"exercises.tsv", table, false},
      {"grading_key", key, false},
      {"known_hosts", settings.known_hosts, false},
  };
  for (const auto& file : settings.project) files.push_back({"project/" + file.name, file.contents, file.executable});
  return files;
}

std::string scan_host_key(const SshTarget& ssh) {
  std::vector<std::string> argv = {"ssh-keyscan", "-T", "10"};
  if (ssh.port > 0) argv.insert(argv.end(), {"-p", std::to_string(ssh.port)});
  argv.push_back(ssh.host);
  process::Options options;
  options.timeout_seconds = 30;
  const auto result = process::run(argv, options);
  std::string keys;
  std::size_t start = 0;
  while (start < result.output.size()) {
    const auto end = result.output.find('\n', start);
    const std::string line = result.output.substr(start, end == std::string::npos ? std::string::npos : end - start);
    // ssh-keyscan's comments and errors go to stderr, mixed in here: keep the key lines only
    // ("host ssh-ed25519 AAAA...", "host ecdsa-sha2-nistp256 AAAA...").
    const auto blank = line.find(' ');
    const std::string type = blank == std::string::npos ? "" : line.substr(blank + 1, line.find(' ', blank + 1) - blank - 1);
    const bool key_type = type.rfind("ssh-", 0) == 0 || type.rfind("ecdsa-", 0) == 0 || type.rfind("sk-", 0) == 0;
    if (!line.empty() && line[0] != '#' && key_type) keys += line + "\n";
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return keys;
}

}  // namespace cdplab::remote
