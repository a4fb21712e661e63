"""The index of a results folder (index.html): every run and comparison,
newest first, and each server's history across runs."""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from lab.record import files, folder, manifest, outputs
from lab.record.files import RecordError
from lab.present.page import GATE_LOOK, escaped, href, page, table
from lab.present.svg import inline_svg
from lab.setup.reason import Reason

INDEX = "index.html"
INDEX_SIGNATURE = '<meta name="generator" content="lab index">'


def run_entry(folder: Path) -> dict[str, Any] | None:
    """What the index shows of one folder: a run, a comparison, or an
    unreadable run with its reason; None when it is none of these."""
    base: dict[str, Any] = {"folder": folder.name, "started": "", "kind": "run",
                            "broken": "", "report": False}
    if (folder / "compare.json").is_file() and not (folder / manifest.MANIFEST).exists():
        try:
            data = files.read_json(folder / "compare.json")
            if not isinstance(data, dict):
                raise RecordError(folder / "compare.json", "should be an object")
            a, b = data.get("a") or {}, data.get("b") or {}
            found = data.get("gate")
            g: dict[str, Any] = found if isinstance(found, dict) else {}
            return {**base, "kind": "compare", "started": str(data.get("made", "")),
                    "servers": f"{a.get('run_id', '?')} (A) vs {b.get('run_id', '?')} (B)",
                    "report": (folder / "compare.html").is_file(),
                    "gate": str(g.get("outcome", "")), "gate_code": g.get("code"),
                    "gate_reason": str(g.get("reason", ""))}
        except (RecordError, AttributeError) as err:
            return {**base, "kind": "compare", "broken": str(err)}
    if not (folder / manifest.MANIFEST).exists():
        return None
    try:
        m = manifest.read_manifest(folder)
    except RecordError as err:
        return {**base, "broken": f"{err.path.name}: {err.problem}"}
    return {**base, "started": m.started,
            "servers": " ".join(m.params.servers or list(m.servers)),
            "client": f"{m.client.tool} {m.client.version}".strip(),
            "connection": m.client.connection, "repeat": m.params.repeat,
            "topology": m.topology.split(" ")[0],
            "status": m.status, "report": (folder / outputs.REPORT).is_file()}


def gate_outcome_html(r: dict[str, Any]) -> str:
    """A comparison's status cell: its gate's outcome and exit code, the
    reason on hover; "no gate recorded" for a comparison made without one."""
    outcome = r.get("gate") or ""
    if not outcome:
        return '<span class="muted">no gate recorded</span>'
    code = r.get("gate_code")
    said = f"gate: {outcome}" + (f" (exit {code})" if code is not None else "")
    return (f'<span class="gate {GATE_LOOK.get(outcome, "")}" '
            f'title="{escaped(r.get("gate_reason", ""))}">{escaped(said)}</span>')


def index_row(r: dict[str, Any]) -> list[str]:
    name = escaped(r["folder"])
    if r["broken"]:
        return [escaped(r["started"]), name, escaped(r["kind"])] + [""] * 5 + [
            '<span class="flag bad">unreadable</span> ' + escaped(r["broken"])]
    page_name = "compare.html" if r["kind"] == "compare" else outputs.REPORT
    link = (f'<a href="{href(r["folder"] + "/" + page_name)}">{name}</a>'
            if r["report"] else f'{name} <span class="flag bad">no report</span>')
    if r["kind"] == "compare":
        return [escaped(r["started"].replace("T", " ")), link, "comparison", escaped(r["servers"]),
                "", "", "", "", gate_outcome_html(r)]
    status = escaped(r["status"]) if r["status"] == "complete" else \
        f'<span class="flag bad">{escaped(r["status"])}</span>'
    return [escaped(r["started"].replace("T", " ")), link, "run", escaped(r["servers"]), escaped(r["client"]),
            escaped(r["connection"]), escaped(r["repeat"]), escaped(r["topology"]), status]


def why_not_ours(results_dir: Path) -> Reason:
    """Why the index may not be written into results_dir, or None when it may:
    the folder must carry the lab's mark, and an index.html there must be the lab's."""
    if not (results_dir / folder.MARK).is_file():
        return (f"{results_dir} is not a results folder the lab made (no {folder.MARK}): "
                "no index written there")
    index = results_dir / INDEX
    if index.is_symlink() or (index.exists() and not index.is_file()):
        return f"{index} is not a plain file: left alone"
    if index.is_file():
        try:
            with index.open("rb") as f:
                head = f.read(4096).decode("utf-8", "replace")
        except OSError as err:
            return f"{index} cannot be read ({err.strerror or err}): left alone"
        if INDEX_SIGNATURE not in head:
            return f"{index} was not written by the lab: left alone"
    return None


def history_section(results_dir: Path) -> str:
    """Per server measured in two runs or more: its trend chart across runs
    (lab.analyse.history, plots/history.gp) and the numbered runs, each linking to
    its report; a line breaks where the conditions changed."""
    from lab.analyse import history
    found = {n: pts for n, pts in history.points(results_dir).items() if len(pts) > 1}
    if not found:
        return ""
    parts = ["<h2>History per server</h2>",
             '<p class="muted">Peak requests/s, server CPU µs per request and RSS at the peak '
             "level, instructions per request (make cost); runs in the order they started. "
             "A line breaks where the conditions changed (client, connection, topology, "
             "pinning, host, server version); a run flagged at its peak level (client-bound, "
             "host-busy) is ringed in red and not joined to the line. <code>make history SERVER=&lt;name&gt;</code> "
             "prints the same as a table.</p>"]
    for name, pts in sorted(found.items()):
        parts.append(f"<h3>{escaped(name)}</h3>")
        try:
            svg = inline_svg(f"history-{re.sub(r'[^A-Za-z0-9_-]', '-', name)}",
                             history.chart_svg(name, pts))
            parts.append(f'<figure id="history-{escaped(history.safe_name(name))}">{svg}</figure>')
        except history.ChartError as err:
            parts.append(f'<p class="muted">No chart: {escaped(err)}.</p>')
        items, i = [], 0
        for n, seg in enumerate(history.segments(pts)):
            if n:
                items.append(f'<li class="muted change">conditions change: '
                             f"{escaped('; '.join(history.changes(pts[i - 1], seg[0])))}</li>")
            for pt in seg:
                i += 1
                target = f"{pt.run}/{outputs.REPORT}" if pt.report else f"{pt.run}/"
                flag = (f' <span class="worse">{escaped(pt.flag_text())}</span>'
                        if pt.flags else "")
                items.append(f'<li value="{i}"><a href="{href(target)}">{escaped(pt.run)}</a> '
                             f'<span class="muted">{escaped(pt.started)}</span>{flag}</li>')
        parts.append('<ol class="history">' + "".join(items) + "</ol>")
    return "".join(parts)


def write_index(results_dir: Path) -> Path | None:
    """results_dir/index.html: every run and comparison, newest first; None
    (with the reason on stderr) when the folder or its index.html is not the lab's."""
    why = why_not_ours(results_dir)
    if why:
        print(f"note: {why}", file=sys.stderr)
        return None
    entries = [x for d in sorted(results_dir.iterdir())
               if d.is_dir() and not d.name.startswith(".") and (x := run_entry(d))]
    entries.sort(key=lambda r: (r["started"], r["folder"]), reverse=True)
    rows = [index_row(r) for r in entries]
    runs = sum(1 for r in entries if r["kind"] == "run")
    body = (f"<h1>Runs in {escaped(results_dir.name)}</h1>"
            f'<p class="muted">{runs} run{"s" * (runs != 1)}, '
            f"{len(entries) - runs} comparison{'s' * (len(entries) - runs != 1)}, "
            "newest first.</p>"
            + table(["started", "folder", "kind", "servers", "client", "connection",
                     "repetitions", "topology", "status"], rows, numeric={6}, cls="runs")
            + history_section(results_dir))
    text = page(f"Runs in {results_dir.name}", body).replace(
        "<head>", f"<head>{INDEX_SIGNATURE}", 1)
    return files.write_atomic(results_dir / INDEX, text)

