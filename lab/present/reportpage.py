"""A run as one self-contained HTML page (report.html).

The charts are the run's own SVG files, inlined (lab.present.svg). The figures
come from the run's Analysis (lab.analyse.analysis), so the page says what
summary.md says, with each flag next to the figure it concerns and its
one-sentence meaning (lab.analyse.metrics.FLAGS)."""
from __future__ import annotations

import json
from dataclasses import asdict
import sys
from pathlib import Path
from typing import Any

from lab.analyse import (analysis, costview, findings, metrics, probeview,
                         profileview, responses)
from lab.record import calibration, files, outputs
from lab.record.probe import ProbeReport, ProbeResult, probe_files
from lab.analyse.analysis import Analysis
from lab.analyse.wording import (DASH, figure, median_range, percentile_mark,
                                 percentiles_said, spread_text)
from lab.analyse.wording import axis_label
from lab.analyse.metrics import LevelStats, Spread
from lab.record.files import RecordError
from lab.record.manifest import Manifest, ServerRecord, Warmup
from lab.present import (costtable, failedwords, firstline, memtable, method, profiletable,
                         warmwords)
from lab.present.indexpage import write_index
from lab.present.page import chart_figure, escaped, href, kv_table, page, table
from lab.present.report import rerun_line

CHART_TITLES = {"rps": "Requests per second", "latency": "Latency", "rss": "Memory (RSS)",
                "percentiles": "Latency percentiles", "knob": "Server knob"}
INCOMPLETE = "incomplete"
MEANINGS: dict[str, str] = {
    **metrics.FLAGS,
    INCOMPLETE: "the run stopped before every server finished every repetition: "
                "some figures are missing",
}
# Which figure of a level a flag is about; anything else is about req/s.
FLAG_FIGURE = {"littles-law": "latency", "failures": "failed"}


# --- flags --------------------------------------------------------------------

def badge(flag: str, label: str | None = None) -> str:
    bad = " bad" if flag in ("failures", "client-bound", INCOMPLETE, "saturated") else ""
    return (f'<span class="flag{bad}" data-flag="{escaped(flag)}" '
            f'title="{escaped(MEANINGS.get(flag, ""))}">{escaped(label or flag)}</span>')


def flag_html(flag: str, count: int | None = None, reps: int = 1,
              label: str | None = None) -> str:
    """A flag's badge and its one-sentence meaning, as one line under a figure."""
    label = label or (flag if count is None or reps <= 1 else f"{flag} {count}/{reps}")
    return (f'<span class="flagged">{badge(flag, label)} '
            f'<span class="why">{escaped(MEANINGS.get(flag, ""))}</span></span>')


def flags_for(s: LevelStats, figure: str) -> str:
    """The flags of a level that concern one figure (rate, latency, failed)."""
    out = []
    for f in s.all_flags():
        if FLAG_FIGURE.get(f, "rate") == figure:
            out.append(flag_html(f, s.flags.get(f), s.rate.n))
    return "".join(out)


def flags_seen(stats: dict[str, list[LevelStats]], m: Manifest) -> list[str]:
    seen = {f for levels in stats.values() for s in levels for f in s.all_flags()}
    if m.status != "complete":
        seen.add(INCOMPLETE)
    return [f for f in MEANINGS if f in seen] + sorted(seen - set(MEANINGS))


def legend(flags: list[str]) -> str:
    if not flags:
        return '<p class="muted">No level was flagged.</p>'
    items = "".join(f"<dt>{badge(f)}</dt><dd>{escaped(MEANINGS.get(f, ''))}</dd>" for f in flags)
    return f'<dl class="legend">{items}</dl>'


# --- charts -------------------------------------------------------------------

def chart_files(run: Path) -> list[Path]:
    found = {p.stem: p for p in run.glob("*.svg")}
    order = [c for c in outputs.CHARTS if c in found] + sorted(set(found) - set(outputs.CHARTS))
    return [found[c] for c in order]


def series_title(stem: str) -> str:
    """A per-second chart's title (series-<server>, lab.present.plot); any other stem as it is."""
    server = stem.removeprefix("series-")
    return f"Per second: {server} (req/s, server CPU, RSS)" if server != stem else stem


def charts_section(run: Path) -> str:
    figures = [chart_figure(path, CHART_TITLES.get(path.stem, series_title(path.stem)))
               for path in chart_files(run)]
    if not figures:
        return '<h2>Charts</h2><p class="muted">No charts in this run folder.</p>'
    return "<h2>Charts</h2>" + "".join(figures)


# --- figures per server ---------------------------------------------------------

def spread_html(s: Spread | None, scale: float = 1.0, fmt: str = ",.0f") -> str:
    return escaped(median_range(s, scale, fmt))


def server_facts(name: str, rec: ServerRecord) -> str:
    bits: list[tuple[str, object]] = [
        ("language", rec.language), ("framework", rec.framework), ("version", rec.version),
        ("role", rec.role), ("workers", rec.workers), ("repetitions done", rec.reps_done),
        ("status", rec.status)]
    bits += [(k, v) for k, v in (rec.facts or {}).items()]
    text = "; ".join(f"{k}: <b>{escaped(v)}</b>" for k, v in bits if v not in (None, ""))
    summary = f' <span class="muted">({escaped(rec.summary)})</span>' if rec.summary else ""
    return f'<p class="facts">{text}{summary}</p>'


def failures_flag(levels: list[LevelStats]) -> str:
    flagged = sum(1 for s in levels if "failures" in s.flags)
    if not flagged:
        return ""
    return flag_html("failures", label=f"failures at {flagged} of {len(levels)} levels")


def peak_table(m: Manifest, name: str, levels: list[LevelStats]) -> str:
    top, last = metrics.peak(levels), levels[-1]
    rows = [["peak req/s (median [min–max])",
             f"{spread_html(top.rate)} at {escaped(axis_label(m.params.axis))}={escaped(top.value)}"
             + flags_for(top, "rate")],
            ["mean response ms at peak", spread_html(top.resp_ms, fmt=".2f")
             + flags_for(top, "latency")]]
    for label, pct in (("p50", top.p50_ms), ("p90", top.p90_ms), ("p99", top.p99_ms)):
        if pct is not None:
            rows.append([f"{label} ms at peak{percentile_mark(top)}",
                         spread_html(pct, fmt=".2f")])
    rows += [["RSS at the end MB (last level)", spread_html(last.rss_end_kb, 1024, ".1f")],
             ["RSS peak MB", escaped(figure(max(s.rss_peak_kb for s in levels), ".1f", 1024))]]
    if last.cgroup_mem_kb is not None:      # RUNTIME=docker
        rows += [["container cgroup memory at the end MB (last level; usage less inactive "
                  "page cache, as docker stats shows it)",
                  spread_html(last.cgroup_mem_kb, 1024, ".1f")]]
    rows += [["server CPU µs per request at peak", spread_html(top.cpu_us_per_req)],
             ["failed requests (all levels)", escaped(sum(s.failed for s in levels))
              + failures_flag(levels)]]
    return table(["figure", "value"], [[escaped(a), b] for a, b in rows], numeric={1},
                 cls="peak")


def level_rows(levels: list[LevelStats], pcts: list[str]) -> list[list[str]]:
    out = []
    for s in levels:
        row = [escaped(s.value), spread_html(s.rate) + flags_for(s, "rate"), escaped(spread_text(s.rate)),
               spread_html(s.resp_ms, fmt=".2f") + flags_for(s, "latency")]
        row += [spread_html(getattr(s, f"{p}_ms"), fmt=".2f") + escaped(percentile_mark(s))
                for p in pcts]
        row += [spread_html(s.rss_end_kb, 1024, ".1f"), spread_html(s.cpu_us_per_req),
                spread_html(s.client_cpu_pct, fmt=".0f"),
                escaped(s.failed) + flags_for(s, "failed")]
        out.append(row)
    return out


def level_table(m: Manifest, levels: list[LevelStats]) -> str:
    pcts = [p for p in ("p50", "p90", "p99") if any(getattr(s, f"{p}_ms") for s in levels)]
    head = [axis_label(m.params.axis), "req/s median [min–max]", "spread", "mean ms",
            *[f"{p} ms" for p in pcts], "RSS end MB", "CPU µs/req", "client CPU %", "failed"]
    return table(head, level_rows(levels, pcts), numeric=set(range(len(head))),
                 cls="levels")


def warmup_html(rec: ServerRecord) -> str:
    rows = []
    modes = {s.warmup.mode if s.warmup else "none" for s in rec.starts}
    if modes <= {"none"}:
        return '<p class="muted">Warm-up: none.</p>'
    jvm = any(s.warmup and (s.warmup.jit_compiles is not None or s.warmup.jit_error
                            or s.warmup.slice_jit_pct)
              for s in rec.starts)
    for start in rec.starts:
        w = start.warmup
        if not w:
            continue
        steady = warmwords.start_cell(w) if w.mode == "auto" else DASH
        flag = flag_html("not-steady") if w.steady is False else ""
        rows.append([escaped(start.id), escaped(w.mode), escaped(steady) + flag,
                     escaped(DASH if w.seconds is None else w.seconds),
                     escaped(DASH if w.slices is None else w.slices),
                     escaped(", ".join(figure(x) for x in w.slice_rates) or DASH)])
        if jvm:
            rows[-1].append(escaped(", ".join(f"{x:g}" for x in w.slice_jit_pct) or DASH))
            rows[-1] += jit_cells(w)
    if not rows:
        return ""
    head = ["start", "mode", "class (change points)", "seconds", "slices", "req/s per slice"]
    if jvm:
        head += ["JIT threads' % of CPU per slice", "JIT compilations",
                 "JIT compilations/s at the end"]
    return ("<h3>Warm-up</h3>" + table(head, rows, numeric={3, 4, 5, 6, 7, 8}, cls="warmup")
            + f'<p class="muted">{escaped(warmwords.never_said(rec.starts))} Classes by '
            'change points: docs/methodology.md, "The warm-up by change points".</p>')


def jit_cells(w: Warmup) -> list[str]:
    """A JVM's JIT at the end of its warm-up (lab.measure.jit), or why it is unknown."""
    if w.jit_error:
        return [f'<span title="{escaped(w.jit_error)}">unavailable</span>', DASH]
    if w.jit_compiles is None:
        return [DASH, DASH]
    quiet = "" if w.jit_quiet is None else (" (quiet)" if w.jit_quiet else " (not quiet)")
    return [escaped(f"{w.jit_compiles:,}"),
            escaped(DASH if w.jit_per_s is None else f"{w.jit_per_s:g}") + escaped(quiet)]


def _json_cell(value: object) -> str:
    if isinstance(value, (dict, list)):
        return escaped(json.dumps(value, default=str))
    return escaped(DASH if value is None else value)


def seconds(x: object, digits: int = 2) -> str:
    """A duration a person reads: rounded, with its unit; a dash when none."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return DASH
    return f"{x:.{digits}f} s"


def yes_no(x: object) -> str:
    return "yes" if x is True else "no" if x is False else DASH


def facts_text(facts: object) -> str:
    """What a probe sent and saw, worded: "sent 2,052 B; read by the server 49,152 B"."""
    if not isinstance(facts, dict):
        return DASH
    words = {"sent": "sent", "read_by_server": "read by the server", "size": "size"}
    out = []
    for key, value in facts.items():
        if isinstance(value, dict):
            inner = facts_text(value)
            if inner != DASH:
                out.append(f"{key.replace('_', ' ')}: {inner}")
            continue
        if value in ("", None) or isinstance(value, list):
            continue
        name = words.get(key, key.replace("_", " "))
        if isinstance(value, bool):
            out.append(name if value else f"not {name}")
        elif isinstance(value, int) and key in words:
            out.append(f"{name} {value:,} B")
        elif isinstance(value, float):
            out.append(f"{name} {value:.2f}")
        else:
            out.append(f"{name} {value}")
    return "; ".join(out) or DASH


def probe_row(r: ProbeResult) -> list[str]:
    """One probe, every value worded and rounded."""
    if not r.ran:
        return [escaped(r.title), "not run"] + [DASH] * 5
    after = "yes" if r.answers_after else f"no: {r.error_after or 'it did not answer'}"
    return [escaped(r.title), escaped(r.outcome or DASH), escaped(after),
            escaped(seconds(r.settled_s) if r.settled_s is not None
                    else "not within the probe's wait"),
            escaped(seconds(r.recovered_s) if r.recovered_s is not None else DASH),
            escaped(seconds(r.cpu_s)), escaped(facts_text(r.facts))]


def probe_html(probe: ProbeReport | str | None, name: str = "") -> str:
    """A server's probe.json: its outcome in words, one worded row per probe,
    and the record's other fields (limits, waits) behind a <details> element;
    a str: why it is unreadable."""
    if probe is None:
        return ""
    if isinstance(probe, str):
        return f'<h3>Robustness probe</h3><p class="muted">probe.json unreadable: {escaped(probe)}</p>'
    said = probeview.outcome(name or probe.server, probe)
    head = (f"<p><b>{escaped(said.text())}</b>. The probe took "
            f"{escaped(seconds(probe.elapsed_s, 1))}, the server's CPU "
            f"{escaped(seconds(probe.cpu_s))}; the final check of GET /api "
            f"{'passed' if probe.final_ok else 'failed'}"
            + (f": {escaped(probe.final_error)}" if probe.final_error else "")
            + ".</p>")
    body = table(["probe", "outcome", "answers GET /api after", "settled in", "recovered in",
                  "server CPU", "what was sent"], [probe_row(x) for x in probe.results],
                 numeric={3, 4, 5}, cls="probe") if probe.results else ""
    rest = [("server", probe.server), ("host", probe.host), ("port", probe.port),
            ("workers", probe.workers), ("quiet_s", probe.quiet_s),
            ("cpus_quiet_s", probe.cpus_quiet_s), ("error", probe.error),
            ("limits", json.dumps(asdict(probe.limits)))]
    raw = kv_table([(k, DASH if v is None or v == "" else v) for k, v in rest])
    internals = ('<details class="internals"><summary>The probe\'s record (limits and raw '
                 f"fields of probe.json)</summary>{raw}</details>")
    return "<h3>Robustness probe</h3>" + head + body + internals


def overview(m: Manifest, stats: dict[str, list[LevelStats]]) -> str:
    """One line per server: its peak and what it cost."""
    rows = []
    for name, levels in stats.items():
        rec = m.server(name)
        top, last = metrics.peak(levels), levels[-1]
        status = rec.status or "?"
        rows.append([f'<a href="{href(fragment="server-" + name)}">{escaped(name)}</a>', escaped(rec.role),
                     escaped(f"{rec.framework or '?'} {rec.version}".strip()),
                     f"{spread_html(top.rate)} ({escaped(top.value)})",
                     spread_html(last.rss_end_kb, 1024, ".1f"),
                     escaped(figure(max(s.rss_peak_kb for s in levels), ".1f", 1024)),
                     spread_html(top.cpu_us_per_req), spread_html(top.p99_ms, fmt=".2f")
                     + escaped(percentile_mark(top)),
                     escaped(sum(s.failed for s in levels)) + failures_flag(levels),
                     escaped(status) if status == "complete" else badge(INCOMPLETE, str(status))])
    head = ["server", "role", "framework", f"peak req/s ({axis_label(m.params.axis)})",
            "RSS end MB", "RSS peak MB", "CPU µs/req at peak", "p99 ms at peak", "failed",
            "status"]
    said = percentiles_said([s for levels in stats.values() for s in levels])
    return ("<h2>Servers</h2>" + table(head, rows, numeric=set(range(3, 9)), cls="overview")
            + "".join(f"<p>{escaped(x)}</p>" for x in said))


def failed_item(item: failedwords.Item) -> str:
    """One line of "What failed" in HTML (lab.present.failedwords' item)."""
    see = f" (why: <code>{escaped(item.see)}</code>)" if item.see else ""
    return f"<li>{escaped(item.text)}{see}</li>"


def failed_html(items: list[failedwords.Item]) -> str:
    """What failed at one server's levels: its items of the run's "What failed"."""
    if not items:
        return ""
    return ('<h3 class="failed">What failed</h3><ul class="failed">'
            + "".join(map(failed_item, items)) + "</ul>")


def server_section(m: Manifest, name: str, levels: list[LevelStats],
                   probe: ProbeReport | str | None,
                   failed: list[failedwords.Item] | None = None) -> str:
    rec = m.server(name)
    mark = flag_html(INCOMPLETE) if rec.status not in ("", "complete") else ""
    parts = [f'<section class="server" id="server-{escaped(name)}"><h2>{escaped(name)}{mark}</h2>',
             server_facts(name, rec)]
    if levels:
        parts += [peak_table(m, name, levels), "<h3>Levels</h3>", level_table(m, levels),
                  failed_html(failed or [])]
    else:
        parts.append('<p class="muted">No level measured.</p>')
    if rec.error:
        parts.append(f"<p><b>Stopped:</b> {escaped(rec.error)}</p>")
    if rec.notes:
        parts.append("<ul>" + "".join(f"<li>{escaped(n)}</li>" for n in rec.notes) + "</ul>")
    parts += [warmup_html(rec), probe_html(probe, name), "</section>"]
    return "".join(parts)


# --- run-wide sections -----------------------------------------------------------

COMPLETE = "complete: every level measured (whether a figure is clean: its flags)"


def status_html(m: Manifest) -> str:
    status = m.status or "unknown"
    if status == "complete" and m.problems:     # a later step's (make profile)
        items = "".join(f"<li>{escaped(p)}</li>" for p in m.problems)
        return (f'<div class="status complete">Status: {COMPLETE}; problems recorded after '
                f"the run (its figures are complete):<ul>{items}</ul></div>")
    if status == "complete":
        # neutral, not green: complete says every level was measured, not that
        # the figures are good (flags and verdicts say that)
        return f'<div class="status complete">Status: {COMPLETE}</div>'
    problems = m.problems or ["not every server finished every repetition"]
    items = "".join(f"<li>{escaped(p)}</li>" for p in problems)
    return (f'<div class="status incomplete" id="incomplete">Status: {escaped(status.upper())} '
            f"run: figures are missing.<ul>{items}</ul></div>")


def verdicts_html(m: Manifest, a: Analysis) -> str:
    if not a.verdicts and not a.primary and not a.stats and a.costs is not None:
        return ('<h2>Verdicts</h2><p class="muted">No requests/s verdicts: this run counted '
                "instructions per request (<code>make cost</code>) and ran no load; its "
                "ranking is in the instructions section above.</p>")
    if not a.verdicts and not a.primary:
        return ('<h2>Verdicts</h2><p class="muted">No verdicts: fewer than two '
                "measured servers besides the ceiling.</p>")
    rows = [[escaped(v.value), escaped(v.a), escaped(v.b), escaped(v.kind), escaped(v.said()),
             escaped(v.rule())] for v in a.verdicts]
    cpu = ("; where it cannot rank a pair (client-bound, host-busy, equivalent, undecided), "
           "also by server CPU per request, through the same rule (lower is better)"
           if any(v.cpu is not None for v in a.verdicts) else "")
    head = [axis_label(m.params.axis), "a", "b", "kind", "verdict", "α, δ, starts"]
    first = ""
    if a.primary:
        first = (f'<p class="muted">Primary, one a pair: {escaped(method.said(a.method))}</p>'
                 + table(head, [[escaped(v.where()), escaped(v.a), escaped(v.b), escaped(v.kind),
                                 escaped(v.said()), escaped(v.rule())] for v in a.primary],
                         numeric=set(), cls="verdicts primary")
                 + '<p class="muted">Per level (secondary: each at α over the number of '
                 "per-level verdicts):</p>")
    return (f"<h2>Verdicts</h2><p class=\"muted\">By {escaped(a.basis)}{escaped(cpu)}.</p>"
            + first + table(head, rows, numeric={0}, cls="verdicts"))


def memory_html(m: Manifest, stats: dict[str, list[LevelStats]]) -> str:
    """Where the memory goes: RSS beside PSS, private and shared (lab.analyse.memsplit)."""
    found = memtable.rows(m, stats)
    if not found:
        return ""
    return (f'<h2 id="memory">{escaped(memtable.TITLE)}</h2>'
            + table(memtable.head(axis_label(m.params.axis)), [[escaped(c) for c in r] for r in found],
                    numeric={1, 2, 3, 4, 5, 6, 7}, cls="memory")
            + f'<p class="muted">{escaped(memtable.NOTE)}</p>')


def sends_html(found: dict[str, responses.ServerAnswer]) -> str:
    """What each server sends (lab.analyse.responses): one row per server, what differs flagged."""
    if not found:
        return ""
    rows = []
    for (name, line, headers, size), a in zip(responses.rows(found), found.values()):
        head = "".join(f'<code style="white-space:pre">{escaped(h)}</code><br>'
                       for h in headers.split(" · ")) if headers != DASH else DASH
        flagged = "".join(badge("differs", d.plain()) + " "
                          for d in responses.flags(a)) or DASH
        rows.append([escaped(name), escaped(line), head, escaped(size), flagged])
    asked = responses.request(found) or "GET /api"
    return ('<h2 id="sends">What each server sends</h2>'
            f'<p class="muted">Its answer to {escaped(asked)} when each start was verified; '
            "flagged: a missing Date or Server header, a Content-Type parameter or another "
            "Content-Type, odd spacing, another status line, another byte count.</p>"
            + table(responses.HEAD, rows, numeric={3}, cls="sends"))


def calibration_html(m: Manifest, a: Analysis) -> str:
    cal = m.calibration
    if cal is None:
        return ""
    parts = ["<h2>Against the client's calibrated capacity</h2>"]
    if a.calibration_note:
        parts.append(f'<p class="warnbox">Not used for this run: {escaped(a.calibration_note)}.</p>')
    elif a.capacity:
        parts.append("<ul>" + "".join(
            f'<li class="warnbox">{escaped(x.text)}</li>' if x.kind == "does-not-hold" else
            f"<li>{escaped(x.text)}</li>" for x in a.capacity) + "</ul>")
    else:
        parts.append('<p class="muted">No level of this run has a calibrated counterpart.</p>')
    level_values = sorted({c for got in cal.clients.values() for lv in got.modes.values()
                     for c in lv} | set(cal.levels))
    rows = []
    for client, got in cal.clients.items():
        for mode in calibration.MODES:
            have = got.modes.get(mode) or {}
            refused = got.refused.get(mode) or {}
            rows.append([escaped(f"{client} {got.version}".strip()), escaped(mode)] + [
                escaped(f"{have[c].rate_rps:,.0f} (client CPU {have[c].client_cpu_pct:.0f}%)")
                if c in have else
                escaped(f"{DASH} (not saved: {refused[c]})") if c in refused else DASH
                for c in level_values])
    if rows:
        where = f", {cal.topology.split(' ')[0]}" if cal.topology else ""
        parts.append(f"<p>Calibrated against {escaped(cal.ceiling or '?')}, "
                     f"{escaped(cal.duration_s)}s per level, server CPU "
                     f"{escaped(cal.pinning.server_cpus)}, client CPU {escaped(cal.pinning.client_cpus)}"
                     f"{escaped(where)} (req/s):</p>")
        parts.append(table(["client", "connection", *[f"c={c}" for c in level_values]], rows,
                           numeric=set(range(2, 2 + len(level_values))), cls="calibration"))
    return "".join(parts)


def warnings_html(notes: list[str]) -> str:
    if not notes:
        return ""
    return '<h2>Warnings</h2><ul class="warn">' + "".join(f"<li>{escaped(w)}</li>" for w in notes) \
        + "</ul>"


def conditions_html(m: Manifest) -> str:
    h, c, p = m.host, m.client, m.params
    threads = c.threads or p.extra.get("client_threads")
    host = [("CPU model", h.cpu_model), ("cores", h.cores),
            ("usable CPUs", " ".join(map(str, h.usable_cpus or []))),
            ("memory GB", h.memory_gb), ("OS", h.os),
            ("kernel", h.kernel), ("hostname", h.hostname),
            ("load average at start", " ".join(f"{x:.2f}"
                                               for x in h.load_average_at_start or []))]
    kernel = [(f"sysctl {k}", v) for k, v in (h.sysctl or {}).items()]
    lab = m.lab
    run = [("topology", m.topology),
           ("server CPUs", m.pinning.server_cpus), ("client CPUs", m.pinning.client_cpus),
           ("client", f"{c.tool} {c.version}".strip()),
           ("connection", c.connection), ("client threads", threads),
           ("calibrated capacity", "on record (see above)" if m.calibration else
            "none on record"),
           ("lab commit", f"{lab.get('commit', '?')}{' (dirty)' if lab.get('dirty') else ''}"),
           ("started", m.started), ("finished", m.finished), ("plan", m.plan),
           ("rerun", rerun_line(m))]
    tools = [(k, v or "not installed") for k, v in sorted(m.tools.items())]
    settings = list(m.settings.items())
    return ("<h2>Conditions</h2><h3>Host</h3>"
            + kv_table([(k, v) for k, v in host if v not in (None, "")], "conditions")
            + ('<details class="internals"><summary>The host\'s kernel settings (sysctl)'
               "</summary>" + kv_table(kernel, "conditions") + "</details>" if kernel else "")
            + "<h3>Run</h3>" + kv_table([(k, v) for k, v in run if v not in (None, "")],
                                        "conditions")
            + '<details class="internals"><summary>Tool versions and every setting of the '
            "run</summary>"
            + "<h3>Tool versions</h3>" + kv_table(tools, "tools")
            + "<h3>Settings</h3>" + kv_table([(k, v if v != "" else "(empty)")
                                              for k, v in settings], "settings")
            + "</details>"
            + "<h3>Reproduce</h3>"
            + f'<pre id="reproduce"><code>{escaped(m.reproduce)}</code></pre>')


def costs_html(c: costview.CostAnalysis | None) -> str:
    """make cost's figure: instructions per request, beside the plain start's CPU."""
    if c is None:
        return ""
    body = [f'<h2 id="cost">{escaped(costtable.TITLE)}</h2>',
            f"<p>{escaped(costtable.KERNEL_NOTE)}</p>", f'<p class="muted">{escaped(c.condition)}</p>',
            table(costtable.HEAD, [[escaped(x) for x in r] for r in costtable.rows(c.servers)],
                  numeric={1, 2, 3, 4, 5, 6}, cls="cost")]
    if c.verdicts:
        body.append(table(["c", "a", "b", "kind", "verdict"],
                          [[escaped(v.level), escaped(v.a), escaped(v.b), escaped(v.kind), escaped(v.text)]
                           for v in c.verdicts], numeric={0}, cls="cost-verdicts"))
    for s in c.servers:
        for level, found in sorted(s.functions.items())[:1]:
            body.append(f"<h3>{escaped(costtable.functions_title(s.server, level))}</h3>"
                        f"<p class=\"muted\">{escaped(costtable.FUNCTIONS_NOTE)}</p>")
            body.append(table(costtable.FUNCTIONS_HEAD,
                              [[f"<code>{escaped(n)}</code>", escaped(f"{ir:,.1f}")] for n, ir in found],
                              numeric={1}, cls="cost-functions"))
    return "".join(body)


def profiles_html(found: dict[str, profileview.ProfileSummary | str]) -> str:
    """make profile's figure: top functions, the user/kernel split, a link to
    each flame graph (a separate SVG file: this page stays script-free)."""
    if not found:
        return ""
    parts = [f'<h2 id="profiles">{escaped(profiletable.TITLE)}</h2>']
    for name, got in found.items():
        if isinstance(got, str):
            parts.append(f"<h3>{escaped(name)}</h3><p>{escaped(profiletable.unreadable(got))}</p>")
            continue
        link = got.info.flamegraph
        parts.append(f"<h3>{escaped(name)}</h3><p>{escaped(profiletable.described(got.info, got.summary))}"
                     + (f' <a href="{href(link)}">Flame graph of {escaped(name)}</a>' if link
                        else "") + "</p>")
        parts.append(table(profiletable.HEAD,
                           [[f"<code>{escaped(a)}</code>", escaped(x), f"<code>{escaped(b)}</code>", escaped(y)]
                            for a, x, b, y in profiletable.top_rows(got.summary)],
                           numeric={1, 3}, cls="profile"))
    return "".join(parts)


def render(run: Path) -> str:
    rec, a = analysis.of(run)
    m, stats = rec.manifest, a.stats
    probes = probe_files(run)
    names = list(m.servers) + [n for n in stats if n not in m.servers]
    body = [f"<h1>Run {escaped(m.run_id)}</h1>",
            f'<p class="lead" id="lead">{escaped(firstline.run_line(m, a))}</p>', status_html(m),
            f'<p class="muted">{escaped(analysis.conditions(m))}</p>',
            overview(m, stats) if stats else "",
            "<h2>Flags</h2>", legend(flags_seen(stats, m)),
            charts_section(run)]
    body += [costs_html(a.costs), profiles_html(a.profiles)]
    failed = failedwords.build(a.failed)         # the summary's items, by server
    body += [server_section(m, n, stats.get(n, []), probes.get(n),
                            [i for i in failed if i.server == n]) for n in names]
    body += [memory_html(m, stats), sends_html(a.answers)]
    body += [verdicts_html(m, a), calibration_html(m, a),
             warnings_html(findings.texts(a.warnings)), conditions_html(m)]
    return page(f"Run {m.run_id} ({m.status})", "".join(body))


def write_report(run: Path) -> Path:
    """report.html in the run folder; returns its path."""
    return files.write_atomic(run / outputs.REPORT, render(run))


def main_report(run: Path) -> int:
    """Write the run's report.html and its results folder's index.html (when
    that folder is the lab's); 2 when the run cannot be read."""
    try:
        print(write_report(run))
    except RecordError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        index = write_index(run.resolve().parent)
    except OSError as err:
        print(f"note: no index written in {run.resolve().parent}: {err.strerror or err}",
              file=sys.stderr)
        return 0
    if index is not None:
        print(index)
    return 0
