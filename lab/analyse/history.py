"""A server across runs: the points of `make history SERVER=aws` (a table,
lab.present.historytable) and the trend charts of results/index.html
(plots/history.gp, one chart per server).

Per run that measured the server: peak requests/s (the median of the level
with the highest median, and that level), server CPU µs per request and RSS
at the end at that level, and instructions per request (make cost runs: the
median at the lowest level counted). Runs are in the order they started. A
line breaks wherever the conditions change (CONDITIONS: client, connection
mode, topology, pinning, host, paired or not, server version): figures on
either side of a break are not one series. A run whose peak level was flagged (client-bound,
host-busy, steal or failed requests in a repetition: lab.analyse.gate's
policy.UNCLEAN["gate"]) says so (its flags) in the table and stands apart in the chart:
its figure measures the client or the host, not a step of a trend. Reads
runs only: no import of what measures one.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lab.setup.paths import PLOTS
from lab.analyse import analysis, metrics, policy
from lab.analyse.diff import HOSTNAME, TOPOLOGY, Condition
from lab.record import files, outputs, runcache
from lab.record.manifest import MANIFEST, Manifest
from lab.analyse.wording import gp_quote
from lab.setup.servers import ServerSpec


# What makes two runs one series: a change of any breaks the line.
CONDITIONS: tuple[Condition, ...] = (
    ("client", lambda m: m.client.tool),
    ("connection", lambda m: m.client.connection),
    TOPOLOGY,
    ("server CPUs", lambda m: m.pinning.server_cpus),
    ("client CPUs", lambda m: m.pinning.client_cpus),
    HOSTNAME,
)


@dataclass(frozen=True)
class Point:
    server: str
    run: str                       # the run folder's name
    started: str
    peak_rps: float | None
    peak_at: int | None
    cpu_us_per_req: float | None
    rss_mb: float | None
    instructions: float | None     # per request (make cost)
    conditions: tuple[tuple[str, str], ...]
    report: bool                   # the run folder has report.html
    flags: tuple[str, ...] = ()    # the gate's unclean flags (policy) of the peak level's repetitions


def conditions(m: Manifest, server: str) -> tuple[tuple[str, str], ...]:
    found = [(what, str(of(m) or "?")) for what, of in CONDITIONS]
    # a paired run's figures are each server's beside the other (PAIRED): a series of their own
    found.append(("paired", m.planned.design or "no"))
    if m.params.neighbour:         # beside the lab's neighbour (NEIGHBOUR): a series of its own
        found.append(("neighbour", str(m.params.neighbour)))
    return tuple(found + [("server version", m.server(server).version or "?")])


def point_json(p: Point) -> dict[str, Any]:
    return {**asdict(p), "conditions": [list(c) for c in p.conditions], "flags": list(p.flags)}


def point_of(d: Any) -> Point:
    """A point as the cache keeps it (lab.record.runcache); ValueError when it is not one."""
    try:
        p = Point(**{**d, "conditions": tuple((str(k), str(v)) for k, v in d["conditions"]),
                     "flags": tuple(str(f) for f in d["flags"])})
    except (TypeError, KeyError, ValueError) as e:
        raise ValueError(f"not a history point: {e}") from None
    figures = (p.peak_rps, p.peak_at, p.cpu_us_per_req, p.rss_mb, p.instructions)
    if not all(isinstance(x, str) for x in (p.server, p.run, p.started)) or \
            not isinstance(p.report, bool) or \
            not all(x is None or (isinstance(x, (int, float)) and not isinstance(x, bool))
                    for x in figures):
        raise ValueError("not a history point: a field of another type")
    return p


def run_points(run: Path) -> list[Point]:
    """One point per server the run measured (aliases of make noise left out)."""
    rec, a = analysis.of(run, cost_runs=[])     # a point needs no other run's cost
    m = rec.manifest
    costs: dict[str, float] = {}
    if a.costs is not None:
        for s in a.costs.servers:
            if s.applicable and not s.error and s.levels:
                costs[s.server] = min(s.levels, key=lambda x: x.level).per_request.median
    out = []
    for name in list(a.stats) + [n for n in costs if n not in a.stats]:
        if ServerSpec.parse(name).alias is not None:
            continue
        levels = a.stats.get(name, [])
        top = metrics.peak(levels) if levels else None
        out.append(Point(
            server=name, run=run.name, started=rec.manifest.started or run.name,
            peak_rps=top.rate.median if top else None, peak_at=top.value if top else None,
            cpu_us_per_req=top.cpu_us_per_req.median if top else None,
            rss_mb=round(top.rss_end_kb.median / 1024, 2) if top else None,
            instructions=costs.get(name), conditions=conditions(m, name),
            report=(run / outputs.REPORT).is_file(),
            flags=tuple(policy.unclean(top.flags, "gate")) if top is not None else ()))
    return out


def points(results_dir: Path, unreadable: dict[str, str] | None = None,
           cache: runcache.RunCache | None = None) -> dict[str, list[Point]]:
    """Every server's points across the run folders of results_dir, oldest
    first; a folder that cannot be read is left out (the index lists it as
    unreadable, with the reason; so does `unreadable`, folder: reason)."""
    found: dict[str, list[Point]] = {}
    if not results_dir.is_dir():
        return found
    own = cache is None                 # else the caller's, saved by the caller
    cache = runcache.RunCache(results_dir) if cache is None else cache
    for run in sorted(results_dir.iterdir()):
        if run.name.startswith(".") or not run.is_dir() or \
                not os.path.lexists(run / MANIFEST):
            continue
        got, broken = cached_points(cache, run)
        if broken:
            if unreadable is not None:
                unreadable[run.name] = broken
            continue
        for p in got:
            found.setdefault(p.server, []).append(p)
    if own:
        cache.save({d.name for d in results_dir.iterdir() if d.is_dir()})
    for name in found:
        found[name].sort(key=lambda p: (p.started, p.run))
    return found


def cached_points(cache: runcache.RunCache, run: Path) -> tuple[list[Point], str]:
    """run_points, or the cache's while the run is unchanged; with why the run
    cannot be read ("" : it can)."""
    kept = cache.get(run, "history")
    if isinstance(kept, dict):
        try:
            return [point_of(d) for d in kept.get("points", [])], str(kept.get("broken", ""))
        except ValueError:
            pass                                  # not the cache's: computed again
    try:
        got, broken = run_points(run), ""
    except files.RecordError as e:
        got, broken = [], f"{e.path.name}: {e.problem}"
    cache.put(run, "history", {"points": [point_json(p) for p in got], "broken": broken})
    return got, broken


def changes(before: Point, after: Point) -> list[str]:
    """The conditions that differ from one point to the next."""
    a, b = dict(before.conditions), dict(after.conditions)
    return [f"{k} {a.get(k)} → {b.get(k)}" for k in b if a.get(k) != b.get(k)]


def segments(pts: list[Point]) -> list[list[Point]]:
    """Runs of consecutive points under the same conditions."""
    out: list[list[Point]] = []
    for p in pts:
        if out and not changes(out[-1][-1], p):
            out[-1].append(p)
        else:
            out.append([p])
    return out


def num(x: float | None, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


# ---- the chart (results/index.html) ----------------------------------------------

def safe_name(server: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in server)


def data_file(path: Path, pts: list[Point]) -> None:
    """# n rps cpu rss instructions flagged; a blank line between segments
    (gnuplot breaks the line there), each segment's clean runs first and
    each flagged run after them, alone; ? for a figure the run did not measure."""
    lines = ["# n peak_rps cpu_us_per_req rss_mb instructions_per_req flagged"]
    i = 0

    def gap() -> None:
        if len(lines) > 1 and lines[-1] != "":
            lines.append("")

    def row(n: int, p: Point) -> str:
        return " ".join([str(n)] + [num(v, "g").replace("–", "?") for v in
                                    (p.peak_rps, p.cpu_us_per_req, p.rss_mb, p.instructions)]
                        + [str(int(bool(p.flags)))])

    for seg in segments(pts):
        numbered = [(i + k + 1, p) for k, p in enumerate(seg)]
        i += len(seg)
        gap()
        # the clean runs are the line; each flagged run a point of its own, apart
        lines += [row(n, p) for n, p in numbered if not p.flags]
        for n, p in numbered:
            if p.flags:
                gap()
                lines.append(row(n, p))
    path.write_text("\n".join(lines) + "\n")


def chart_svg(server: str, pts: list[Point]) -> str:
    """The server's trend chart as SVG text, drawn by plots/history.gp in a
    temporary folder (the index inlines it: nothing is kept in the results
    folder); or raises ChartError saying why it could not be drawn."""
    known = [(c, [p.peak_rps, p.cpu_us_per_req, p.rss_mb, p.instructions][c - 2])
             for p in pts for c in (2, 3, 4, 5)]
    panels = " ".join(str(c) for c in (2, 3, 4, 5) if any(v is not None for k, v in known
                                                          if k == c))
    if not panels:
        raise ChartError(f"no figure of {server} in any run")
    with tempfile.TemporaryDirectory(prefix="lab-history-") as tmp:
        dat, svg = Path(tmp) / "history.dat", Path(tmp) / "history.svg"
        data_file(dat, pts)
        setup = (f"dat={gp_quote(str(dat))}; svg={gp_quote(str(svg))}; "
                 f"server={gp_quote(server)}; runs={len(pts)}; panels={gp_quote(panels)}")
        try:
            done = subprocess.run(["gnuplot", "-e", setup, str(PLOTS / "history.gp")],
                                  capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ChartError(f"gnuplot could not run: {e}") from None
        if done.returncode != 0 or not svg.is_file():
            raise ChartError(f"gnuplot history.gp failed: {done.stderr.strip()[-300:]}")
        return svg.read_text(errors="replace")


class ChartError(RuntimeError):
    """Why a trend chart could not be drawn."""
