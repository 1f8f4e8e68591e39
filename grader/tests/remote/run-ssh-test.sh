#!/usr/bin/env bash
# End to end: checks sent to the course's GPU server over SSH (docs/remote-gpu.md), against a real
# OpenSSH server on localhost whose authorized_keys runs `cdplab serve` for each key (a forced
# command), and the Gradescope autograder that reaches the same server.
#
# What it tries: a student's check through `cdplab check --remote` and through CDPLAB_REMOTE when
# the machine shows no GPU (the remote's skipped checks stay skipped without a GPU, and its report
# says where it ran); a right and a wrong answer sent straight over ssh; a refused key; a key whose
# line has no forced command; a login asking for a shell or another program; archives that reach
# for another student's folder (a `..` member, an absolute member, a link, an #include of its
# path); a request past the server's time limit; one student's flood of requests; a connection cut
# halfway (the server stops that grading and frees its turn); the Gradescope bundle run as
# Gradescope runs it, in a box that shows no project (or, without bubblewrap, a folder), once with
# the server and once without.
#
# Usage: run-ssh-test.sh CDPLAB PROJECT_ROOT WORK_DIR
# Exit status: 0 passed, 1 failed, 77 skipped (no OpenSSH server or client here).
set -euo pipefail

if [ $# -ne 3 ]; then
  echo "usage: $0 CDPLAB PROJECT_ROOT WORK_DIR" >&2
  exit 2
fi
cdplab="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
root="$2"
work="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
started=$SECONDS

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skipped: $*" >&2; exit 77; }
# expect_in FILE TEXT: FILE holds TEXT.
# Messages wrap at 100 columns: the file is read as one line, its runs of blanks as one.
expect_in() {
  tr '\n' ' ' < "$1" | tr -s ' ' | grep -qF -- "$2" || fail "$1 does not say '$2'; it holds:$(printf '\n'; cat "$1")"
}
expect_not_in() { ! grep -qF -- "$2" "$1" || fail "$1 says '$2'; it holds:$(printf '\n'; cat "$1")"; }

[ -x "$cdplab" ] || fail "no cdplab at $cdplab"
command -v python3 >/dev/null 2>&1 || skip "no python3 (it reads the JSON replies)"

rm -rf "$work"
mkdir -p "$work/serve"
me="$(id -un)"

# --- the server: sshd on a free port of 127.0.0.1 (start-sshd.sh), a forced command per key ------
status=0
"$here/start-sshd.sh" "$work" || status=$?
[ "$status" != 77 ] || exit 77
[ "$status" = 0 ] || fail "sshd did not start"
cleanup() {
  if [ -f "$work/sshd.pid" ]; then kill "$(cat "$work/sshd.pid")" 2>/dev/null || true; fi
}
trap cleanup EXIT
port="$(cat "$work/port")"
for key in alice bob slowpoke flood nokey_line stranger grading; do
  ssh-keygen -q -t ed25519 -N "" -f "$work/keys/$key" -C "$key"
done
# A forced command runs with sshd's own small environment: the toolchain's folders are named.
serve_line() {  # serve_line KEY STUDENT [more serve options]
  local key="$1" student="$2"
  shift 2
  printf 'restrict,command="env PATH=%s %s serve --student %s --work %s %s" %s\n' \
    "$PATH" "$cdplab" "$student" "$work/serve" "$*" "$(cat "$work/keys/$key.pub")"
}
{
  serve_line alice alice
  serve_line bob bob
  serve_line slowpoke slowpoke --time-limit 10
  serve_line flood flood --queue-per-student 1
  serve_line grading gradescope --fresh-seeds --per-student 2 --queue-per-student 100
  # A key whose line has no forced command (an administrator's slip): it gets a shell.
  printf 'restrict %s\n' "$(cat "$work/keys/nokey_line.pub")"
} > "$work/authorized_keys"

# ssh_as KEY [ARGS...]: ssh to the server with KEY.
ssh_as() {
  local key="$1"
  shift
  ssh -T -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$work/known_hosts" -o IdentitiesOnly=yes \
    -i "$work/keys/$key" -p "$port" -l "$me" 127.0.0.1 "$@"
}
remote="ssh://$me@127.0.0.1:$port"

# pack DIR TAR: DIR's contents as a tar archive.
pack() { (cd "$1" && tar -cf "$2" -- *); }
solution="$root/solutions/01-fundamentals/child_grids.cu"
starter="$root/chapters/01-fundamentals/child_grids.cu"
mkdir -p "$work/right/01-fundamentals" "$work/wrong/01-fundamentals"
cp "$solution" "$work/right/01-fundamentals/"
cp "$starter" "$work/wrong/01-fundamentals/"
pack "$work/right" "$work/right.tar"
pack "$work/wrong" "$work/wrong.tar"

# points REPLY: the points of a reply's report (its summary's, the last "points" in key order).
points() { grep -o '"points": [0-9.]*' "$1" | tail -n 1 | sed 's/.*: //'; }

# --- 1. a right and a wrong answer, straight over ssh ---------------------------------------------
echo "[$((SECONDS - started)) s] 1. a right and a wrong answer, straight over ssh"
ssh_as alice cdplab-check 1 child-grids < "$work/right.tar" > "$work/right.reply" 2> "$work/right.err" ||
  fail "alice's check failed: $(cat "$work/right.err")"
ssh_as bob cdplab-check 1 child-grids < "$work/wrong.tar" > "$work/wrong.reply" 2> "$work/wrong.err" ||
  fail "bob's check failed: $(cat "$work/wrong.err")"
for reply in right wrong; do
  expect_in "$work/$reply.reply" '"cdplab_remote": 1'
  expect_in "$work/$reply.reply" ', over SSH"'
done
right_points="$(points "$work/right.reply")"
wrong_points="$(points "$work/wrong.reply")"
awk -v r="$right_points" -v w="$wrong_points" 'BEGIN { exit !(r > w) }' ||
  fail "the right answer ($right_points points) does not beat the starter ($wrong_points)"
expect_in "$work/right.err" "child_grids.cu"  # the server's progress lines come back on stderr
[ -f "$work/serve/students/alice/last-report.json" ] || fail "alice's folder keeps no report"
[ -f "$work/serve/students/bob/last-report.json" ] || fail "bob's folder keeps no report"
[ -z "$(ls -A "$work/serve/students/alice/requests")" ] || fail "alice's request folder was not removed"
if ! grep -q '"device": ""' "$work/right.reply"; then gpu=1; else gpu=0; fi
if [ "$gpu" = 0 ]; then
  expect_in "$work/right.reply" '"outcome": "skipped"'  # no GPU on the server: skipped, never passed
  expect_not_in "$work/right.reply" '"complete": true'
fi

# --- 2. the client: cdplab check on a machine without a GPU --------------------------------------
echo "[$((SECONDS - started)) s] 2. the client: cdplab check on a machine without a GPU"
# This build checks solutions/ (its exercise folder), as a student's checks chapters/.
status=0
CUDA_VISIBLE_DEVICES="" CDPLAB_SSH="$work/ssh-wrapper" TEST_KEY=alice \
  "$cdplab" check child-grids --remote "$remote" --format json --output "$work/client.json" \
  > "$work/client.out" 2> "$work/client.err" || status=$?
cat "$work/client.err" "$work/client.out"
expect_in "$work/client.err" "checking on ssh $me@127.0.0.1:$port (--remote)"
expect_in "$work/client.out" "ran on: "
expect_in "$work/client.json" ', over SSH"'
if [ "$gpu" = 0 ]; then
  [ "$status" = 3 ] || fail "a remote check without a GPU exited $status, expected 3 (incomplete)"
  expect_in "$work/client.out" "skipped"
else
  [ "$status" = 0 ] || fail "a remote check of the reference on a GPU exited $status, expected 0"
  expect_in "$work/client.out" "device: "
fi
# The same through CDPLAB_REMOTE, when the GPU probe finds none.
status=0
CUDA_VISIBLE_DEVICES="" CDPLAB_REMOTE="$remote" CDPLAB_SSH="$work/ssh-wrapper" TEST_KEY=alice \
  "$cdplab" check child-grids > "$work/env.out" 2> "$work/env.err" || status=$?
expect_in "$work/env.err" "no usable GPU here (CUDA_VISIBLE_DEVICES hides every GPU); checking on ssh $me@127.0.0.1:$port (CDPLAB_REMOTE)"
expect_in "$work/env.out" "ran on: "
# --local keeps it here: no line about a remote.
CUDA_VISIBLE_DEVICES="" CDPLAB_REMOTE="$remote" "$cdplab" check child-grids --local > /dev/null 2> "$work/local.err" || true
expect_not_in "$work/local.err" "checking on"

# --- 3. keys the server does not run cdplab for -----------------------------------------------------
echo "[$((SECONDS - started)) s] 3. keys the server does not run cdplab for"
status=0
CUDA_VISIBLE_DEVICES="" CDPLAB_SSH="$work/ssh-wrapper" TEST_KEY=stranger \
  "$cdplab" check child-grids --remote "$remote" > "$work/stranger.out" 2> "$work/stranger.err" || status=$?
[ "$status" = 2 ] || fail "a refused key: cdplab exited $status, expected 2"
expect_in "$work/stranger.err" "refused your key"
status=0
CUDA_VISIBLE_DEVICES="" CDPLAB_SSH="$work/ssh-wrapper" TEST_KEY=nokey_line \
  "$cdplab" check child-grids --remote "$remote" > "$work/nocmd.out" 2> "$work/nocmd.err" || status=$?
[ "$status" = 2 ] || fail "a key without a forced command: cdplab exited $status, expected 2"
expect_in "$work/nocmd.err" "has no forced command"

# --- 4. no shell, no other program, no other student's folder -------------------------------------
echo "[$((SECONDS - started)) s] 4. no shell, no other program, no other student's folder"
ssh_as bob < /dev/null > "$work/shell.reply" 2> "$work/shell.err" && fail "a login without a command was served"
expect_in "$work/shell.reply" "runs cdplab checks only"
ssh_as bob cat /etc/passwd < /dev/null > "$work/cat.reply" 2> /dev/null && fail "another program was run"
expect_in "$work/cat.reply" "runs cdplab checks only"
expect_not_in "$work/cat.reply" "root:"
ssh_as bob cdplab-check 1 --student alice < "$work/right.tar" > "$work/name.reply" 2> /dev/null && fail "--student was taken"
expect_in "$work/name.reply" "unknown option --student"
ssh_as bob 'cdplab-check 1 child-grids;id' < "$work/right.tar" > "$work/semicolon.reply" 2> /dev/null &&
  fail "a request with a ';' was served"
expect_in "$work/semicolon.reply" "letters, digits"
alice_report="$work/serve/students/alice/last-report.json"
# Archives that reach for alice's folder, made by hand (tar itself would not write them).
python3 - "$work" "$alice_report" <<'PYTHON'
import io, sys, tarfile
work, target = sys.argv[1], sys.argv[2]
def archive(name, members):
    with tarfile.open(f"{work}/{name}.tar", "w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
def file(path, data=b"// x\n"):
    info = tarfile.TarInfo(path); info.size = len(data); return info, data
def link(path, to):
    info = tarfile.TarInfo(path); info.type = tarfile.SYMTYPE; info.linkname = to; return info, None
archive("dotdot", [file("../alice/01-fundamentals/child_grids.cu")])
archive("absolute", [file(target)])
archive("symlink", [link("01-fundamentals/child_grids.cu", target)])
PYTHON
for attack in dotdot absolute symlink; do
  ssh_as bob cdplab-check 1 child-grids < "$work/$attack.tar" > "$work/$attack.reply" 2> /dev/null &&
    fail "the $attack archive was graded"
  expect_in "$work/$attack.reply" "your submission was refused"
done
mkdir -p "$work/include/01-fundamentals"
{ printf '#include "%s"\n' "$alice_report"; cat "$solution"; } > "$work/include/01-fundamentals/child_grids.cu"
pack "$work/include" "$work/include.tar"
ssh_as bob cdplab-check 1 child-grids < "$work/include.tar" > "$work/include.reply" 2> /dev/null ||
  fail "the server gave no report for a file that includes another student's"
expect_in "$work/include.reply" "not graded"
expect_not_in "$work/include.reply" "students/alice/requests"  # nothing of alice's report came back
awk -v p="$(points "$work/include.reply")" 'BEGIN { exit !(p == 0) }' || fail "a file including another student's scored"

# --- 5. the time limit ---------------------------------------------------------------------------
echo "[$((SECONDS - started)) s] 5. the time limit"
status=0
CUDA_VISIBLE_DEVICES="" CDPLAB_SSH="$work/ssh-wrapper" TEST_KEY=slowpoke \
  "$cdplab" check --remote "$remote" > "$work/slow.out" 2> "$work/slow.err" || status=$?
[ "$status" = 2 ] || fail "a check past the time limit: cdplab exited $status, expected 2"
expect_in "$work/slow.err" "stopped after 10 s"
expect_in "$work/serve/serve.log" "slowpoke"
grep -F "slowpoke" "$work/serve/serve.log" | grep -qF "stopped after 10 s" || fail "the server's log has no time-limit line"

# --- 6. one student's flood: at most one waits, the next is refused at once ------------------------
echo "[$((SECONDS - started)) s] 6. one student's flood: at most one waits, the next is refused at once"
# The student's one slot held from outside, as a check that runs would hold it.
flood_dir="$work/serve/students/flood"
mkdir -p "$flood_dir"
flock -o "$flood_dir/slot-0.lock" sleep 600 > /dev/null 2>&1 &  # -o: the lock is flock's own
holder=$!
for _ in $(seq 100); do flock -n "$flood_dir/slot-0.lock" true 2>/dev/null || break; sleep 0.1; done
( ssh_as flood cdplab-check 1 child-grids < "$work/right.tar" > "$work/flood1.reply" 2>/dev/null || true ) &
flood1=$!
for _ in $(seq 300); do [ -n "$(ls -A "$flood_dir/waiting" 2>/dev/null)" ] && break; sleep 0.1; done
[ -n "$(ls -A "$flood_dir/waiting" 2>/dev/null)" ] || fail "a student's second check does not wait for the first"
ssh_as flood cdplab-check 1 child-grids < "$work/right.tar" > "$work/flood2.reply" 2>/dev/null &&
  fail "a check past the student's queue was served"
expect_in "$work/flood2.reply" "checks waiting on this server already"
# Meanwhile another student is served.
ssh_as bob cdplab-check 1 child-grids < "$work/right.tar" > "$work/bob-again.reply" 2> /dev/null ||
  fail "bob waited behind another student's flood"
pkill -P "$holder" sleep 2>/dev/null || true
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
wait "$flood1"
expect_in "$work/flood1.reply" '"report"'  # the one that waited is served once the slot is free

# --- 7. a connection cut halfway -------------------------------------------------------------------
echo "[$((SECONDS - started)) s] 7. a connection cut halfway"
rm -f "$work/ssh-alice.pid"
CUDA_VISIBLE_DEVICES="" CDPLAB_SSH="$work/ssh-wrapper" TEST_KEY=alice \
  "$cdplab" check --remote "$remote" > "$work/cut.out" 2> "$work/cut.err" &
client=$!
requests="$work/serve/students/alice/requests"
for _ in $(seq 600); do [ -d "$requests" ] && [ -n "$(find "$requests" -maxdepth 2 -name tree -print -quit)" ] && break; sleep 0.1; done
[ -n "$(find "$requests" -maxdepth 2 -name tree -print -quit)" ] || fail "alice's long check never started to grade"
kill -9 "$(cat "$work/ssh-alice.pid")"
status=0
wait "$client" || status=$?
[ "$status" = 2 ] || fail "a cut connection: cdplab exited $status, expected 2"
expect_in "$work/cut.err" "was lost before the report came back"
expect_in "$work/cut.err" "nothing of yours was changed"
for _ in $(seq 300); do [ -z "$(ls -A "$requests")" ] && break; sleep 0.1; done
[ -z "$(ls -A "$requests")" ] || fail "the server did not stop the grading of a client gone away"
grep -F "alice" "$work/serve/serve.log" | grep -qF "the client went away" || fail "the server's log has no line for the cut"
if pgrep -f "remote-check $work/serve/students/alice" > /dev/null 2>&1; then fail "the cut check's grading still runs"; fi

# --- 8. Gradescope's autograder, run as Gradescope runs it ------------------------------------------
echo "[$((SECONDS - started)) s] 8. Gradescope's autograder, run as Gradescope runs it"
"$cdplab" gradescope "$work/autograder.zip" --key "$work/keys/grading" --known-hosts "$work/known_hosts" \
  --remote "$remote" --only child-grids > "$work/bundle.out"
expect_in "$work/bundle.out" "wrote the Gradescope autograder"
# run_gradescope ROOT: unzips the bundle into ROOT/source and runs run_autograder there, in a box
# that shows the system and ROOT at /autograder alone (no project, no cdplab), else in ROOT.
run_gradescope() {
  local ag="$1"
  mkdir -p "$ag/source" "$ag/results"
  (cd "$ag/source" && cmake -E tar xf "$work/autograder.zip")
  [ -x "$ag/source/run_autograder" ] && [ -x "$ag/source/setup.sh" ] || fail "the bundle's scripts are not executable"
  local box ssh_dir
  box="$(command -v bwrap || true)"
  ssh_dir="$(dirname "$(command -v ssh)")"
  # The box shows /usr alone: where ssh lies elsewhere, the folder stands in for it.
  if [ -n "$box" ] && [ "$ssh_dir" = /usr/bin ] && "$box" --ro-bind / / true 2>/dev/null; then
    env -i PATH=/usr/bin:/bin HOME=/tmp "$box" --ro-bind /usr /usr --ro-bind /etc /etc --symlink usr/bin /bin \
      --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/sbin /sbin --bind "$ag" /autograder \
      --dev /dev --proc /proc --tmpfs /tmp --chdir /autograder bash /autograder/source/run_autograder
  else
    env -i PATH="$ssh_dir:/usr/bin:/bin" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" HOME=/tmp AUTOGRADER_ROOT="$ag" \
      bash "$ag/source/run_autograder"
  fi
}
ag="$work/gradescope"
mkdir -p "$ag/submission/nested"
cp "$solution" "$ag/submission/nested/child_grids.cu"  # a loose file, matched by its name
run_gradescope "$ag" 2> "$work/gradescope.err" || fail "run_autograder failed: $(cat "$work/gradescope.err")"
results="$ag/results/results.json"
[ -s "$results" ] || fail "no results.json"
python3 - "$results" "$gpu" <<'PYTHON' || fail "results.json is not what Gradescope reads: $(cat "$results")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["score"] > 0, r["score"]
assert isinstance(r["execution_time"], int)
assert r["visibility"] == "visible"
assert r["tests"] and all({"name", "score", "max_score", "status"} <= set(t) for t in r["tests"])
assert "over SSH" in r["output"], r["output"]
if sys.argv[2] == "0":
    assert any("skipped" in t["output"] for t in r["tests"])
PYTHON
# The server down: a results.json that says why, not a failed autograder.
kill "$(cat "$work/sshd.pid")"
rm -f "$work/sshd.pid"
ag="$work/gradescope-down"
mkdir -p "$ag/submission"
cp "$solution" "$ag/submission/"
run_gradescope "$ag" 2> /dev/null || fail "run_autograder failed with the server down"
python3 - "$ag/results/results.json" <<'PYTHON' || fail "no valid results.json with the server down"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["score"] == 0 and r["tests"] == [] and "Not graded" in r["output"], r
PYTHON

# An autograder with a GPU and the project grades there instead (tried here without a GPU, the
# test's cdplab standing in for the one setup.sh builds).
ag="$work/gradescope-local"
mkdir -p "$ag/source" "$ag/results" "$ag/submission/chapters/01-fundamentals"
(cd "$ag/source" && cmake -E tar xf "$work/autograder.zip")
cp "$solution" "$ag/submission/chapters/01-fundamentals/"
AUTOGRADER_ROOT="$ag" CDPLAB_AUTOGRADER_LOCAL=1 CDPLAB_AUTOGRADER_CDPLAB="$cdplab" \
  bash "$ag/source/run_autograder" 2> "$work/gradescope-local.err" || fail "run_autograder failed grading here"
python3 - "$ag/results/results.json" <<'PYTHON' || fail "no valid results.json graded here: $(cat "$work/gradescope-local.err")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["score"] > 0 and r["tests"], r
assert "over SSH" not in r["output"], r["output"]
PYTHON

echo "PASS: checks over SSH and the Gradescope autograder ($((SECONDS - started)) s)"
