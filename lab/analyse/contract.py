"""The outcome of one check of the contract every server meets before it is
loaded (lab.measure.verify checks it; the probe keeps the breaches in
probe.json, lab.analyse.probeview reads them back), and the one place its
text is written. Like TechEmpower's verifier, every check is made and
reported, not only the first that fails.
"""
from __future__ import annotations

from dataclasses import dataclass

# What every server answers: GET PATH -> 200, Content-Type CONTENT_TYPE, BODY.
PATH = "/api"
BODY = b'{"greeting":"Hello World!"}'
CONTENT_TYPE = "application/json"
REACHABLE = "reachable"        # the check that, failed, leaves nothing else to check


@dataclass(frozen=True)
class Check:
    """name: the short label a passed check is recorded as ("GET /api 200",
    "keep-alive"); rule: what the contract asks ("GET /api must answer 200");
    ok: passed; got: what came back when it did not."""
    name: str
    rule: str
    ok: bool
    got: str = ""

    def text(self) -> str:
        """A passed check: its label; a breach: the rule, then what came back."""
        return self.name if self.ok else f"{self.rule}; got: {self.got}"

    @classmethod
    def from_json(cls, data: object) -> Check | None:
        """One read back from probe.json; None when it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("rule"), str):
            return None
        return cls(name=str(data.get("name", "")), rule=data["rule"],
                   ok=bool(data.get("ok")), got=str(data.get("got", "")))


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
