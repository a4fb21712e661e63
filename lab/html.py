"""A run as one self-contained HTML page (report.html), and an index of the
runs in a results folder (index.html).

The page needs nothing from outside: the charts are the run's own SVG files,
inlined (their XML prologs, scripts, event handlers and links to anything
but the page itself removed, their ids made unique per chart), the styling
is inline CSS, and there is no JavaScript. Every figure, name and setting is
escaped with html.escape. The figures come from lab.report and lab.metrics,
so the page says what summary.md says, with each flag next to the figure it
concerns and its one-sentence meaning (lab.metrics.FLAGS)."""
from __future__ import annotations

import json
import re
import sys
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lab import costview, metrics, profileview, report, results
from lab.metrics import LevelStats, Spread

REPORT = "report.html"
INDEX = "index.html"
CHART_ORDER = ("rps", "latency", "percentiles", "knob", "rss")
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

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2127;
 max-width:1180px;margin:0 auto;padding:12px 20px 40px;background:#fff}
h1{font-size:1.5em;margin:.3em 0}h2{font-size:1.2em;margin:1.4em 0 .4em;
 border-bottom:1px solid #d8dde3;padding-bottom:2px}h3{font-size:1.05em;margin:1em 0 .3em}
table{border-collapse:collapse;margin:.4em 0 .8em;font-size:13px}
th,td{border:1px solid #d8dde3;padding:3px 7px;vertical-align:top;text-align:left}
th{background:#f1f3f6;font-weight:600}table.kv th{font-weight:400;white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums;
 white-space:nowrap}tr:nth-child(even) td{background:#fafbfc}
.status{padding:8px 12px;border-radius:4px;margin:.5em 0;font-weight:600}
.complete{background:#e5f4e8;border:1px solid #9fd3aa;color:#17572a}
.incomplete{background:#fde8e8;border:3px solid #c81e1e;color:#8a1010;font-size:1.15em}
.incomplete ul{margin:.3em 0 0;font-weight:400}
.flag{display:inline-block;font-size:11px;font-weight:600;padding:0 5px;margin:1px 0 1px 4px;
 border-radius:3px;background:#fff1c2;border:1px solid #e0b400;color:#5c4700;white-space:nowrap}
.flag.bad{background:#fde0e0;border-color:#d04040;color:#7a1010}
.flagged{display:block;text-align:left;white-space:normal;max-width:300px;margin:2px 0 0 auto;
 font-size:11px;color:#4a515c}.flagged .flag{margin-left:0}
dl.legend{display:grid;grid-template-columns:max-content 1fr;
 gap:3px 10px;margin:.4em 0}dl.legend dd{margin:0}
figure{margin:.6em 0 1.2em;max-width:900px}figcaption{font-weight:600;margin-bottom:2px}
svg.chart{display:block;width:100%;height:auto;border:1px solid #e3e6ea}

pre{background:#f5f6f8;border:1px solid #d8dde3;padding:8px;overflow-x:auto;
 white-space:pre-wrap;word-break:break-all;user-select:all}
.muted{color:#5a6270}.facts{margin:.2em 0 .5em}code{background:#f1f3f6;padding:0 3px}
ul.warn li{margin:.2em 0}
"""


def e(value: object) -> str:
    return escape(str(value), quote=True)


def cell(content: str, numeric: bool = False) -> str:
    """A table cell: content is HTML already."""
    return f'<td class="n">{content}</td>' if numeric else f"<td>{content}</td>"


def table(head: list[str], rows: list[list[str]], numeric: set[int] | None = None,
          cls: str = "") -> str:
    """head is plain text; rows are HTML cells' contents; numeric: columns to right-align."""
    num = numeric or set()
    ths = "".join(f"<th>{e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(cell(c, i in num) for i, c in enumerate(r)) + "</tr>"
                   for r in rows)
    klass = f' class="{e(cls)}"' if cls else ""
    return f"<table{klass}><thead><tr>{ths}</tr></thead><tbody>{body}</tbody></table>"


def kv_table(pairs: list[tuple[str, object]], cls: str = "") -> str:
    """Two columns, name and value, without a header row."""
    rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in pairs)
    return f'<table class="kv {e(cls)}"><tbody>{rows}</tbody></table>'



# --- flags --------------------------------------------------------------------

def badge(flag: str, label: str | None = None) -> str:
    bad = " bad" if flag in ("failures", "client-bound", INCOMPLETE, "saturated") else ""
    return (f'<span class="flag{bad}" data-flag="{e(flag)}" '
            f'title="{e(MEANINGS.get(flag, ""))}">{e(label or flag)}</span>')


def flag_html(flag: str, count: int | None = None, reps: int = 1,
              label: str | None = None) -> str:
    """A flag's badge and its one-sentence meaning, as one line under a figure."""
    label = label or (flag if count is None or reps <= 1 else f"{flag} {count}/{reps}")
    return (f'<span class="flagged">{badge(flag, label)} '
            f'<span class="why">{e(MEANINGS.get(flag, ""))}</span></span>')


def flags_for(s: LevelStats, figure: str) -> str:
    """The flags of a level that concern one figure (rate, latency, failed)."""
    out = []
    for f in s.all_flags():
        if FLAG_FIGURE.get(f, "rate") == figure:
            out.append(flag_html(f, s.flags.get(f), s.rate.n))
    return "".join(out)


def flags_seen(stats: dict[str, list[LevelStats]], m: dict[str, Any]) -> list[str]:
    seen = {f for levels in stats.values() for s in levels for f in s.all_flags()}
    if m.get("status") != "complete":
        seen.add(INCOMPLETE)
    return [f for f in MEANINGS if f in seen] + sorted(seen - set(MEANINGS))


def legend(flags: list[str]) -> str:
    if not flags:
        return '<p class="muted">No level was flagged.</p>'
    items = "".join(f"<dt>{badge(f)}</dt><dd>{e(MEANINGS.get(f, ''))}</dd>" for f in flags)
    return f'<dl class="legend">{items}</dl>'


# --- charts -------------------------------------------------------------------

_PROLOG = re.compile(r"<\?xml.*?\?>|<!DOCTYPE[^>]*>|<!--.*?-->", re.S)
_SCRIPT = re.compile(r"<script\b.*?(?:/>|</script\s*>)", re.S | re.I)
_HANDLER = re.compile(r"""\s+on[a-z]+\s*=\s*(?:"[^"]*"|'[^']*')""", re.I)
_HREF = re.compile(r"""\s+((?:xlink:)?href)\s*=\s*(["'])(.*?)\2""", re.S | re.I)
_ID = re.compile(r"""\bid\s*=\s*(["'])(.*?)\1""")
_URL = re.compile(r"url\(\s*#([^)\s]+)\s*\)")
_ROOT = re.compile(r"<svg\b[^>]*>", re.S)


def _local_href(name: str, match: re.Match[str]) -> str:
    """Keep a link within the chart (renamed); drop any other."""
    attr, quote_, target = match.group(1), match.group(2), match.group(3).strip()
    if target.startswith("#"):
        return f" {attr}={quote_}#{name}-{target[1:]}{quote_}"
    return ""


def _root_tag(name: str, tag: str) -> str:
    """The outer <svg>: no fixed size, a viewBox, the chart class."""
    width = re.search(r'\swidth\s*=\s*["\']([\d.]+)', tag)
    height = re.search(r'\sheight\s*=\s*["\']([\d.]+)', tag)
    tag = re.sub(r'\s(?:width|height|class|style)\s*=\s*(["\']).*?\1', "", tag)
    if "viewBox" not in tag and width and height:
        tag = tag.replace("<svg", f'<svg viewBox="0 0 {width.group(1)} {height.group(1)}"', 1)
    return tag.replace("<svg", f'<svg class="chart" role="img" aria-label="{e(name)}"'
                       ' preserveAspectRatio="xMidYMid meet"', 1)


def inline_svg(name: str, text: str) -> str:
    """A gnuplot SVG made fit to sit inside the page: nothing it could fetch
    or run, ids unique to the chart, scaling to the page width."""
    text = _PROLOG.sub("", text)
    text = _SCRIPT.sub("", text)
    text = _HANDLER.sub("", text)
    text = _HREF.sub(lambda mt: _local_href(name, mt), text)
    text = _ID.sub(lambda mt: f"id={mt.group(1)}{name}-{mt.group(2)}{mt.group(1)}", text)
    text = _URL.sub(lambda mt: f"url(#{name}-{mt.group(1)})", text)
    text = _ROOT.sub(lambda mt: _root_tag(name, mt.group(0)), text, count=1)
    return text.strip()


def chart_files(run: Path) -> list[Path]:
    found = {p.stem: p for p in run.glob("*.svg")}
    order = [c for c in CHART_ORDER if c in found] + sorted(set(found) - set(CHART_ORDER))
    return [found[c] for c in order]


def charts_section(run: Path) -> str:
    figures = []
    for path in chart_files(run):
        name = re.sub(r"[^A-Za-z0-9_-]", "-", path.stem)
        svg = inline_svg(name, path.read_text(errors="replace"))
        title = CHART_TITLES.get(path.stem, path.stem)
        figures.append(f'<figure id="chart-{e(name)}"><figcaption>{e(title)} '
                       f'<span class="muted">({e(path.name)})</span></figcaption>{svg}</figure>')
    if not figures:
        return '<h2>Charts</h2><p class="muted">No charts in this run folder.</p>'
    return "<h2>Charts</h2>" + "".join(figures)


# --- figures per server ---------------------------------------------------------

def axis_label(m: dict[str, Any]) -> str:
    axis = str(m["params"]["axis"])
    return report.AXIS_LABEL.get(axis, axis)


def spread_html(s: Spread | None, scale: float = 1.0, fmt: str = ",.0f") -> str:
    return "–" if s is None else e(report.rng(s, scale, fmt))


def server_facts(name: str, rec: dict[str, Any]) -> str:
    bits = [("language", rec.get("language")), ("framework", rec.get("framework")),
            ("version", rec.get("version")), ("role", rec.get("role")),
            ("workers", rec.get("workers")), ("repetitions done", rec.get("reps_done")),
            ("status", rec.get("status"))]
    bits += [(k, v) for k, v in (rec.get("facts") or {}).items()]
    text = "; ".join(f"{k}: <b>{e(v)}</b>" for k, v in bits if v not in (None, ""))
    summary = f' <span class="muted">({e(rec["summary"])})</span>' if rec.get("summary") else ""
    return f'<p class="facts">{text}{summary}</p>'


def failures_flag(levels: list[LevelStats]) -> str:
    flagged = sum(1 for s in levels if "failures" in s.flags)
    if not flagged:
        return ""
    return flag_html("failures", label=f"failures at {flagged} of {len(levels)} levels")


def peak_table(m: dict[str, Any], name: str, levels: list[LevelStats]) -> str:
    top, last = metrics.peak(levels), levels[-1]
    rows = [["peak req/s (median [min–max])",
             f"{spread_html(top.rate)} at {e(axis_label(m))}={e(top.value)}"
             + flags_for(top, "rate")],
            ["mean response ms at peak", spread_html(top.resp_ms, fmt=".2f")
             + flags_for(top, "latency")]]
    for label, pct in (("p50", top.p50_ms), ("p90", top.p90_ms), ("p99", top.p99_ms)):
        if pct is not None:
            rows.append([f"{label} ms at peak", spread_html(pct, fmt=".2f")])
    rows += [["RSS at the end MB (last level)", spread_html(last.rss_end_kb, 1024, ".1f")],
             ["RSS peak MB", e(f"{max(s.rss_peak_kb for s in levels) / 1024:.1f}")]]
    if last.cgroup_mem_kb is not None:      # RUNTIME=docker
        rows += [["container cgroup memory at the end MB (last level; usage less inactive "
                  "page cache, as docker stats shows it)",
                  spread_html(last.cgroup_mem_kb, 1024, ".1f")]]
    rows += [["server CPU µs per request at peak", spread_html(top.cpu_us_per_req)],
             ["failed requests (all levels)", e(sum(s.failed for s in levels))
              + failures_flag(levels)]]
    return table(["figure", "value"], [[e(a), b] for a, b in rows], numeric={1},
                 cls="peak")


def level_rows(levels: list[LevelStats], pcts: list[str]) -> list[list[str]]:
    out = []
    for s in levels:
        spread = f"{s.rate.ratio - 1:.0%}" if s.rate.n > 1 else "–"
        row = [e(s.value), spread_html(s.rate) + flags_for(s, "rate"), e(spread),
               spread_html(s.resp_ms, fmt=".2f") + flags_for(s, "latency")]
        row += [spread_html(getattr(s, f"{p}_ms"), fmt=".2f") for p in pcts]
        row += [spread_html(s.rss_end_kb, 1024, ".1f"), spread_html(s.cpu_us_per_req),
                spread_html(s.client_cpu_pct, fmt=".0f"),
                e(s.failed) + flags_for(s, "failed")]
        out.append(row)
    return out


def level_table(m: dict[str, Any], levels: list[LevelStats]) -> str:
    pcts = [p for p in ("p50", "p90", "p99") if any(getattr(s, f"{p}_ms") for s in levels)]
    head = [axis_label(m), "req/s median [min–max]", "spread", "mean ms",
            *[f"{p} ms" for p in pcts], "RSS end MB", "CPU µs/req", "client CPU %", "failed"]
    return table(head, level_rows(levels, pcts), numeric=set(range(len(head))),
                 cls="levels")


def warmup_html(rec: dict[str, Any]) -> str:
    rows = []
    modes = {(s.get("warmup") or {}).get("mode", "none") for s in rec.get("starts", [])}
    if modes <= {"none"}:
        return '<p class="muted">Warm-up: none.</p>'
    for start in rec.get("starts", []):
        w = start.get("warmup")
        if not w:
            continue
        steady = {True: "yes", False: "no (hit the cap)"}.get(w.get("steady"), "–")
        flag = flag_html("not-steady") if w.get("steady") is False else ""
        rows.append([e(start.get("id", "")), e(w.get("mode", "")), e(steady) + flag,
                     e(w.get("seconds", "–")), e(w.get("slices", "–")),
                     e(", ".join(f"{x:,.0f}" for x in w.get("slice_rates", [])) or "–")])
    if not rows:
        return ""
    return "<h3>Warm-up</h3>" + table(["start", "mode", "steady", "seconds", "slices",
                                        "req/s per slice"], rows, numeric={3, 4, 5},
                                       cls="warmup")


def _json_cell(value: object) -> str:
    if isinstance(value, (dict, list)):
        return e(json.dumps(value, default=str))
    return e("–" if value is None else value)


def probe_html(run: Path, name: str) -> str:
    """<run>/<server>/probe.json, whatever its exact shape: a list of results,
    a dict holding such a list, or a plain dict."""
    path = run / name / "probe.json"
    if not path.is_file():
        return ""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        return f'<h3>Robustness probe</h3><p class="muted">probe.json unreadable: {e(err)}</p>'
    if isinstance(data, dict):
        inner = next((v for v in data.values() if isinstance(v, list)
                      and all(isinstance(x, dict) for x in v)), None)
        rest = [(k, v) for k, v in data.items() if v is not inner]
        head = kv_table([(k, json.dumps(v, default=str) if isinstance(v, (dict, list)) else v)
                         for k, v in rest]) if rest else ""
        data = inner if inner is not None else []
    else:
        head = ""
    items = [x for x in data if isinstance(x, dict)] if isinstance(data, list) else []
    keys: list[str] = []
    for item in items:
        keys += [k for k in item if k not in keys]
    body = table(keys, [[_json_cell(x.get(k)) for k in keys] for x in items],
                 cls="probe") if items else ""
    return "<h3>Robustness probe</h3>" + head + body


def overview(m: dict[str, Any], stats: dict[str, list[LevelStats]]) -> str:
    """One line per server: its peak and what it cost."""
    rows = []
    for name, levels in stats.items():
        rec = m["servers"].get(name, {})
        top, last = metrics.peak(levels), levels[-1]
        status = rec.get("status", "?")
        rows.append([f'<a href="#server-{e(name)}">{e(name)}</a>', e(rec.get("role", "")),
                     e(f"{rec.get('framework', '?')} {rec.get('version', '')}".strip()),
                     f"{spread_html(top.rate)} ({e(top.value)})",
                     spread_html(last.rss_end_kb, 1024, ".1f"),
                     e(f"{max(s.rss_peak_kb for s in levels) / 1024:.1f}"),
                     spread_html(top.cpu_us_per_req), spread_html(top.p99_ms, fmt=".2f"),
                     e(sum(s.failed for s in levels)) + failures_flag(levels),
                     e(status) if status == "complete" else badge(INCOMPLETE, str(status))])
    head = ["server", "role", "framework", f"peak req/s ({axis_label(m)})", "RSS end MB",
            "RSS peak MB", "CPU µs/req at peak", "p99 ms at peak", "failed", "status"]
    return "<h2>Servers</h2>" + table(head, rows, numeric=set(range(3, 9)), cls="overview")


def server_section(run: Path, m: dict[str, Any], name: str, levels: list[LevelStats]) -> str:
    rec = m["servers"].get(name, {})
    badge = flag_html(INCOMPLETE) if rec.get("status") not in (None, "complete") else ""
    parts = [f'<section class="server" id="server-{e(name)}"><h2>{e(name)}{badge}</h2>',
             server_facts(name, rec)]
    if levels:
        parts += [peak_table(m, name, levels), "<h3>Levels</h3>", level_table(m, levels)]
    else:
        parts.append('<p class="muted">No level measured.</p>')
    if rec.get("error"):
        parts.append(f"<p><b>Stopped:</b> {e(rec['error'])}</p>")
    notes = rec.get("notes") or []
    if notes:
        parts.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in notes) + "</ul>")
    parts += [warmup_html(rec), probe_html(run, name), "</section>"]
    return "".join(parts)


# --- run-wide sections -----------------------------------------------------------

def status_html(m: dict[str, Any]) -> str:
    status = str(m.get("status", "unknown"))
    if status == "complete":
        return '<div class="status complete">Status: complete</div>'
    problems = m.get("problems") or ["not every server finished every repetition"]
    items = "".join(f"<li>{e(p)}</li>" for p in problems)
    return (f'<div class="status incomplete" id="incomplete">Status: {e(status.upper())} '
            f"run: figures are missing.<ul>{items}</ul></div>")


def verdicts_html(run: Path, m: dict[str, Any]) -> str:
    found: list[dict[str, Any]] = []
    path = run / "results.json"
    if path.is_file():
        found = json.loads(path.read_text()).get("verdicts") or []
    if not found:
        return ('<h2>Verdicts</h2><p class="muted">No verdicts: fewer than two '
                "measured servers besides the ceiling.</p>")
    rows = [[e(v.get("value")), e(v.get("a")), e(v.get("b")), e(v.get("kind")),
             e(v.get("text"))] for v in found]
    return "<h2>Verdicts</h2>" + table([axis_label(m), "a", "b", "kind", "verdict"], rows,
                                       numeric={0}, cls="verdicts")


def calibration_html(m: dict[str, Any], stats: dict[str, list[LevelStats]]) -> str:
    cal = m.get("calibration")
    if not cal:
        return ""
    shares = [x for n, levels in stats.items() if levels
              and (x := report.capacity_note(m, n, metrics.peak(levels)))]
    parts = ["<h2>Against the client's calibrated capacity</h2>"]
    parts += ["<ul>" + "".join(f"<li>{e(x)}</li>" for x in shares) + "</ul>"] if shares else \
        ['<p class="muted">No level of this run has a calibrated counterpart.</p>']
    levels = [str(c) for c in cal.get("levels", [])]
    rows = []
    for client, modes in (cal.get("clients") or {}).items():
        for mode in ("close", "keep-alive"):
            got = modes.get(mode) or {}
            rows.append([e(f"{client} {modes.get('version', '')}".strip()), e(mode)] + [
                "–" if got.get(c) is None else
                e(f"{got[c]['rate_rps']:,.0f} (client CPU {got[c]['client_cpu_pct']:.0f}%)")
                for c in levels])
    if rows:
        parts.append(f"<p>Calibrated against {e(cal.get('ceiling', '?'))}, "
                     f"{e(cal.get('duration_s', '?'))}s per level (req/s):</p>")
        parts.append(table(["client", "connection", *[f"c={c}" for c in levels]], rows,
                           numeric=set(range(2, 2 + len(levels))), cls="calibration"))
    return "".join(parts)


def warnings_html(m: dict[str, Any], stats: dict[str, list[LevelStats]]) -> str:
    notes = report.warnings(m, stats)
    if not notes:
        return ""
    return '<h2>Warnings</h2><ul class="warn">' + "".join(f"<li>{e(w)}</li>" for w in notes) \
        + "</ul>"


def conditions_html(m: dict[str, Any]) -> str:
    h, c, p = m.get("host", {}), m.get("client", {}), m.get("params", {})
    cal = m.get("calibration")
    threads = c.get("threads") or p.get("client_threads")
    host = [("CPU model", h.get("cpu_model")), ("cores", h.get("cores")),
            ("usable CPUs", " ".join(map(str, h.get("usable_cpus", [])))),
            ("memory GB", h.get("memory_gb")), ("OS", h.get("os")),
            ("kernel", h.get("kernel")), ("hostname", h.get("hostname")),
            ("load average at start", " ".join(f"{x:.2f}" for x in
                                                h.get("load_average_at_start", [])))]
    host += [(f"sysctl {k}", v) for k, v in (h.get("sysctl") or {}).items()]
    lab = m.get("lab", {})
    run = [("topology", m.get("topology")),
           ("server CPUs", m.get("pinning", {}).get("server_cpus")),
           ("client CPUs", m.get("pinning", {}).get("client_cpus")),
           ("client", f"{c.get('tool', '?')} {c.get('version', '')}".strip()),
           ("connection", c.get("connection")), ("client threads", threads),
           ("calibrated capacity", "on record (see above)" if cal else "none on record"),
           ("lab commit", f"{lab.get('commit', '?')}{' (dirty)' if lab.get('dirty') else ''}"),
           ("started", m.get("started")), ("finished", m.get("finished")),
           ("plan", m.get("plan"))]
    tools = sorted((m.get("tools") or {}).items())
    settings = list((m.get("settings") or {}).items())
    return ("<h2>Conditions</h2><h3>Host</h3>"
            + kv_table([(k, v) for k, v in host if v not in (None, "")], "conditions")
            + "<h3>Run</h3>" + kv_table([(k, v) for k, v in run if v not in (None, "")],
                                        "conditions")
            + "<h3>Tool versions</h3>" + kv_table(tools, "tools")
            + "<h3>Settings</h3>" + kv_table([(k, v if v != "" else "(empty)")
                                              for k, v in settings], "settings")
            + "<h3>Reproduce</h3>"
            + f'<pre id="reproduce"><code>{e(m.get("reproduce", ""))}</code></pre>')


def page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{e(title)}</title><style>{CSS}</style></head>"
            f"<body>{body}</body></html>\n")


def render(run: Path) -> str:
    m = results.read_manifest(run)
    stats = report.stats_of(run)
    names = list(m.get("servers", {})) + [n for n in stats if n not in m.get("servers", {})]
    body = [f"<h1>Run {e(m.get('run_id', run.name))}</h1>", status_html(m),
            f'<p class="muted">{e(report.conditions(m))}</p>',
            overview(m, stats) if stats else "",
            "<h2>Flags</h2>", legend(flags_seen(stats, m)),
            charts_section(run)]
    body += [costview.html(run), profileview.html(run)]
    body += [server_section(run, m, n, stats.get(n, [])) for n in names]
    body += [verdicts_html(run, m), calibration_html(m, stats), warnings_html(m, stats),
             conditions_html(m)]
    return page(f"Run {m.get('run_id', run.name)} ({m.get('status', '?')})", "".join(body))


def write_report(run: Path) -> Path:
    """report.html in the run folder; returns its path."""
    out = run / REPORT
    tmp = out.with_suffix(".tmp")
    tmp.write_text(render(run), encoding="utf-8")
    tmp.replace(out)
    return out


# --- index of runs ---------------------------------------------------------------

def run_entry(folder: Path) -> dict[str, Any] | None:
    """What the index shows of one run folder; None when it is not a run."""
    try:
        m = results.read_manifest(folder)
    except (OSError, ValueError):
        return None if not (folder / results.MANIFEST).exists() else {
            "folder": folder.name, "started": "", "broken": True}
    c, p = m.get("client", {}), m.get("params", {})
    return {"folder": folder.name, "started": str(m.get("started", "")),
            "servers": " ".join(p.get("servers") or m.get("servers", {})),
            "client": f"{c.get('tool', '?')} {c.get('version', '')}".strip(),
            "connection": c.get("connection", ""), "repeat": p.get("repeat", 1),
            "topology": str(m.get("topology", "")).split(" ")[0],
            "status": m.get("status", "?"), "report": (folder / REPORT).is_file(),
            "broken": False}


def index_row(r: dict[str, Any]) -> list[str]:
    name = e(r["folder"])
    if r["broken"]:
        return [e(r["started"]), name] + [""] * 5 + ['<span class="flag bad">unreadable '
                                                     "manifest</span>"]
    link = (f'<a href="{e(quote(r["folder"], safe="+"))}/{REPORT}">{name}</a>' if r["report"]
            else f'{name} <span class="flag bad">no report</span>')
    status = e(r["status"]) if r["status"] == "complete" else \
        f'<span class="flag bad">{e(r["status"])}</span>'
    return [e(r["started"].replace("T", " ")), link, e(r["servers"]), e(r["client"]),
            e(r["connection"]), e(r["repeat"]), e(r["topology"]), status]


def write_index(results_dir: Path) -> Path:
    """results_dir/index.html: every run folder, newest first."""
    entries = [x for d in results_dir.iterdir() if d.is_dir() and (x := run_entry(d))]
    entries.sort(key=lambda r: (r["started"], r["folder"]), reverse=True)
    rows = [index_row(r) for r in entries]
    body = (f"<h1>Runs in {e(results_dir.name)}</h1>"
            f'<p class="muted">{len(rows)} run{"s" * (len(rows) != 1)}, newest first.</p>'
            + table(["started", "run", "servers", "client", "connection", "repetitions",
                     "topology", "status"], rows, numeric={5}, cls="runs"))
    out = results_dir / INDEX
    tmp = out.with_suffix(".tmp")
    tmp.write_text(page(f"Runs in {results_dir.name}", body), encoding="utf-8")
    tmp.replace(out)
    return out


def main_report(run: Path) -> int:
    """Write the run's report.html and its results folder's index.html."""
    if not (run / results.MANIFEST).is_file():
        print(f"error: {run} is not a run folder (no {results.MANIFEST})", file=sys.stderr)
        return 2
    print(write_report(run))
    print(write_index(run.resolve().parent))
    return 0
