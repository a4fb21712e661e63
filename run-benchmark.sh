#!/usr/bin/env bash
# shellcheck disable=SC2317  # on_signal and down are called by trap
# One benchmark run, top-down:
#   check → deps → build → up (the topology) → probe each server (a separate start) → for each
#   round of starts (lab next: ABBA order; REPEAT=auto: only undecided pairs after the
#   minimum), each server in turn: start → verify → warm up → sweep → stop
#   → plot → report (summary.md, report.html) → down (the topology, always)
# Settings come from the environment (`make help` lists them); `make bench`
# calls this script. Exit: 0 done, 1 failure (partial results kept and marked
# incomplete; a server that failed does not stop the others), 2 bad input or
# missing prerequisites, 130 interrupted (the run marked interrupted).
# Nothing outlives the run: each step's keeper (lab/host/keeper.py) kills what the
# step started if it vanishes; the guard below undoes the topology and marks
# the run if this script and its steps all vanish (SIGKILL, the OOM killer).
set -euo pipefail
# A SIGINT ignored when this script started (make run as a script's background
# job, nohup) can be neither trapped nor reset by bash: the script starts again
# (same PID) with it restored, so that a Ctrl-C that lands between two steps,
# or a kill -INT of this script, stops the run as from a terminal.
if [[ $(trap -p INT) == "trap -- '' SIGINT" && -z ${LAB_SIGINT_RESTORED-} ]]; then
  LAB_SIGINT_RESTORED=1 exec python3 -S -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$BASH" "${BASH_SOURCE[0]}" "$@"
fi
cd "$(dirname "${BASH_SOURCE[0]}")"

# Each step runs in the background and is waited for: a signal to this script
# alone (kill PID) is passed on to the step that runs, which stops its server
# and saves what it measured; the run then ends (finish, report, down) with
# exit 130. A Ctrl-C reaches the step directly too; the lab ignores a repeat.
step=""
stopping=""
signals=0
on_signal() {
  stopping=$1
  signals=$((signals + 1))
  if [[ -n $step ]]; then kill -s "$1" "$step" 2>/dev/null || true; fi
}
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM
trap 'on_signal HUP' HUP

# `kill <make's PID>` ends make alone: its recipe's shell and this script
# would go on. Under `make bench` (LAB_MAKE_PID), make's end is passed on as
# a SIGTERM to this script, which stops the run as for any other signal. A
# SIGINT or SIGHUP to make alone (`setsid make bench`, then kill -INT) does not
# end it: make's handler blocks the signal and waits for its recipe, the whole
# run; seen blocked twice, a quarter of a second apart, it is passed on too.
signal_mask() {                         # mask=<field of /proc/PID/status, a number>
  local key value
  mask=0
  while read -r key value; do
    if [[ $key == "$2:" && $value =~ ^[0-9a-f]+$ ]]; then mask=$((16#$value)); fi
  done < "/proc/$1/status"
}
make_handles() {                        # the stop signal make is handling, if any:
  local mask                            # blocked now, not when the watch began
  signal_mask "$LAB_MAKE_PID" SigBlk 2>/dev/null || return 0
  (( mask &= ~blocked_before )) || true
  if (( mask & 1 << 1 )); then echo INT         # bit N-1: signal N
  elif (( mask & 1 << 0 )); then echo HUP
  elif (( mask & 1 << 14 )); then echo TERM; fi
}
watcher=""
if [[ ${LAB_MAKE_PID:-} =~ ^[0-9]+$ ]]; then
  me=$$
  signal_mask "$LAB_MAKE_PID" SigBlk 2>/dev/null || true
  blocked_before=$mask                  # a parent may have handed make a blocked SIGINT
  ( trap '' INT TERM HUP
    while kill -0 "$LAB_MAKE_PID" 2>/dev/null && kill -0 "$me" 2>/dev/null; do
      sig=$(make_handles)
      if [[ -n $sig ]]; then
        sleep 0.25
        if [[ $(make_handles) == "$sig" ]]; then kill -s "$sig" "$me" 2>/dev/null; exit 0; fi
      fi
      sleep 1
    done
    kill -0 "$LAB_MAKE_PID" 2>/dev/null || kill -s TERM "$me" 2>/dev/null || true
  ) </dev/null >/dev/null 2>&1 &
  watcher=$!
  # a signal a process ignores is dropped by the kernel: nothing can pass it on
  if signal_mask "$LAB_MAKE_PID" SigIgn 2>/dev/null && (( mask & 2 )); then
    echo "note: make (PID $LAB_MAKE_PID) ignores SIGINT, as it was started (a script's" \
         "background job, nohup): kill -INT $LAB_MAKE_PID cannot stop the run; Ctrl-C," \
         "kill $LAB_MAKE_PID (SIGTERM) or kill -INT $me (this script) does" >&2
  fi
fi

lab() {
  # once stopping, only the steps that close the run still run, and they
  # ignore further signals (LAB_CLOSING_STEP, lab/cli/common.py): a second
  # Ctrl-C or a SIGTERM passed on cannot leave the run unmarked
  local closing=""
  if [[ -n $stopping ]]; then
    case $1 in finish | plot | report | down) closing=1 ;; *) return 130 ;; esac
  fi
  if [[ -n $closing ]]; then               # ignored from its first instruction
    ( trap '' INT TERM HUP; LAB_CLOSING_STEP=1 exec "$python" -S -m lab "$@" ) &
  else
    "$python" -S -m lab "$@" &
  fi
  step=$!
  local code before
  while :; do
    before=$signals
    code=0
    wait "$step" || code=$?
    (( signals != before )) || break      # a signal ended the wait, not the step:
  done                                    # wait again for the step's own end
  step=""
  if (( code == 127 )) && [[ -n $stopping ]]; then code=130; fi
  return "$code"
}

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

# Every step runs on one interpreter, found once: a version manager's python3
# (pyenv's shim is a bash script) costs a fifth of a second a start. The lab is
# the standard library alone, so its steps start without site (-S), as its
# keepers do (lab/host/procs.py): no .pth file of site-packages runs each step
# (one here imports certifi: 57 ms a start, 15 starts a short run).
python=$(python3 -c 'import sys; print(sys.executable)') || python=""
[[ -n $python ]] || python=python3

resolved=$(lab check)                   # bad input: exit 2, nothing built or started
read -ra servers <<< "$resolved"        # the servers SERVER names
lab deps "${servers[@]}"                # installs missing packages as root, else exit 2
lab build "${servers[@]}"               # toolchains and builds, only what changed
# The guard outlives this script: if it and every step are gone without
# saying "done" (SIGKILL, the OOM killer), it undoes the topology (lab down)
# and marks the run interrupted. It reads the pipe this script and its steps
# hold; the servers never inherit it.
exec {guard}> >(exec "$python" -S -m lab guard)
tell_guard() { ( trap '' PIPE; echo "$*" >&"$guard" ) 2>/dev/null || true; }
down() {
  lab down; tell_guard "done"
  if [[ -n $watcher ]]; then kill "$watcher" 2>/dev/null || true; fi
}
trap down EXIT                          # the topology is undone whatever happens next
lab up                                  # namespaces, links, ssh master, images (or nothing)
run=$(lab new-run)                      # results/<run-id>/, never reused
tell_guard "run $run"
# Held while this script or a step of it lives: `lab new-run` and `lab report`
# tell a run whose lab is gone (marked interrupted) from one still going.
exec {lock}>>"$run/lock"
flock -n "$lock"
# written only when what was opened is the lab's own file: not a link (the
# name's own inode is the open file's), and no other name for it
if [[ $(stat -c %d:%i -- "$run/lock") != $(stat -L -c %d:%i "/proc/self/fd/$lock") \
      || $(stat -L -c %h "/proc/self/fd/$lock") != 1 ]]; then
  echo "error: $run/lock is a link or has another name: the lab never writes through one" >&2
  lab finish "$run" 2 || true
  exit 2
fi
echo "held by run-benchmark.sh" >&"$lock"
echo "run folder: $run" >&2

# A signal, or a step ended by one. A step's 130 alone also means stopping:
# a Ctrl-C reaches the running step too, and a step may end by a signal sent
# to it alone.
interrupted() {
  [[ -n $stopping ]] && return 0
  (( $1 == 130 || $1 > 128 )) || return 1
  stopping=INT                          # the steps that close the run ignore repeats
}

status=0
loaded=()
for server in "${servers[@]}"; do       # robustness probe, on a separate start of each server
  code=0
  lab probe "$run" "$server" || code=$?
  if interrupted "$code"; then status=130; loaded=(); break; fi
  case $code in
    0) loaded+=("$server") ;;
    1) status=1 ;;                      # it stopped answering: not loaded (FORCE=1 loads it)
    *) status=$code; loaded=(); break ;;
  esac
done

# Repetitions interleave the servers, so a drift of the host hits every server
# alike, and alternate which starts first (ABBA). `lab next` prints each round
# ("SERVER REP" lines), nothing when the run is done: REPEAT=N rounds, or with
# REPEAT=auto REPEAT_MIN rounds, then starts only for pairs still undecided.
while (( ${#loaded[@]} )); do
  code=0
  round=$(lab next "$run" "${loaded[@]}") || code=$?
  if interrupted "$code"; then status=130; break; fi
  if (( code )); then status=$code; break; fi
  [[ -n $round ]] || break
  while read -r server rep; do
    code=0
    lab sweep "$run" "$server" "$rep" || code=$?
    if interrupted "$code"; then status=130; break 2; fi
    case $code in
      0) ;;
      1) status=1 ;;                    # this server failed (recorded); the others go on
      *) status=$code; break 2 ;;
    esac
  done <<< "$round"
done

lab finish "$run" "$status" || status=1 # incomplete or interrupted with the reasons (complete: by the report)
lab plot "$run" || status=$((status ? status : 1))
lab report "$run" || status=$((status ? status : 1))
exit "$status"
