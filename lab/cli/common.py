"""What the `python3 -m lab` steps share: the settings read and checked (exit 2
when bad), the servers found, one line of error."""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from lab.setup.paths import ROOT
from lab.measure import topologies
from lab.setup import checklist
from lab.measure.clients import Client, Options, axes, clients
from lab.setup.plan import RunPlan
from lab.setup.makeflags import command_line_variables, misspelt
from lab.setup.fromenv import Traits, from_env
from lab.setup.params import SETTINGS, ConfigError, Params, check_lab_settings, run_settings
from lab.setup.servers import Discovered, ManifestError, Server, found_here


def fail(message: str, code: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def servers_found() -> Discovered:
    return found_here(ROOT)


def refuse_unusable(servers: Discovered, words: list[str]) -> None:
    """ConfigError (exit 2) when a server asked for has a manifest that cannot be used."""
    bad = [why for w in words if w not in servers and (why := servers.why_unusable(w))]
    if bad:
        raise ManifestError("; ".join(dict.fromkeys(bad)))


def traits(servers: dict[str, Server]) -> dict[str, Traits]:
    return {name: Traits(s.language, s.has_workers) for name, s in servers.items()}


def load_params() -> tuple[Params, Discovered]:
    """The run's settings, checked (ConfigError: exit 2). A variable given on
    make's command line that is close to a setting's name is refused."""
    wrong = misspelt(command_line_variables(os.environ.get("MAKEFLAGS", "")))
    if wrong:
        raise ConfigError("; ".join(wrong))
    check_lab_settings(os.environ)
    servers = servers_found()
    refuse_unusable(servers, os.environ.get("SERVER", "").split())
    params = from_env(os.environ, list(servers), axes(), traits=traits(servers),
                      topologies=topologies.selectable())
    refuse_ceiling_pair(params, servers)
    return params, servers


def refuse_ceiling_pair(params: Params, servers: Discovered) -> None:
    """PAIRED compares its two servers, and a ceiling reference (nginx) is
    never ranked: such a pair would end with no verdict (ConfigError: exit 2)."""
    from lab.setup.servers import lookup
    ceiling = [n for n in params.servers if lookup(servers, n).role == "ceiling"]
    if params.paired and ceiling:
        raise ConfigError(f"PAIRED={params.paired} ranks its two servers against each other, "
                          f"and {', '.join(ceiling)} is the ceiling reference (role = "
                          "\"ceiling\"), which is never ranked: the pair would get no verdict; "
                          "pair two servers under test, or drop PAIRED to measure the ceiling "
                          "beside them")


def recorded_settings(params: Params) -> dict[str, str]:
    """The run's settings as its manifest and reproduce line keep them: those
    of a run (not where the lab keeps things), without the other loop's load.
    The rule and plan's (ALPHA, MIN_EFFECT, PAIRED, REPEAT..., the levels,
    DURATION, WARMUP) are written from the run's plan (lab.setup.plan), as
    checked: a paired run's own REPEAT_MIN and REPEAT_MAX, not the registry's."""
    skip = {"concurrency": {"RATE"}, "rate": {"CONCURRENCY"}}[params.load_axis]
    # as given: a value's outer blanks (make keeps `PAIRED=" rmit "`'s last one) dropped
    if not params.repeat.auto:                  # a fixed REPEAT: its bounds mean nothing
        skip |= {"REPEAT_MIN", "REPEAT_MAX"}
    out = {k: os.environ.get(k, SETTINGS[k].default).strip() for k in run_settings()
           if k not in skip}
    return {**out, **RunPlan.of(params).settings()}


def client_for(params: Params, run: Path) -> tuple[Client, dict[str, str]]:
    """The run's client, prepared in the run folder; and its conditions."""
    client = clients()[params.client]()
    return client, client.prepare(run, Options(params.keepalive, params.client_threads,
                                                params.connections))


def compose_services() -> dict[str, checklist.Service]:
    """compose.yaml's services (ConfigError: exit 2)."""
    from lab.measure.topologies.docker import compose
    try:
        return dict(compose.services())
    except compose.ComposeFileError as e:
        raise ConfigError(str(e)) from None


def refuse_unchecked(params: Params, servers: dict[str, Server], names: list[str]) -> None:
    """The checklist of the servers asked, before anything is built: what the
    build would meet (and under RUNTIME=docker, the images); ConfigError
    (exit 2) with every line."""
    tree = checklist.Tree(ROOT, compose_services() if params.runtime == "docker" else {})
    found = checklist.asked(servers, names, tree)
    if found:
        raise ConfigError("the servers' checklist (python3 -m lab check-servers):\n  "
                          + "\n  ".join(f.line() for f in found))


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# how each stop signal usually comes, for a run's last words
STOP_WORDS = {"SIGINT": "SIGINT: Ctrl-C", "SIGTERM": "SIGTERM",
              "SIGHUP": "SIGHUP: its terminal or session closed"}


class Stopped(KeyboardInterrupt):
    """A stop signal interrupted the step (lab.cli.on_stop): which one."""

    def __init__(self, signum: int) -> None:
        self.signame = signal.Signals(signum).name
        super().__init__(self.signame)


def interrupted_text(e: KeyboardInterrupt) -> str:
    """'interrupted (SIGHUP: its terminal or session closed)': the signal that
    stopped the step; a KeyboardInterrupt without one is Python's own Ctrl-C."""
    name = e.signame if isinstance(e, Stopped) else "SIGINT"
    return f"interrupted ({STOP_WORDS.get(name, name)})"
# Set by run-benchmark.sh on the steps that close an interrupted run (finish,
# plot, report, down): they ignore the stop signals, so that a repeated Ctrl-C
# or a SIGTERM passed on after it cannot leave the run unmarked or half drawn.
CLOSING_VARIABLE = "LAB_CLOSING_STEP"
