"""Instructions per request from a `make cost` run of the same server build,
shown beside a run's server-CPU-per-request verdicts.

A cost run is a run folder beside this one (the same results folder) whose
manifest says `"kind": "cost"` and which holds cost.json (lab.studies.cost). The same
build: the server's facts (what its manifest's facts command reported at the
run: versions, commits, patches, when it was built) are the same in both
runs, and not empty. The newest such run is used. Reading side only."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lab.analyse import costview
from lab.record import manifest
from lab.record.costs import COST, read_costs
from lab.analyse.metrics import Spread
from lab.record.files import RecordError
from lab.record.manifest import Manifest


@dataclass(frozen=True)
class CostLink:
    """One server's instructions per request from the cost run of its build."""
    server: str
    run_id: str                     # the cost run's folder
    levels: dict[int, Spread]       # level: instructions per request over repetitions


def same_build(a: dict[str, str] | None, b: dict[str, str] | None) -> bool:
    return bool(a) and bool(b) and a == b and "error" not in (a or {})


def cost_runs(results_dir: Path) -> list[Path]:
    """The folders of results_dir holding a cost.json, newest first: the
    candidates of `find` (found once for many runs of one folder)."""
    try:
        return sorted((p for p in results_dir.iterdir() if (p / COST).is_file()),
                      key=lambda p: p.name, reverse=True)
    except OSError:
        return []


def find(run: Path, m: Manifest, candidates: list[Path] | None = None) -> dict[str, CostLink]:
    """Each server of `m` that a cost run beside `run` measured in the same build
    (`candidates`: cost_runs of its folder, when already found)."""
    found: dict[str, CostLink] = {}
    siblings = cost_runs(run.parent) if candidates is None else candidates
    for folder in siblings:
        if folder == run:
            continue
        try:
            cm = manifest.read_manifest(folder)
            costs = read_costs(folder)
        except RecordError:
            continue
        if cm.extra.get("kind") != "cost" or costs is None:
            continue
        for s in costview.server_costs(costs):
            if s.server in found or not s.applicable or not s.levels:
                continue
            if same_build(m.server(s.server).facts, cm.server(s.server).facts):
                found[s.server] = CostLink(s.server, cm.run_id,
                                           {x.level: x.per_request for x in s.levels})
    return found


def at(link: CostLink, value: int) -> tuple[int, Spread]:
    """The cost run's level `value`, else its nearest."""
    level = min(link.levels, key=lambda c: (abs(c - value), c))
    return level, link.levels[level]


def beside(a: str, b: str, value: int, links: dict[str, CostLink]) -> str:
    """'make cost (same builds): aws 152,301, ews 98,114 instructions per request
    (user space, c=8)'; '' when either has no cost run of its build."""
    la, lb = links.get(a), links.get(b)
    if la is None or lb is None:
        return ""
    (ca, xa), (cb, xb) = at(la, value), at(lb, value)
    where = f"c={ca}" if ca == cb else f"c={ca} and c={cb}"
    runs = la.run_id if la.run_id == lb.run_id else f"{la.run_id}, {lb.run_id}"
    return (f"make cost ({runs}, same builds): {a} {xa.median:,.0f}, {b} {xb.median:,.0f} "
            f"instructions per request (user space, {where})")
