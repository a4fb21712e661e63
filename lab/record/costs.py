"""<run>/cost.json: instructions per request under cachegrind (make cost,
lab.studies.cost), read typed."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lab.record.checked import Obj
from lab.record.files import RecordError, read_json
from lab.setup.names import why_not_a_recorded_name

COST = "cost.json"                 # make cost (lab.studies.cost): instructions per request


@dataclass
class CostRep:
    """One repetition of one server at one level under cachegrind: the
    marginal instructions per request from two exact-count starts, and the
    CPU a plain start spent per request (user, kernel) from /proc."""
    rep: int
    level: int
    per_request: float
    user_us: float | None = None
    sys_us: float | None = None
    rate_rps: float | None = None


@dataclass
class CostServer:
    name: str
    applicable: bool
    reason: str = ""                   # not applicable: why
    error: str = ""                    # failed: why
    valgrind: str = ""
    reps: list[CostRep] = field(default_factory=list)
    # level: (function, instructions per request) by cg_diff of the two starts
    functions: dict[int, list[tuple[str, float]]] = field(default_factory=dict)


@dataclass
class Costs:
    """cost.json: how the counts were made, and each server's."""
    tool: str
    wrapper: str
    levels: list[int]
    requests: list[int]
    repeat: int
    servers: dict[str, CostServer]
    headers: int = 0                   # extra request headers (HEADERS)


def _num(o: Obj, key: str) -> float | None:
    return o.opt_num(key)


def read_costs(run: Path) -> Costs | None:
    """<run>/cost.json, typed; None when the run has none."""
    path = run / COST
    if not path.exists():
        return None
    o = Obj(read_json(path), path, "")
    servers: dict[str, CostServer] = {}
    table = o.obj("servers", True)
    for name in table.data:
        why = why_not_a_recorded_name(name)
        if why:
            raise RecordError(path, why)
        x = table.obj(name)
        reps = []
        for i, r in enumerate(x.items("reps")):
            ro = Obj(r, path, f"servers.{name}.reps[{i}]")
            native = ro.obj("native")
            per = ro.opt_num("per_request")
            if per is None:
                raise ro.fail("per_request", "a number")
            reps.append(CostRep(rep=ro.integer("rep"), level=ro.integer("level"),
                                per_request=per, user_us=_num(native, "user_us_per_req"),
                                sys_us=_num(native, "sys_us_per_req"),
                                rate_rps=_num(native, "rate_rps")))
        functions: dict[int, list[tuple[str, float]]] = {}
        for level, found in x.raw_obj("functions").items():
            if not (isinstance(found, list) and str(level).isdigit() and all(
                    isinstance(f, list) and len(f) == 2 and isinstance(f[1], (int, float))
                    for f in found)):
                raise x.fail("functions", "an object of levels: [[function, number], ...]")
            functions[int(level)] = [(str(f[0]), float(f[1])) for f in found]
        servers[name] = CostServer(name=name, applicable=x.flag("applicable"),
                                   reason=x.text("reason"), error=x.text("error"),
                                   valgrind=x.text("valgrind"), reps=reps, functions=functions)
    return Costs(tool=o.text("tool"), wrapper=o.text("wrapper"), levels=o.ints("levels"),
                 requests=o.ints("requests"), repeat=o.integer("repeat", 1), servers=servers,
                 headers=o.integer("headers", 0))
