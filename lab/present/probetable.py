"""The robustness probe's results as one Markdown table, a row per probe and
a column per server (short names make narrow columns; the probes'
descriptions need the width), from each server's typed probe.json
(lab.analyse.probeview): a run's summary and `python3 -m lab.studies.probetable`
(docs/probe-table.md) print it."""
from __future__ import annotations

from collections.abc import Callable

from lab.analyse.probeview import settled_text, status, titles
from lab.record.probe import ProbeReport, ProbeResult
from lab.setup.markdown import Table, md_text as cell


def table_cell(r: ProbeResult, settle_bound: float) -> str:
    if not r.ran:
        return "not run"
    text = f"{cell(status(r.outcome))} · {r.cpu_s:.2f} s"
    if r.settled_s is None:
        text += f" · busy > {settle_bound:g} s"
    if not r.answers_after:
        text += " · **✗**"
    return text


def legend(settle: float) -> str:
    return (f"Each cell: what the server did · server CPU seconds spent on that probe "
            f"(until its CPU went quiet, at most {settle:g} s after it); *busy*: its CPU "
            f"was still busy then; **✗**: it failed the contract check (lab/measure/verify.py) "
            f"right after that probe; *not run*: skipped, the server had stopped answering.")


def table(reports: dict[str, ProbeReport]) -> str:
    """The table and its legend."""
    names = list(reports)
    lines: list[list[str]] = []
    for title in titles(reports):
        cells = []
        for name in names:
            rep = reports[name]
            r = next((x for x in rep.results if x.title == title), None)
            cells.append("-" if r is None else table_cell(r, rep.limits.settle_s))
        lines.append([title, *cells])

    def row(title: str, fn: Callable[[ProbeReport], str]) -> None:
        lines.append([title, *(fn(reports[n]) for n in names)])

    row("WORKERS (slow clients: WORKERS + 3)", lambda r: str(r.workers))
    row("**still answers**", lambda r: "yes" if r.still_answers else
        f"**no**{': ' + cell(r.error) if r.error else ''}")
    row("stopped answering after", lambda r: r.stopped_after or "-")
    row("CPU quiet after last probe", lambda r: settled_text(r.quiet_s, r.limits.quiet_s))
    row("server CPU, all probes", lambda r: f"{r.cpu_s:.2f} s")
    row("probe time", lambda r: f"{r.elapsed_s:.0f} s")
    settle = max((r.limits.settle_s for r in reports.values()), default=1.5)
    return Table(["probe", *names], lines).text() + "\n\n" + legend(settle) + "\n"
