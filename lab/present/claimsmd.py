"""Claims in Markdown, for claims.md (lab.studies.claimruns) and
reproduce.md (lab.studies.reproduce): a claim's label, the table of results,
the conditions published against here, and the reasons a claim was not
reproduced with the variants that test them. The words are the analysis's
(lab.analyse.claimtext, lab.analyse.claimreasons); only the Markdown is here."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from lab.analyse import claimreasons, claims
from lab.analyse.claimjudge import Judged, left_to_cost
from lab.analyse.claims import ClaimResult
from lab.analyse.claimsfile import Claim, Study
from lab.analyse.claimtext import measured_text, published_text, verdict_text
from lab.record.manifest import Manifest
from lab.setup.markdown import Table
from lab.setup.servers import ServerSpec


def label(c: Claim) -> str:
    """'`id`: text (metric: servers)'."""
    what = f"{c.metric}@{c.at}" if c.metric == "rps_at" else c.metric
    compares = f"; compares {c.compares}" if c.compares else ""
    return f"`{c.id}`: {c.text} ({what}: {', '.join(c.servers)}{compares})"


def table(results: list[ClaimResult]) -> str:
    """A Markdown table: claim, published (value, source, date), measured
    (median [min–max]), verdict, reason."""
    return Table(["claim", "published", "measured", "verdict", "reason"],
                 [[label(r.claim), published_text(r.claim), measured_text(r), r.verdict, r.reason]
                  for r in results]).escaped().text() + "\n"


def conditions_table(study: Study, m: Manifest) -> list[str]:
    """Each condition, published against here."""
    pub, mine = study.published_conditions, claimreasons.run_conditions(m)
    return Table(["condition", "published", "here"],
                 [[label_, pub.get(key, "not stated"), mine[key]]
                  for key, label_ in claimreasons.ROWS]).escaped().lines()


def block(claim: Claim, client: str, verdict: str, said: Sequence[str], study: Study,
          specs: Mapping[str, ServerSpec]) -> list[str]:
    """A claim's reasons and variants as Markdown list lines."""
    lines = [f"- `{claim.id}` ({client}): **{verdict}**"]
    lines += [f"  {i}. {w}" for i, w in enumerate(said, 1)]
    lines += [f"  - variant: {v}" for v in claimreasons.variants(claim, study, specs)]
    return lines


def why_lines(study: Study, judged: Iterable[Judged],
              specs: Mapping[str, ServerSpec]) -> list[str]:
    """Each claim not reproduced, per client: its reasons and the variants that
    test them; a verdict by cost only where the clients' req/s left the claim
    to it (every one inconclusive, one the limit)."""
    judged = list(judged)
    lines: list[str] = []
    for j in judged:
        if j.result.by and not left_to_cost([x.result for x in judged
                                             if x.result.claim.id == j.result.claim.id]):
            continue
        if j.result.verdict != claims.REPRODUCED:
            lines += block(j.result.claim, j.client, verdict_text(j.result), j.why, study, specs)
    return lines
