"""How the reading side shows figures and names, once: a figure or a
'median [min–max]' range (a missing or impossible one as "–" with its
reason), the swept axis's labels, and text quoted for gnuplot."""
from __future__ import annotations

import math
from urllib.parse import quote

from lab.analyse.metrics import LevelStats, Spread
from lab.setup.whynot import Reason

DASH = "–"
# The swept axis: a table column, and a chart's x label.
AXIS_LABEL = {"concurrency": "c", "rate": "offered req/s", "workers": "workers",
              "backlog": "backlog"}
XLABEL = {"concurrency": "concurrency (simultaneous clients)",
          "rate": "offered rate (requests/s, open loop)",
          "workers": "server workers (threads/tasks)", "backlog": "accept backlog"}


def axis_label(axis: str) -> str:
    return AXIS_LABEL.get(axis, axis)


def xlabel(axis: str) -> str:
    return XLABEL.get(axis, axis)


def why_not_a_figure(x: float | None) -> Reason:
    """Why x cannot be shown as a figure, or None when it can."""
    if x is None:
        return "not measured"
    if math.isnan(x):
        return "not a number in the record"
    if math.isinf(x):
        return "infinite in the record"
    if x < 0:
        return f"negative in the record ({x:g}): impossible"
    return None


def missing(why: str) -> str:
    return f"{DASH} ({why})"


def figure(x: float | None, fmt: str = ",.0f", scale: float = 1.0) -> str:
    """One figure, or '– (why)' when it is missing or impossible."""
    why = why_not_a_figure(x)
    if why is not None or x is None:
        return missing(why or "not measured")
    return format(x / scale, fmt)


def median_range(s: Spread | None, scale: float = 1.0, fmt: str = ",.0f") -> str:
    """'median [min–max]', the value alone for one repetition, or '– (why)'."""
    if s is None:
        return DASH
    why = next((w for w in map(why_not_a_figure, (s.median, s.lo, s.hi)) if w), None)
    if why is not None:
        return missing(why)
    med = format(s.median / scale, fmt)
    if s.n == 1:
        return med
    return f"{med} [{format(s.lo / scale, fmt)}{DASH}{format(s.hi / scale, fmt)}]"


def ratio(x: float | None) -> str:
    return DASH if x is None or why_not_a_figure(x) else f"{x:.3f}"


def link_target(path: str = "", fragment: str = "") -> str:
    """The one builder of a link's target, in a page (lab.present.page.href)
    or in Markdown: `path` relative to the page ("run/report.html", a folder
    with a trailing "/"), each part URL-quoted (a ':' too, so no name becomes
    a scheme: `javascript:x` is `javascript%3Ax`), then `#fragment`.
    ValueError for anything but a relative path down from the page: empty
    parts (a leading '/', '//', a URL), '.' or '..'."""
    parts = path.split("/") if path else []
    if parts and parts[-1] == "":
        parts = parts[:-1]                               # a folder: "run/"
    if [p for p in parts if p in ("", ".", "..")] or (path and not parts):
        raise ValueError(f"not a relative path down from the page: {path!r}")
    target = "/".join(quote(p, safe="+") for p in parts) + ("/" if path.endswith("/") else "")
    if fragment:
        target += "#" + quote(fragment, safe="!$&'()*+,;=:@/?")    # RFC 3986's fragment
    return target


def gp_quote(text: str) -> str:
    """A gnuplot string literal (single quotes: nothing inside is expanded)."""
    return "'" + text.replace("'", "''") + "'"


def spread_text(s: Spread) -> str:
    """How far the repetitions spread (max/min - 1), or '–' for one repetition
    or figures without a meaningful ratio."""
    if s.n <= 1 or why_not_a_figure(s.lo) or why_not_a_figure(s.hi) or s.ratio == float("inf"):
        return DASH
    return f"{s.ratio - 1:.0%}"


# Where a level's p50/p90/p99 come from when several client hosts shared it
# (LevelStats.percentiles): a word beside the figure, and a sentence under the table
PERCENTILE_MARK = {"exact": " (merged)", "bound": " (bound)"}
PERCENTILES_SAID = {
    "exact": "(merged): p50, p90 and p99 merged from every client host's whole latency "
             "distribution, as if one client had seen every response (exact, to the "
             "histogram's 1 µs).",
    "bound": "(bound): p50, p90 and p99 the worst client host's (under PAIRED, the worst "
             "slice's): an upper bound of the level's, where no distribution could be "
             "merged (`docs/run-folder.md`, `percentiles`).",
}


def percentile_mark(s: LevelStats) -> str:
    """The word beside a level's percentile figure: "" for one client host's
    own figures, and where the client gave none (siege)."""
    return PERCENTILE_MARK.get(s.percentiles, "") if s.p99_ms is not None else ""


def percentiles_said(levels: list[LevelStats]) -> list[str]:
    """A sentence for each mark beside a figure, for under a table of them."""
    marks = {s.percentiles for s in levels if s.p99_ms is not None}
    return [PERCENTILES_SAID[m] for m in ("exact", "bound") if m in marks]
