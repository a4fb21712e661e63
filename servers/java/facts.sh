#!/usr/bin/env bash
# Print key=value facts about the JVM the servers run on, as the server would
# see it: same java, same JAVA_OPTS, same CPU affinity (the lab runs this under
# the server's taskset). One JVM start.
set -euo pipefail

java_bin="${JAVA_HOME:+$JAVA_HOME/bin/}java"
java_opts=()
read -r -a java_opts <<< "${JAVA_OPTS:-}"

# -XX:+PrintFlagsFinal -> flags on stdout; -version -> version on stderr;
# -Xlog:os=debug -> "Initial active processor count set to N" (honours
# taskset/cgroups and -XX:ActiveProcessorCount).
out="$("$java_bin" "${java_opts[@]}" -Xlog:os=debug -XX:+PrintFlagsFinal -version 2>&1)"

flag() {   # value of a -XX flag from PrintFlagsFinal
    awk -v f="$1" '$2 == f && $3 == "=" { print $4; exit }' <<< "$out"
}

java_version="$(sed -n 's/^[a-z]* version "\([^"]*\)".*/\1/p' <<< "$out" | head -n 1)"
java_build="$(sed -n 's/.*Runtime Environment.*(build \([^)]*\)).*/\1/p' <<< "$out" | head -n 1)"

gc="$(awk '$1 == "bool" && $2 ~ /^Use[A-Za-z0-9]*GC$/ && $4 == "true" { sub(/^Use/, "", $2); print $2 }' <<< "$out" \
      | grep -v -x -e 'AdaptiveSizePolicyWithSystemGC' -e 'MaximumCompactionOnSystemGC' \
      | paste -s -d, -)"

active="$(sed -n 's/.*Initial active processor count set to \([0-9]*\).*/\1/p' <<< "$out" | head -n 1)"
if [[ -z "$active" ]]; then
    active="$(flag ActiveProcessorCount)"
fi

echo "java_version=${java_version:-unknown}"
echo "java_build=${java_build:-unknown}"
echo "jvm_opts=${JAVA_OPTS:-default}"
echo "max_heap_bytes=$(flag MaxHeapSize)"
echo "gc=${gc:-unknown}"
echo "active_processors=${active:-unknown}"
echo "parallel_gc_threads=$(flag ParallelGCThreads)"
