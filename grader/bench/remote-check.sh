#!/usr/bin/env bash
# What a check sent to the course's GPU server adds to a local one, on this machine: the same
# files checked three ways, one after the other (whole calls of cdplab, copies and the report's
# way back included), and whether every verdict agrees with the local check's:
#   local   `cdplab check`, this cdplab's warm tree;
#   pipe    the server's own command (`cdplab serve`) fed the tar archive on standard input, as
#           sshd feeds it (a fresh tree per request: the server's way);
#   ssh     `cdplab check --remote ssh://...` on a machine that shows no GPU (CUDA_VISIBLE_DEVICES=)
#           through an OpenSSH server on localhost whose key runs `cdplab serve` (start-sshd.sh).
# Prints a Markdown table with the device's name. The files are the exercise folder of the
# cdplab's tree (the reference solutions for build/test).
#
# Usage: grader/bench/remote-check.sh [NAMES...]   (default: every exercise)
# CDPLAB_SPEED_BUILD=<build tree> picks the cdplab (default build/test). Writes below build/remote-check/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build="${CDPLAB_SPEED_BUILD:-$root/build/test}"
cli="$build/grader/cli/cdplab"
[ -x "$cli" ] || { echo "no cdplab in $build: build it first" >&2; exit 2; }
work="$root/build/remote-check"
rm -rf "$work"
mkdir -p "$work/serve"
names=("$@")
exercises="$(sed -n 's/.*"exercise_dir": "\(.*\)".*/\1/p' "$build/cdplab-index.json")"

seconds_of() {  # seconds_of COMMAND...: runs it, prints its wall time
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null 2>&1 || true
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }'
}
# verdicts REPORT: each item's exercise, name and outcome, one line each (from a report or a reply).
verdicts() {
  python3 - "$1" <<'PYTHON'
import json, sys
r = json.load(open(sys.argv[1]))
r = r.get("report", r)
for e in r["exercises"]:
    for i in e["items"]:
        print(e["id"], "|", i["name"], "|", i["outcome"])
PYTHON
}

"$cli" check "${names[@]}" -q > /dev/null 2>&1 || true  # warm: this tree built
local_s=$(seconds_of "$cli" check "${names[@]}" -q --local --format json --output "$work/local.json")
device="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['device'] or 'no GPU')" "$work/local.json")"

(cd "$exercises" && tar -cf "$work/submission.tar" -- */*.cu */*.toml 2>/dev/null || true)
request="cdplab-check 1 --seed 20260101${names[*]:+ ${names[*]}}"
pipe_run() { SSH_ORIGINAL_COMMAND="$request" "$cli" serve --student bench --work "$work/serve" < "$work/submission.tar" > "$work/pipe.json"; }
pipe_s=$(seconds_of pipe_run)

ssh_s="-"
ssh_same="-"
if "$root/grader/tests/remote/start-sshd.sh" "$work/sshd" > /dev/null 2>&1; then
  trap 'kill "$(cat "$work/sshd/sshd.pid")" 2>/dev/null || true' EXIT
  ssh-keygen -q -t ed25519 -N "" -f "$work/sshd/keys/bench" -C bench
  printf 'restrict,command="env PATH=%s %s serve --student bench-ssh --work %s" %s\n' \
    "$PATH" "$cli" "$work/serve" "$(cat "$work/sshd/keys/bench.pub")" > "$work/sshd/authorized_keys"
  ssh_run() {
    CUDA_VISIBLE_DEVICES="" CDPLAB_SSH="$work/sshd/ssh-wrapper" TEST_KEY=bench "$cli" check "${names[@]}" -q \
      --remote "ssh://$(id -un)@127.0.0.1:$(cat "$work/sshd/port")" --format json --output "$work/ssh.json"
  }
  ssh_s=$(seconds_of ssh_run)
  if [ -s "$work/ssh.json" ] && [ "$(verdicts "$work/local.json")" = "$(verdicts "$work/ssh.json")" ]; then ssh_same=yes
  else ssh_same=no; fi
fi
if [ -s "$work/pipe.json" ] && [ "$(verdicts "$work/local.json")" = "$(verdicts "$work/pipe.json")" ]; then pipe_same=yes
else pipe_same=no; fi

echo "Remote checks against a local one on $device, $(nproc) cores, $(date -u +%Y-%m-%d) (${names[*]:-every exercise})"
echo
echo "| way | seconds (the whole call) | added to local | every verdict as local |"
echo "| --- | --- | --- | --- |"
echo "| local \`cdplab check\` (warm tree) | $local_s | - | - |"
echo "| \`cdplab serve\` fed on stdin (fresh tree) | $pipe_s | $(awk -v a="$pipe_s" -v b="$local_s" 'BEGIN { printf "%+.1f", a - b }') | $pipe_same |"
if [ "$ssh_s" != "-" ]; then
  echo "| \`cdplab check --remote ssh://localhost\` | $ssh_s | $(awk -v a="$ssh_s" -v b="$local_s" 'BEGIN { printf "%+.1f", a - b }') | $ssh_same |"
else
  echo "| over SSH | not measured: no OpenSSH server here | - | - |"
fi
