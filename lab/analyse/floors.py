"""The host's own noise: A/A floors kept in the cache (`make noise SERVER=x`
writes them, `make compare` reads them).

An A/A run measures one server twice, as two interleaved entries of one run
(x and its alias x#2). The floor of a metric is the largest relative
difference between the two entries' medians over the levels measured
cleanly in both: a difference this host produced between two identical
servers. A floor applies to a comparison only when it was taken under the
same conditions (CONDITIONS below); `make compare` then calls no smaller
difference a regression, and names the floor it used.

Kept in <LAB_CACHE>/noise/<server>.json: every A/A measurement of that
server, newest last (nothing is overwritten). Only reads runs: no import of
what measures one.
"""
from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from lab.analyse.diff import (AXIS, CLIENT, CLIENT_CPUS, CONNECTION, CORES, HOSTNAME,
                              SERVER_CPUS, TOPOLOGY, Condition)
from lab.record import files
from lab.record.manifest import Manifest

FOLDER = "noise"
SCHEMA = 1

# The conditions a floor is taken under (lab.analyse.diff's, each named as the
# floor keeps it): a floor applies to a comparison only when both runs match it on each.
# A floor taken beside the lab's neighbour (NEIGHBOUR) applies only to runs beside
# one as large; none is kept as null, as the floors taken before NEIGHBOUR have it.
CONDITIONS: tuple[Condition, ...] = (
    HOSTNAME, CORES, TOPOLOGY, CLIENT, CONNECTION, SERVER_CPUS, CLIENT_CPUS, AXIS,
    ("neighbour", lambda m: m.params.neighbour or None))


def conditions_of(m: Manifest) -> dict[str, object]:
    """The conditions of CONDITIONS, as a run's manifest records them."""
    return {what: of(m) for what, of in CONDITIONS}


@dataclass(frozen=True)
class Floor:
    """One A/A measurement of a server: the floor per metric, in percent."""
    server: str
    made: str
    run: str                       # the A/A run folder
    conditions: dict[str, Any]
    floors_pct: dict[str, float]   # metric (lab.analyse.gate.METRICS): largest A/A difference
    levels: list[int]              # the levels measured cleanly in both entries
    duration_s: int
    repeat: int

    def text(self) -> str:
        shown = ", ".join(f"{k} {v:.1f}%" for k, v in sorted(self.floors_pct.items()))
        return (f"A/A floor of {self.server} from `make noise` on {self.made} "
                f"(run {Path(self.run).name}; {shown})")


def path_for(cache: Path, server: str) -> Path:
    return cache / FOLDER / f"{server}.json"


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def floor_of(f: Any, i: int) -> Floor:
    """One kept floor, checked field by field (ValueError says which is wrong):
    a floor of NaN or infinity, or conditions that are not an object, is refused."""
    where = f"floors[{i}]"
    if not isinstance(f, dict):
        raise ValueError(f"{where} should be an object")
    for key, kind in (("server", str), ("made", str), ("run", str), ("conditions", dict),
                      ("floors_pct", dict), ("levels", list), ("duration_s", int),
                      ("repeat", int)):
        if not isinstance(f.get(key), kind) or isinstance(f.get(key), bool):
            raise ValueError(f"{where}.{key} should be {kind.__name__}, found "
                             f"{type(f.get(key)).__name__}")
    bad = [k for k, v in f["floors_pct"].items() if not _number(v) or v < 0]
    if bad:
        raise ValueError(f"{where}.floors_pct: {', '.join(map(str, bad))} should be a finite "
                         "percentage, not negative, NaN or infinite")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in f["levels"]):
        raise ValueError(f"{where}.levels should be whole numbers")
    unknown = set(f) - {x.name for x in fields(Floor)}
    if unknown:
        raise ValueError(f"{where} has unknown keys {', '.join(sorted(unknown))}")
    return Floor(**{**f, "floors_pct": {str(k): float(v) for k, v in f["floors_pct"].items()}})


def read_all(cache: Path, server: str) -> list[Floor]:
    """Every floor kept for server, oldest first ([] when none; an unreadable
    file is named on stderr and not used)."""
    path = path_for(cache, server)
    if not path.exists():
        return []
    try:
        data = files.read_json(path)
        if not isinstance(data, dict) or not isinstance(data.get("floors"), list):
            raise ValueError("should be an object with a list of `floors`")
        return [floor_of(f, i) for i, f in enumerate(data["floors"])]
    except (files.RecordError, KeyError, TypeError, AttributeError, ValueError) as e:
        print(f"warning: noise floor not used: {path}: {e}; run `make noise SERVER={server}` "
              "again", file=sys.stderr)
        return []


def add(cache: Path, floor: Floor) -> Path:
    """Keep floor after those already kept; the file is rewritten atomically
    with every earlier floor in it."""
    path = path_for(cache, floor.server)
    path.parent.mkdir(parents=True, exist_ok=True)
    earlier = read_all(cache, floor.server) if path.exists() else []
    files.write_json(path, {"schema": SCHEMA,
                             "floors": [asdict(f) for f in earlier + [floor]]})
    return path


def mismatches(floor: Floor, m: Manifest) -> list[str]:
    """The conditions on which a run differs from the floor's."""
    run = conditions_of(m)
    return [f"{what}: floor {json.dumps(floor.conditions.get(what))}, run "
            f"{json.dumps(run.get(what))}"
            for what, _ in CONDITIONS if floor.conditions.get(what) != run.get(what)]


def matching(cache: Path | None, server: str, manifests: tuple[Manifest, ...]
             ) -> tuple[Floor | None, str]:
    """The newest floor of server taken under the conditions of every run
    given, or None; and a sentence saying which, or why none."""
    if cache is None:
        return None, "no cache folder: no A/A floor"
    kept = read_all(cache, server)
    if not kept:
        return None, (f"no A/A floor for {server} on this host "
                      f"(`make noise SERVER={server}` measures one)")
    for floor in reversed(kept):
        if not any(mismatches(floor, m) for m in manifests):
            return floor, floor.text()
    why = "; ".join(mismatches(kept[-1], next(m for m in manifests if mismatches(kept[-1], m))))
    return None, (f"the A/A floors of {server} were taken under other conditions (newest: "
                  f"{why}); `make noise SERVER={server}` under these conditions measures one")
