"""A run's summary: the answer first (lab.present.answer: what was measured,
the peak or the verdict, what limited it), then a table per server and level
with the spread of repetitions, verdicts between servers, warnings that say
what to do, and the conditions last. Each mechanism is explained once, in the
docs, and linked; report.html keeps every figure, flag and explanation.

Writes summary.md (Markdown), levels.csv (one row per server and level:
median, min, max) and results.json (lab.analyse.analysis.to_json). Every figure comes
from the run's Analysis (lab.analyse.analysis), computed from its schema."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.analyse import analysis, metrics, probeview
from lab.present import answer, costtable, failedwords, memtable, method, profiletable, sends, warmwords
from lab.record import csvfile, files, outputs, probe, tcpkinds
from lab.analyse.analysis import Analysis
from lab.analyse.wording import (DASH, axis_label, median_range, percentile_mark,
                                 percentiles_said, spread_text)
from lab.setup.markdown import Table, md_code, md_text
from lab.analyse.metrics import LevelStats
from lab.record.manifest import Manifest, Warmup
from lab.record.probe import ProbeReport
from lab.record.tcpkinds import TcpDelta
from lab.record.runrecord import RunRecord


def server_table(m: Manifest, stats: dict[str, list[LevelStats]]) -> list[str]:
    axis = axis_label(m.params.axis)
    cgroup = any(s.cgroup_mem_kb for levels in stats.values() for s in levels)
    head = ["server", "framework", f"peak req/s (at {axis})", "mean ms at peak",
            "p99 ms at peak", "RSS end MB", "RSS peak MB", "CPU µs/req at peak",
            "client-bound levels", "failed"]
    if cgroup:       # RUNTIME=docker: the container's cgroup figure beside the RSS
        head.insert(6, "cgroup memory end MB")
    rows = []
    for name, levels in stats.items():
        rec = m.server(name)
        top = metrics.peak(levels)
        last = levels[-1]
        bound = sum(1 for s in levels if s.client_bound)
        mem = [median_range(last.rss_end_kb, 1024, '.1f')]
        if cgroup:
            mem.append(median_range(last.cgroup_mem_kb, 1024, '.1f'))
        rows.append([md_text(name), md_text(f"{rec.framework or '?'} {rec.version}".strip()),
                     f"{median_range(top.rate)} ({top.value})",
                     median_range(top.resp_ms, fmt='.2f'),
                     median_range(top.p99_ms, fmt=".2f") + percentile_mark(top),
                     *mem, f"{top.rss_peak_kb / 1024:.1f}", median_range(top.cpu_us_per_req),
                     f"{bound}/{len(levels)}", str(sum(s.failed for s in levels))])
    lines = Table(head, rows).lines()
    if cgroup:
        lines += ["", "cgroup memory: what the container's cgroup is charged, less inactive "
                  "page cache, as `docker stats` shows it (MEM_LIMIT limits it): "
                  "`docs/analysis.md#rss-pss-private-and-shared-memory`."]
    return lines


def level_table(m: Manifest, stats: dict[str, list[LevelStats]]) -> list[str]:
    rows = []
    for name, levels in stats.items():
        for s in levels:
            flags = ", ".join(f"{f} ({s.flags[f]}/{s.rate.n})" if f in s.flags else f
                              for f in s.all_flags()) or DASH
            rows.append([name, str(s.value), median_range(s.rate), spread_text(s.rate),
                         median_range(s.resp_ms, fmt='.2f'),
                         median_range(s.p99_ms, fmt=".2f") + percentile_mark(s),
                         median_range(s.client_cpu_pct, fmt='.0f'), flags])
    said = percentiles_said([s for levels in stats.values() for s in levels])
    return Table(["server", axis_label(m.params.axis), "req/s median [min–max]", "spread",
                  "mean ms", "p99 ms", "client CPU %", "flags"], rows).lines() + (
        [""] + said if said else [])


def verdict_section(m: Manifest, a: Analysis) -> list[str]:
    if not a.verdicts and not a.primary:
        return []
    axis = axis_label(m.params.axis)
    lines = [f"## Verdicts ({a.basis}, at {axis} = {', '.join(map(str, a.verdict_at))})", ""]
    if a.primary:
        lines += [f"Primary, one a pair, by {method.test_name(a.method)} "
                  "(`docs/methodology.md#the-decision-rule-a-stated-false-alarm-rate`):", ""]
        lines += Table([axis, "pair", "verdict"],
                       [[v.where(), f"{v.a} vs {v.b}", v.said()] for v in a.primary]).lines()
        lines += ["", "Per level (secondary: each at α over the number of per-level verdicts):",
                  ""]
    lines += Table([axis, "pair", "verdict"],
                   [[str(v.value), f"{v.a} vs {v.b}", v.said()] for v in a.verdicts]).lines()
    if any(v.cpu is not None for v in a.verdicts):
        lines += ["", "Where req/s cannot rank a pair (client-bound, host-busy, equivalent, "
                  "undecided), server CPU per request is judged by the same rule, lower is "
                  "better."]
    return lines


def warmups(m: Manifest) -> list[str]:
    """The warm-up section's lines: each server's starts by class (lab.present.
    warmwords), with its JIT's compilations where it is a JVM."""
    out = warmwords.lines(m)
    for i, (name, rec) in enumerate((n, r) for n, r in m.servers.items()
                                    if any(s.warmup and s.warmup.mode == "auto"
                                           for s in r.starts)):
        auto = [s.warmup for s in rec.starts if s.warmup and s.warmup.mode == "auto"]
        out[i] += jit_part(auto)
    return out


def jit_part(warmups: list[Warmup]) -> str:
    """A JVM's JIT at the end of each warm-up (lab.measure.jit): compilations and their rate."""
    read = [w for w in warmups if w.jit_compiles is not None]
    errors = sorted({w.jit_error for w in warmups if w.jit_error})
    if not read and not errors:
        return ""
    counts = [w.jit_compiles for w in read if w.jit_compiles is not None]
    rates = [w.jit_per_s for w in read if w.jit_per_s is not None]
    said = f"{min(counts):,}" + (f"–{max(counts):,}" if max(counts) > min(counts) else "") \
        if counts else ""
    if rates:
        said += f" ({min(rates):g}" + (f"–{max(rates):g}" if max(rates) > min(rates) else "") \
            + "/s)"
    quiet = sum(1 for w in read if w.jit_quiet)
    out = (f"; JIT compilations at the end: {said}, its last segment quiet in {quiet} of "
           f"{len(read)}" if read else "")
    return out + (f"; JIT unavailable: {'; '.join(errors)}" if errors else "")


PROBE_TABLE = ("Each probe's outcome is in report.html and in each server's probe.json "
               "(`docs/methodology.md#set-up-alike-and-probed-for-abuse`).")


def probe_section(probes: dict[str, ProbeReport | str]) -> list[str]:
    """The robustness probe's verdict, a line per server (lab.analyse.probeview, from
    each <server>/probe.json); its table, a row per probe, is report.html's."""
    if not probes:
        return []
    lines = []
    for name, p in probes.items():
        if isinstance(p, str):
            lines.append(f"- {name}: probe.json unreadable ({p})")
            continue
        lines.append(f"- {probeview.outcome(name, p).text()}")   # this lab's or an older one's
    return lines + ["", PROBE_TABLE]


def tcp_cells(tcp: TcpDelta | None) -> list[str | int]:
    """levels.csv's TCP cells: where the counters were read (`server` or
    `shared`), then each kind's count over the repetitions; all empty where
    they were not read (PAIRED, an older run)."""
    if tcp is None:
        return [""] * (1 + len(tcpkinds.KINDS))
    seen = {x.kind: x.count for x in tcpkinds.kinds(tcp)}
    return [tcp.netns] + [seen.get(k.key, 0) for k in tcpkinds.KINDS]


def write_levels_csv(run: Path, stats: dict[str, list[LevelStats]]) -> None:
    cgroup = any(s.cgroup_mem_kb for levels in stats.values() for s in levels)
    header = (["server", "value", "reps", "rate_median", "rate_min", "rate_max",
               "resp_ms_median", "p99_ms_median", "rss_end_kb_median", "cpu_us_per_req_median",
               "client_cpu_pct_median", "flags"] + ["cgroup_mem_kb_median"] * cgroup
              + ["pss_kb_median", "private_kb_median", "shared_kb_median", "anon_kb_median",
                 "cpu_sys_us_per_req_median"]
              # added by issue 45, after the columns older runs have
              + ["failed", "percentiles", "tcp_netns"] + [f"tcp_{k.key}" for k in tcpkinds.KINDS])
    rows = [[name, s.value, s.rate.n, s.rate.median, s.rate.lo, s.rate.hi,
             s.resp_ms.median, s.p99_ms.median if s.p99_ms else "",
             s.rss_end_kb.median, s.cpu_us_per_req.median,
             s.client_cpu_pct.median, " ".join(s.all_flags())]
            + [s.cgroup_mem_kb.median if s.cgroup_mem_kb else ""] * cgroup
            + [x.median if x else "" for x in (s.pss_kb, s.private_kb, s.shared_kb,
                                               s.anon_kb, s.cpu_sys_us_per_req)]
            + [s.failed, s.percentiles] + tcp_cells(s.tcp)
            for name, levels in stats.items() for s in levels]
    csvfile.write_for_spreadsheets(run / outputs.LEVELS, header, rows)


def rerun_line(m: Manifest) -> str:
    """'Rerun of <run>; PORT given now (18085), not as recorded (8080).'"""
    rerun = m.extra.get("rerun")
    if not isinstance(rerun, dict):
        return ""
    found = rerun.get("overridden")
    over: dict[str, Any] = found if isinstance(found, dict) else {}
    said = "; ".join(f"{k} given now ({v.get('given')!r}), not as recorded ({v.get('recorded')!r})"
                     for k, v in over.items() if isinstance(v, dict))
    return f"Rerun of {rerun.get('of', '?')}" + (f"; {said}." if said else
                                                  " with its recorded settings.")


def conditions_section(m: Manifest, a: Analysis) -> list[str]:
    """The run's conditions, plan and reproducing command, last: the answer comes first."""
    lines = ["## Conditions", "", f"{md_text(analysis.conditions(m))}; every setting is in "
             "report.html."]
    if m.plan:                    # the lab's words, of checked settings; a long one fenced
        lines += ["", f"Plan: {m.plan}."] if len(m.plan) <= answer.LONGEST else \
            ["", "Plan:", "```text", m.plan, "```"]
    rerun = rerun_line(m)
    if rerun:
        lines += ["", md_text(rerun)]
    if a.stats:
        sampler = max(s.sampler_cpu_pct.hi for levels in a.stats.values() for s in levels)
        lines += ["", f"The lab's own /proc sampler used at most {sampler:.2f}% of one core "
                      "per level."]
    # a fence, not a code span: the command is as long as the run's settings
    return lines + ["", "Reproduce:", "```sh", m.reproduce, "```"]


def summary(rec: RunRecord, a: Analysis) -> str:
    """summary.md: the answer in its first lines (lab.present.answer), then the
    tables and warnings; report.html holds every figure, flag and explanation."""
    m = rec.manifest
    lines = [f"# Run {md_text(m.run_id)} ({md_text(m.status)})", "", *answer.head(m, a)]
    stats = a.stats
    if stats:
        lines += [""] + server_table(m, stats) + ["", "## Levels", ""] + level_table(m, stats)
        verdicts = verdict_section(m, a)
        lines += [""] + verdicts if verdicts else []
        if a.capacity:
            lines += ["", "## Against the client's calibrated capacity", ""]
            lines += [f"- {x.text}" for x in a.capacity]
        lines += [""] + memtable.markdown(m, stats, axis_label(m.params.axis))
    said = sends.markdown(a.answers)
    if said:
        lines += [""] + said
    lines += failed_section(failedwords.build(a.failed))
    if a.costs is not None:
        lines += [""] + costtable.markdown(a.costs)
    if a.profiles:
        lines += [""] + profiletable.markdown(a.profiles)
    probed = probe_section(probe.probe_files(rec.folder))
    if probed:
        lines += ["", "## Robustness probe (a separate start of each server)", "", *probed]
    warm = warmups(m)
    if warm:
        lines += ["", "## Warm-up (WARMUP=auto)", "", *warm]
    if a.warnings:
        lines += ["", "## Warnings", "", *[f"- Warning: {w.text()}" for w in a.warnings]]
    lines += ["", *conditions_section(m, a), ""]
    return "\n".join(lines)


def failed_line(item: failedwords.Item) -> str:
    """One line of "What failed" in Markdown (lab.present.failedwords' item)."""
    return f"- {md_text(item.brief or item.text)}" + (f" (why: {md_code(item.see)})"
                                                      if item.see else "")


def failed_section(items: list[failedwords.Item]) -> list[str]:
    """"What failed", the run's every server: a line per item, none when nothing failed."""
    return ["", "## What failed", "", *map(failed_line, items)] if items else []


def write(run: Path) -> str:
    """summary.md, levels.csv and results.json of a run; returns the summary."""
    rec, a = analysis.of(run)
    text = summary(rec, a)
    files.write_atomic(run / outputs.SUMMARY, text)
    write_levels_csv(run, a.stats)
    files.write_atomic(run / outputs.RESULTS_JSON, analysis.results_text(
        rec, a, failed=failedwords.plain(failedwords.build(a.failed))))
    return text
