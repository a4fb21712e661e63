"""The compare page (compare.html, `make compare`): two runs side by side and
the gate. lab.present.compare fills a `ComparePage` with plain text; the page
escapes every piece once, here, when it renders it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lab.present.page import GATE_LOOK, chart_figure, escaped, page, table

HEAD = ["server", "{level}", "A req/s median [min–max]", "B req/s median [min–max]", "B/A",
        "verdict"]
OTHER_HEAD = ["server and level", "p99 ms B/A", "RSS end B/A", "CPU µs/req B/A"]
GATE_HEAD = ["server", "level", "metric", "gate", "B against A", "threshold", "why"]


@dataclass(frozen=True)
class RateRow:
    """One server and level measured in both runs: req/s of each, B/A, the verdict."""
    server: str
    value: int                      # the swept value
    a: str                          # median [min–max]
    b: str
    ratio: str
    verdict: str
    look: str = ""                  # the verdict's CSS class: better, worse or none


@dataclass(frozen=True)
class RatioRow:
    """The other ratios (B/A of medians) of one server and level."""
    server: str
    value: int
    p99: str
    rss: str
    cpu: str


@dataclass(frozen=True)
class GateRow:
    """One check of the gate."""
    server: str
    where: str
    metric: str
    outcome: str
    look: str                       # the outcome's CSS class
    worse: str
    threshold: str
    why: str


@dataclass(frozen=True)
class GateView:
    """The gate as the page shows it."""
    outcome: str                    # pass, regression, not-comparable
    summary: str                    # its outcome and why
    notes: list[str]                # the settings and the noise floor used, per server
    rows: list[GateRow]


@dataclass(frozen=True)
class ComparePage:
    """What `make compare` shows, as plain text (escaped when rendered)."""
    ids: tuple[str, str]
    conditions: tuple[str, str]
    lead: str                       # the first line: what, how, the verdict in words
    warnings: list[str]
    level: str                      # the swept axis's column ("c", ...)
    rows: list[RateRow]
    others: list[RatioRow]
    note: str
    chart: Path | None
    chart_problem: str | None
    differences: list[str]
    gate: GateView | None = None


def gate_section(g: GateView | None) -> list[str]:
    if g is None:
        return []
    rows = [[escaped(r.server), escaped(r.where), escaped(r.metric),
             f'<span class="{escaped(r.look)}">{escaped(r.outcome)}</span>', escaped(r.worse),
             escaped(r.threshold), escaped(r.why)] for r in g.rows]
    return ["<h2>Gate</h2>", f'<p class="gate {GATE_LOOK.get(g.outcome, "")}"><strong>'
            f"{escaped(g.summary)}</strong></p>",
            "<ul>" + "".join(f"<li>{escaped(n)}</li>" for n in g.notes) + "</ul>",
            table(GATE_HEAD, rows, numeric={1}, cls="gate")]


def render(c: ComparePage) -> str:
    title = f"Compare {c.ids[0]} vs {c.ids[1]}"
    chart = chart_figure(c.chart, "B against A") if c.chart and c.chart.is_file() else \
        f'<p class="muted">No chart: {escaped(c.chart_problem or "not drawn")}.</p>'
    head = [h.format(level=c.level) for h in HEAD]
    rows = [[escaped(r.server), escaped(r.value), escaped(r.a), escaped(r.b), escaped(r.ratio),
             f'<span class="{escaped(r.look)}">{escaped(r.verdict)}</span>'] for r in c.rows]
    others = [[escaped(f"{r.server} at {c.level}={r.value}"), escaped(r.p99), escaped(r.rss),
               escaped(r.cpu)] for r in c.others]
    body = [f"<h1>{escaped(c.ids[0])} (A) vs {escaped(c.ids[1])} (B)</h1>",
            f'<p class="lead" id="lead">{escaped(c.lead)}</p>' if c.lead else "",
            f'<p class="muted">A: {escaped(c.conditions[0])}<br>B: {escaped(c.conditions[1])}</p>',
            *[f'<p class="warnbox">{escaped(w)}</p>' for w in c.warnings],
            *gate_section(c.gate),
            "<h2>Requests per second</h2>",
            table(head, rows, numeric={1, 2, 3, 4}, cls="compare"),
            f'<p class="muted">{escaped(c.note)}</p>', "<h2>Chart</h2>", chart,
            "<h2>Other ratios (B/A of medians)</h2>",
            table(OTHER_HEAD, others, numeric=set(range(1, len(OTHER_HEAD))), cls="ratios"),
            "<h2>Differences in conditions</h2>",
            "<ul>" + "".join(f"<li>{escaped(d)}</li>" for d in c.differences or ["none recorded"])
            + "</ul>"]
    return page(title, "".join(body))
