"""Published claims and whether a run reproduces them, as pure functions.

`load` reads docs/claims.toml into typed studies and claims; `evaluate` judges
one claim against per-server level statistics (lab.analyse.metrics.LevelStats);
`table` renders results as a Markdown table. Nothing here runs a benchmark.

Verdicts, checked in this order:

- inconclusive when a required component is unavailable, when a server or a
  level the claim needs was not measured; then the lab's one verdict gate
  (lab.analyse.verdicts.judge, the same as a run's verdicts and `make compare`):
  a throughput point that is client-bound measures the client, fewer than
  metrics.MIN_REPS_FOR_VERDICT repetitions show no spread;
- ratio/value claims: reproduced when the whole measured range (min-max over
  repetitions) lies inside the accepted interval around the published value;
  not reproduced when it lies wholly outside; inconclusive (noise) when it
  straddles a boundary of the interval;
- ordering claims: each adjacent pair through the gate: not reproduced when
  some pair is separated in the opposite order; reproduced when every pair is
  separated (non-overlapping ranges) in the published order, a client-bound
  figure counting as a lower bound as everywhere; inconclusive otherwise.

A ratio's range is the widest the repetitions allow: median a / median b,
from a.lo / b.hi to a.hi / b.lo. A claim found client-bound or with too few
repetitions still carries what was measured (`measured` or `order`).
"""
from __future__ import annotations

import math
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lab.setup.paths import ROOT
from lab.analyse.wording import md_cell
from lab.analyse.metrics import MIN_REPS_FOR_VERDICT, LevelStats, Spread, peak
from lab.analyse.verdicts import RANKED, Sample, efficiency, judge_spreads, unjudgeable
from lab.setup.servers import ServerSpec, ServerSpecError, discover


KINDS = ("ratio", "value", "ordering")
METRICS: dict[str, str] = {
    "peak_rps": "the highest median req/s over the sweep",
    "rps_at": "median req/s at level `at`",
    "rss_end": "server RSS (resident set from /proc/PID/stat, the figure the study "
               "published) at the last (highest) level of the sweep",
    "flatness": "rps_at(at) / peak_rps: share of its peak a server reaches at level `at`",
}
# Metrics a saturated client falsifies; RSS is read from the server's /proc.
THROUGHPUT_METRICS = frozenset({"peak_rps", "rps_at", "flatness"})
# What an RSS claim compares unless it says otherwise (`compares`)
RSS_COMPARES = "RSS from /proc/PID/stat, as published"
FLATNESS_AT = 2
CONNECTIONS = ("close", "keep-alive")

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"


class ClaimsError(ValueError):
    """docs/claims.toml is missing, not TOML, or not in the expected shape."""


@dataclass(frozen=True)
class Setup:
    """What `make reproduce` runs for a study."""
    client: str
    published_client: str
    connection: str                    # close | keep-alive
    levels: tuple[int, ...]
    duration_s: int
    warmup_s: int
    repetitions: int
    servers: tuple[str, ...]
    ceiling: str | None
    workers: dict[str, int] = field(hash=False)
    sysctl: tuple[str, ...] = ()
    notes: str = ""


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
    # claim's reason sets against this run's manifest (lab.analyse.reasons)
    published_conditions: dict[str, str] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class ClaimResult:
    claim: Claim
    verdict: str                       # reproduced | not reproduced | inconclusive
    reason: str
    measured: Spread | None = None     # ratio/value: median with its range
    order: tuple[tuple[str, Spread], ...] = ()   # ordering: each server's figure, published order
    # shown beside the verdict, never deciding it: an RSS claim's private-memory
    # figures (lab.host.procfs.Memory), a throughput claim's server CPU per request
    # where req/s could not decide (lab.analyse.verdicts.efficiency)
    beside: str = ""

    @property
    def published(self) -> float | tuple[str, ...]:
        c = self.claim
        return c.servers if c.published is None else c.published


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


# --------------------------------------------------------------------------- load

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
    return Study(id=sid, title=t.text("title"), author=t.text("author"), source=t.text("source"),
                 date=t.text("date"), url=t.text("url", ""), conditions=t.text("conditions", ""),
                 setup=setup, stands_for=stands, unavailable=unavailable, claims=claims,
                 published_conditions={k: pc.text(k) for k in pc.data})


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
                 warmup_s=t.integer("warmup_s", 0),
                 repetitions=t.integer("repetitions", MIN_REPS_FOR_VERDICT, minimum=1),
                 servers=servers, ceiling=t.text("ceiling", None), workers=workers,
                 sysctl=t.strings("sysctl", []), notes=t.text("notes", ""))


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
    return (lo, hi), f"in [{_num(lo)}, {_num(hi)}]"


# --------------------------------------------------------------------------- evaluate

class _Missing(Exception):
    """A figure the claim needs was not measured."""


def _at(stats: list[LevelStats], value: int, server: str) -> LevelStats:
    for s in stats:
        if s.value == value:
            return s
    raise _Missing(f"{server} at {value}")


def _divide(a: Spread, b: Spread) -> Spread:
    """a/b with the widest range the repetitions allow."""
    def div(x: float, y: float) -> float:
        if y > 0:
            return x / y
        return 0.0 if x == 0 else math.inf
    return Spread(div(a.median, b.median), div(a.lo, b.hi), div(a.hi, b.lo), min(a.n, b.n))


def _figure(claim: Claim, stats: list[LevelStats], server: str
            ) -> tuple[Spread, list[LevelStats]]:
    """The claim's metric for one server, and the points it was taken from."""
    if not stats:
        raise _Missing(server)
    if claim.metric == "peak_rps":
        p = peak(stats)
        return p.rate, [p]
    if claim.metric == "rps_at":
        assert claim.at is not None
        p = _at(stats, claim.at, server)
        return p.rate, [p]
    if claim.metric == "rss_end":
        p = max(stats, key=lambda s: s.value)
        return p.rss_end_kb, [p]
    if claim.metric == "flatness":
        at = _at(stats, claim.at or FLATNESS_AT, server)
        p = peak(stats)
        return _divide(at.rate, p.rate), [at, p]
    raise ValueError(f"unknown metric {claim.metric!r}")


def figure(claim: Claim, stats: list[LevelStats], server: str) -> Spread | None:
    """The claim's metric for one server (median [min-max]); None when not measured."""
    try:
        return _figure(claim, stats, server)[0]
    except _Missing:
        return None


def evaluate(claim: Claim, stats: dict[str, list[LevelStats]],
             available: set[str]) -> ClaimResult:
    """Judge `claim` on per-server statistics (keyed as in claim.servers,
    `aws@16` for a worker-count variant); `available` holds the lab servers
    that exist (built or packaged) on this machine."""
    def result(verdict: str, reason: str, **kw: Any) -> ClaimResult:
        return ClaimResult(claim, verdict, reason, **kw)

    gone = [r for r in claim.requires if r not in available]
    if gone:
        why = "; ".join(claim.unavailable.get(r, f"{r} not available") for r in gone)
        return result(INCONCLUSIVE, f"component unavailable ({why})")
    figures: list[tuple[str, Spread]] = []
    points: list[LevelStats] = []
    try:
        for server in claim.servers:
            fig, used = _figure(claim, stats.get(server, []), server)
            figures.append((server, fig))
            points += used
    except _Missing as e:
        return result(INCONCLUSIVE, f"not measured: {e}")
    # what was measured is shown even when it cannot be judged
    shown: dict[str, Any] = {"order": tuple(figures)} if claim.kind == "ordering" else \
        {"measured": figures[0][1] if claim.kind == "value"
         else _divide(figures[0][1], figures[1][1])}
    throughput = claim.metric in THROUGHPUT_METRICS
    found = _evaluate(claim, figures, points, shown, throughput)
    beside = private_beside(claim, stats) if claim.metric == "rss_end" else \
        cpu_beside(claim, stats, found) if throughput else ""
    return replace(found, beside=beside) if beside else found


def _evaluate(claim: Claim, figures: list[tuple[str, Spread]], points: list[LevelStats],
              shown: dict[str, Any], throughput: bool) -> ClaimResult:
    if claim.kind == "ordering":
        return _ordering(claim, tuple(figures), {p.server for p in points
                                                 if throughput and p.client_bound})
    # a ratio or a value needs every figure exact: the gates of lab.analyse.verdicts.judge
    # before any ranking (client-bound, too few repetitions)
    samples = [Sample(f"{p.server} at {p.value}", p.rate.values,
                      throughput and p.client_bound) for p in points]
    gate = unjudgeable(list({s.label: s for s in samples}.values()))
    if gate is not None:
        return ClaimResult(claim, INCONCLUSIVE, gate.text, **shown)
    return _interval(claim, shown["measured"])


def private_beside(claim: Claim, stats: dict[str, list[LevelStats]]) -> str:
    """An RSS claim's servers by private memory (smaps_rollup) at the same
    level: the ratio of a ratio claim, each figure of an ordering."""
    got: list[tuple[str, Spread | None]] = []
    for server in claim.servers:
        levels = stats.get(server, [])
        got.append((server, max(levels, key=lambda s: s.value).private_kb if levels else None))
    missing = [s for s, x in got if x is None]
    if missing:
        return f"private memory: unavailable ({', '.join(missing)})"
    figures = [(s, x) for s, x in got if x is not None]
    if claim.kind == "ratio":
        return f"private memory ratio {_spread(_divide(figures[0][1], figures[1][1]))}"
    return "private memory " + " / ".join(f"{x.median / 1024:.1f}" for _, x in figures) + " MB"


def cpu_beside(claim: Claim, stats: dict[str, list[LevelStats]], found: ClaimResult) -> str:
    """Where req/s did not decide a claim between servers (inconclusive),
    their server CPU per request through the gate (lab.analyse.verdicts.efficiency), at
    the claim's level or else the highest level both measured."""
    if found.verdict != INCONCLUSIVE or len(claim.servers) < 2:
        return ""
    said = []
    for a, b in zip(claim.servers, claim.servers[1:]):
        la, lb = stats.get(a, []), stats.get(b, [])
        common = sorted({s.value for s in la} & {s.value for s in lb})
        if not common:
            continue
        at = claim.at if claim.at in common else common[-1]
        sa = next(s for s in la if s.value == at)
        sb = next(s for s in lb if s.value == at)
        said.append(f"at {at}: {efficiency(sa, sb, (a, b))[1]}")
    return "; ".join(said)


def _interval(claim: Claim, m: Spread) -> ClaimResult:
    assert claim.accept is not None and claim.published is not None
    lo, hi = claim.accept
    shown = f"[{_num(m.lo)}–{_num(m.hi)}]"
    window = f"{_num(lo)}–{_num(hi)} ({_num(claim.published)} {claim.tolerance})"
    if lo <= m.lo and m.hi <= hi:
        return ClaimResult(claim, REPRODUCED, f"whole range {shown} inside {window}", m)
    if m.hi < lo or m.lo > hi:
        side = "below" if m.hi < lo else "above"
        return ClaimResult(claim, NOT_REPRODUCED, f"whole range {shown} {side} {window}", m)
    return ClaimResult(claim, INCONCLUSIVE,
                       f"noise: range {shown} straddles the edge of {window}", m)


def _ordering(claim: Claim, figures: tuple[tuple[str, Spread], ...],
              bound: set[str]) -> ClaimResult:
    """Each adjacent pair through the one verdict gate (lab.analyse.verdicts.judge):
    separated in the published order, or the opposite, or neither."""
    reversed_, overlap, unjudged = [], [], []
    for (a, x), (b, y) in zip(figures, figures[1:]):
        j = judge_spreads((a, x, a in bound), (b, y, b in bound), better="is above")
        if j.kind in RANKED:
            if j.winner != a:
                reversed_.append(f"{b} above {a}")
        elif j.kind in ("equivalent", "undecided"):
            overlap.append(f"{a} and {b} ({j.text})")
        else:
            unjudged.append(j.text)
    if reversed_:
        return ClaimResult(claim, NOT_REPRODUCED, "separated in the opposite order: "
                           + ", ".join(reversed_), order=figures)
    if unjudged:
        return ClaimResult(claim, INCONCLUSIVE, "; ".join(dict.fromkeys(unjudged)),
                           order=figures)
    if overlap:
        return ClaimResult(claim, INCONCLUSIVE, "not separated: " + ", ".join(overlap),
                           order=figures)
    return ClaimResult(claim, REPRODUCED, "every adjacent pair separated in the published order",
                       order=figures)


# --------------------------------------------------------------------------- table

def _num(x: float) -> str:
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.3g}"


def _spread(s: Spread) -> str:
    return f"{_num(s.median)} [{_num(s.lo)}–{_num(s.hi)}]"


def published_text(c: Claim) -> str:
    """'1.07 (±15%); Author, venue, 2017', or the published order."""
    if c.kind == "ordering":
        value = " > ".join(c.servers)
    else:
        assert c.published is not None
        value = f"{_num(c.published)} ({c.tolerance})"
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
        return "; ".join(f"{s} {_spread(x)} {UNITS[r.claim.metric]}" for s, x in r.order) + beside
    if r.measured is not None:
        return f"{_spread(r.measured)} {unit(r.claim)}" + beside
    return "—" + beside


def label(c: Claim) -> str:
    """'`id`: text (metric: servers)'."""
    what = f"{c.metric}@{c.at}" if c.metric == "rps_at" else c.metric
    compares = f"; compares {c.compares}" if c.compares else ""
    return f"`{c.id}`: {c.text} ({what}: {', '.join(c.servers)}{compares})"


def row(cells: list[str]) -> str:
    """One Markdown table row; a | inside a cell stays in its cell."""
    return "| " + " | ".join(md_cell(x) for x in cells) + " |"


def table(results: list[ClaimResult]) -> str:
    """A Markdown table: claim, published (value, source, date), measured
    (median [min–max]), verdict, reason."""
    lines = ["| claim | published | measured | verdict | reason |", "|---|---|---|---|---|"]
    for r in results:
        lines.append(row([label(r.claim), published_text(r.claim), measured_text(r),
                          r.verdict, r.reason]))
    return "\n".join(lines) + "\n"
