"""The files `lab report` writes into a run folder, named once: the report
step checks them all, the pending-report problem names them, the pages link them."""
from __future__ import annotations

SUMMARY = "summary.md"
LEVELS = "levels.csv"
RESULTS_JSON = "results.json"   # the analysis of a run (lab.analyse.analysis.to_json), written by its report
RESULTS_SCHEMA = 1         # results.json's own version: docs/results.schema.json, docs/run-folder.md
REPORT = "report.html"
OUTPUTS = (SUMMARY, LEVELS, RESULTS_JSON, REPORT)
# the charts (lab.present.plot draws <name>.svg/.png), in the order the report shows them
CHARTS = ("rps", "latency", "percentiles", "knob", "rss")


def in_words(names: tuple[str, ...] = OUTPUTS) -> str:
    """'summary.md, levels.csv, results.json and report.html'."""
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)
