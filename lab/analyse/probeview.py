"""The robustness probe's results as a Markdown table, from what each
server's probe.json holds (ProbeReport.to_json). The reading side (a run's
summary) draws it without importing the probe itself, which runs servers.

What a server's probe came to is a typed value, `ProbeOutcome` (its kind:
unprobed, still-answers, recovered, stopped-answering; the contract's
breaches as lab.analyse.contract.Check values), and its `text()` is the one
place the verdict is written: the probe's own report (lab.measure.probe), the
pipeline's problem line and the run's summary all say it through it."""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lab.analyse import contract
from lab.analyse.contract import Check
from lab.setup.markdown import Table, md_text as cell

REASON = re.compile(r"^([1-5][0-9][0-9]) [A-Z][A-Za-z -]*[A-Za-z]")
Report = dict[str, Any]            # one server's probe.json


def settled_text(value: float | None, bound: float) -> str:
    return f"{value:.1f} s" if value is not None else f"never (> {bound:g} s)"


def _num(x: Any, default: float = 0.0) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else default


def table_cell(r: dict[str, Any], settle_bound: float) -> str:
    if not r.get("ran"):
        return "not run"
    outcome = REASON.sub(r"\1", str(r.get("outcome", "")))
    text = f"{cell(outcome)} · {_num(r.get('cpu_s')):.2f} s"
    if r.get("settled_s") is None:
        text += f" · busy > {settle_bound:g} s"
    if not r.get("answers_after"):
        text += " · **✗**"
    return text


def limit(rep: Report, key: str, default: float) -> float:
    limits = rep.get("limits")
    return _num(limits.get(key), default) if isinstance(limits, dict) else default


def results(rep: Report) -> list[dict[str, Any]]:
    found = rep.get("results")
    return [r for r in found if isinstance(r, dict)] if isinstance(found, (list, tuple)) else []


def still_answers(rep: Report) -> bool:
    if "still_answers" in rep:
        return bool(rep["still_answers"])
    return not rep.get("error") and bool(rep.get("final_ok"))


@dataclass(frozen=True)
class ProbeOutcome:
    """What one server's probe came to. error: the instance could not be
    started or probed at all; stopped_after: the first probe after which the
    contract check failed; breaches: the final check's (older probe.json:
    final_error, their text, only)."""
    server: str
    still_answers: bool
    error: str = ""
    stopped_after: str | None = None
    breaches: tuple[Check, ...] = ()
    final_error: str = ""

    @property
    def kind(self) -> str:
        if self.error:
            return "unprobed"
        if self.still_answers:
            return "recovered" if self.stopped_after else "still-answers"
        return "stopped-answering"

    def why(self) -> str:
        """Why it does not answer: the final check's breaches, on one line."""
        return contract.one_line(list(self.breaches)) if self.breaches else self.final_error

    def text(self) -> str:
        """One line for logs, the run's problems and its summary."""
        where = f" after {self.stopped_after}" if self.stopped_after else ""
        if self.kind == "unprobed":
            return f"{self.server}: probe failed: {self.error}"
        if self.kind == "recovered":
            return f"{self.server}: still answers (stopped answering{where} and recovered)"
        if self.kind == "still-answers":
            return f"{self.server}: still answers"
        return f"{self.server}: stopped answering{where}: {self.why()}"


def checks_of(data: object) -> tuple[Check, ...]:
    """Checks read back from probe.json (none in one written before they were kept)."""
    if not isinstance(data, (list, tuple)):
        return ()
    return tuple(c for c in (Check.from_json(x) for x in data) if c is not None)


def outcome(name: str, rep: Report) -> ProbeOutcome:
    """A probe.json's outcome, of this lab or an older one."""
    after = rep.get("stopped_after")
    if not isinstance(after, str):           # older: the first probe it failed after
        after = next((str(r.get("probe", "?")) for r in results(rep)
                      if r.get("ran") and not r.get("answers_after")), None)
    return ProbeOutcome(server=name,
                        still_answers=still_answers(rep), error=str(rep.get("error") or ""),
                        stopped_after=after or None,
                        breaches=checks_of(rep.get("final_breaches")),
                        final_error=str(rep.get("final_error") or ""))


def table(reports: dict[str, Report]) -> str:
    """One Markdown table: a row per probe, a column per server (short names
    make narrow columns; the probes' descriptions need the width)."""
    names = list(reports)
    lines: list[list[str]] = []
    titles: list[str] = []
    for rep in reports.values():
        titles += [str(r.get("title", r.get("probe", "?"))) for r in results(rep)
                   if str(r.get("title", r.get("probe", "?"))) not in titles]
    for title in titles:
        cells = []
        for name in names:
            rep = reports[name]
            r = next((x for x in results(rep)
                      if str(x.get("title", x.get("probe", "?"))) == title), None)
            cells.append("-" if r is None else table_cell(r, limit(rep, "settle_s", 1.5)))
        lines.append([title, *cells])

    def row(title: str, fn: Callable[[Report], str]) -> None:
        lines.append([title, *(fn(reports[n]) for n in names)])

    row("WORKERS (slow clients: WORKERS + 3)", lambda r: str(r.get("workers", "?")))
    row("**still answers**", lambda r: "yes" if still_answers(r) else
        f"**no**{': ' + cell(str(r['error'])) if r.get('error') else ''}")
    row("stopped answering after", lambda r: str(r.get("stopped_after") or "-"))
    row("CPU quiet after last probe",
        lambda r: settled_text(r.get("quiet_s") if isinstance(r.get("quiet_s"), (int, float))
                               else None, limit(r, "quiet_s", 30.0)))
    row("server CPU, all probes",
        lambda r: f"{_num(r.get('cpu_s'), sum(_num(x.get('cpu_s')) for x in results(r))):.2f} s")
    row("probe time", lambda r: f"{_num(r.get('elapsed_s')):.0f} s")
    settle = max((limit(r, "settle_s", 1.5) for r in reports.values()), default=1.5)
    legend = (f"Each cell: what the server did · server CPU seconds spent on that probe "
              f"(until its CPU went quiet, at most {settle:g} s after it); *busy*: its CPU "
              f"was still busy then; **✗**: it failed the contract check (lab/measure/verify.py) "
              f"right after that probe; *not run*: skipped, the server had stopped answering.")
    return Table(["probe", *names], lines).text() + "\n\n" + legend + "\n"
