"""The first line a reader meets on report.html and compare.html: what was
measured (the request and the answer every server must give), how (the
client, its connection mode and what the swept value means), and the
verdict in words. Built from the run's records and the gate's result
objects only, so it follows them when the rule changes.
"""
from __future__ import annotations

from lab.analyse import contract
from lab.analyse.analysis import Analysis
from lab.analyse.gate import Gate
from lab.analyse.metrics import LevelStats, peak
from lab.analyse.wording import axis_label, figure
from lab.record.manifest import Manifest

# What the swept value is, per axis.
AXIS_MEANING = {
    "concurrency": "simultaneous connections, each sending its next request when the "
                   "answer to the last one arrives (closed loop)",
    "rate": "requests per second offered on a fixed schedule, whatever the answers "
            "(open loop)",
    "workers": "the server's worker threads or tasks",
    "backlog": "the server's accept backlog",
}
CONNECTION = {"keep-alive": "keep-alive connections",
              "close": "a new connection for every request"}


def measured() -> str:
    body = contract.BODY.decode()
    return f"GET {contract.PATH}, each answer checked to be 200 with the body {body}"


def how(m: Manifest) -> str:
    """The client, its connection mode, and what the swept value means."""
    axis = m.params.axis or "concurrency"
    conn = CONNECTION.get(m.client.connection, m.client.connection or "connection ?")
    meaning = AXIS_MEANING.get(axis, axis)
    return (f"{m.client.tool or '?'} {m.client.version}".strip() + f" over {conn}; "
            f"{axis_label(axis)} = {meaning}")


def flagged(stats: dict[str, list[LevelStats]]) -> str:
    levels = [s for found in stats.values() for s in found]
    bad = [s for s in levels if s.client_bound or s.flags.get("host-busy", 0)]
    if not bad:
        return ""
    return (f"; {len(bad)} of {len(levels)} levels were client-bound or host-busy: there the "
            "figure measures the client or the host, not the server")


def cost_verdict(a: Analysis) -> str:
    """A make cost run's verdict: its verdicts on instructions per request,
    else each server's count or why it has none."""
    c = a.costs
    if c is None:
        return "nothing was counted"
    if c.verdicts:
        return "; ".join(f"at c={v.level}: {v.a} vs {v.b}: {v.text}" for v in c.verdicts[:3])
    said = []
    for s in c.servers:
        if not s.applicable:
            why = s.reason if s.reason.startswith("not applicable") else \
                f"not applicable: {s.reason}"
            said.append(f"{s.server}: {why}")
        elif s.error:
            said.append(f"{s.server}: not counted ({s.error})")
        elif s.levels:
            x = min(s.levels, key=lambda lv: lv.level)
            said.append(f"{s.server}: {x.per_request.median:,.0f} instructions per request "
                        f"at c={x.level}")
    return "; ".join(said) or "nothing was counted"


def run_verdict(m: Manifest, a: Analysis) -> str:
    """The run's verdict in words: each pair's primary verdict (across the
    judged levels), else the verdicts at the highest level every server
    measured, or a single server's peak."""
    if m.extra.get("kind") == "cost":
        return cost_verdict(a)
    stats = {n: s for n, s in a.stats.items() if s}
    if not stats:
        return "nothing was measured"
    if a.primary:
        said = [v.text for v in a.primary]
        more = len(said) - 3
        text = "; ".join(said[:3]) + (f"; and {more} more (Verdicts below)" if more > 0 else "")
        return f"across the judged levels: {text}" + flagged(stats)
    if a.verdicts:
        top = max(v.value for v in a.verdicts)
        said = [v.text for v in a.verdicts if v.value == top]
        more = len(said) - 3
        text = "; ".join(said[:3]) + (f"; and {more} more (Verdicts below)" if more > 0 else "")
        return f"at {axis_label(m.params.axis)}={top}: {text}" + flagged(stats)
    peaks = [f"{n} peaked at {figure(peak(s).rate.median)} requests/s "
             f"({axis_label(m.params.axis)}={peak(s).value})" for n, s in stats.items()]
    return ("no verdict between servers (fewer than two measured besides the ceiling); "
            + "; ".join(peaks) + flagged(stats))


def run_line(m: Manifest, a: Analysis) -> str:
    if m.extra.get("kind") == "cost":
        way = ("instructions per request under cachegrind (make cost), the difference of two "
               f"exact request counts sent by {m.client.tool} over keep-alive connections; "
               "c = simultaneous connections")
        return f"Measured: {measured()}. How: {way}. Verdict: {cost_verdict(a)}."
    return f"Measured: {measured()}. How: {how(m)}. Verdict: {run_verdict(m, a)}."


GATE_WORDS = {
    "pass": "B is no worse than A",
    "regression": "B is worse than A beyond the noise",
    "not-comparable": "not comparable: nothing was measured cleanly in both runs, so the "
                      "gate says nothing about which is faster",
}


def gate_verdict(g: Gate) -> str:
    """The gate's outcome in words, with its exit code."""
    return f"{GATE_WORDS.get(g.outcome, g.outcome)} (gate: {g.outcome}, exit {g.code})"


def compare_line(m: Manifest, g: Gate | None) -> str:
    verdict = gate_verdict(g) if g is not None else "no gate"
    return f"Measured: {measured()}. How: {how(m)}. Verdict: {verdict}."
