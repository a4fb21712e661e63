"""The robustness probe's results read from each server's typed probe.json
(lab.record.probe.ProbeReport, of this lab or an older one): the reading side
(a run's summary, lab.present.probetable) reads them without importing the
probe itself, which runs servers.

What a server's probe came to is a typed value, `ProbeOutcome`
(lab.record.probe, the one place the verdict is written): the probe's own
report (lab.measure.probe), the pipeline's problem line and the run's summary
all say it through it."""
from __future__ import annotations

import re

from lab.record.probe import ProbeOutcome as ProbeOutcome
from lab.record.probe import ProbeReport

# "400 Bad Request" -> "400": the wide table keeps status codes only.
REASON = re.compile(r"^([1-5][0-9][0-9]) [A-Z][A-Za-z -]*[A-Za-z]")


def status(outcome: str) -> str:
    """A probe's outcome with an HTTP status line cut to its code."""
    return REASON.sub(r"\1", outcome)


def settled_text(value: float | None, bound: float) -> str:
    """When the CPU went quiet, or that it did not within the bound (the
    probe's own report and the run's table both say it so)."""
    return f"{value:.1f} s" if value is not None else f"never (> {bound:g} s)"


def titles(reports: dict[str, ProbeReport]) -> list[str]:
    """Every probe's title, in the order the reports first name it."""
    found: list[str] = []
    for rep in reports.values():
        found += [r.title for r in rep.results if r.title not in found]
    return found


def outcome(name: str, rep: ProbeReport) -> ProbeOutcome:
    """A probe.json's outcome, under the server's name as the run has it."""
    said = rep.outcome()
    return ProbeOutcome(name, said.still_answers, said.error, said.stopped_after,
                        said.breaches, said.final_error)
