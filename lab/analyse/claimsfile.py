"""docs/claims.toml read into typed studies and claims, and checked: the
one reader of the claims file. `load` raises ClaimsError naming the problem
(the file, the table, the key); nothing here judges or writes a claim
(lab.analyse.claims judges one, lab.analyse.claimtext words it)."""
from __future__ import annotations

import math
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.analyse.metrics import MIN_REPS_FOR_VERDICT
from lab.setup.params import WARMUP_SLICE_S
from lab.setup.paths import ROOT
from lab.setup.servers import ServerSpec, ServerSpecError, discover


KINDS = ("ratio", "value", "ordering")
METRICS: dict[str, str] = {
    "peak_rps": "the highest median req/s over the sweep",
    "rps_at": "median req/s at level `at`",
    "rss_end": "server RSS (resident set from /proc/PID/stat, the figure the study "
               "published) at the last (highest) level of the sweep",
    "flatness": "rps_at(at) / peak_rps: share of its peak a server reaches at level `at`",
}
# What an RSS claim compares unless it says otherwise (`compares`)
RSS_COMPARES = "RSS from /proc/PID/stat, as published"
FLATNESS_AT = 2
CONNECTIONS = ("close", "keep-alive")


class ClaimsError(ValueError):
    """docs/claims.toml is missing, not TOML, or not in the expected shape."""


AUTO = "auto"


@dataclass(frozen=True)
class Warmup:
    """A study's warm-up, as `warmup_s` (and `warmup_max_s`) give it: "auto"
    (the lab's WARMUP=auto: slices at the top level until steady, at most
    `max_s`; None: the lab's WARMUP_MAX), or a fixed number of seconds (0: none)."""
    auto: bool
    seconds: int = 0                   # the fixed warm-up (not auto)
    max_s: int | None = None           # auto's cap; None: the lab's default

    def settings(self) -> dict[str, str]:
        """As lab settings: WARMUP, and WARMUP_MAX where the study gives the cap."""
        if not self.auto:
            return {"WARMUP": f"{self.seconds}s" if self.seconds else "0"}
        return {"WARMUP": AUTO} | ({"WARMUP_MAX": f"{self.max_s}s"}
                                   if self.max_s is not None else {})

    def text(self) -> str:
        """'auto (cap 60 s)', '60 s', 'none'."""
        if self.auto:
            return f"auto (cap {self.max_s} s)" if self.max_s is not None else "auto"
        return f"{self.seconds} s" if self.seconds else "none"


@dataclass(frozen=True)
class Setup:
    """What `make reproduce` runs for a study."""
    client: str
    published_client: str
    connection: str                    # close | keep-alive
    levels: tuple[int, ...]
    duration_s: int
    warmup: Warmup
    repetitions: int
    servers: tuple[str, ...]
    ceiling: str | None
    workers: dict[str, int] = field(hash=False)
    sysctl: tuple[str, ...] = ()
    notes: str = ""


@dataclass(frozen=True)
class Cost:
    """The duets that judge a study's throughput ratios by server CPU per
    request where the client set the limit (lab.analyse.claimcost): each
    claim's two servers started together (PAIRED=duet), `pairs` start pairs,
    loaded by `client` at `levels` (a claim's own `at` where it has one), each
    level `duration_s` long."""
    client: str
    levels: tuple[int, ...]
    pairs: int
    duration_s: int


@dataclass(frozen=True)
class StandIn:
    """Which lab server plays a published one; stand_in: not the same software."""
    published: str
    lab: str
    stand_in: bool
    note: str


@dataclass(frozen=True)
class Unavailable:
    name: str
    published: str
    reason: str


@dataclass(frozen=True)
class Claim:
    id: str
    study: str                         # the study's id
    text: str
    kind: str                          # ratio | value | ordering
    metric: str
    servers: tuple[str, ...]           # ordering: highest first, as published
    published: float | None            # None for an ordering (the order is `servers`)
    accept: tuple[float, float] | None  # ratio/value: the interval counted as reproduced
    tolerance: str                     # the tolerance as written, for tables
    at: int | None
    requires: tuple[str, ...]
    figures: str
    source: str                        # "Author, venue"
    date: str
    unavailable: dict[str, str] = field(hash=False)   # name: why it is missing
    compares: str = ""                 # which figure: "RSS from /proc/PID/stat, as published"


@dataclass(frozen=True)
class Study:
    id: str
    title: str
    author: str
    source: str
    date: str
    url: str
    conditions: str
    setup: Setup
    stands_for: tuple[StandIn, ...]
    unavailable: tuple[Unavailable, ...]
    claims: tuple[Claim, ...]
    # the published side of each condition (server host, client host, network,
    # OS, JDK and GC, AWS, client), quoted from docs/published.md: what a
    # claim's reason sets against this run's manifest (lab.analyse.claimreasons)
    published_conditions: dict[str, str] = field(default_factory=dict, hash=False)
    cost: Cost | None = None           # [study.cost]; None: no claim judged by cost


def spec_of(server: str) -> ServerSpec:
    """A claim's server as the lab starts it (`aws@16`: aws with 16 workers);
    an unavailable server's published name (no SERVER word) whole."""
    try:
        return ServerSpec.parse(server)
    except ServerSpecError:
        return ServerSpec(server)


def start_of(starts: Mapping[str, ServerSpec], server: str) -> ServerSpec:
    """How a claim's server is started: as `starts` says (a study's aws as
    aws@8, lab.studies.reproduce.server_specs), else as it is named."""
    return starts.get(server) or spec_of(server)


def num(x: float) -> str:
    """A figure as claims are written: 1.07, 161, 1,234, ∞."""
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.3g}"


class _Table:
    """A TOML table read with its place in the file, for error messages."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise ClaimsError(f"{where}: expected a table, found {type(data).__name__}")
        self.data: dict[str, Any] = data
        self.where = where

    def fail(self, msg: str) -> ClaimsError:
        return ClaimsError(f"{self.where}: {msg}")

    def has(self, key: str) -> bool:
        return key in self.data

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
        if key not in self.data:
            if default is ...:
                raise self.fail(f"missing key `{key}`")
            return default
        value = self.data[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds:
            value = None                       # TOML true is not a number here
        if not isinstance(value, kinds):
            names = " or ".join(k.__name__ for k in kinds)
            raise self.fail(f"`{key}` must be {names}, found {self.data[key]!r}")
        return value

    def text(self, key: str, default: Any = ...) -> str:
        value: str = self.get(key, str, default)
        return value

    def number(self, key: str, default: Any = ...) -> float:
        value = self.get(key, (int, float), default)
        return float(value)

    def integer(self, key: str, default: Any = ..., minimum: int = 0) -> int:
        value: int = self.get(key, int, default)
        if value is not None and value < minimum:
            raise self.fail(f"`{key}` must be {minimum} or more, found {value}")
        return value

    def strings(self, key: str, default: Any = ...) -> tuple[str, ...]:
        value = self.get(key, list, default)
        if not all(isinstance(v, str) and v for v in value):
            raise self.fail(f"`{key}` must be a list of non-empty strings, found {value!r}")
        return tuple(value)

    def ints(self, key: str) -> tuple[int, ...]:
        value = self.get(key, list)
        if not value or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                                for v in value):
            raise self.fail(f"`{key}` must be a non-empty list of positive integers, "
                            f"found {value!r}")
        return tuple(value)

    def tables(self, key: str, default: Any = ...) -> list[_Table]:
        value = self.get(key, list, default)
        return [_Table(v, f"{self.where} [[{key}]] #{i + 1}") for i, v in enumerate(value)]


def load(path: Path | str, lab_servers: Collection[str] | None = None,
         only: str | None = None) -> list[Study]:
    """Read and check docs/claims.toml; raises ClaimsError naming the problem.

    Every server name must be a lab server (`lab_servers`; default: the names
    lab.setup.servers.discover finds under servers/), written plain or as NAME@N,
    or a name listed under the study's [[study.unavailable]]. `only`: check
    the names of that study alone (the one about to run; an unknown id is an
    error listing the known ones); the shape of every study is checked
    either way."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ClaimsError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise ClaimsError(f"{path}: not valid TOML: {e}") from None
    top = _Table(data, str(path))
    schema = top.integer("schema", 1)
    if schema != 1:
        raise top.fail(f"unknown schema {schema} (this lab reads schema 1)")
    studies = [_study(t) for t in top.tables("study")]
    if not studies:
        raise top.fail("no [[study]]")
    seen: set[str] = set()
    for s in studies:
        if s.id in seen:
            raise top.fail(f"study id `{s.id}` appears twice")
        seen.add(s.id)
    if only is not None and only not in seen:
        raise top.fail(f"unknown study {only!r}; known: {', '.join(sorted(seen))}")
    names = set(discover(ROOT)) if lab_servers is None else set(lab_servers)
    for s in studies:
        if only is None or s.id == only:
            check_names(s, names, f"{path} study `{s.id}`")
    return studies


def ids(path: Path | str) -> list[str]:
    """The study ids of a claims file, for messages that list them (unchecked)."""
    try:
        with Path(path).open("rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ClaimsError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise ClaimsError(f"{path}: not valid TOML: {e}") from None
    studies = data.get("study", [])
    return [str(s["id"]) for s in studies if isinstance(s, dict) and "id" in s] \
        if isinstance(studies, list) else []


def study_names(study: Study) -> dict[str, str]:
    """Every server name the study uses (without @N), with where it is used."""
    setup = study.setup
    used = {n: "[setup] servers" for n in setup.servers}
    used |= {n: "[setup.workers]" for n in setup.workers if n not in used}
    if setup.ceiling and setup.ceiling not in used:
        used[setup.ceiling] = "[setup] ceiling"
    for s in study.stands_for:
        used.setdefault(s.lab, "[[stands_for]] lab")
    for c in study.claims:
        for n in (*(spec_of(s).name for s in c.servers), *c.requires):
            used.setdefault(n, f"claim `{c.id}`")
    return used


def check_names(study: Study, lab_servers: set[str], where: str) -> None:
    """Raise ClaimsError unless every name the study uses is a lab server or
    listed as unavailable, and no unavailable name is a lab server."""
    missing = {u.name for u in study.unavailable}
    present = sorted(missing & lab_servers)
    if present:
        raise ClaimsError(f"{where}: listed under [[study.unavailable]] but found as a lab "
                          f"server: {', '.join(present)}")
    for name, use in study_names(study).items():
        if name not in lab_servers and name not in missing:
            raise ClaimsError(f"{where}: {use} names {name!r}, which is neither a lab server "
                              f"({', '.join(sorted(lab_servers))}) nor listed under "
                              "[[study.unavailable]]")


def _study(t: _Table) -> Study:
    sid = t.text("id")
    t.where = f"{t.where.rsplit(' [[', 1)[0]} study `{sid}`"
    setup = _setup(_Table(t.get("setup", dict), f"{t.where} [setup]"))
    stands = tuple(StandIn(published=s.text("published"), lab=s.text("lab"),
                           stand_in=s.get("stand_in", bool, False), note=s.text("note", ""))
                   for s in t.tables("stands_for", []))
    unavailable = tuple(Unavailable(name=u.text("name"), published=u.text("published"),
                                    reason=u.text("reason"))
                        for u in t.tables("unavailable", []))
    missing = {u.name: u.reason for u in unavailable}
    known = set(setup.servers) | {s.lab for s in stands}
    if setup.ceiling:
        known.add(setup.ceiling)
    both = known & set(missing)
    if both:
        raise t.fail(f"listed both as lab servers and as unavailable: {', '.join(sorted(both))}")
    for name in setup.workers:
        if name not in known:
            raise t.fail(f"[setup.workers] names `{name}`, which is not one of the study's servers")
    source = f"{t.text('author')}, {t.text('source')}"
    claims = tuple(_claim(c, sid, source, t.text("date"), known, missing)
                   for c in t.tables("claim"))
    if not claims:
        raise t.fail("no [[study.claim]]")
    ids = [c.id for c in claims]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise t.fail(f"claim id `{dup[0]}` appears twice")
    pc = _Table(t.get("published_conditions", dict, {}), f"{t.where} [published_conditions]")
    cost = _cost(_Table(t.get("cost", dict), f"{t.where} [cost]"), setup) if t.has("cost") else None
    return Study(id=sid, title=t.text("title"), author=t.text("author"), source=t.text("source"),
                 date=t.text("date"), url=t.text("url", ""), conditions=t.text("conditions", ""),
                 setup=setup, stands_for=stands, unavailable=unavailable, claims=claims,
                 published_conditions={k: pc.text(k) for k in pc.data}, cost=cost)


def _cost(t: _Table, setup: Setup) -> Cost:
    pairs = t.integer("pairs", minimum=2)
    return Cost(client=t.text("client", setup.client), levels=t.ints("levels"), pairs=pairs,
                duration_s=t.integer("duration_s", setup.duration_s, minimum=1))


def _setup(t: _Table) -> Setup:
    connection = t.text("connection")
    if connection not in CONNECTIONS:
        raise t.fail(f"`connection` must be one of {', '.join(CONNECTIONS)}, "
                     f"found {connection!r}")
    workers_t = _Table(t.get("workers", dict, {}), f"{t.where} [workers]")
    workers = {k: workers_t.integer(k, minimum=1) for k in workers_t.data}
    servers = t.strings("servers")
    if not servers:
        raise t.fail("`servers` is empty")
    return Setup(client=t.text("client"), published_client=t.text("published_client", ""),
                 connection=connection, levels=t.ints("levels"),
                 duration_s=t.integer("duration_s", minimum=1),
                 warmup=_warmup(t),
                 repetitions=t.integer("repetitions", MIN_REPS_FOR_VERDICT, minimum=1),
                 servers=servers, ceiling=t.text("ceiling", None), workers=workers,
                 sysctl=t.strings("sysctl", []), notes=t.text("notes", ""))


def _warmup(t: _Table) -> Warmup:
    """`warmup_s`: "auto" or whole seconds (0, or absent: none); `warmup_max_s`:
    auto's cap, at least one slice (WARMUP_SLICE_S), only beside "auto"."""
    value = t.data.get("warmup_s", 0)
    if value == AUTO:
        cap = t.get("warmup_max_s", int, None)
        if cap is not None and (isinstance(cap, bool) or cap < WARMUP_SLICE_S):
            raise t.fail(f"`warmup_max_s` must be {WARMUP_SLICE_S} or more (WARMUP=auto loads "
                         f"in slices of {WARMUP_SLICE_S} s), found {cap!r}")
        return Warmup(auto=True, max_s=cap)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise t.fail(f"`warmup_s` must be \"{AUTO}\" or a whole number of seconds (0: none), "
                     f"found {value!r}")
    if t.has("warmup_max_s"):
        raise t.fail("`warmup_max_s` is the cap of `warmup_s = \"auto\"`; "
                     f"with a fixed warm-up ({value} s) leave it out")
    return Warmup(auto=False, seconds=value)


def _claim(t: _Table, study: str, source: str, date: str, known: set[str],
           missing: dict[str, str]) -> Claim:
    cid = t.text("id")
    t.where = f"{t.where.rsplit(' [[', 1)[0]} claim `{cid}`"
    kind = t.text("kind")
    if kind not in KINDS:
        raise t.fail(f"unknown kind {kind!r} (expected one of {', '.join(KINDS)})")
    metric = t.text("metric")
    if metric not in METRICS:
        raise t.fail(f"unknown metric {metric!r} (expected one of {', '.join(METRICS)})")
    servers = t.strings("servers")
    wanted = {"ratio": "exactly 2", "value": "exactly 1", "ordering": "2 or more"}[kind]
    if (kind == "ratio" and len(servers) != 2) or (kind == "value" and len(servers) != 1) \
            or (kind == "ordering" and len(servers) < 2):
        raise t.fail(f"a {kind} claim names {wanted} servers, found {len(servers)}")
    if len(set(servers)) != len(servers):
        raise t.fail("a server appears twice in `servers`")
    for s in servers:
        try:
            spec: ServerSpec | None = ServerSpec.parse(s)
        except ServerSpecError as e:
            if e.part == "@":
                raise t.fail(f"server {s!r}: after @ comes a worker count") from None
            spec = None
        # a claim names no alias: NAME#K is an unknown server
        name = spec.name if spec is not None and spec.alias is None else s
        if name not in known and name not in missing:
            raise t.fail(f"server {name!r} is neither one of the study's lab servers "
                         f"({', '.join(sorted(known))}) nor listed as unavailable")
    if kind == "value" and metric != "flatness":
        raise t.fail("a value claim compares a dimensionless metric (flatness) with the "
                     "published value; use a ratio of two servers for other metrics")
    at = t.integer("at", None, minimum=1)
    if metric == "rps_at" and at is None:
        raise t.fail("metric rps_at needs `at`, the level")
    if metric == "flatness" and at is None:
        at = FLATNESS_AT
    requires = t.strings("requires", tuple(dict.fromkeys(spec_of(s).name for s in servers)))
    for r in requires:
        if r not in known and r not in missing:
            raise t.fail(f"requires {r!r}, which is neither a lab server of the study "
                         "nor listed as unavailable")
    ways = [k for k in ("tolerance", "factor", "accept") if t.has(k)]
    published: float | None = None
    accept: tuple[float, float] | None = None
    tolerance = "same order, each adjacent pair separated by the decision rule"
    if kind == "ordering":
        if ways or t.has("published"):
            raise t.fail("an ordering takes its published order from `servers`: "
                         f"no `published` or {'/'.join(ways) or 'tolerance'}")
    else:
        published = t.number("published")
        if len(ways) != 1:
            raise t.fail("give exactly one of `tolerance` (relative, e.g. 0.15), "
                         f"`factor` (e.g. 2.0) or `accept` ([lo, hi]); found {ways or 'none'}")
        accept, tolerance = _accept(t, ways[0], published)
    return Claim(id=cid, study=study, text=t.text("text"), kind=kind, metric=metric,
                 servers=servers, published=published, accept=accept, tolerance=tolerance,
                 at=at, requires=requires, figures=t.text("figures", ""), source=source,
                 date=date, unavailable={r: missing[r] for r in requires if r in missing},
                 compares=t.text("compares", RSS_COMPARES if metric == "rss_end" else ""))


def _accept(t: _Table, way: str, published: float) -> tuple[tuple[float, float], str]:
    if way == "tolerance":
        tol = t.number("tolerance")
        if not 0 < tol < 1:
            raise t.fail(f"`tolerance` is a fraction between 0 and 1, found {tol}")
        return (published * (1 - tol), published * (1 + tol)), f"±{tol:.0%}"
    if way == "factor":
        f = t.number("factor")
        if not f > 1:
            raise t.fail(f"`factor` must be above 1, found {f}")
        return (published / f, published * f), f"within ×{f:g}"
    value = t.get("accept", list)
    if len(value) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                  for v in value) or not value[0] < value[1]:
        raise t.fail(f"`accept` must be [lo, hi] with lo < hi, found {value!r}")
    lo, hi = float(value[0]), float(value[1])
    if not lo <= published <= hi:
        raise t.fail(f"`accept` {value!r} does not contain the published value {published:g}")
    return (lo, hi), f"in [{num(lo)}, {num(hi)}]"
