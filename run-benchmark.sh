#!/usr/bin/env bash
# One benchmark run, top-down:
#   check → deps → build → up (the topology) → probe each server (a separate start) → for each
#   repetition, each server in turn: start → verify → warm up → sweep → stop
#   → plot → report (summary.md, report.html) → down (the topology, always)
# Settings come from the environment (`make help` lists them); `make bench`
# calls this script. Exit: 0 done, 1 failure (partial results kept and marked
# incomplete), 2 bad input or missing prerequisites, 130 interrupted.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

lab() { python3 -m lab "$@"; }

usage() {
  cat <<'EOF'
usage: [SETTING=value ...] ./run-benchmark.sh [SERVER ...]
       make bench SERVER="grizzly undertow" [SETTING=value ...]
Servers given as arguments are the same as SERVER="..."; every other setting
comes from the environment (`make help` lists them, `make list` the servers).
EOF
}

# Arguments name servers and nothing else: an option or a setting in their
# place would be taken for a server, or ignored while the default is swept.
for arg in "$@"; do
  case $arg in
    -h | --help) usage; exit 0 ;;
    -*) echo "error: unknown option $arg" >&2; usage >&2; exit 2 ;;
    *=*) echo "error: $arg is a setting, not a server: put settings before the" \
              "command ($arg ./run-benchmark.sh) or use make bench $arg" >&2; exit 2 ;;
  esac
done
if (( $# > 0 )); then
  read -ra given <<< "${SERVER-}"               # compare word lists, not spacing
  read -ra named <<< "$*"
  if [[ -n ${SERVER+set} && "${given[*]}" != "${named[*]}" ]]; then
    echo "error: SERVER=\"$SERVER\" and the arguments ($*) disagree: give the servers" \
         "one way" >&2
    exit 2
  fi
  export SERVER="$*"
fi

lab check                               # bad input: exit 2, nothing built or started
read -ra servers <<< "$(lab resolve)"
repeat=$(lab resolve --repeat)
lab deps "${servers[@]}"                # installs missing packages as root, else exit 2
lab build "${servers[@]}"               # toolchains and builds, only what changed
trap 'lab down' EXIT                    # the topology is undone whatever happens next
lab up                                  # namespaces, links, ssh master, images (or nothing)
run=$(lab new-run)                      # results/<run-id>/, never reused
echo "run folder: $run" >&2

status=0
loaded=()
for server in "${servers[@]}"; do       # robustness probe, on a separate start of each server
  code=0
  lab probe "$run" "$server" || code=$?
  case $code in
    0) loaded+=("$server") ;;
    1) status=1 ;;                      # it stopped answering: not loaded (FORCE=1 loads it)
    *) status=$code; loaded=(); break ;;
  esac
done

for rep in $(seq 1 "$repeat"); do       # repetitions interleave the servers, so a
  for server in "${loaded[@]}"; do      # drift of the host hits every server alike
    lab sweep "$run" "$server" "$rep" || { status=$?; break 2; }
  done
done

lab finish "$run" "$status" || status=1 # complete, or incomplete with the reason
lab plot "$run" || status=$((status ? status : 1))
lab report "$run"
exit "$status"
