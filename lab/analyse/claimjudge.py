"""The one claims judge: a study's claim judged on measured level statistics,
for one client, written as Markdown and as claims.json.

Two commands judge claims: `make reproduce` (lab.studies.reproduce) on the two
runs it makes, one per client, and `make claims` (lab.studies.claimruns) on
runs made earlier. Both judge a claim here (`judge`), keep it as a `Judged`
(one claim, one client), say why one is not reproduced (`why_lines`), say
what the clients together mean (`overall`) and write claims.json in the one
shape of docs/claims.schema.json (`to_json`): per claim, its verdict by
client. What each command adds is its own table of runs.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from lab.analyse import claims, claimtext, claimreasons
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


def overall(results: Sequence[ClaimResult]) -> str:
    """What the clients together say about a claim (one client: its verdict)."""
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


def why_lines(study: Study, judged: Iterable[Judged],
              specs: Mapping[str, ServerSpec]) -> list[str]:
    """Each claim not reproduced, per client: its reasons and the variants that test them."""
    lines: list[str] = []
    for j in judged:
        if j.result.verdict != claims.REPRODUCED:
            lines += claimreasons.block(j.result.claim, j.client, j.result.verdict, j.why, study,
                                   specs)
    return lines


def result_json(j: Judged) -> dict[str, Any]:
    r = j.result
    return {"verdict": r.verdict, "reason": r.reason,
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
