#!/usr/bin/env bash
# End to end: `cdplab grade CLASS --slurm` on a private single-node Slurm cluster.
#
# A class of three submissions (a folder, a .tar.gz archive and a starter folder) is graded as a
# job array: the chapter 05 quiz (graded without building) and child-grids (configured and built
# inside the jobs). The test checks the exit status, the gradebook's rows and points, each
# student's files and the Slurm files; then a second run (--only the quiz) adds a student whose
# task cannot write its results: everyone is graded again on the quiz, keeping the rest of their
# grade, and the failed student is named.
#
# Usage: run-test.sh CDPLAB PROJECT_ROOT WORK_DIR
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
# expect_line FILE LINE: FILE holds LINE exactly.
expect_line() { grep -qxF -- "$2" "$1" || fail "$1 has no line '$2'; it holds:$(printf '\n'; cat "$1")"; }
# column FILE STUDENT N: field N of STUDENT's row of the gradebook (no quoted commas in it).
column() { awk -F, -v who="$2" -v n="$3" '$1 == who { gsub(/\r/, ""); print $n }' "$1"; }

[ -x "$cdplab" ] || fail "no cdplab at $cdplab"
rm -rf "$work"
mkdir -p "$work"

# shellcheck source=private-cluster.sh
. "$here/private-cluster.sh"
start_private_cluster "$work"

# --- the class: blanks and a quote in its paths test the scripts' quoting ----------------------
class="$work/class of 2026"
out="$work/grades (slurm)"
quiz_dir="05-streams-and-pools"
mkdir -p "$class/alice/$quiz_dir" "$class/alice/01-fundamentals" "$class/o'hara/$quiz_dir" \
         "$class/o'hara/01-fundamentals" "$work/bob/chapters/$quiz_dir"
cp "$root/solutions/$quiz_dir/quiz.toml" "$class/alice/$quiz_dir/"
cp "$root/solutions/01-fundamentals/child_grids.cu" "$class/alice/01-fundamentals/"
cp "$root/chapters/$quiz_dir/quiz.toml" "$class/o'hara/$quiz_dir/"
cp "$root/chapters/01-fundamentals/child_grids.cu" "$class/o'hara/01-fundamentals/"
# bob: the solution's answers but one, packed one folder deep; no child_grids.cu.
sed 's/^pool-overflow = .*/pool-overflow = "2048"/' "$root/solutions/$quiz_dir/quiz.toml" \
  > "$work/bob/chapters/$quiz_dir/quiz.toml"
grep -q '^pool-overflow = "2048"' "$work/bob/chapters/$quiz_dir/quiz.toml" || fail "could not make bob's wrong answer"
(cd "$work/bob" && cmake -E tar czf "$class/bob.tar.gz" chapters)

# --- first run: everyone -----------------------------------------------------------------------
run_status=0
"$cdplab" grade "$class" --slurm --out "$out" --only streams-quiz child-grids --partition debug --time 15:00 \
  --slurm-timeout 240 > "$work/run1.out" 2> "$work/run1.err" || run_status=$?
cat "$work/run1.err" "$work/run1.out"
book="$out/gradebook.csv"
[ -f "$book" ] || fail "no gradebook"

# The quiz column: alice every point, bob all but the one for pool-overflow (1 point), o'hara none.
# Each heading carries its column's maximum: "05-streams-and-pools/quiz (max 8)".
headings="$(head -1 "$book" | tr -d '\r' | tr ',' '\n')"
quiz_col="$(printf '%s\n' "$headings" | grep -n "^$quiz_dir/quiz (max [0-9.]*)\$" | cut -d: -f1)"
grids_col="$(printf '%s\n' "$headings" | grep -n "^01-fundamentals/child_grids (max [0-9.]*)\$" | cut -d: -f1)"
[ -n "$quiz_col" ] && [ -n "$grids_col" ] || fail "the gradebook has no quiz or child_grids column: $(head -1 "$book")"
quiz_max="$(printf '%s\n' "$headings" | sed -n "${quiz_col}p" | sed 's/.*(max \([0-9.]*\))$/\1/')"
[ "${quiz_max:-0}" -gt 1 ] || fail "the quiz is worth '$quiz_max' points"
[ "$(column "$book" alice "$quiz_col")" = "$quiz_max" ] || fail "alice's quiz is not $quiz_max/$quiz_max"
[ "$(column "$book" bob "$quiz_col")" = "$((quiz_max - 1))" ] || fail "bob's quiz is not $((quiz_max - 1))"
[ "$(column "$book" "o'hara" "$quiz_col")" = 0 ] || fail "o'hara's quiz is not 0"
# child-grids: built in the jobs. The solution earns its rule points (and, on a GPU, its check
# points); bob has no file; the starter earns less than the solution.
alice_grids="$(column "$book" alice "$grids_col")"
[ "$(column "$book" bob "$grids_col")" = 0 ] || fail "bob has no child_grids.cu but scored"
awk -v a="$alice_grids" -v s="$(column "$book" "o'hara" "$grids_col")" 'BEGIN { exit !(a > 0 && a > s) }' ||
  fail "child-grids: the solution ($alice_grids) does not beat the starter"
grep -q "file missing" "$out/students/bob/feedback.md" || fail "bob's feedback does not say child_grids.cu is missing"
# Without a GPU the checks are skipped: the grades are not final and cdplab says so (status 3).
expected_status=0
if grep -q ',not final$' <(tr -d '\r' < "$book"); then expected_status=3; fi
[ "$run_status" = "$expected_status" ] || fail "cdplab exited $run_status, expected $expected_status"

# Each student's folder is the one whose student.txt names them ("o'hara" is not a plain name).
folder_of() {
  local file
  for file in "$out"/students/*/student.txt; do
    if [ "$(cat "$file")" = "$1" ]; then dirname "$file"; return; fi
  done
}
for student in alice bob "o'hara"; do
  folder="$(folder_of "$student")"
  [ -n "$folder" ] || fail "$student has no folder with a student.txt"
  for file in result.json results.json junit.xml feedback.md feedback.html; do
    [ -s "$folder/$file" ] || fail "$student has no $file"
  done
  grep -qF "$student: graded" "$work/run1.err" || fail "no progress line for $student"
done
expect_line "$out/summary.md" "- students graded: 3"
expect_line "$out/slurm/grade.sbatch" '#SBATCH --array="0-2"'
expect_line "$out/slurm/submissions.txt" "$(printf '1\tbob\t%s' "$class/bob.tar.gz")"
for log in 0 1 2 merge; do [ -s "$out/slurm/logs/$log.out" ] || fail "no Slurm log $log.out"; done
grep -qF "gradebook: $book" "$work/run1.out" || fail "the summary does not name the gradebook"

# --- second run: a new student whose task cannot write its results (the quiz alone: no build) ---
cp -r "$class/alice" "$class/zoe"
mkdir -p "$out/students"
touch "$out/students/zoe"  # a file where the task would make zoe's folder
alice_before="$(cksum < "$out/students/alice/result.json")"
run_status=0
"$cdplab" grade "$class" --slurm --out "$out" --only streams-quiz --partition debug \
  --slurm-timeout 240 > "$work/run2.out" 2> "$work/run2.err" || run_status=$?
cat "$work/run2.err" "$work/run2.out"
[ "$run_status" = 1 ] || fail "a task without a result: cdplab exited $run_status, expected 1"
# --only grades everyone again on the chosen exercise, as a local run does; each keeps the rest.
expect_line "$out/slurm/grade.sbatch" '#SBATCH --array="0-3"'
grep -qF "zoe (task 3)" "$work/run2.out" || fail "the failed task is not named"
grep -qF "$out/slurm/logs/3.out" "$work/run2.out" || fail "the failed task's log is not named"
[ "$(cksum < "$out/students/alice/result.json")" != "$alice_before" ] || fail "alice was not graded again"
grep -qF "child_grids" "$out/students/alice/result.json" || fail "alice lost the rest of her grade"
[ "$(column "$book" alice "$quiz_col")" = "$quiz_max" ] || fail "alice left the gradebook"

echo "PASS: cdplab grade --slurm ($((SECONDS - started)) s)"
