#!/usr/bin/env bash
# Start jtwin from the classes its [build] compiled (JTwin.java with the lab's
# lab.env.LabEnv). JAVA_OPTS is split on whitespace, as servers/java/run-jar.sh
# does (unset or empty: plain JVM defaults); exec keeps the PID the JVM's, so
# that the lab's jcmd reads its JIT (lab/measure/jit.py).
set -euo pipefail

java_opts=()
read -r -a java_opts <<< "${JAVA_OPTS:-}"

exec "${JAVA_HOME:+$JAVA_HOME/bin/}java" "${java_opts[@]}" -cp target/classes JTwin
