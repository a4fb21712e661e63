"""The one claims judge: a study's claim judged on measured level statistics,
for one client, and claims.json (the Markdown: lab.present.claimsmd).

Two commands judge claims: `make reproduce` (lab.studies.reproduce) on the two
runs it makes, one per client, and `make claims` (lab.studies.claimruns) on
runs made earlier. Both judge a claim here (`judge`), keep it as a `Judged`
(one claim, one client), say why one is not reproduced (claimsmd.why_lines), say
what the clients together mean (`overall`) and write claims.json in the one
shape of docs/claims.schema.json (`to_json`): per claim, its verdict by
client. What each command adds is its own table of runs.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from lab.analyse import claimcost, claims, claimtext, policy
from lab.analyse.claimsfile import Claim, Study, start_of
from lab.analyse.claims import ClaimResult
from lab.analyse.metrics import LevelStats
from lab.setup.servers import ServerSpec

CLAIMS_SCHEMA = 1          # claims.json's "claims_schema" (docs/claims.schema.json)


@dataclass(frozen=True)
class Judged:
    """One claim judged with one client: its result, the runs it was judged
    on, the run conditions noted beside it and why it is not reproduced
    (lab.analyse.claimreasons; none when it is)."""
    client: str
    result: ClaimResult
    runs: tuple[Path, ...] = ()
    notes: tuple[str, ...] = ()
    why: tuple[str, ...] = ()


def one_start(c: Claim, specs: Mapping[str, ServerSpec]) -> str | None:
    """Why a claim cannot be measured when two of its servers are one start
    here (aws and aws@8 where aws runs as aws@8), or None."""
    starts = [str(start_of(specs, x)) for x in c.servers]
    if len(set(starts)) == len(starts):
        return None
    return f"not measured: {', '.join(c.servers)} are one start here ({', '.join(starts)})"


def judge(c: Claim, stats: dict[str, list[LevelStats]], specs: Mapping[str, ServerSpec],
          available: set[str], one_start_tail: str = "") -> ClaimResult:
    """A claim's verdict on the statistics of its servers (by the study's
    names); inconclusive when two of them are one start (`one_start_tail`
    is added to that reason)."""
    same = one_start(c, specs)
    if same is not None:
        return ClaimResult(c, claims.INCONCLUSIVE, same + one_start_tail)
    return claims.evaluate(c, stats, available)


def with_reason(r: ClaimResult, reason: str) -> ClaimResult:
    return replace(r, reason=reason)


COST = "cost"             # the Judged.client of a claim judged by cost (claimcost)


@dataclass(frozen=True)
class Sweep:
    """A sweep run (one server at a time) under the study's server names,
    with its server's CPUs: what a flatness claim is judged on by cost."""
    client: str
    folder: Path | None
    stats: Mapping[str, list[LevelStats]]
    cpus: int


@dataclass(frozen=True)
class Duet:
    """A duet run (PAIRED=duet) under the study's server names."""
    folder: Path
    stats: Mapping[str, list[LevelStats]]


def by_cost(study: Study, c: Claim, sweeps: Sequence[Sweep], duets: Sequence[Duet],
            alpha: float = policy.ALPHA) -> Judged | None:
    """Claim `c` judged by cost (lab.analyse.claimcost): a ratio on the last
    duet that holds both its servers, a flatness on the sweep whose bound is
    highest; None for a claim whose figure no client limits (RSS)."""
    if c.metric not in claims.THROUGHPUT_METRICS:
        return None
    way = claimcost.way(c)
    if way is None:
        r = ClaimResult(c, claims.INCONCLUSIVE, claimcost.why_not(c), by=claimcost.BY)
        return Judged(COST, r, (), (), (claimcost.why_not(c),))
    if way == claimcost.DUET:
        a, b = claimcost.duet_servers(c)
        found = [d for d in duets if d.stats.get(a) and d.stats.get(b)]
        levels = study.cost.levels if study.cost else ()
        if not found:
            r = ClaimResult(c, claims.INCONCLUSIVE, f"by cost: no duet of {a} and {b} "
                            "(make reproduce runs one)", by=claimcost.BY)
            return Judged(COST, r)
        d = found[-1]
        r = claimcost.judge_duet(c, list(d.stats[a]), list(d.stats[b]), levels, alpha)
        return Judged(COST, r, (d.folder,), (), cost_why(r))
    (server,) = c.servers
    got = [(s, claimcost.judge_bound(c, list(s.stats[server]), s.cpus)) for s in sweeps
           if s.stats.get(server)]
    if not got:
        return Judged(COST, ClaimResult(c, claims.INCONCLUSIVE, f"by cost: {server} not "
                                        "measured", by=claimcost.BY))
    s, r = max(got, key=lambda x: x[1].measured.lo if x[1].measured else -1.0)
    r = with_reason(r, f"{r.reason}; on the {s.client} sweep")
    return Judged(COST, r, (s.folder,) if s.folder else (), (), cost_why(r))


def cost_why(r: ClaimResult) -> tuple[str, ...]:
    """What a verdict by cost stands on, for claims.md's reasons."""
    if r.verdict == claims.REPRODUCED:
        return ()
    return (r.reason, "the figure assumes each server CPU-bound: its capacity on its CPUs "
            "is cpus / CPU per request, which a cost that is no CPU (a lock, a sleep) "
            "escapes")


def left_to_cost(results: Sequence[ClaimResult]) -> bool:
    """Whether the clients' req/s leave a claim to its verdict by cost: every
    one inconclusive, and one the limit at a point the claim needs (or no
    req/s verdict at all)."""
    rates = [r for r in results if not r.by]
    return not rates or (all(r.verdict == claims.INCONCLUSIVE for r in rates)
                         and any(r.client_limited for r in rates))


def verdict_of(results: Sequence[ClaimResult]) -> ClaimResult | None:
    """The cost verdict that stands for a claim, or None: where the clients
    leave it to cost (left_to_cost), a verdict by cost that is not
    inconclusive."""
    cost = next((r for r in results if r.by), None)
    if cost is None or cost.verdict == claims.INCONCLUSIVE or not left_to_cost(results):
        return None
    return cost


def overall(results: Sequence[ClaimResult]) -> str:
    """What the clients together say about a claim (one client: its verdict);
    where they were the limit, what its verdict by cost says (verdict_of)."""
    cost = verdict_of(results)
    if cost is not None:
        return claimtext.verdict_text(cost)
    rates = [r for r in results if not r.by]
    # a client that was the limit measured itself, and one that did not measure the
    # claim says nothing: where another client measured it, that one speaks
    def silent(r: ClaimResult) -> bool:
        return r.verdict == claims.INCONCLUSIVE and (
            r.client_limited or r.reason.startswith(claims.NOT_MEASURED))
    spoke = [r for r in rates if not silent(r)]
    if spoke and len(spoke) < len(rates):
        limited = sum(r.client_limited for r in rates if silent(r))
        why = ("the other client was the limit" if limited else
               "not measured with the other client")
        if len(rates) - len(spoke) > 1:
            why = f"{len(rates) - len(spoke)} clients were the limit or did not measure it"
        return f"{_overall(spoke)} ({why})"
    said = _overall(rates) if rates else "not measured by req/s"
    mute = [r for r in results if r.by and r.verdict == claims.INCONCLUSIVE]
    return f"{said}; by cost: inconclusive" if mute and rates and left_to_cost(results) \
        else said


def _overall(results: Sequence[ClaimResult]) -> str:
    if len(results) == 1:
        return results[0].verdict
    verdicts = {r.verdict for r in results}
    each = "both clients" if len(results) == 2 else "every client"
    if verdicts == {claims.REPRODUCED}:
        return f"reproduced with {each}: a property of the servers"
    if verdicts == {claims.NOT_REPRODUCED}:
        return ("not reproduced with either client" if len(results) == 2
                else "not reproduced with any client")
    if verdicts == {claims.REPRODUCED, claims.NOT_REPRODUCED}:
        return "depends on the client"
    return "open (inconclusive with at least one client)"


def result_json(j: Judged) -> dict[str, Any]:
    r = j.result
    return {"verdict": r.verdict, "by": r.by, "reason": r.reason,
            "measured": asdict(r.measured) if r.measured else None,
            "order": [[s, asdict(x)] for s, x in r.order],
            "runs": [str(p) for p in j.runs], "noted": list(j.notes), "why": list(j.why)}


def to_json(command: str, study: Study, runs: list[dict[str, Any]], judged: Sequence[Judged],
            **more: Any) -> dict[str, Any]:
    """claims.json (docs/claims.schema.json): the study, the runs read (each
    with its folder, client and conditions, and what `command` adds), and per
    claim judged its verdict by client and what the clients together say."""
    out: list[dict[str, Any]] = []
    for c in study.claims:
        mine = [j for j in judged if j.result.claim.id == c.id]
        if mine:
            out.append({"id": c.id, "text": c.text, "published": claimtext.published_text(c),
                        "by_client": {j.client: result_json(j) for j in mine},
                        "overall": overall([j.result for j in mine])})
    return {"claims_schema": CLAIMS_SCHEMA, "command": command, "study": study.id, **more,
            "runs": runs, "claims": out}
