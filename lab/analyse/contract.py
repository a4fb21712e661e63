"""The outcome of one check of the contract every server meets before it is
loaded (lab.measure.verify checks it; the probe keeps the breaches in
probe.json, lab.record.probe reads them back), and the one place its
text is written. Like TechEmpower's verifier, every check is made and
reported, not only the first that fails.
"""
from __future__ import annotations

from lab.record.probe import Check as Check   # kept in probe.json: the record owns it

# What every server answers: GET PATH -> 200, Content-Type CONTENT_TYPE, BODY.
PATH = "/api"
BODY = b'{"greeting":"Hello World!"}'
CONTENT_TYPE = "application/json"
REACHABLE = "reachable"        # the check that, failed, leaves nothing else to check


def breaches(checks: list[Check]) -> list[Check]:
    return [c for c in checks if not c.ok]


def lines(checks: list[Check]) -> str:
    """Every breach, one per line."""
    return "\n".join(c.text() for c in breaches(checks))


def one_line(checks: list[Check]) -> str:
    """Every breach on one line (a table cell, a log line)."""
    return " / ".join(c.text() for c in breaches(checks))


def listed(checks: list[Check]) -> str:
    """A step's error: the one breach, or how many and each on a line of its own."""
    found = breaches(checks)
    if len(found) == 1:
        return found[0].text()
    return f"{len(found)} breaches:" + "".join(f"\n  - {c.text()}" for c in found)
