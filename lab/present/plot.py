"""The charts of a run: data files from the level statistics (median, min,
max over repetitions), then one gnuplot script per chart (plots/*.gp), each
drawn as PNG and SVG."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from lab.setup.paths import PLOTS
from lab.analyse import analysis, metrics
from lab.record import series
from lab.analyse.analysis import Analysis
from lab.analyse.wording import gp_quote, why_not_a_figure, xlabel
from lab.record import files
from lab.record.rows import CSV
from lab.record.runrecord import RunRecord
from lab.setup.names import why_not_a_recorded_name
from lab.setup.params import LOAD_AXES

MB = 1024
COLUMNS = ("value rate rate_lo rate_hi resp_ms resp_lo resp_hi rss_end_MB rss_peak_MB "
           "client_bound cpu_us_per_req cpu_lo cpu_hi failed disturbed noisy p50_ms p90_ms "
           "p99_ms unranked failing saturated")


def num(x: float | None) -> str:
    """A figure for gnuplot; NaN (a gap in the curve) when missing or impossible."""
    return "NaN" if x is None or why_not_a_figure(x) else f"{x:g}"


def export(rec: RunRecord, a: Analysis) -> tuple[list[str], str, bool]:
    """Write data/<server>.dat, data/rss.dat and the published two-column
    <server>/rps.dat (medians); returns the measured servers, the ceiling, and
    whether any level has latency percentiles."""
    run, m = rec.folder, rec.manifest
    data = run / "data"
    measured, ceiling, rss_lines, percentiles = [], "", [], False
    for name, levels in a.stats.items():
        role = m.role(name)
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
                *(num(x.median if x else None) for x in (s.p50_ms, s.p90_ms, s.p99_ms)),
                str(int(not s.ranked)),
                # failing: more requests failed than a ranked req/s allows
                str(int(s.failed_pct > metrics.FAILED_SHARE_PCT)),
                str(int("saturated" in flags))]))
        files.write_atomic(data / f"{safe(name, run)}.dat", "\n".join(lines) + "\n", run)
        published = ["# value req/s"] + [f"{s.value} {s.rate.median}" for s in levels]
        files.write_atomic(run / name / "rps.dat", "\n".join(published) + "\n", run)
        last = levels[-1]
        rss_lines.append(f"{name} {last.rss_end_kb.median / MB:.2f} "
                         f"{max(s.rss_peak_kb for s in levels) / MB:.2f} {role} "
                         f"{num(last.pss_kb.median / MB if last.pss_kb else None)} "
                         f"{num(last.private_kb.median / MB if last.private_kb else None)}")
        if role == "ceiling":
            ceiling = name
        else:
            measured.append(name)
    if not measured and ceiling:        # a run of the reference alone: draw it as a server
        measured, ceiling = [ceiling], ""
    files.write_atomic(data / "rss.dat", "# server rss_end_MB rss_peak_MB role pss_end_MB "
                       "private_end_MB\n" + "\n".join(rss_lines) + "\n", run)
    return measured, ceiling, percentiles


def safe(name: str, run: Path) -> str:
    """A server name read from the run, checked before it becomes a path."""
    why = why_not_a_recorded_name(name)
    if why:
        raise files.UnsafePath(run / CSV, why)
    return name


class Job(NamedTuple):
    """One gnuplot run: plots/<script> with `setup`, drawing `output`; `failed`
    opens the error line when it fails."""
    script: str
    setup: str
    output: str
    failed: str


def gnuplot(script: str, setup: str, out: Path) -> str:
    """Run plots/<script> with gnuplot writing into the private folder `out`;
    the error text, or "" when done. gnuplot runs in a session of its own:
    it stops drawing on SIGINT even where the signal is ignored, so a second
    Ctrl-C to the group of a run that closes (run-benchmark.sh's closing
    steps ignore it) would leave a chart undrawn; a Ctrl-C to `lab plot`
    itself still stops it (subprocess.run kills its child on the way out)."""
    done = subprocess.run(["gnuplot", "-e", f"{setup}; out={gp_quote(str(out))}",
                           str(PLOTS / script)], capture_output=True, text=True,
                          start_new_session=True)
    if done.returncode != 0:
        return done.stderr.strip()[-500:] or f"exit code {done.returncode}"
    return ""


def gnuplots(jobs: list[Job], run: Path) -> str:
    """Run the jobs side by side (as many at once as there are CPUs; one after
    another, 10 charts took a second), each writing into a private temporary
    folder; then, in the jobs' order, move each output into the run with the
    lab's one writer (never through a link planted there), stopping at the
    first that failed: its error line, or "" when all are done."""
    with tempfile.TemporaryDirectory(prefix=".lab-plot-") as tmp:
        outs = [Path(tmp) / str(i) for i in range(len(jobs))]
        for out in outs:
            out.mkdir()
        pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1)
        try:
            errors = list(pool.map(lambda job, out: gnuplot(job.script, job.setup, out),
                                   jobs, outs))
        finally:                  # interrupted: the charts drawing end, no other starts
            pool.shutdown(cancel_futures=True)
        for job, out, err in zip(jobs, outs, errors):
            if err:
                return f"{job.failed}: {err}"
            files.copy_into(out / job.output, run / job.output, run)
    return ""


def charts(axis: str, percentiles: bool) -> list[str]:
    """Which charts this run gets: a knob sweep has its own three-panel chart."""
    if axis not in LOAD_AXES:           # a server knob (workers, backlog): a start per value
        return ["knob", "rss"]
    return ["rps", "rss", "latency"] + (["percentiles"] if percentiles else [])


def ticks(a: Analysis) -> str:
    """The swept values, as the x axis's tics: whole numbers only."""
    return " ".join(str(v) for v in sorted({s.value for levels in a.stats.values()
                                            for s in levels}))


def draw(run: Path) -> int:
    rec, a = analysis.of(run)
    measured, ceiling, percentiles = export(rec, a)
    if not measured and not ceiling:
        print(f"error: {run} has no measured levels to plot", file=sys.stderr)
        return 1
    m = rec.manifest
    axis = m.params.axis
    cond = analysis.conditions(m) + ("" if m.status == "complete" else " - INCOMPLETE RUN")
    drawn = charts(axis, percentiles)
    jobs = [Job(f"{chart}.gp",
                f"run={gp_quote(str(run))}; servers={gp_quote(' '.join(measured))}; "
                f"ceiling={gp_quote(ceiling)}; conditions={gp_quote(cond)}; "
                f"xlabel={gp_quote(xlabel(axis))}; xticks={gp_quote(ticks(a))}; fmt='{fmt}'; "
                f"failshare='{metrics.FAILED_SHARE_PCT:g}'",
                f"{chart}.{fmt}", f"gnuplot {chart}.gp failed")
            for chart in drawn for fmt in ("png", "svg")]
    err = gnuplots(jobs, run)
    if err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for name in [*measured, *([ceiling] if ceiling else [])]:
        has = export_series(run, name)
        if has is None:
            continue
        has_rps, has_server = has
        err = gnuplots([Job("series.gp",
                            f"run={gp_quote(str(run))}; server={gp_quote(name)}; "
                            f"client={gp_quote(m.client.tool or 'the client')}; "
                            f"has_rps={int(has_rps)}; has_server={int(has_server)}; "
                            f"conditions={gp_quote(cond)}; fmt='{fmt}'",
                            f"series-{name}.{fmt}", f"gnuplot series.gp failed for {name}")
                        for fmt in ("png", "svg")], run)
        if err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        drawn.append(f"series-{name}")
    print(f"charts: {', '.join(str(run / f'{c}.png') for c in drawn)}", file=sys.stderr)
    return 0


def export_series(run: Path, name: str) -> tuple[bool, bool] | None:
    """data/series-<name>.dat from the server's per-second files (lab.record.series),
    levels one after another on one time axis, a blank line between them.
    None when it has none (a run before they were recorded); else whether
    any second has the client's req/s, and whether any has the server's CPU
    (a server on another host is not sampled per second: TOPOLOGY=ssh)."""
    found = series.files(run / safe(name, run))
    if not found:
        return None
    lines, t, has_rps, has_server = ["# t_s rps server_cpu_pct rss_MB"], 0, False, False
    for path in found:
        rows = series.read(path)
        for second, rps, cpu, rss in rows:
            has_rps = has_rps or rps is not None
            has_server = has_server or cpu is not None
            lines.append(f"{t + second} {num(rps)} {num(cpu)} "
                         f"{num(None if rss is None else rss / MB)}")
        t += len(rows)
        lines.append("")
    files.write_atomic(run / "data" / f"series-{name}.dat", "\n".join(lines) + "\n", run)
    return has_rps, has_server
