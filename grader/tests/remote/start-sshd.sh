#!/usr/bin/env bash
# Starts a private OpenSSH server on a free port of 127.0.0.1 for the tests and the benchmark of
# checks sent over SSH. Everything it writes lives under DIR:
#   keys/host           the server's host key
#   authorized_keys     read at every login: the caller writes the keys' lines (forced commands)
#   port, known_hosts   where it listens, and its host key as ssh's known_hosts lists it
#   ssh-wrapper         ssh with those known hosts and the key DIR/keys/$TEST_KEY, for CDPLAB_SSH;
#                       it writes its own pid to DIR/ssh-$TEST_KEY.pid (a test cuts that connection)
#   sshd.pid, sshd.log  stop it with: kill "$(cat DIR/sshd.pid)"
# It logs in as the user who runs it. Exit status: 0 it answers; 77 no OpenSSH server or client
# here; 1 it did not start.
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
dir="$1"
PATH="$PATH:/usr/sbin:/sbin"
sshd_program="$(command -v sshd || true)"
[ -n "$sshd_program" ] || { echo "start-sshd: skipped: no OpenSSH server (Debian: apt-get install openssh-server)" >&2; exit 77; }
for tool in ssh ssh-keygen ssh-keyscan; do
  command -v "$tool" >/dev/null 2>&1 || { echo "start-sshd: skipped: no $tool (Debian: openssh-client)" >&2; exit 77; }
done
mkdir -p "$dir/keys"
chmod 700 "$dir/keys"
dir="$(cd "$dir" && pwd)"
touch "$dir/authorized_keys"

# One TCP port in 20000-31999 that no socket on this machine uses.
used=" "
while read -r hex; do
  if [[ "$hex" =~ ^[0-9A-Fa-f]+$ ]]; then used="$used$((16#$hex)) "; fi
done < <(awk 'FNR > 1 { split($2, a, ":"); print a[2] }' /proc/net/tcp /proc/net/tcp6 2>/dev/null)
port=""
for _ in $(seq 200); do
  candidate=$(( 20000 + (RANDOM * 32768 + RANDOM) % 12000 ))
  case "$used" in *" $candidate "*) continue ;; esac
  port=$candidate
  break
done
[ -n "$port" ] || { echo "start-sshd: found no free TCP port" >&2; exit 1; }

[ -f "$dir/keys/host" ] || ssh-keygen -q -t ed25519 -N "" -f "$dir/keys/host" -C host
cat > "$dir/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $dir/keys/host
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
MaxStartups 50
LogLevel VERBOSE
EOF
if [ "$(id -u)" = 0 ]; then mkdir -p /run/sshd; fi  # sshd's privilege separation folder
# sshd re-executes itself by the path it was started with: an absolute one.
"$sshd_program" -f "$dir/sshd_config" -E "$dir/sshd.log" ||
  { echo "start-sshd: sshd did not start: $(tail -5 "$dir/sshd.log" 2>/dev/null)" >&2; exit 1; }
for _ in $(seq 100); do
  ssh-keyscan -p "$port" 127.0.0.1 > "$dir/known_hosts" 2>/dev/null && [ -s "$dir/known_hosts" ] && break
  sleep 0.1
done
[ -s "$dir/known_hosts" ] || { echo "start-sshd: sshd does not answer on port $port: $(tail -5 "$dir/sshd.log")" >&2; exit 1; }
echo "$port" > "$dir/port"
cat > "$dir/ssh-wrapper" <<EOF
#!/usr/bin/env bash
echo \$\$ > "$dir/ssh-\$TEST_KEY.pid"
exec ssh -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$dir/known_hosts" -o IdentitiesOnly=yes \\
  -i "$dir/keys/\$TEST_KEY" "\$@"
EOF
chmod +x "$dir/ssh-wrapper"
echo "start-sshd: listening on 127.0.0.1:$port (stop: kill \$(cat $dir/sshd.pid))"
