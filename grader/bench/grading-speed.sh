#!/usr/bin/env bash
# How fast the grader is on this machine: builds the grader's kit once (what every submission
# shares: cmake/CdplabGradingKit.cmake), grades one copy of the reference solutions alone in a
# cold build tree, then N copies as a class, then grades one edited exercise of one submission
# again (`grade --only`, a fresh tree) and re-checks one with `cdplab check` in this cdplab's own
# warm tree (a student's loop), and prints the seconds as Markdown tables (per submission:
# preparing, building and grading apart, and the grading phase by phase: rules, checks beside
# others, waiting for the GPU, checks with the GPU alone, memcheck). With --gpus G (G > 1) the
# class is graded twice, with one GPU and with G, each in build trees of its own, and the table
# gives both and the speed-up, with whether every student got the same verdicts both ways. With
# --process-per-check every check runs in a process of its own (cdplab grade --process-per-check),
# as before suite processes were shared: run it both ways on one machine to compare. With
# --share-gpu S the class's checks run S submissions at a time on each GPU (cdplab grade
# --share-gpu; default 2); --compare grades the class once more with --share-gpu 1, one
# submission per GPU at a time, and the table gives both, with whether every verdict matched.
#
# Usage: grader/bench/grading-speed.sh [N] [--parallel P] [--gpus G] [--share-gpu S] [--compare]
#                                      [--process-per-check] [--only NAMES...]
#   N           submissions in the class (default 4)
#   --parallel  submissions built at the same time (default 2)
#   --gpus      GPUs the class's checks run on (default 1)
#   --share-gpu submissions whose checks share one GPU (default 2)
#   --only      grade only these chapters or exercises (default: everything)
# Run it from the project root after `./cdplab list` (or any cdplab command) has built the tool;
# CDPLAB_SPEED_BUILD=<build tree> times the cdplab of another tree (build/test, say).
# Everything it writes goes below build/grading-speed/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
count=4
parallel=2
gpus=1
share=2
compare=0
only=()
checks=()  # how the checks run: shared suite processes, or --process-per-check
while [ $# -gt 0 ]; do
  case "$1" in
    --parallel) parallel=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    --share-gpu) share=$2; shift 2 ;;
    --compare) compare=1; shift ;;
    --process-per-check) checks=(--process-per-check); shift ;;
    --only) shift; while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do only+=("$1"); shift; done ;;
    [0-9]*) count=$1; shift ;;
    *) echo "usage: $0 [N] [--parallel P] [--gpus G] [--share-gpu S] [--compare] [--process-per-check] [--only NAMES...]" >&2
       exit 2 ;;
  esac
done

# The build tree whose cdplab grades: build/student (what ./cdplab uses), or CDPLAB_SPEED_BUILD.
build="${CDPLAB_SPEED_BUILD:-$root/build/student}"
cli="$build/grader/cli/cdplab"
if [ ! -x "$cli" ]; then
  "$root/cdplab" list > /dev/null  # configures build/student and builds the tool
fi
work="$root/build/grading-speed"
rm -rf "$work"
mkdir -p "$work/class"
for i in $(seq 1 "$count"); do
  mkdir -p "$work/class/copy-$i"
  cp -r "$root/solutions/." "$work/class/copy-$i/"
done
only_args=()
if [ ${#only[@]} -gt 0 ]; then only_args=(--only "${only[@]}"); fi

device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
echo "device: ${device:-no GPU (GPU checks are skipped: build and rule times only)}"
echo "machine: $(nproc) CPU cores; submissions: $count; built at once: $parallel; GPUs: $gpus; sharing a GPU: $share;" \
  "checks: ${checks[0]:-a process per suite first}"

# The grading kit, once per grader install (`cdplab grade` builds it when it is out of date).
kit_start=$(date +%s.%N)
cmake --build "$build" --target cdplab_grading_kit > "$work/kit.log" 2>&1
kit_end=$(date +%s.%N)

# One submission alone, from a build tree that does not exist yet.
alone_start=$(date +%s.%N)
"$cli" -j "$(nproc)" grade "$work/class/copy-1" --quiet --build-dir "$work/alone-build" "${only_args[@]}" "${checks[@]}" \
  --format json --output "$work/alone.json" > "$work/alone.log" 2>&1 || true
alone_end=$(date +%s.%N)
awk -v k="$kit_end - $kit_start" -v a="$alone_end - $alone_start" 'BEGIN { split(k, kt, " - "); split(a, at, " - ");
  printf "kit %.1f s; one submission alone %.1f s\n", kt[1] - kt[2], at[1] - at[2] }'
python3 - "$work/alone.json" <<'PY' || echo "one submission alone: no report (see $work/alone.log)"
import json, sys
r = json.load(open(sys.argv[1]))
items = [i for e in r["exercises"] for i in e["items"]]
print("one submission alone: %g/%g points" % (sum(i["points"] for i in items), sum(i["max_points"] for i in items)))
PY

start=$(date +%s.%N)
"$cli" -j "$(nproc)" grade "$work/class" --out "$work/grades" --parallel "$parallel" --gpus "$gpus" \
  --share-gpu "$share" "${only_args[@]}" "${checks[@]}" 2> "$work/class.log" > /dev/null || true
end=$(date +%s.%N)

# Whether two gradings of the class gave the same verdicts: each item's outcome and points,
# student by student (the seeds differ, the verdicts must not).
compare_verdicts() {
  python3 - "$1" "$2" <<'PY'
import json, pathlib, sys
def verdicts(root):
    out = {}
    for f in sorted(pathlib.Path(root, "students").glob("*/result.json")):
        r = json.loads(f.read_text())
        out[f.parent.name] = [(e["id"], i["name"], i["outcome"], i["points"]) for e in r["exercises"] for i in e["items"]]
    return out
a, b = verdicts(sys.argv[1]), verdicts(sys.argv[2])
differ = [n for n in sorted(set(a) | set(b)) if a.get(n) != b.get(n)]
print("every verdict the same (%d students)" % len(a) if a and not differ else "verdicts differ for: " + ", ".join(differ or ["(no student graded)"]))
PY
}

# The class with one submission per GPU at a time, for comparison, and whether the verdicts match.
unshared=""
same_verdicts=""
if [ "$compare" = 1 ]; then
  unshared_start=$(date +%s.%N)
  "$cli" -j "$(nproc)" grade "$work/class" --out "$work/grades-unshared" --parallel "$parallel" --gpus "$gpus" \
    --share-gpu 1 "${only_args[@]}" "${checks[@]}" 2> "$work/class-unshared.log" > /dev/null || true
  unshared_end=$(date +%s.%N)
  unshared=$(awk -v s="$unshared_start" -v e="$unshared_end" 'BEGIN { printf "%.1f", e - s }')
  same_verdicts=$(compare_verdicts "$work/grades" "$work/grades-unshared")
fi

# The class with one GPU, for comparison, when the run above used several, and whether the
# verdicts match.
one_gpu=""
one_gpu_verdicts=""
if [ "$gpus" -gt 1 ]; then
  one_start=$(date +%s.%N)
  "$cli" -j "$(nproc)" grade "$work/class" --out "$work/grades-1-gpu" --parallel "$parallel" --share-gpu "$share" \
    "${only_args[@]}" "${checks[@]}" 2> "$work/class-1-gpu.log" > /dev/null || true
  one_end=$(date +%s.%N)
  one_gpu=$(awk -v s="$one_start" -v e="$one_end" 'BEGIN { printf "%.1f", e - s }')
  one_gpu_verdicts=$(compare_verdicts "$work/grades" "$work/grades-1-gpu")
fi

# What a graded class keeps on disk per student: work/ (the copy of each submission; the build
# trees are deleted once a student is graded, unless --keep-work) and students/ (the reports).
work_kb=$(du -sk "$work/grades/work" 2>/dev/null | cut -f1)
students_kb=$(du -sk "$work/grades/students" 2>/dev/null | cut -f1)

# One exercise of a submission graded again after an edit (`grade --only`: every grading starts from
# an empty build tree, so this configures and builds that exercise afresh).
edited="$work/class/copy-1/01-fundamentals/child_grids.cu"
echo "// edited" >> "$edited"
regrade_start=$(date +%s.%N)
"$cli" grade "$work/class/copy-1" --only child-grids --quiet --build-dir "$work/alone-build" "${checks[@]}" \
  > "$work/regrade.log" 2>&1 || true
regrade_end=$(date +%s.%N)

# A student's loop: `cdplab check` of one exercise just saved, in the tree's warm build (the file
# touched, so it compiles again; its content is the tree's own).
exercise_dir=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['exercise_dir'])" "$build/cdplab-index.json")
touch "$exercise_dir/01-fundamentals/child_grids.cu"
recheck_start=$(date +%s.%N)
"$cli" check child-grids --quiet > "$work/recheck.log" 2>&1 || true
recheck_end=$(date +%s.%N)

awk -v start="$start" -v end="$end" -v recheck_start="$recheck_start" -v recheck_end="$recheck_end" \
    -v alone_start="$alone_start" -v alone_end="$alone_end" -v n="$count" \
    -v regrade_start="$regrade_start" -v regrade_end="$regrade_end" \
    -v kit_start="$kit_start" -v kit_end="$kit_end" -v gpus="$gpus" -v one_gpu="$one_gpu" \
    -v share="$share" -v unshared="$unshared" '
  BEGIN { total = end - start; recheck = recheck_end - recheck_start; alone = alone_end - alone_start; kit = kit_end - kit_start
          regrade = regrade_end - regrade_start }
  /: graded / {
    for (i = 1; i <= NF; i++) {
      if ($i == "(prepare") prepare += $(i + 1)
      if ($i == "build") build += $(i + 1)
      if ($i == "grade") grade += $(i + 1)
    }
    graded++
  }
  END {
    if (graded == 0) { print "no submission was graded; see build/grading-speed/class.log"; exit 1 }
    print ""
    print "| measure | seconds |"
    print "| --- | --- |"
    printf "| building the grading kit, once per grader install (wall time) | %.1f |\n", kit
    printf "| one submission graded alone, cold build tree (wall time) | %.1f |\n", alone
    if (one_gpu != "") {
      printf "| whole class (%d submissions, 1 GPU, wall time) | %.1f |\n", n, one_gpu
      printf "| per submission, 1 GPU: wall time of the class / N | %.1f |\n", one_gpu / n
    }
    if (unshared != "") {
      printf "| whole class (%d submissions, %d GPU%s, one submission per GPU at a time, wall time) | %.1f |\n", n, gpus, (gpus > 1 ? "s" : ""), unshared
      printf "| per submission, one per GPU at a time: wall time of the class / N | %.1f |\n", unshared / n
    }
    printf "| whole class (%d submissions, %d GPU%s, %d sharing a GPU, wall time) | %.1f |\n", n, gpus, (gpus > 1 ? "s" : ""), share, total
    printf "| per submission, %d GPU%s, %d sharing a GPU: wall time of the class / N | %.1f |\n", gpus, (gpus > 1 ? "s" : ""), share, total / n
    if (one_gpu != "" && total > 0) printf "| %d GPUs against 1: class wall time with 1 / with %d (speed-up) | %.2fx |\n", gpus, gpus, one_gpu / total
    printf "| per submission: preparing (copy, configure) | %.1f |\n", prepare / graded
    printf "| per submission: building | %.1f |\n", build / graded
    printf "| per submission: grading (rules, checks, quizzes) | %.1f |\n", grade / graded
    printf "| one exercise of a submission graded again after an edit (grade --only child-grids, fresh build tree, wall time) | %.1f |\n", regrade
    printf "| re-checking one edited exercise (check child-grids, warm build tree of this cdplab, wall time) | %.1f |\n", recheck
    print ""
    print "Times per submission are means over the submissions; with several built at once they overlap."
  }' "$work/class.log"
awk -v work_kb="${work_kb:-0}" -v students_kb="${students_kb:-0}" -v n="$count" 'BEGIN {
  printf "Kept on disk per student after grading: work/ %.2f MB, students/ %.2f MB (du).\n", work_kb / 1024 / n,
         students_kb / 1024 / n }'
if [ -n "$same_verdicts" ]; then echo "Shared against one submission per GPU at a time: $same_verdicts."; fi
if [ -n "$one_gpu_verdicts" ]; then echo "$gpus GPUs against 1: $one_gpu_verdicts."; fi

# Where a grading's time goes, phase by phase (each report's "phases"): one submission alone, and
# the mean over the class. In a class the phases of several gradings overlap, and "waiting for
# the GPU" is a grading's wait for its turn on a GPU that others hold.
python3 - "$work/alone.json" "$work/grades/students" <<'PY'
import json, pathlib, sys
def phases(files):
    sums, count = {}, 0
    for f in files:
        try:
            r = json.loads(pathlib.Path(f).read_text())
        except (OSError, ValueError):
            continue
        count += 1
        for p in r.get("phases", []):
            sums[p["phase"]] = sums.get(p["phase"], 0.0) + p["seconds"]
    return {k: v / count for k, v in sums.items()} if count else {}
alone = phases([sys.argv[1]])
klass = phases(sorted(pathlib.Path(sys.argv[2]).glob("*/result.json")))
names = list(alone) + [k for k in klass if k not in alone]
if names:
    print()
    print("| phase of a grading | one submission alone (s) | class, mean per submission (s) |")
    print("| --- | --- | --- |")
    for n in names:
        cell = lambda d: "%.1f" % d[n] if n in d else "-"
        print("| %s | %s | %s |" % (n, cell(alone), cell(klass)))
PY
