"""The charts of a run: data files from the level statistics (median, min,
max over repetitions), then one gnuplot script per chart (plots/*.gp), each
drawn as PNG and SVG."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

from lab import report, results
from lab.params import KNOBS

PLOTS = Path(__file__).resolve().parents[1] / "plots"
MB = 1024
XLABEL = {"concurrency": "concurrency (simultaneous clients)",
          "rate": "offered rate (requests/s, open loop)",
          "workers": "server workers (threads/tasks)", "backlog": "accept backlog"}
COLUMNS = ("value rate rate_lo rate_hi resp_ms resp_lo resp_hi rss_end_MB rss_peak_MB "
           "client_bound cpu_us_per_req cpu_lo cpu_hi failed disturbed noisy p50_ms p90_ms "
           "p99_ms")


def num(x: float | None) -> str:
    return "NaN" if x is None or math.isnan(x) else f"{x:g}"


def export(run: Path) -> tuple[list[str], str, bool]:
    """Write data/<server>.dat, data/rss.dat and the published two-column
    <server>/rps.dat (medians); returns the measured servers, the ceiling, and
    whether any level has latency percentiles."""
    m = results.read_manifest(run)
    data = run / "data"
    data.mkdir(exist_ok=True)
    measured, ceiling, rss_lines, percentiles = [], "", [], False
    for name, levels in report.stats_of(run).items():
        role = m["servers"].get(name, {}).get("role", "server")
        lines = ["# " + COLUMNS]
        for s in levels:
            flags = s.all_flags()
            percentiles = percentiles or s.p99_ms is not None
            lines.append(" ".join([
                str(s.value), num(s.rate.median), num(s.rate.lo), num(s.rate.hi),
                num(s.resp_ms.median), num(s.resp_ms.lo), num(s.resp_ms.hi),
                f"{s.rss_end_kb.median / MB:.2f}", f"{s.rss_peak_kb / MB:.2f}",
                str(int(s.client_bound)), num(s.cpu_us_per_req.median),
                num(s.cpu_us_per_req.lo), num(s.cpu_us_per_req.hi), str(s.failed),
                str(int(bool({"steal", "host-busy"} & set(flags)))), str(int(s.noisy)),
                *(num(x.median if x else None) for x in (s.p50_ms, s.p90_ms, s.p99_ms))]))
        (data / f"{name}.dat").write_text("\n".join(lines) + "\n")
        published = ["# value req/s"] + [f"{s.value} {s.rate.median}" for s in levels]
        (run / name).mkdir(exist_ok=True)
        (run / name / "rps.dat").write_text("\n".join(published) + "\n")
        rss_lines.append(f"{name} {levels[-1].rss_end_kb.median / MB:.2f} "
                         f"{max(s.rss_peak_kb for s in levels) / MB:.2f} {role}")
        if role == "ceiling":
            ceiling = name
        else:
            measured.append(name)
    if not measured and ceiling:        # a run of the reference alone: draw it as a server
        measured, ceiling = [ceiling], ""
    (data / "rss.dat").write_text("# server rss_end_MB rss_peak_MB role\n"
                                  + "\n".join(rss_lines) + "\n")
    return measured, ceiling, percentiles


def gp_quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def charts(axis: str, percentiles: bool) -> list[str]:
    """Which charts this run gets: a knob sweep has its own three-panel chart."""
    if axis in KNOBS:
        return ["knob", "rss"]
    return ["rps", "rss", "latency"] + (["percentiles"] if percentiles else [])


def draw(run: Path) -> int:
    measured, ceiling, percentiles = export(run)
    if not measured and not ceiling:
        print(f"error: {run} has no measured levels to plot", file=sys.stderr)
        return 1
    m = results.read_manifest(run)
    axis = m["params"]["axis"]
    cond = report.conditions(m) + ("" if m.get("status") == "complete" else " - INCOMPLETE RUN")
    drawn = charts(axis, percentiles)
    for chart in drawn:
        for fmt in ("png", "svg"):
            setup = (f"run={gp_quote(str(run))}; servers={gp_quote(' '.join(measured))}; "
                     f"ceiling={gp_quote(ceiling)}; conditions={gp_quote(cond)}; "
                     f"xlabel={gp_quote(XLABEL.get(axis, axis))}; fmt='{fmt}'")
            out = subprocess.run(["gnuplot", "-e", setup, str(PLOTS / f"{chart}.gp")],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                print(f"error: gnuplot {chart}.gp failed: {out.stderr.strip()[-500:]}",
                      file=sys.stderr)
                return 1
    print(f"charts: {', '.join(str(run / f'{c}.png') for c in drawn)}", file=sys.stderr)
    return 0
