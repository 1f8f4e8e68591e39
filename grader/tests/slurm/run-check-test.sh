#!/usr/bin/env bash
# End to end: `cdplab check --remote slurm` on a private single-node Slurm cluster, on a machine
# that shows no GPU (CUDA_VISIBLE_DEVICES=): the check runs as a job of this account and its report
# reads as a local one, with where it ran; a job that waits shows its place in the queue; Ctrl-C
# cancels the job; a job cancelled from outside is named as such. Without a GPU on the node the
# job's GPU checks are skipped, never passed.
#
# Usage: run-check-test.sh CDPLAB PROJECT_ROOT WORK_DIR
# Exit status: 0 passed, 1 failed, 77 skipped (not root, or Slurm is not installed).
set -euo pipefail

if [ $# -ne 3 ]; then
  echo "usage: $0 CDPLAB PROJECT_ROOT WORK_DIR" >&2
  exit 2
fi
cdplab="$1"
root="$2"
work="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
started=$SECONDS

fail() { echo "FAIL: $*" >&2; exit 1; }
# Messages wrap at 100 columns: the file is read as one line, its runs of blanks as one.
expect_in() {
  tr '\n' ' ' < "$1" | tr -s ' ' | grep -qF -- "$2" || fail "$1 does not say '$2'; it holds:$(printf '\n'; cat "$1")"
}
# wait_for_line FILE TEXT: waits (up to 120 s) until FILE says TEXT.
wait_for_line() {
  for _ in $(seq 1200); do grep -qF -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  fail "$1 never said '$2'; it holds:$(printf '\n'; cat "$1")"
}
# job_of FILE: the id of the job FILE says was submitted.
job_of() { sed -n 's/.*Slurm job \([0-9]*\) submitted.*/\1/p' "$1" | head -n 1; }

[ -x "$cdplab" ] || fail "no cdplab at $cdplab"
rm -rf "$work"
mkdir -p "$work"
blocker=""
# shellcheck source=private-cluster.sh
. "$here/private-cluster.sh"
on_exit '[ -z "$blocker" ] || scancel "$blocker"'
start_private_cluster "$work"
export CUDA_VISIBLE_DEVICES=""  # this machine shows no GPU: the check goes to Slurm

# --- 1. a check as a job: its report reads as a local one ----------------------------------------
build="$(cd "$(dirname "$cdplab")/../.." && pwd)"  # the build tree of this cdplab: its remote/ holds the jobs
before="$(ls "$build/remote" 2>/dev/null || true)"
status=0
"$cdplab" check child-grids --remote slurm > "$work/check.out" 2> "$work/check.err" || status=$?
cat "$work/check.err" "$work/check.out"
expect_in "$work/check.err" "checking on Slurm (--remote)"
id="$(job_of "$work/check.err")"
[ -n "$id" ] || fail "no job id shown"
expect_in "$work/check.out" "ran on: Slurm job $id on "
expect_in "$work/check.err" "child_grids.cu rules"  # the job's progress lines came back
if grep -q "^device: " "$work/check.out"; then
  [ "$status" = 0 ] || fail "the reference on a GPU node exited $status"
else
  [ "$status" = 3 ] || fail "a check on a node without a GPU exited $status, expected 3 (incomplete)"
  expect_in "$work/check.out" "[skip]"
fi
# The job's folder went with the job.
[ "$(ls "$build/remote" 2>/dev/null || true)" = "$before" ] || fail "the job's folder was left in $build/remote"

# --- 2. a job that waits shows its place; Ctrl-C cancels it ---------------------------------------
# A job that holds every CPU of the node: the check's job waits behind it.
blocker="$(sbatch --parsable --exclusive --output=/dev/null --wrap "sleep 300" | cut -d';' -f1)"
for _ in $(seq 300); do [ "$(squeue -h -j "$blocker" -o %T)" = RUNNING ] && break; sleep 0.1; done
"$cdplab" check child-grids --remote slurm > "$work/wait.out" 2> "$work/wait.err" &
client=$!
wait_for_line "$work/wait.err" "1st in the queue of partition debug"
expect_in "$work/wait.err" "pending ("
id="$(job_of "$work/wait.err")"
kill -INT "$client"
status=0
wait "$client" || status=$?
[ "$status" = 2 ] || fail "Ctrl-C: cdplab exited $status, expected 2"
expect_in "$work/wait.err" "cancelled Slurm job $id (Ctrl-C); nothing of yours was changed"
[ -z "$(squeue -h -j "$id" -t PD,R 2>/dev/null)" ] || fail "job $id is still in the queue after Ctrl-C"

# --- 3. a job cancelled from outside -------------------------------------------------------------
"$cdplab" check child-grids --remote slurm > "$work/cancelled.out" 2> "$work/cancelled.err" &
client=$!
wait_for_line "$work/cancelled.err" " submitted"
id="$(job_of "$work/cancelled.err")"
scancel "$id"
status=0
wait "$client" || status=$?
[ "$status" = 2 ] || fail "a cancelled job: cdplab exited $status, expected 2"
expect_in "$work/cancelled.err" "Slurm job $id was cancelled before it wrote a report"
scancel "$blocker"
blocker=""

echo "PASS: cdplab check --remote slurm ($((SECONDS - started)) s)"
