"""The one settings check every step calls before anything is built or started.

The registry's rule (lab/setup/params.py): a setting this run would not use exits 2.
Each step (bench, cost, profile, reproduce, claims, rerun, calibrate) declares here
which settings it reads; a setting given (non-empty) that the step does not
read is refused with the reason, and a name on make's command line close to a
setting's gets "did you mean". Two exceptions, each named where it applies:

- a value that asks for what the step does anyway (PROBE=0 for a step that
  runs no probe, KEEPALIVE=1 for make cost, which drives keep-alive h2load);
- make profile repeats its run's settings: one given with the value the run
  recorded is the run's own; another value is refused.

RESULTS only in the environment (a standing setting of the shell) for a step
that makes no run folder is a warning; on make's command line it is refused.
"""
from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping

from lab.setup.makeflags import command_line_variables, misspelt
from lab.setup.params import (REGISTRY, SETTINGS, ConfigError, check_lab_settings,
                              parse_duration, run_settings)

LAB = frozenset(s.name for s in REGISTRY if s.scope == "lab")
RUN = frozenset(run_settings())
COST = frozenset({"SERVER", "WORKERS", "BACKLOG", "BIND", "PORT", "SERVER_CPUS", "CLIENT_CPUS",
                  "REPEAT", "RESULTS", "TOPOLOGY", "RUNTIME",
                  "COST_LEVELS", "COST_REQUESTS", "HEADERS"})
USES: dict[str, frozenset[str]] = {
    "bench": RUN | LAB,
    "cost": COST | LAB,
    "profile": frozenset({"PROFILE_AT", "DURATION", "HEADERS", "PORT"}) | LAB,
    "reproduce": frozenset({"STUDY", "QUICK"}) | RUN | LAB,
    "claims": frozenset({"STUDY", "RESULTS"}) | LAB,
    "calibrate": frozenset({"CLIENTS", "CONCURRENCY", "DURATION", "WARMUP", "PORT", "BIND",
                            "SERVER_CPUS", "CLIENT_CPUS", "CLIENT_THREADS", "CLIENT_GRACE"}) | LAB,
}
# values that ask for what the step does anyway
ANYWAY: dict[str, dict[str, str]] = {
    "cost": {"PROBE": "0", "FORCE": "0", "KEEPALIVE": "1"},
    "profile": {"PROBE": "0", "FORCE": "0"},
    "calibrate": {"PROBE": "0", "FORCE": "0"},
}
# why a step does without a setting: what it uses instead
INSTEAD: dict[tuple[str, str], str] = {
    ("cost", "CONCURRENCY"): "it counts at COST_LEVELS",
    ("cost", "RATE"): "it counts at COST_LEVELS",
    ("cost", "CLIENT"): "it drives h2load, keep-alive, with exact request counts",
    ("cost", "CLIENT_THREADS"): "h2load runs one thread",
    ("cost", "KEEPALIVE"): "h2load always keeps the connection alive",
    ("cost", "DURATION"): "it counts exact request counts (COST_REQUESTS), not a time",
    ("cost", "JAVA_OPTS"): "a JVM gets no instruction count (JIT)",
    ("profile", "BIND"): "it starts each server as its run did (RUN's BIND)",
    ("profile", "SERVER"): "it profiles RUN's servers",
    ("profile", "CONCURRENCY"): "it loads at PROFILE_AT, one of RUN's levels",
    ("profile", "RESULTS"): "it writes into RUN",
    ("calibrate", "SERVER"): "it loads the ceiling server",
    ("calibrate", "CLIENT"): "it calibrates CLIENTS",
    ("calibrate", "RESULTS"): "it writes into LAB_CACHE",
}
# settings that say where things go: only in the environment, a warning
WHERE = ("RESULTS",)


def owner(name: str) -> str:
    """Which step a setting belongs to, for the message."""
    applies = SETTINGS[name].applies
    return applies if applies.startswith("make ") else "make bench"


def same(recorded: str, given: str) -> bool:
    """A run's recorded value and one given again are the same setting: as
    written, or as the same duration (a run plan writes WARMUP=0 as 0s)."""
    if recorded == given:
        return True
    try:
        return parse_duration("", recorded, True) == parse_duration("", given, True)
    except ConfigError:
        return False


def check_step(step: str, env: Mapping[str, str], recorded: Mapping[str, str] | None = None,
               uses: frozenset[str] | None = None) -> list[str]:
    """Refuse (ConfigError) what `step` would not use; return the warnings.
    `recorded`: the run's settings a step repeats (make profile); `uses`:
    the settings read, when not USES[step] (make rerun: those of the step it
    repeats)."""
    on_line = command_line_variables(env.get("MAKEFLAGS", ""))
    wrong = misspelt(on_line)
    if wrong:
        raise ConfigError("; ".join(wrong))
    warnings = [f"in the environment: {w}"
                for w in misspelt([k for k in env if k not in SETTINGS and k not in on_line])]
    read = USES[step] if uses is None else uses
    refused = []
    for st in REGISTRY:
        value = env.get(st.name, "").strip()
        if not value or st.name in read or ANYWAY.get(step, {}).get(st.name) == value:
            continue
        if recorded is not None and same(recorded.get(st.name, st.default).strip(), value):
            continue                         # the run's own value: what the step uses
        why = INSTEAD.get((step, st.name))
        text = (f"{st.name}={value} is not used by make {step}"
                + (f" ({why})" if why else
                   f" (it is a setting of {owner(st.name)})" if owner(st.name) != f"make {step}"
                   else ""))
        if st.name in WHERE and st.name not in on_line:
            warnings.append(f"{text}: it is ignored")
        else:
            refused.append(f"{text}: drop it")
    if refused:
        raise ConfigError("; ".join(refused))
    check_lab_settings({k: v for k, v in env.items() if k in read})   # LAB_CACHE, ADA_SOURCES...
    return warnings


def reproduce_line(step: str, settings: Mapping[str, str], outside: str = "") -> str:
    """The line that makes a run again: `make <step>` with its settings, and
    LAB_SERVER_PATH first when a server of the run lives outside the lab
    (`outside`: lab.setup.servers.outside) - without it the line fails with
    "unknown server"."""
    words = ([f"LAB_SERVER_PATH={shlex.quote(outside)}"] if outside else []) + \
        [f"{k}={shlex.quote(v)}" for k, v in settings.items() if v]
    return f"make {step} " + " ".join(words)


def warn(warnings: list[str]) -> None:
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)


def only_for(step: str, env: Mapping[str, str]) -> dict[str, str]:
    """`env` without the settings `step` does not read: the environment of a
    step another step starts (make reproduce's runs and its make cost)."""
    return {k: v for k, v in env.items() if k not in SETTINGS or k in USES[step]}


def checked(step: str, recorded: Mapping[str, str] | None = None) -> None:
    """check_step on this process's environment, warnings printed."""
    warn(check_step(step, os.environ, recorded))
