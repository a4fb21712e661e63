"""A claim and its result in short words: what was published, what was
measured, the verdict and how it was reached. For claims.json, and for
claims.md and reproduce.md (their Markdown: lab.present.claimsmd)."""
from __future__ import annotations

from lab.analyse.claims import ClaimResult, spread
from lab.analyse.claimsfile import Claim, num


def published_text(c: Claim) -> str:
    """'1.07 (±15%); Author, venue, 2017', or the published order."""
    if c.kind == "ordering":
        value = " > ".join(c.servers)
    else:
        assert c.published is not None
        value = f"{num(c.published)} ({c.tolerance})"
    return f"{value}; {c.source}, {c.date}"


# the unit of each metric's figure (rss_end: LevelStats.rss_end_kb)
UNITS: dict[str, str] = {"peak_rps": "req/s", "rps_at": "req/s", "rss_end": "KiB",
                         "flatness": "of its peak"}


def unit(c: Claim) -> str:
    """The unit of a claim's measured figure: a ratio's is '×' (its label names
    the metric), a value's and each server's of an ordering the metric's."""
    return "×" if c.kind == "ratio" else UNITS[c.metric]


def measured_text(r: ClaimResult) -> str:
    """'median [min–max] unit' (an ordering: each server's), or '—' when not
    measured; what was measured beside it, if anything."""
    beside = f" ({r.beside})" if r.beside else ""
    if r.order:
        return "; ".join(f"{s} {spread(x)} {UNITS[r.claim.metric]}" for s, x in r.order) + beside
    if r.measured is not None:
        return f"{spread(r.measured)} {unit(r.claim)}" + beside
    return "—" + beside


def verdict_text(r: ClaimResult) -> str:
    """'reproduced', or how it was reached where not by the claim's own metric:
    'reproduced by cost (server CPU per request under duet, each at its cheapest of c=5,
    15, 50)'."""
    return f"{r.verdict} by {r.by}" if r.by else r.verdict
