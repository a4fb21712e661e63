"""The index of a results folder (index.html): every run and comparison,
newest first, and each server's history across runs."""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from lab.record import files, folder, manifest, outputs, runcache
from lab.record.files import RecordError
from lab.present.page import GATE_LOOK, escaped, href, page, table
from lab.present.svg import inline_svg
from lab.setup.whynot import Reason

INDEX = "index.html"
PAGE = 200                  # runs and comparisons a page of the index shows, newest first
HISTORY_SHOWN = 200         # runs each server's history charts and lists (the newest)
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
            "connection": m.client.connection, "repeat": m.planned.repeat.least,
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


def cached_entry(cache: runcache.RunCache, folder: Path) -> dict[str, Any] | None:
    """run_entry, or the cache's while the run is unchanged (a comparison,
    which has no manifest, is read each time)."""
    kept = cache.get(folder, "index")
    if isinstance(kept, dict) and kept.get("folder") == folder.name and \
            isinstance(kept.get("report"), bool) and \
            all(isinstance(kept.get(k), str) for k in ("started", "kind", "broken")) and \
            all(isinstance(v, str) for k, v in kept.items() if k not in ("report", "repeat")) \
            and isinstance(kept.get("repeat", 0), int):
        return kept                         # as run_entry made it: else made again
    entry = run_entry(folder)
    if entry is not None:
        cache.put(folder, "index", entry)
    return entry


def history_section(results_dir: Path, cache: runcache.RunCache | None = None) -> str:
    """Per server measured in two runs or more: its trend chart across runs
    (lab.analyse.history, plots/history.gp) and the numbered runs, each linking to
    its report; a line breaks where the conditions changed."""
    from lab.analyse import history
    from lab.present import historytable
    found = {n: pts for n, pts in history.points(results_dir, cache=cache).items()
             if len(pts) > 1}
    if not found:
        return ""
    parts = ["<h2>History per server</h2>",
             '<p class="muted">Peak requests/s, server CPU µs per request and RSS at the peak '
             "level, instructions per request (make cost); runs in the order they started. "
             "A line breaks where the conditions changed (client, connection, topology, "
             "pinning, host, server version); a run flagged at its peak level (client-bound, "
             "host-busy) is ringed in red and not joined to the line. <code>make history SERVER=&lt;name&gt;</code> "
             "prints the same as a table.</p>"]
    for name, every in sorted(found.items()):
        pts = every[-HISTORY_SHOWN:]        # the newest: a chart of 5,000 runs was 11 MB
        earlier = len(every) - len(pts)
        parts.append(f"<h3>{escaped(name)}</h3>")
        if earlier:
            parts.append(f'<p class="muted">The newest {len(pts):,} of its {len(every):,} '
                         f"runs; <code>make history SERVER={escaped(name)}</code> lists "
                         "them all.</p>")
        try:
            svg = inline_svg(f"history-{re.sub(r'[^A-Za-z0-9_-]', '-', name)}",
                             history.chart_svg(name, pts))
            parts.append(f'<figure id="history-{escaped(history.safe_name(name))}">{svg}</figure>')
        except history.ChartError as err:
            parts.append(f'<p class="muted">No chart: {escaped(err)}.</p>')
        items, i = [], 0
        for n, seg in enumerate(history.segments(pts)):
            if n:
                items.append(f'<li class="muted change">{historytable.CHANGE}: '
                             f"{escaped(historytable.changed(pts[i - 1], seg[0]))}</li>")
            for pt in seg:
                i += 1
                target = f"{pt.run}/{outputs.REPORT}" if pt.report else f"{pt.run}/"
                flag = (f' <span class="worse">{escaped(historytable.flag_text(pt))}</span>'
                        if pt.flags else "")
                items.append(f'<li value="{earlier + i}"><a href="{href(target)}">'
                             f'{escaped(pt.run)}</a> <span class="muted">{escaped(pt.started)}'
                             f"</span>{flag}</li>")
        parts.append('<ol class="history">' + "".join(items) + "</ol>")
    return "".join(parts)


def write_index(results_dir: Path) -> Path | None:
    """results_dir/index.html: the newest PAGE runs and comparisons, the count
    of all, and the older ones PAGE a page on index-2.html, index-3.html ...;
    None (with the reason on stderr) when the folder or its index.html is not
    the lab's. What each run shows comes from the runs' cache
    (lab.record.runcache) while the run is unchanged."""
    why = why_not_ours(results_dir)
    if why:
        print(f"note: {why}", file=sys.stderr)
        return None
    cache = runcache.RunCache(results_dir)
    folders = [d for d in sorted(results_dir.iterdir()) if d.is_dir() and not d.name.startswith(".")]
    entries = [x for d in folders if (x := cached_entry(cache, d))]
    entries.sort(key=lambda r: (r["started"], r["folder"]), reverse=True)
    history = history_section(results_dir, cache)
    cache.save({d.name for d in folders})
    pages = [entries[i:i + PAGE] for i in range(0, len(entries), PAGE)] or [[]]
    runs = sum(1 for r in entries if r["kind"] == "run")
    said = (f"{runs:,} run{'s' * (runs != 1)}, {len(entries) - runs:,} "
            f"comparison{'s' * (len(entries) - runs != 1)}, newest first")
    nav = pages_nav(len(pages))
    for n, chunk in enumerate(pages, 1):
        rows = [index_row(r) for r in chunk]
        shown = (f"; {(n - 1) * PAGE + 1:,}-{(n - 1) * PAGE + len(chunk):,} here"
                 if len(pages) > 1 else "")
        body = (f"<h1>Runs in {escaped(results_dir.name)}</h1>"
                f'<p class="muted">{said}{shown}.</p>' + nav
                + table(["started", "folder", "kind", "servers", "client", "connection",
                         "repetitions", "topology", "status"], rows, numeric={6}, cls="runs")
                + (history if n == 1 else ""))
        text = page(f"Runs in {results_dir.name}", body).replace(
            "<head>", f"<head>{INDEX_SIGNATURE}", 1)
        written = files.write_atomic(results_dir / page_name(n), text)
        if n == 1:
            first = written
    drop_old_pages(results_dir, len(pages))
    return first


def page_name(n: int) -> str:
    return INDEX if n == 1 else f"index-{n}.html"


def pages_nav(count: int) -> str:
    """Links to every page of the index ("" for one page)."""
    if count < 2:
        return ""
    links = " ".join(f'<a href="{href(page_name(n))}">{n}</a>' for n in range(1, count + 1))
    return f'<p class="pages">Pages: {links}</p>'


def drop_old_pages(results_dir: Path, count: int) -> None:
    """The index's pages past `count` (fewer runs than before), where the lab
    wrote them (its signature): removed, never another file."""
    n = count + 1
    while True:
        old = results_dir / page_name(n)
        if not old.is_file() or old.is_symlink():
            return
        try:
            with old.open("rb") as f:
                if INDEX_SIGNATURE not in f.read(4096).decode("utf-8", "replace"):
                    return
            old.unlink()
        except OSError:
            return
        n += 1
