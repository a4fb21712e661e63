"""The first lines of summary.md, the run's answer: what was measured, the
peak (one server) or the verdict (several), and what limited each peak.
The figures are the run's Analysis (lab.analyse.analysis); this module only
words them, each line one short sentence. The tables, the warnings and
report.html below say the rest."""
from __future__ import annotations

from dataclasses import dataclass

from lab.analyse import contract
from lab.analyse.analysis import Analysis, at_value
from lab.analyse.metrics import CLIENT_BOUND_PCT, LevelStats, peak
from lab.analyse.verdicts import Verdict
from lab.analyse.wording import axis_label, figure
from lab.record.manifest import Manifest
from lab.setup.markdown import md_text

LONGEST = 190              # a head line's most characters, so that none passes 200
HOST_FLAGS = ("host-busy", "steal", "neighbour", "sampler-gap")
RISING = 1.05              # the last level above the one before by this: still rising
CONNECTION = {"keep-alive": "keep-alive connections", "close": "a new connection a request"}


@dataclass(frozen=True)
class Limit:
    """What limited one server's peak: `who` (client, host, server, sweep, nothing
    ranked) and the words that say it for that server alone."""
    who: str
    said: str


def clipped(text: str, most: int = LONGEST, rest: str = "…; more below") -> str:
    """text, or its first clauses up to `most` characters and `rest`."""
    if len(text) <= most:
        return text
    cut = text[:most - len(rest)]
    cut = cut[:cut.rfind("; ")] if "; " in cut else cut[:cut.rfind(" ")]
    return cut.rstrip(",;: ") + rest


def cpus(listed: str) -> int:
    """How many CPUs a list such as "0", "0-1" or "0,2-3" names (0: not known)."""
    n = 0
    for part in filter(None, listed.replace(" ", "").split(",")):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return 0
        n += int(hi) - int(lo) + 1 if hi else 1
    return n


def values_said(values: list[int]) -> str:
    """'1 40 50', or '1 to 50 (18 levels)' when there are many."""
    return " ".join(map(str, values)) if len(values) <= 6 else \
        f"{values[0]} to {values[-1]} ({len(values)} levels)"


def measured(m: Manifest, a: Analysis) -> list[str]:
    """What was loaded, then how and where: two lines."""
    names = list(a.stats) or list(m.servers)
    who = ", ".join(names) if len(", ".join(names)) <= 60 else f"{len(names)} servers"
    if len(names) == 1:
        rec = m.server(names[0])
        who += f" ({rec.framework or '?'} {rec.version})".replace(" )", ")")
    p, c = m.params, m.client
    where = f"{(m.topology or '?').split(' ')[0]}, {m.host.model()}"
    if m.extra.get("kind") == "cost":
        return [clipped(f"Measured: {who}: instructions per request under cachegrind."),
                clipped(f"How: {c.tool} {c.version}, keep-alive; {where}.")]
    values = sorted({s.value for levels in a.stats.values() for s in levels})
    starts = p.repeat.text()
    return [clipped(f"Measured: {who}: GET {contract.PATH}, each answer checked for 200 and "
                    "the exact body."),
            clipped(f"How: {c.tool} {c.version}, {CONNECTION.get(c.connection, c.connection or '?')}"
                    f", at {axis_label(p.axis)} = {values_said(values)}, {p.duration_s}s each, "
                    f"{starts} start{'s' * (starts != '1')}; {where}.")]


def peak_said(m: Manifest, name: str, levels: list[LevelStats]) -> str:
    """'aws 9,526 req/s at c=40 (mean 4.00 ms, p99 5.1 ms, 97 µs CPU a request, RSS 13.8 MB)'."""
    top = peak(levels)
    p99 = f", p99 {figure(top.p99_ms.median, '.2f')} ms" if top.p99_ms else ""
    return (f"{name} {figure(top.rate.median)} req/s at {at_value(m.params.axis, top.value)} "
            f"(mean {figure(top.resp_ms.median, '.2f')} ms{p99}, "
            f"server CPU {figure(top.cpu_us_per_req.median)} µs a request, "
            f"RSS {figure(levels[-1].rss_end_kb.median, '.1f', 1024)} MB)")


def limit(m: Manifest, a: Analysis, name: str, levels: list[LevelStats]) -> Limit:
    """What kept a server's peak where it is, judged at its peak level."""
    top, axis = peak(levels), m.params.axis
    at = at_value(axis, top.value)
    tool = m.client.tool
    if not top.ranked:
        return Limit("nothing ranked", f"no level is ranked (flags {', '.join(top.all_flags())})")
    if top.client_bound:
        return Limit("the client", f"the client: {tool} used {CLIENT_BOUND_PCT:.0f}% or more "
                                   f"of its CPU at {at} (client-bound), so the peak is "
                                   f"{tool}'s, not {name}'s")
    cap = next((c for c in a.capacity if c.server == name and c.kind == "client-limited"), None)
    if cap is not None:
        return Limit("the client", f"the client: {name} reached {cap.share:.0%} of what "
                                   f"{tool} drove against the ceiling here")
    host = [f for f in HOST_FLAGS if f in top.all_flags()]
    if host:
        return Limit("the host", f"the host: {', '.join(host)} at {at}, so the peak is not "
                                 f"{name}'s alone")
    if "saturated" in top.all_flags():
        return Limit("the server", f"the server: it fell short of the offered rate at {at}")
    last = levels[-1]
    before = levels[-2] if len(levels) > 1 else None
    if before is None:
        return Limit("the sweep", f"the sweep: one level only, {at}; sweep more to find "
                                  f"{name}'s peak")
    if top is last and last.rate.median > RISING * before.rate.median:
        return Limit("the sweep", f"the sweep: req/s still rose at its highest level, {at}; "
                                  f"sweep higher to find {name}'s")
    used = top.cpu_us_per_req.median * top.rate.median / 1e6
    n = cpus(m.pinning.server_cpus or "")
    of = f" of its {n}" if n else ""
    return Limit("the server", f"the server: req/s stopped rising at {at}, {name} using "
                               f"{used:.2f}{of} CPU{'s' * (n != 1)}")


def failed_said(m: Manifest, levels: list[LevelStats]) -> str:
    """'567 of 67,868 requests failed at c=40, c=50', or ""."""
    bad = [s for s in levels if s.failed]
    if not bad:
        return ""
    failed, tried = sum(s.failed for s in bad), sum(s.attempts for s in bad)
    where = ", ".join(at_value(m.params.axis, s.value) for s in bad[:4]) + \
        (f" and {len(bad) - 4} more" if len(bad) > 4 else "")
    of = f" of {tried:,}" if tried else ""
    return f"{failed:,}{of} requests failed at {where} (What failed)"


def limits(m: Manifest, a: Analysis) -> str:
    """One server: its limit and its failures; several: the servers by limit."""
    stats = {n: s for n, s in a.stats.items() if s}
    if len(stats) == 1:
        [(name, levels)] = stats.items()
        failed = failed_said(m, levels)
        return clipped(f"Limit: {limit(m, a, name, levels).said}" +
                       (f"; {failed}" if failed else "") + ".")
    groups: dict[str, list[str]] = {}
    for name, levels in stats.items():
        groups.setdefault(limit(m, a, name, levels).who, []).append(name)
    failing = [n for n, levels in stats.items() if any(s.failed for s in levels)]
    said = "; ".join(f"{who}: {', '.join(names)}" for who, names in groups.items())
    return clipped(f"Limit at each peak: {said}" +
                   (f"; requests failed at {', '.join(failing)} (What failed)" if failing
                    else "") + ".")


def pair_said(v: Verdict) -> str:
    """'aws faster than nginx by 12%', 'aws vs nginx: equivalent'; where req/s could
    not rank them, what server CPU per request said."""
    by = f" by {v.percent:.0f}%" if v.percent is not None else ""
    said = (f"{v.a} {v.kind.replace('-', ' ')} than {v.b}{by}" if v.kind.startswith("faster")
            else f"{v.a} vs {v.b}: {v.kind}") + (f" (by {v.metric})" if v.metric else "")
    if v.cpu is not None:
        j = v.cpu
        said += (f" (server CPU a request: {j.winner} {j.kind.replace('-', ' ')})"
                 if j.winner else f" (server CPU a request: {j.kind})")
    return said


def verdict(m: Manifest, a: Analysis) -> str:
    """The verdicts in brief: each pair's primary one, else those at the highest level judged."""
    found = a.primary or [v for v in a.verdicts if v.value == max(x.value for x in a.verdicts)]
    where = "across the judged levels" if a.primary else \
        f"at {at_value(m.params.axis, found[0].value)}"
    return clipped(f"Verdict ({where}): " + "; ".join(map(pair_said, found)) + ".",
                   rest=f"…; all {len(found)} pairs under Verdicts.")


def head(m: Manifest, a: Analysis) -> list[str]:
    """The answer, a bullet a line: at most seven lines, each under 200 characters."""
    out = measured(m, a)
    stats = {n: s for n, s in a.stats.items() if s}
    if stats:
        ranked = sorted(stats.items(), key=lambda kv: -peak(kv[1]).rate.median)
        if len(stats) == 1:
            out.append(f"Peak: {peak_said(m, *ranked[0])}.")
        else:
            out.append(clipped("Peaks: " + "; ".join(
                f"{n} {figure(peak(s).rate.median)} req/s at "
                f"{at_value(m.params.axis, peak(s).value)}" for n, s in ranked) + ".",
                rest="…; each in the table below."))
        out.append(limits(m, a))
    if a.primary or a.verdicts:
        out.append(verdict(m, a))
    elif len(stats) > 1:
        out.append("Verdict: none (fewer than two servers judged besides the ceiling).")
    if a.warnings:
        kinds = list(dict.fromkeys(w.kind for w in a.warnings))
        out.append(clipped(f"Warnings: {len(a.warnings)} (below): {', '.join(kinds)}. Every "
                           "figure and flag is in report.html."))
    else:
        out.append("Warnings: none. Every figure and flag is in report.html.")
    return [f"- {md_text(x)}" for x in out]
