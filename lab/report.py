"""A run's summary: a Markdown table per server, the conditions, and warnings
that say what to do; also results.json (the manifest with typed rows)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab import results


def typed(row: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        if v in ("True", "False"):
            out[k] = v == "True"
            continue
        try:
            out[k] = int(v)
        except ValueError:
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v
    return out


def conditions(m: dict[str, Any]) -> str:
    c, h, p = m["client"], m["host"], m["params"]
    return (f"{c['tool']} {c['version']}, connection {c['connection']}, "
            f"{p['duration_s']}s/level, server CPU {m['pinning']['server_cpus']}, client CPU "
            f"{m['pinning']['client_cpus']}, {m['topology'].split(' ')[0]}, "
            f"{h['cpu_model']}, {h['cores']} cores")


def summarise(name: str, rows: list[dict[str, Any]], record: dict[str, Any]) -> dict[str, Any]:
    peak = max(rows, key=lambda r: r["rate_rps"])
    last = rows[-1]
    return {
        "server": name,
        "framework": f"{record.get('framework', '?')} {record.get('version', '')}".strip(),
        "workers": record.get("workers"),
        "peak_rps": peak["rate_rps"], "peak_at": peak["concurrency"],
        "resp_ms_at_peak": peak["resp_ms"],
        "rss_end_mb": last["rss_end_kb"] / 1024,
        "rss_peak_mb": max(r["rss_peak_kb"] for r in rows) / 1024,
        "cpu_us_per_req": peak["server_cpu_us_per_req"],
        "client_bound": sum(r["client_bound"] for r in rows), "levels": len(rows),
        "failed": sum(r["failed"] for r in rows),
        "host_busy": sum("host-busy" in str(r["flags"]) for r in rows),
        "steal": sum("steal" in str(r["flags"]).split() for r in rows),
        "notes": record.get("notes", []),
        "status": record.get("status", "?"),
    }


def warnings(m: dict[str, Any], table: list[dict[str, Any]]) -> list[str]:
    out = []
    if m.get("status") != "complete":
        out.append(f"This run is {m.get('status')}: " +
                   ("; ".join(m.get("problems", [])) or "not every server finished") + ".")
    tool = m["client"]["tool"]
    for t in table:
        if t["client_bound"]:
            out.append(f"{tool} used at least 90% of its CPU at {t['client_bound']} of "
                       f"{t['levels']} levels of {t['server']}: those points measure {tool}, "
                       f"not {t['server']}. Give the client more CPUs (CLIENT_CPUS), use "
                       f"KEEPALIVE=1, or a faster client.")
        if t["host_busy"]:
            out.append(f"{t['host_busy']} of {t['levels']} levels of {t['server']} ran while "
                       "other processes took more than 10% of the lab's CPUs: those figures "
                       "are not the server's alone. Rerun on a quiet host.")
        if t["steal"]:
            out.append(f"{t['steal']} of {t['levels']} levels of {t['server']} lost more than "
                       "10% of the lab's CPU time to the hypervisor (steal): on a shared VM, "
                       "figures vary from run to run; compare runs on a dedicated host.")
        out.extend(f"{t['server']}: {n}." for n in t["notes"])
        if t["failed"]:
            out.append(f"{t['server']}: {t['failed']} failed requests; see its client "
                       "output and server.log in the run folder.")
    return out


def write(run: Path) -> str:
    m = results.read_manifest(run)
    grouped = {name: [typed(r) for r in rows] for name, rows in results.rows_by_server(run)}
    table = [summarise(n, rows, m["servers"].get(n, {})) for n, rows in grouped.items()]
    ceiling = next((t for t in table
                    if m["servers"].get(t["server"], {}).get("role") == "ceiling"), None)
    lines = [f"# Run {m['run_id']} ({m['status']})", "", f"Conditions: {conditions(m)}.", "",
             "| server | framework | workers | peak req/s (at c) | mean ms at peak | "
             "RSS end MB | RSS peak MB | CPU µs/req at peak | of ceiling | client-bound | failed |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for t in table:
        share = f"{t['peak_rps'] / ceiling['peak_rps']:.2f}" if ceiling and ceiling["peak_rps"] else "–"
        lines.append(f"| {t['server']} | {t['framework']} | {t['workers']} | "
                     f"{t['peak_rps']:,.0f} ({t['peak_at']}) | {t['resp_ms_at_peak']:.2f} | "
                     f"{t['rss_end_mb']:.1f} | {t['rss_peak_mb']:.1f} | {t['cpu_us_per_req']:.0f} | "
                     f"{share} | {t['client_bound']}/{t['levels']} | {t['failed']} |")
    notes = warnings(m, table)
    if notes:
        lines += ["", "Warnings:", *[f"- {w}" for w in notes]]
    lines += ["", f"Reproduce: `{m['reproduce']}`", ""]
    text = "\n".join(lines)
    (run / "summary.md").write_text(text)
    results.write_json(run / "results.json", {**m, "summary": table, "rows": grouped})
    return text
