# Sourced by the Slurm tests: start_private_cluster WORK starts the private cluster of
# start-cluster.sh with its state below WORK (or, where that path would not fit a Unix socket or
# holds a blank, in a temporary folder), stops it when the test exits, and sources its env.sh.
# A cluster that cannot run here ends the test with 77 (skipped); one that fails, with 1.
# The test may add to the exit trap with `on_exit COMMAND`.
private_cluster_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
private_cluster_exit=()

on_exit() { private_cluster_exit+=("$1"); }

private_cluster_cleanup() {
  local command
  for command in ${private_cluster_exit[@]+"${private_cluster_exit[@]}"}; do eval "$command" || true; done
  "$private_cluster_dir/stop-cluster.sh" "$state" >/dev/null 2>&1 || true
  case "$state" in "$private_cluster_work"/*) ;; *) rm -rf "$state" ;; esac
}

start_private_cluster() {
  local work="$1" status=0
  private_cluster_work="$work"
  state="$work/cluster"
  if [ "${#state}" -gt 80 ] || [[ "$state" == *[[:space:]]* ]]; then
    state="$(mktemp -d "${TMPDIR:-/tmp}/cdplab-slurm.XXXXXX")"
  fi
  trap private_cluster_cleanup EXIT
  "$private_cluster_dir/start-cluster.sh" "$state" || status=$?
  if [ "$status" = 77 ]; then exit 77; fi
  if [ "$status" != 0 ]; then echo "FAIL: the Slurm cluster did not start (status $status)" >&2; exit 1; fi
  # shellcheck source=/dev/null
  . "$state/env.sh"
}
