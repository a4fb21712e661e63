"""A server across runs in words (lab.analyse.history's points): `make
history SERVER=x`'s Markdown table, one row per run and a line where the
conditions change, and the flags' words that results/index.html shows too."""
from __future__ import annotations

import sys
from pathlib import Path

from lab.analyse.history import Point, changes, num, points, segments
from lab.setup.markdown import Row, Span, Table

HEAD = ["#", "run", "started", "peak req/s (at)", "CPU µs/req at peak", "RSS MB at peak",
        "instructions/req", "flags"]


CHANGE = "conditions change"


def changed(before: Point, after: Point) -> str:
    """What changed from one run to the next (the table's and the index's line)."""
    return "; ".join(changes(before, after))


def flag_text(p: Point) -> str:
    """The table's flags column: what the flag makes of the figure."""
    if not p.flags:
        return ""
    bound = " (req/s a lower bound)" if "client-bound" in p.flags else ""
    return f"{', '.join(p.flags)}{bound}: not a trend point"


def table(server: str, pts: list[Point]) -> list[str]:
    """`make history`'s table: one row per run, a line where conditions change."""
    rows: list[Row] = []
    i = 0
    for n, seg in enumerate(segments(pts)):
        head = ", ".join(f"{k} {v}" for k, v in seg[0].conditions)
        if n:
            rows.append(Span(1, f"**{CHANGE}:** {changed(pts[i - 1], seg[0])}"))
        rows.append(Span(1, f"*{head}*"))
        for p in seg:
            i += 1
            at = f" ({p.peak_at})" if p.peak_at is not None else ""
            rows.append([str(i), p.run, p.started, num(p.peak_rps, ',.0f') + at,
                         num(p.cpu_us_per_req, '.1f'), num(p.rss_mb, '.1f'),
                         num(p.instructions, ',.0f'), flag_text(p)])
    lines = [f"# {server} across {len(pts)} run{'s' * (len(pts) != 1)}", "",
             *Table(HEAD, rows).lines()]
    flagged = sum(bool(p.flags) for p in pts)
    if flagged:
        lines += ["", f"{flagged} of {len(pts)} runs flagged at their peak level: their "
                  "figures measure the client or the host, not the server; read the trend "
                  "from the others."]
    return lines


def main(results_dir: Path, server: str) -> int:
    """`make history SERVER=x`: 0 printed, 2 no such server in results_dir."""
    names = server.split()
    unreadable: dict[str, str] = {}
    found = points(results_dir, unreadable)
    for name, why in unreadable.items():
        print(f"note: {name} left out, unreadable: {why}", file=sys.stderr)
    if len(names) != 1:
        print(f"error: give one server: make history SERVER=<name> (in {results_dir}: "
              f"{' '.join(sorted(found)) or 'no runs'})", file=sys.stderr)
        return 2
    if names[0] not in found:
        print(f"error: no run in {results_dir} measured {names[0]} (servers measured there: "
              f"{' '.join(sorted(found)) or 'none'})", file=sys.stderr)
        return 2
    print("\n".join(table(names[0], found[names[0]])))
    return 0
