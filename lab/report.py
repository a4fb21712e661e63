"""A run's summary: conditions, a table per server and level with the spread
of repetitions, verdicts between servers, and warnings that say what to do.

Writes summary.md (Markdown), levels.csv (one row per server and level:
median, min, max) and results.json (the manifest with typed rows, level
statistics and verdicts). All arithmetic comes from lab.metrics."""
from __future__ import annotations

import csv
from dataclasses import asdict
from pathlib import Path
from typing import Any

from lab import calibrate, costview, metrics, profileview, results
from lab.metrics import LevelStats, Spread

AXIS_LABEL = {"concurrency": "c", "rate": "offered req/s", "workers": "workers",
              "backlog": "backlog"}


def conditions(m: dict[str, Any]) -> str:
    c, h, p = m["client"], m["host"], m["params"]
    threads = f", {c['threads']} threads" if c.get("threads") else ""
    duration = "" if m.get("kind") == "cost" else f"{p['duration_s']}s/level, "
    return (f"{c['tool']} {c['version']}{threads}, connection {c['connection']}, "
            f"{duration}{p.get('repeat', 1)} rep, server CPU "
            f"{m['pinning']['server_cpus']}, client CPU {m['pinning']['client_cpus']}, "
            f"{m['topology'].split(' ')[0]}, {h['cpu_model']}, {h['cores']} cores")


def rng(s: Spread, scale: float = 1.0, fmt: str = ",.0f") -> str:
    """'median [min–max]', or the value alone for one repetition."""
    med = format(s.median / scale, fmt)
    if s.n == 1:
        return med
    return f"{med} [{format(s.lo / scale, fmt)}–{format(s.hi / scale, fmt)}]"


def stats_of(run: Path) -> dict[str, list[LevelStats]]:
    return {name: metrics.level_stats(rows) for name, rows in results.rows_by_server(run)}


def capacity_note(m: dict[str, Any], name: str, s: LevelStats) -> str | None:
    """'aws 4.9 k req/s = 97% of what siege drove against the ceiling here (c=8)'."""
    p = m["params"]
    if s.open_loop or p["axis"] not in ("concurrency",):
        return None
    got = calibrate.capacity(m.get("calibration"), p["client"], p["keepalive"], s.value)
    if got is None:
        return None
    cap, level = got
    share = metrics.capacity_share(s.rate.median, cap)
    at = f"c={level}" if level == s.value else f"nearest calibrated level c={level}"
    verdict = "client-limited" if share >= metrics.CAPACITY_LIMITED else "below the client's limit"
    return (f"{name} {s.rate.median / 1000:.1f} k req/s at c={s.value} = {share:.0%} of what "
            f"{p['client']} drove against the ceiling here ({at}): {verdict}")


def server_table(m: dict[str, Any], stats: dict[str, list[LevelStats]]) -> list[str]:
    axis = AXIS_LABEL.get(m["params"]["axis"], m["params"]["axis"])
    lines = [f"| server | framework | peak req/s (at {axis}) | mean ms at peak | p99 ms at peak | "
             "RSS end MB | RSS peak MB | CPU µs/req at peak | client-bound levels | failed |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    cgroup = any(s.cgroup_mem_kb for levels in stats.values() for s in levels)
    if cgroup:       # RUNTIME=docker: the container's cgroup figure beside the RSS
        lines = [lines[0].replace("RSS end MB |", "RSS end MB | cgroup memory end MB |"),
                 lines[1] + "---|"]
    for name, levels in stats.items():
        rec = m["servers"].get(name, {})
        top = metrics.peak(levels)
        last = levels[-1]
        bound = sum(1 for s in levels if s.client_bound)
        framework = f"{rec.get('framework', '?')} {rec.get('version', '')}".strip()
        p99 = rng(top.p99_ms, fmt=".2f") if top.p99_ms else "–"
        mem = rng(last.rss_end_kb, 1024, '.1f')
        if cgroup:
            mem += " | " + (rng(last.cgroup_mem_kb, 1024, '.1f') if last.cgroup_mem_kb else "–")
        lines.append(
            f"| {name} | {framework} | {rng(top.rate)} ({top.value}) | "
            f"{rng(top.resp_ms, fmt='.2f')} | {p99} | {mem} | "
            f"{top.rss_peak_kb / 1024:.1f} | {rng(top.cpu_us_per_req)} | "
            f"{bound}/{len(levels)} | {sum(s.failed for s in levels)} |")
    if cgroup:
        lines += ["", "RSS: the server's processes' resident memory (/proc, shared library "
                  "pages counted in full). cgroup memory: what the container's cgroup is "
                  "charged, less inactive page cache (as `docker stats` shows it; "
                  "MEM_LIMIT limits this one): page cache the container read or wrote and "
                  "kernel memory included, pages first charged elsewhere not."]
    return lines


def level_table(m: dict[str, Any], stats: dict[str, list[LevelStats]]) -> list[str]:
    axis = AXIS_LABEL.get(m["params"]["axis"], m["params"]["axis"])
    lines = [f"| server | {axis} | req/s median [min–max] | spread | mean ms | p99 ms | "
             "client CPU % | flags |", "|---|---|---|---|---|---|---|---|"]
    for name, levels in stats.items():
        for s in levels:
            spread = f"{(s.rate.ratio - 1):.0%}" if s.rate.n > 1 else "–"
            p99 = rng(s.p99_ms, fmt=".2f") if s.p99_ms else "–"
            flags = ", ".join(f"{f} ({s.flags[f]}/{s.rate.n})" if f in s.flags else f
                              for f in s.all_flags()) or "–"
            lines.append(f"| {name} | {s.value} | {rng(s.rate)} | {spread} | "
                         f"{rng(s.resp_ms, fmt='.2f')} | {p99} | "
                         f"{rng(s.client_cpu_pct, fmt='.0f')} | {flags} |")
    return lines


def verdict_section(m: dict[str, Any], stats: dict[str, list[LevelStats]]
                    ) -> tuple[list[str], list[metrics.Verdict]]:
    compared = {n: s for n, s in stats.items()
                if m["servers"].get(n, {}).get("role", "server") != "ceiling"}
    if len(compared) < 2:
        return [], []
    at = metrics.verdict_values(compared, tuple(m["params"].get("verdict_at") or ()))
    found = metrics.verdicts(compared, at)
    axis = AXIS_LABEL.get(m["params"]["axis"], m["params"]["axis"])
    basis = ("p99 latency at the same offered rate" if any(
        s.open_loop for v in compared.values() for s in v) else "requests/s")
    lines = [f"## Verdicts ({basis}, at {axis} = {', '.join(map(str, at))})", "",
             f"| {axis} | pair | verdict |", "|---|---|---|"]
    lines += [f"| {v.value} | {v.a} vs {v.b} | {v.text} |" for v in found]
    return lines, found


def warnings(m: dict[str, Any], stats: dict[str, list[LevelStats]]) -> list[str]:
    """hyperfine-style: what was seen, then what to do."""
    out = []
    if m.get("status") != "complete":
        out.append(f"This run is {m.get('status')}: " +
                   ("; ".join(m.get("problems", [])) or "not every server finished") + ".")
    tool = m["client"]["tool"]
    reps = m["params"].get("repeat", 1)
    for name, levels in stats.items():
        n = len(levels)
        def count(flag: str) -> int:
            return sum(1 for s in levels if flag in s.all_flags())
        if count("client-bound"):
            out.append(f"{tool} used at least {metrics.CLIENT_BOUND_PCT:.0f}% of its CPU at "
                       f"{count('client-bound')} of {n} levels of {name}: those points measure "
                       f"{tool}, not {name}. Give the client more CPUs (CLIENT_CPUS), use "
                       "KEEPALIVE=1, or a faster client (CLIENT=wrk).")
        if count("noisy"):
            worst = max(levels, key=lambda s: s.rate.ratio)
            out.append(f"{name}: {count('noisy')} of {n} levels spread more than "
                       f"{metrics.NOISY_SPREAD - 1:.0%} across {reps} repetitions (worst: "
                       f"{worst.rate.ratio - 1:.0%} at {worst.value}). Consider more repetitions "
                       "(REPEAT), a longer DURATION, or a quieter machine.")
        if count("littles-law"):
            out.append(f"{name}: at {count('littles-law')} of {n} levels the requests in flight "
                       f"did not match the concurrency ({metrics.LITTLES_LOW}-"
                       f"{metrics.LITTLES_HIGH}, Little's law): usually client-side queueing, "
                       "errors or timeouts. Check the failures and the client's CPU.")
        if count("saturated"):
            out.append(f"{name}: at {count('saturated')} of {n} offered rates the achieved rate "
                       f"fell more than {metrics.SATURATED_SHORTFALL:.0%} short: past its "
                       "saturation point; latency there is queueing.")
        if count("not-steady"):
            out.append(f"{name}: the warm-up never settled (WARMUP_MAX); its figures may still "
                       "be climbing. Raise WARMUP_MAX or use a fixed WARMUP.")
        if count("host-busy"):
            out.append(f"{count('host-busy')} of {n} levels of {name} ran while other "
                       f"processes took more than {metrics.HOST_BUSY_PCT:.0f}% of the lab's "
                       "CPUs: those figures are not the server's alone. Rerun on a quiet host.")
        if count("steal"):
            out.append(f"{count('steal')} of {n} levels of {name} lost more than "
                       f"{metrics.STEAL_PCT:.0f}% of the lab's CPU time to the hypervisor "
                       "(steal): on a shared VM, figures vary from run to run; repeat, or "
                       "compare runs on a dedicated host.")
        if count("failures"):
            out.append(f"{name}: {sum(s.failed for s in levels)} failed requests; see its "
                       "client output and server logs in the run folder.")
        out.extend(f"{name}: {note}." for note in m["servers"].get(name, {}).get("notes", []))
    if reps < metrics.MIN_REPS_FOR_VERDICT and len(stats) > 1:
        out.append(f"One run per level ranks nothing on a noisy host: use "
                   f"REPEAT={metrics.MIN_REPS_FOR_VERDICT} or more for verdicts.")
    if not m.get("calibration") and m.get("kind") != "cost":
        out.append("No calibration on record: run `make calibrate` once to see each "
                   "server's rate as a share of what the client can drive here.")
    return out


def warmups(m: dict[str, Any]) -> list[str]:
    lines = []
    for name, rec in m["servers"].items():
        done = [s.get("warmup") for s in rec.get("starts", []) if s.get("warmup")]
        auto = [w for w in done if w.get("mode") == "auto"]
        if not auto:
            continue
        secs = [w["seconds"] for w in auto if w["steady"]]
        capped = len(auto) - len(secs)
        said = (f"steady after {min(secs):.0f}–{max(secs):.0f}s in {len(secs)} of {len(auto)} "
                "starts" if secs else f"never steady in {len(auto)} starts")
        lines.append(f"- {name}: {said}" + (f"; {capped} hit the cap of {auto[0]['cap_s']}s "
                                            "(flagged not-steady)" if capped else ""))
    return lines


def probe_tables(run: Path) -> str:
    from lab import probe
    found = {p.parent.name: probe.load_report(p) for p in sorted(run.glob("*/probe.json"))}
    if not found:
        return ""
    verdicts = [f"- {r.verdict()}" for r in found.values()]
    return probe.table(found) + "\n\n" + "\n".join(verdicts)


def write_levels_csv(run: Path, stats: dict[str, list[LevelStats]]) -> None:
    cgroup = any(s.cgroup_mem_kb for levels in stats.values() for s in levels)
    with (run / "levels.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["server", "value", "reps", "rate_median", "rate_min", "rate_max",
                    "resp_ms_median", "p99_ms_median", "rss_end_kb_median", "cpu_us_per_req_median",
                    "client_cpu_pct_median", "flags"] + ["cgroup_mem_kb_median"] * cgroup)
        for name, levels in stats.items():
            for s in levels:
                w.writerow([name, s.value, s.rate.n, s.rate.median, s.rate.lo, s.rate.hi,
                            s.resp_ms.median, s.p99_ms.median if s.p99_ms else "",
                            s.rss_end_kb.median, s.cpu_us_per_req.median,
                            s.client_cpu_pct.median, " ".join(s.all_flags())]
                           + [s.cgroup_mem_kb.median if s.cgroup_mem_kb else ""] * cgroup)


def write(run: Path) -> str:
    m = results.read_manifest(run)
    stats = stats_of(run)
    lines = [f"# Run {m['run_id']} ({m['status']})", "", f"Conditions: {conditions(m)}.", ""]
    if m.get("plan"):
        lines += [f"Plan: {m['plan']}.", ""]
    verdict_lines: list[str] = []
    found: list[metrics.Verdict] = []
    if stats:
        lines += server_table(m, stats) + ["", "## Levels", ""] + level_table(m, stats)
        verdict_lines, found = verdict_section(m, stats)
        lines += [""] + verdict_lines if verdict_lines else []
        shares = [x for n, levels in stats.items()
                  if (x := capacity_note(m, n, metrics.peak(levels)))]
        if shares:
            lines += ["", "## Against the client's calibrated capacity", ""]
            lines += [f"- {x}" for x in shares]
        sampler = max(s.sampler_cpu_pct.hi for levels in stats.values() for s in levels)
        lines += ["", f"The lab's own /proc sampler used at most {sampler:.2f}% of one core "
                      "per level."]
    for part in (costview.markdown(run), profileview.markdown(run)):
        if part:
            lines += ["", part]
    probed = probe_tables(run)
    if probed:
        lines += ["", "## Robustness probe (a separate start of each server)", "", probed]
    warm = warmups(m)
    if warm:
        lines += ["", "## Warm-up (WARMUP=auto)", "", *warm]
    notes = warnings(m, stats)
    if notes:
        lines += ["", "## Warnings", "", *[f"- Warning: {w}" for w in notes]]
    lines += ["", f"Reproduce: `{m['reproduce']}`", ""]
    text = "\n".join(lines)
    (run / "summary.md").write_text(text)
    write_levels_csv(run, stats)
    results.write_json(run / "results.json", {
        **m, "levels": {n: [asdict(s) | {"flags": s.all_flags()} for s in v]
                        for n, v in stats.items()},
        "verdicts": [asdict(v) for v in found],
        "rows": {n: [asdict(r) for r in rows] for n, rows in results.rows_by_server(run)}})
    return text

