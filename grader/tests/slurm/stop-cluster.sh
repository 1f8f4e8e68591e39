#!/usr/bin/env bash
# Stops the cluster that start-cluster.sh started in STATE_DIR: cancels its jobs, ends slurmd,
# slurmctld, any job step (slurmstepd) they left behind, and munged. Safe to run twice or on a
# half-started cluster; every wait is bounded, so it never hangs. Leaves STATE_DIR's files
# (logs included) for a caller to read or remove.
#
# Usage: stop-cluster.sh STATE_DIR
set -uo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 STATE_DIR" >&2
  exit 2
fi
[ -d "$1" ] || exit 0
state="$(cd "$1" && pwd)"
PATH="$PATH:/usr/sbin:/sbin"
export SLURM_CONF="$state/slurm.conf"

# Succeeds when process $1 runs. A zombie does not count: where init reaps orphans late, an
# ended daemon stays one for a while.
is_running() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [ "${stat:0:1}" != Z ]
}

# Prints the pid in pid file $1 when that process still runs and is the daemon $2 (a stale pid
# file may name a pid that an unrelated process now has).
live_pid() {
  local pid
  pid="$(cat "$1" 2>/dev/null)" || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] && is_running "$pid" &&
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] && echo "$pid"
}

# Sends SIGTERM to the pids after $1, waits up to $1 seconds for them to end, then sends SIGKILL.
end_processes() {
  local deadline=$(( SECONDS + $1 )) pid alive
  shift
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null
  while :; do
    alive=()
    for pid in "$@"; do is_running "$pid" && alive+=("$pid"); done
    [ ${#alive[@]} -gt 0 ] || return 0
    [ "$SECONDS" -lt "$deadline" ] || break
    sleep 0.2
  done
  kill -KILL "${alive[@]}" 2>/dev/null
  sleep 0.2
}

# Ends daemon $1 (its pid file is STATE_DIR/$1.pid) and removes its pid file.
end_daemon() {
  local pid
  pid="$(live_pid "$state/$1.pid" "$1")" && end_processes 10 "$pid"
  rm -f "$state/$1.pid"
}

# Cancel the jobs while slurmctld still answers, so that slurmd ends their steps itself.
if [ -f "$SLURM_CONF" ] && live_pid "$state/slurmctld.pid" slurmctld >/dev/null &&
   timeout 5 scontrol ping >/dev/null 2>&1; then
  deadline=$(( SECONDS + 10 ))
  while [ "$SECONDS" -lt "$deadline" ]; do
    # %F is the job id, for an array task the array's id: cancelling it cancels every task.
    jobs="$(timeout 5 squeue -h -o %F 2>/dev/null | sort -u)" || break
    [ -n "$jobs" ] || break
    mapfile -t job_ids <<< "$jobs"
    timeout 5 scancel --full --quiet "${job_ids[@]}" 2>/dev/null
    sleep 0.5
  done
fi

end_daemon slurmd
end_daemon slurmctld

# Job steps that outlived slurmd: a slurmstepd of this cluster keeps its slurmd's log file open.
slurmd_log="$state/log/slurmd.log"
leftovers=()
for dir in /proc/[0-9]*; do
  if [ "$(cat "$dir/comm" 2>/dev/null)" != slurmstepd ] || ! is_running "${dir#/proc/}"; then
    continue
  fi
  for fd in "$dir"/fd/*; do
    if [ "$(readlink "$fd" 2>/dev/null)" = "$slurmd_log" ]; then
      leftovers+=("${dir#/proc/}")
      break
    fi
  done
done
if [ ${#leftovers[@]} -gt 0 ]; then
  # Add their descendants. /proc/PID/stat holds "PID (COMMAND) STATE PPID ...", and COMMAND may
  # hold spaces and parentheses, so the fields are read after the last ") ".
  declare -A parent_of=()
  for dir in /proc/[0-9]*; do
    stat="$(cat "$dir/stat" 2>/dev/null)" || continue
    read -r _ ppid _ <<< "${stat##*) }"
    parent_of[${dir#/proc/}]="$ppid"
  done
  tree=("${leftovers[@]}")
  grew=1
  while [ "$grew" = 1 ]; do
    grew=0
    for pid in "${!parent_of[@]}"; do
      case " ${tree[*]} " in *" $pid "*) continue ;; esac
      case " ${tree[*]} " in *" ${parent_of[$pid]} "*) tree+=("$pid"); grew=1 ;; esac
    done
  done
  # slurmstepd ignores SIGTERM, so a short grace is enough before SIGKILL.
  end_processes 2 "${tree[@]}"
fi

end_daemon munged
rm -f "$state/munge/munge.socket" "$state/munge/munge.socket.lock"
exit 0
