"""`make noise SERVER=x`: this host's own noise, as an A/A measurement.

One run of the same server twice, as two interleaved entries: x and x#2 (the
same server and build, recorded under its own name with `alias_of: x` in the
manifest). Each repetition starts each entry afresh, so the host's drift hits
both alike, as in any run. The difference between the two entries' medians
is what this host gives between two identical servers: per metric, the
largest over the levels measured cleanly in both is the floor, kept in the
cache (lab/analyse/floors.py) with the conditions it was taken under. `make compare`
calls no smaller difference a regression under matching conditions.

It also says this host's realized false-alarm rate: how many of the run's
verdicts between the two identical entries (primary and per level, req/s and
server CPU per request) said "better", out of how many that could decide
(lab.analyse.decide: each was allowed a false "better" at its α).

Settings are those of a run (CONCURRENCY, DURATION, CLIENT, ...); REPEAT is
5 unless given (the fewest starts on which the rule can decide at α=1%),
PROBE is 0 (the probe is not what is measured here).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from lab.setup.paths import ROOT
from lab.analyse import analysis, floors, gate
from lab.record import files
from lab.setup.exits import Exit
from lab.setup.servers import ServerSpec, ServerSpecError
from lab.analyse.metrics import LevelStats, Spread
from lab.analyse.verdicts import RANKED, Judgement
from lab.setup.markdown import Table
from lab.setup.params import ConfigError

METRIC_OF = {"rate": "rate", "p99": "p99_ms", "cpu": "cpu_us_per_req", "rss": "rss_end_kb"}


def second(server: str) -> str:
    """The A/A run's second entry: the server's alias #2."""
    return str(replace(ServerSpec.parse(server), alias=2))


def settings(env: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The one server measured (written plainly, as the run records it), and
    the environment of its A/A run (ConfigError: exit 2)."""
    words = env.get("SERVER", "").split()
    try:
        spec = ServerSpec.parse(words[0]) if len(words) == 1 and words != ["all"] else None
    except ServerSpecError as e:
        if e.part != "#":
            raise ConfigError(f"SERVER: {e} ({e.hint})") from None
        spec = None                 # NAME#K, however written: an alias, not a server
    if spec is None or spec.alias is not None:
        raise ConfigError(f"make noise measures one server: give SERVER=<one name> (got "
                          f"{env.get('SERVER', '')!r})")
    server = str(spec)
    run_env = {**env, "SERVER": f"{server} {second(server)}", "PROBE": "0"}
    # start pairs need more of them than starts a side: the exact paired test
    # decides at α=1% from 8 pairs (lab.analyse.paired)
    run_env.setdefault("REPEAT", "10" if env.get("PAIRED", "").strip() else "5")
    return server, run_env


def spread_pct(x: LevelStats, y: LevelStats, metric: str) -> float | None:
    """100 * |median(y) / median(x) - 1| of one metric, or None when it does
    not apply at this level (p99 in closed loop, req/s in open loop)."""
    if (metric == "p99") != x.open_loop:
        return None
    a: Spread | None = getattr(x, METRIC_OF[metric])
    b: Spread | None = getattr(y, METRIC_OF[metric])
    if a is None or b is None or a.median == 0:
        return None
    return 100 * abs(b.median / a.median - 1)


def floors_of(stats: dict[str, list[LevelStats]], server: str
              ) -> tuple[dict[str, float], list[int], list[str]]:
    """Per metric, the largest A/A difference over the levels measured cleanly
    in both entries; those levels; and why each other level was left out."""
    at = {s.value: s for s in stats.get(second(server), [])}
    got: dict[str, float] = {}
    levels, left_out = [], []
    for x in stats.get(server, []):
        y = at.get(x.value)
        if y is None:
            left_out.append(f"{x.value}: not measured in {second(server)}")
            continue
        dirty = sorted(set(gate.unclean(x)) | set(gate.unclean(y)))
        if dirty:
            left_out.append(f"{x.value}: {', '.join(dirty)}")
            continue
        levels.append(x.value)
        for metric in METRIC_OF:
            pct = spread_pct(x, y, metric)
            if pct is not None:
                got[metric] = max(got.get(metric, 0.0), round(pct, 2))
    return got, levels, left_out


def false_alarms(a: analysis.Analysis) -> tuple[int, int, float, int]:
    """Of an A/A run's verdicts (primary and per level; req/s and server CPU
    per request): how many said "better" (a false alarm: the two entries are
    one server), how many could have (enough starts or pairs for their α),
    the false alarms expected at most (the sum of their α), and how many
    said "equivalent" (what the host lets the rule see)."""
    said = able = same = 0
    allowed = 0.0
    judged: list[Judgement] = []
    for v in a.primary + a.verdicts:
        if v.alpha is not None and v.starts is not None:
            judged.append(Judgement(v.kind.replace("faster", "better"), None, None, None,
                                    v.text, v.alpha, v.delta_pct, v.starts))
        if v.cpu is not None:
            judged.append(v.cpu)
    for j in judged:
        if j.alpha is None or j.starts is None or "too few starts" in j.text \
                or "too few pairs" in j.text:
            continue
        able += 1
        allowed += j.alpha
        said += j.kind in RANKED
        same += j.kind == "equivalent"
    return said, able, allowed, same


def print_floors(server: str, level_values: list[int], found: dict[str, float]) -> None:
    """The floors as a Markdown table on stdout."""
    print(Table(["metric", f"A/A floor ({server} vs {second(server)}, largest over levels "
                           f"{' '.join(map(str, level_values))})"],
                [[metric, f"{pct:.2f}%"] for metric, pct in sorted(found.items())]).text())


def record_floor(run: Path, server: str, cache: Path) -> int:
    """Read the A/A run, keep its floor in the cache, say what it is, and the
    realized false-alarm rate of its verdicts."""
    rec, a = analysis.of(run)
    said, able, allowed, same = false_alarms(a)
    print(f"A/A verdicts: {said} of {able} said \"better\" between {server} and "
          f"{second(server)} (a false alarm each; the rule allows {allowed:.2f} on average"
          + (f"); {same} of {able} said \"equivalent\"" if able else
             "; none could decide: give REPEAT=5 or more (start pairs: 10))"))
    found, levels, left_out = floors_of(a.stats, server)
    for why in left_out:
        print(f"[noise] level {why}: left out of the floor", file=sys.stderr)
    if not levels:
        print(f"error: no level of {run.name} was measured cleanly in both {server} and "
              f"{second(server)}: no floor recorded; run `make noise SERVER={server}` again "
              "on a quieter host", file=sys.stderr)
        return int(Exit.NOT_COMPARABLE)      # as compare says it: nothing measured cleanly
    floor = floors.Floor(server=server, made=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                         run=str(run.resolve()), conditions=floors.conditions_of(rec.manifest),
                         floors_pct=found, levels=levels,
                         duration_s=rec.manifest.params.duration_s,
                         repeat=rec.manifest.planned.repeat.least)
    path = floors.add(cache, floor)
    print_floors(server, levels, found)
    print(f"noise floor of {server} recorded in {path} (conditions: "
          f"{', '.join(f'{k} {v}' for k, v in floor.conditions.items())})", file=sys.stderr)
    return int(Exit.OK)


def folders(results: Path) -> set[Path]:
    return {p for p in results.iterdir() if p.is_dir()} if results.is_dir() else set()


def run(env: dict[str, str], cache: Path) -> int:
    server, run_env = settings(env)
    results = ROOT / (run_env.get("RESULTS") or "results")
    before = folders(results)
    how = f"as start pairs (PAIRED={run_env['PAIRED']})" if run_env.get("PAIRED", "").strip() \
        else "interleaved"
    print(f"[noise] {server} twice, {how} ({server} and {second(server)}), "
          f"REPEAT={run_env['REPEAT']}", file=sys.stderr, flush=True)
    child = subprocess.Popen([str(ROOT / "run-benchmark.sh")], cwd=ROOT, env=run_env)
    try:
        code = child.wait()
    except KeyboardInterrupt:
        child.send_signal(signal.SIGTERM)      # it stops its step and marks the run
        child.wait()
        raise
    made = sorted(folders(results) - before)
    if code != 0:
        print(f"error: the A/A run failed (exit {code}); no floor recorded", file=sys.stderr)
        return code
    if len(made) != 1:
        print(f"error: expected one new run folder in {results}, found {len(made)}",
              file=sys.stderr)
        return int(Exit.FAILED)
    try:
        return record_floor(made[0], server, cache)
    except files.RecordError as e:
        print(f"error: {e}", file=sys.stderr)
        return int(Exit.FAILED)


def main() -> int:
    from lab.setup.paths import cache_dir
    return run(dict(os.environ), cache_dir())
