"""The robustness probe's results as a Markdown table, from each server's
typed probe.json (lab.record.probe.ProbeReport, of this lab or an older one).
The reading side (a run's summary) draws it without importing the probe
itself, which runs servers.

What a server's probe came to is a typed value, `ProbeOutcome`
(lab.record.probe, the one place the verdict is written): the probe's own
report (lab.measure.probe), the pipeline's problem line and the run's summary
all say it through it."""
from __future__ import annotations

import re
from collections.abc import Callable

from lab.setup.markdown import Table, md_text as cell
from lab.record.probe import ProbeOutcome as ProbeOutcome
from lab.record.probe import ProbeReport, ProbeResult

REASON = re.compile(r"^([1-5][0-9][0-9]) [A-Z][A-Za-z -]*[A-Za-z]")


def settled_text(value: float | None, bound: float) -> str:
    return f"{value:.1f} s" if value is not None else f"never (> {bound:g} s)"


def table_cell(r: ProbeResult, settle_bound: float) -> str:
    if not r.ran:
        return "not run"
    outcome = REASON.sub(r"\1", r.outcome)
    text = f"{cell(outcome)} · {r.cpu_s:.2f} s"
    if r.settled_s is None:
        text += f" · busy > {settle_bound:g} s"
    if not r.answers_after:
        text += " · **✗**"
    return text


def outcome(name: str, rep: ProbeReport) -> ProbeOutcome:
    """A probe.json's outcome, under the server's name as the run has it."""
    said = rep.outcome()
    return ProbeOutcome(name, said.still_answers, said.error, said.stopped_after,
                        said.breaches, said.final_error)


def table(reports: dict[str, ProbeReport]) -> str:
    """One Markdown table: a row per probe, a column per server (short names
    make narrow columns; the probes' descriptions need the width)."""
    names = list(reports)
    lines: list[list[str]] = []
    titles: list[str] = []
    for rep in reports.values():
        titles += [r.title for r in rep.results if r.title not in titles]
    for title in titles:
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
    legend = (f"Each cell: what the server did · server CPU seconds spent on that probe "
              f"(until its CPU went quiet, at most {settle:g} s after it); *busy*: its CPU "
              f"was still busy then; **✗**: it failed the contract check (lab/measure/verify.py) "
              f"right after that probe; *not run*: skipped, the server had stopped answering.")
    return Table(["probe", *names], lines).text() + "\n\n" + legend + "\n"
