#!/usr/bin/env bash
# Start nginx in the foreground on BIND:PORT (default 127.0.0.1:8080) with an
# accept backlog of BACKLOG (default 512) and WORKERS worker processes, from
# nginx.conf beside this script (exec: the PID the lab samples is nginx's).
# Its prefix (pid file, temp folders, the filled-in config) is $LAB_SCRATCH,
# the private folder the lab gives each start and removes at stop; by hand,
# without it, a new mktemp folder (printed, yours to remove).
# With --facts: print key=value lines for the run manifest.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [ "${1:-}" = "--facts" ]; then
  echo "nginx_version=$(nginx -v 2>&1 | sed 's|.*nginx/||')"
  exit 0
fi

die() { echo "nginx/run.sh: $*" >&2; exit 2; }

# Check that $2 is a whole number from 1 to $3 (read as decimal: 10# keeps
# a leading zero from meaning octal).
number() {
  if ! [[ $2 =~ ^[0-9]{1,6}$ ]] || (( 10#$2 < 1 || 10#$2 > $3 )); then
    die "$1 must be a whole number from 1 to $3, got '$2'"
  fi
}

port=${PORT:-8080}
workers=${WORKERS:-1}
backlog=${BACKLOG:-512}
bind=${BIND:-127.0.0.1}
number PORT "$port" 65535
number WORKERS "$workers" 10000
number BACKLOG "$backlog" 65535

# BIND must be an IP literal (nginx would resolve a host name, possibly to
# several addresses). An IPv6 one goes in brackets in `listen`; nginx itself
# rejects a malformed one when it reads the config.
octet='(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
if [[ $bind =~ ^$octet(\.$octet){3}$ ]]; then
  listen="$bind:$port"
elif [[ $bind == *:* && $bind =~ ^[0-9A-Fa-f:.]+(%[A-Za-z0-9_.-]+)?$ ]]; then
  listen="[$bind]:$port"
else
  die "BIND must be an IP address such as 127.0.0.1 or ::1, got '$bind'"
fi

if [ -n "${LAB_SCRATCH:-}" ]; then
  prefix=$LAB_SCRATCH
  [ -d "$prefix" ] || die "LAB_SCRATCH=$prefix is not a folder"
else
  prefix=$(mktemp -d "${TMPDIR:-/tmp}/lab-nginx.XXXXXX")
fi
sed -e "s|@LISTEN@|$listen|" -e "s|@BACKLOG@|$backlog|" -e "s|@WORKERS@|$workers|" \
  -e "s|@PREFIX@|$prefix|g" "$here/nginx.conf" > "$prefix/nginx.conf"
echo "nginx listening on $listen (backlog $backlog) with $workers workers (prefix $prefix)"
# LAB_WRAPPER (words, e.g. valgrind and its options; make cost) runs nginx under a tool.
wrap=()
read -r -a wrap <<< "${LAB_WRAPPER:-}"
exec "${wrap[@]}" nginx -p "$prefix" -c "$prefix/nginx.conf" -e stderr
