#!/usr/bin/env bash
# Run a server fat jar: run-jar.sh JAR [ARGS...]
# JAVA_OPTS is split on whitespace on purpose (e.g. "-Xmx512m -XX:+UseParallelGC");
# unset or empty means plain JVM defaults. exec keeps the PID the server's.
set -euo pipefail

if [[ $# -lt 1 ]]; then
    echo "usage: $0 JAR [ARGS...]" >&2
    exit 2
fi

java_opts=()
read -r -a java_opts <<< "${JAVA_OPTS:-}"

exec "${JAVA_HOME:+$JAVA_HOME/bin/}java" "${java_opts[@]}" -jar "$@"
