"""The charts of a run: data files from results.csv, then one gnuplot script
per chart (plots/*.gp), each drawn as PNG and SVG."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lab import report, results

PLOTS = Path(__file__).resolve().parents[1] / "plots"
CHARTS = ("rps", "rss", "latency")
MB = 1024


def export(run: Path) -> tuple[list[str], str]:
    """Write data/<server>.dat, data/rss.dat and the published two-column
    <server>/rps.dat; returns the measured servers and the ceiling."""
    m = results.read_manifest(run)
    data = run / "data"
    data.mkdir(exist_ok=True)
    measured, ceiling, rss_lines = [], "", []
    for name, rows in results.rows_by_server(run):
        role = m["servers"].get(name, {}).get("role", "server")
        lines = ["# concurrency req/s resp_ms rss_end_MB rss_peak_MB client_bound "
                 "cpu_us_per_req failed disturbed"]
        for r in rows:
            disturbed = bool({"steal", "host-busy"} & set(r["flags"].split()))
            lines.append(f"{r['concurrency']} {r['rate_rps']} {r['resp_ms']} "
                         f"{int(r['rss_end_kb']) / MB:.2f} {int(r['rss_peak_kb']) / MB:.2f} "
                         f"{int(r['client_bound'] == 'True')} {r['server_cpu_us_per_req']} "
                         f"{r['failed']} {int(disturbed)}")
        (data / f"{name}.dat").write_text("\n".join(lines) + "\n")
        published = ["# concurrency req/s"] + [f"{r['concurrency']} {r['rate_rps']}" for r in rows]
        (run / name / "rps.dat").write_text("\n".join(published) + "\n")
        peak_kb = max(int(r["rss_peak_kb"]) for r in rows)
        rss_lines.append(f"{name} {int(rows[-1]['rss_end_kb']) / MB:.2f} {peak_kb / MB:.2f} {role}")
        if role == "ceiling":
            ceiling = name
        else:
            measured.append(name)
    if not measured and ceiling:        # a run of the reference alone: draw it as a server
        measured, ceiling = [ceiling], ""
    (data / "rss.dat").write_text("# server rss_end_MB rss_peak_MB role\n"
                                  + "\n".join(rss_lines) + "\n")
    return measured, ceiling


def gp_quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def draw(run: Path) -> int:
    measured, ceiling = export(run)
    if not measured and not ceiling:
        print(f"error: {run} has no measured levels to plot", file=sys.stderr)
        return 1
    m = results.read_manifest(run)
    cond = report.conditions(m) + ("" if m.get("status") == "complete" else " - INCOMPLETE RUN")
    for chart in CHARTS:
        for fmt in ("png", "svg"):
            setup = (f"run={gp_quote(str(run))}; servers={gp_quote(' '.join(measured))}; "
                     f"ceiling={gp_quote(ceiling)}; conditions={gp_quote(cond)}; fmt='{fmt}'")
            out = subprocess.run(["gnuplot", "-e", setup, str(PLOTS / f"{chart}.gp")],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                print(f"error: gnuplot {chart}.gp failed: {out.stderr.strip()[-500:]}",
                      file=sys.stderr)
                return 1
    print(f"charts: {', '.join(str(run / f'{c}.png') for c in CHARTS)}", file=sys.stderr)
    return 0
