#!/usr/bin/env bash
# Start nginx in the foreground on $PORT with $WORKERS worker processes, from
# nginx.conf beside this script (exec: the PID the lab samples is nginx's).
# With --facts: print key=value lines for the run manifest.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [ "${1:-}" = "--facts" ]; then
  echo "nginx_version=$(nginx -v 2>&1 | sed 's|.*nginx/||')"
  exit 0
fi

prefix=$(mktemp -d "${TMPDIR:-/tmp}/lab-nginx.XXXXXX")
sed -e "s|@PORT@|${PORT:-8080}|" -e "s|@WORKERS@|${WORKERS:-1}|" -e "s|@PREFIX@|$prefix|g" \
  "$here/nginx.conf" > "$prefix/nginx.conf"
echo "nginx listening on ${PORT:-8080} with ${WORKERS:-1} workers (config $prefix/nginx.conf)"
exec nginx -p "$prefix" -c "$prefix/nginx.conf" -e stderr
