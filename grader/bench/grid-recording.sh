#!/usr/bin/env bash
# What recording the exercise's grids for the timeline costs (report/grid_timeline.h): `cdplab
# grade solutions` timed with every check recording (CDPLAB_GRID_RECORDING=on, as `check
# --timeline` runs) and with none (CDPLAB_GRID_RECORDING=off; by default the checks marked
# `timeline = true` record), alternating, on this machine's GPU, whole calls of cdplab each.
# Prints a Markdown table with the device's name, each run's seconds and the ratio of the medians.
#
# Usage: grader/bench/grid-recording.sh [ROUNDS]   (default 2 rounds of on and off)
# CDPLAB_SPEED_BUILD=<build tree> picks the cdplab (default build/test).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build="${CDPLAB_SPEED_BUILD:-$root/build/test}"
cli="$build/grader/cli/cdplab"
[ -x "$cli" ] || { echo "no cdplab in $build: build it first" >&2; exit 2; }
rounds="${1:-2}"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
[ -n "$device" ] || { echo "no GPU here: the recording's cost is measured on one" >&2; exit 2; }
cd "$root"
time_one() {  # seconds of one `grade solutions`, recording $1 ("on" or "off")
  local start end
  start=$(date +%s.%N)
  CDPLAB_GRID_RECORDING="$1" timeout 300 "$cli" grade solutions -q > /dev/null 2>&1 || true
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}'
}
on=(); off=()
time_one on > /dev/null  # a first run warms the build tree and the driver
for ((r = 0; r < rounds; ++r)); do
  on+=("$(time_one on)")
  off+=("$(time_one off)")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
m_on=$(median "${on[@]}"); m_off=$(median "${off[@]}")
echo "## Grid recording's cost on $device"
echo
echo "| recording | seconds of \`cdplab grade solutions\` (whole call), each run |"
echo "|---|---|"
echo "| on | ${on[*]} |"
echo "| off | ${off[*]} |"
echo
echo "median on / median off: $(awk -v a="$m_on" -v b="$m_off" 'BEGIN {printf "%.3f", a / b}')"
