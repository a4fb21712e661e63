"""A run in bencher.dev's metric format (BMF JSON), for a team that keeps
its benchmark history in Bencher: `python3 -m lab bmf RUN [--output FILE]`,
then `bencher run --file FILE --adapter json`.

The format (https://bencher.dev/docs/reference/bencher-metric-format/):
one JSON object, a key per benchmark, each an object with a key per
measure, each measure {"value": n, "lower_value": n, "upper_value": n}
(value required). Here a benchmark is one server at one level
("<server> c=<level>"), and its measures are the figures the gate can gate
there (lab.analyse.gate.METRICS): requests/s as Bencher's built-in
`throughput` (operations per second) in closed loop, p99 latency as its
built-in `latency` (nanoseconds) at a fixed offered rate, and
`cpu-us-per-request`, `rss-end-kb` and `instructions-per-request` (make
cost runs), created by Bencher on first use. value is the median of the
repetitions, lower_value and upper_value their min and max.

It leaves out what is no server's figure: the ceiling reference, make
noise's alias (`<name>#2`), and every level not measured cleanly (a
repetition with a flag of lab.analyse.policy.UNCLEAN["gate"]: `left_out` says which,
and why); Bencher would read those as steps of the trend. A run none of whose levels is left in (a busy shared
runner) exports `{}`, which Bencher's schema accepts, and the command
exits 3 as the gate does when nothing was compared cleanly, with the
reason on stderr: BMF has no place for a reason that is not a benchmark.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.analyse import analysis, gate
from lab.analyse.metrics import LevelStats, Spread
from lab.analyse.wording import axis_label
from lab.record import files
from lab.setup.servers import ServerSpec

# gate metric: (BMF measure slug, scale from the lab's unit to the measure's)
MEASURES: dict[str, tuple[str, float]] = {
    "rate": ("throughput", 1.0),               # requests/s: Bencher's ops/s
    "p99": ("latency", 1e6),                   # ms -> Bencher's nanoseconds
    "cpu": ("cpu-us-per-request", 1.0),
    "rss": ("rss-end-kb", 1.0),
    "instructions": ("instructions-per-request", 1.0),
}


def metric(s: Spread | None, scale: float) -> dict[str, float] | None:
    if s is None or s.n == 0:
        return None
    return {"value": s.median * scale, "lower_value": s.lo * scale,
            "upper_value": s.hi * scale}


def level_measures(s: LevelStats) -> dict[str, dict[str, float]]:
    """The gated figures of one level: requests/s in closed loop, p99 in
    open loop (as the gate judges them), CPU per request and RSS in both."""
    spreads: dict[str, Spread | None] = {
        "rate": None if s.open_loop else s.rate, "p99": s.p99_ms if s.open_loop else None,
        "cpu": s.cpu_us_per_req, "rss": s.rss_end_kb}
    out = {}
    for name, spread in spreads.items():
        slug, scale = MEASURES[name]
        got = metric(spread, scale)
        if got is not None:
            out[slug] = got
    return out


def of_run(run: Path) -> tuple[dict[str, Any], list[str]]:
    """The run's BMF object, and what was left out with why."""
    rec, a = analysis.of(run)
    m = rec.manifest
    axis = axis_label(m.params.axis or "level")
    found: dict[str, Any] = {}
    left_out: list[str] = []
    ceiling = {n for n, r in m.servers.items() if r.role == "ceiling"}
    for name, levels in a.stats.items():
        if name in ceiling or ServerSpec.parse(name).alias is not None:
            left_out.append(f"{name}: {'the ceiling reference' if name in ceiling else 'an alias of make noise'}, not gated")
            continue
        for s in levels:
            dirty = gate.unclean(s)
            if dirty:
                left_out.append(f"{name} {axis}={s.value}: {', '.join(dirty)}")
                continue
            measures = level_measures(s)
            if measures:
                found[f"{name} {axis}={s.value}"] = measures
    if a.costs is not None:
        slug, scale = MEASURES["instructions"]
        for sc in a.costs.servers:
            if not sc.applicable or sc.error or sc.server in ceiling:
                continue
            for x in sc.levels:
                got = metric(x.per_request, scale)
                if got is not None:
                    found.setdefault(f"{sc.server} c={x.level}", {})[slug] = got
    return found, left_out


def why_empty(left_out: list[str]) -> str:
    """One line: why a run gave no benchmark (the first thing left out, and
    how many more; the notes before it say each)."""
    if not left_out:
        return "the run has no measured level"
    more = f" (+{len(left_out) - 1} more left out)" if len(left_out) > 1 else ""
    return f"no level of a server under test was measured cleanly: {left_out[0]}{more}"


def write(path: Path, data: dict[str, Any]) -> None:
    files.write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
