"""The analysis of a run, computed once from its record: per-level
statistics, verdicts between servers, each server's share of its client's
calibrated capacity, and the warnings. Pure: `analyse` reads nothing but the
record it is given; the thresholds and level statistics are lab.analyse.metrics',
the verdicts lab.analyse.verdicts'.

The report (summary.md, results.json), the HTML page, the charts and `make
compare` all read an Analysis; none needs another to have run first, and
none imports the measuring side (sweep, launch, calibrate, topologies).
"""
from __future__ import annotations

import errno
import json
import math

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from collections.abc import Iterator
from typing import Any

from lab.analyse import costlink, costview, findings, metrics, policy, profileview, responses, \
    serverside, verdicts, whatfailed
from lab.record import failures, files, outputs, runrecord
from lab.analyse.wording import axis_label
from lab.analyse.findings import Finding
from lab.analyse.metrics import LevelStats
from lab.analyse.verdicts import Verdict
from lab.record.calibration import CalLevel, Calibration
from lab.record.manifest import Manifest
from lab.record.rows import COLUMNS, Row
from lab.record.runrecord import RunRecord
from lab.setup.whynot import Reason

CLIENT_LIMITED = "client-limited"
BELOW = "below the client's limit"
DOES_NOT_HOLD = "the calibration does not hold here: run `make calibrate` on a quiet host"
# above 100% against a calibration made on a quiet host: the client's capacity
# depends on what the server answers (and on the level), so nginx's is no limit
# (the docs' section says why, once)
ABOVE_QUIET = "a client's rate depends on the server (`docs/analysis.md#above-the-capacity`)"


@dataclass(frozen=True)
class CapacityNote:
    """A server's peak as a share of what its client drove against the ceiling."""
    server: str
    value: int
    rate: float
    capacity: float
    level: int                # the calibrated level used (nearest on a log scale)
    share: float
    kind: str                 # client-limited | below | does-not-hold
    text: str


@dataclass(frozen=True)
class Analysis:
    stats: dict[str, list[LevelStats]]      # server: its levels, in run order
    compared: list[str]                     # servers judged against each other (no ceiling)
    verdict_at: list[int]
    basis: str                              # what the verdicts rank by
    verdicts: list[Verdict]                 # per level: secondary (lab.analyse.verdicts.verdicts)
    calibration_used: bool
    calibration_note: str                   # why a calibration on record is not used
    capacity: list[CapacityNote]
    warnings: list[Finding]                 # each kind writes its own text (findings)
    costs: costview.CostAnalysis | None = None       # make cost: instructions per request
    profiles: dict[str, profileview.ProfileSummary | str] = field(default_factory=dict)
    answers: dict[str, responses.ServerAnswer] = field(default_factory=dict)   # what each server sends
    failed: dict[str, whatfailed.ServerFailed] = field(default_factory=dict)  # server: what
                                                        # failed at its levels (failure_facts)
    primary: list[Verdict] = field(default_factory=list)   # one a pair, across the levels
    method: str = ""                        # the rule the verdicts were reached by: "" starts,
                                            # else PAIRED's mode (lab.present.method says it)

    def levels(self, server: str) -> list[LevelStats]:
        return self.stats.get(server, [])


# --------------------------------------------------------------------------- conditions

def conditions(m: Manifest) -> str:
    """One line: client, connection, duration, repetitions, pinning, topology, host."""
    c, h, p = m.client, m.host, m.params
    threads = f", {c.threads} threads" if c.threads else ""
    return (f"{c.tool} {c.version}{threads}, connection {c.connection or '?'}, "
            f"{'' if m.extra.get('kind') == 'cost' else f'{p.duration_s}s/level, '}"
            f"{p.repeat.text()} rep, server CPU "
            f"{m.pinning.server_cpus or '?'}, client CPU {m.pinning.client_cpus or '?'}, "
            f"{(m.topology or '?').split(' ')[0]}, {h.model()}")


# --------------------------------------------------------------------------- calibration

def mode(keepalive: bool) -> str:
    return "keep-alive" if keepalive else "close"


def why_calibration_differs(m: Manifest, cal: Calibration) -> Reason:
    """Why the calibration on record does not describe this run's conditions
    (client, connection mode, pinning, topology), or None when it does."""
    tool, conn = m.client.tool, mode(m.params.keepalive)
    got = cal.clients.get(tool)
    if got is None:
        return f"{tool} was not calibrated (calibrated: {', '.join(cal.clients) or 'none'})"
    if not got.modes.get(conn):
        refused = got.refused.get(conn)
        why = f": {'; '.join(refused.values())}" if refused else ""
        return f"{tool} with connection {conn} has no saved level{why}"
    if (cal.pinning.server_cpus, cal.pinning.client_cpus) != \
            (m.pinning.server_cpus, m.pinning.client_cpus):
        return (f"calibrated with server CPU {cal.pinning.server_cpus}, client CPU "
                f"{cal.pinning.client_cpus}; this run: server CPU {m.pinning.server_cpus}, "
                f"client CPU {m.pinning.client_cpus}")
    if not cal.topology:
        return ("the calibration does not record its topology (made by an older lab): "
                "run `make calibrate` again")
    if cal.topology.split(" ")[0] != (m.topology or "").split(" ")[0]:
        return (f"calibrated on topology {cal.topology.split(' ')[0]}, this run on "
                f"{(m.topology or '?').split(' ')[0]}")
    return None


def nearest(values: list[int], value: int) -> int:
    """The calibrated level closest to `value` on a log scale."""
    return min(values, key=lambda c: abs((c / value) - 1) if c >= value else abs(value / c - 1))


def calibrated(cal: Calibration, client: str, keepalive: bool) -> dict[int, CalLevel]:
    """The levels the calibration saved for a client in a connection mode."""
    got = cal.clients.get(client)
    return (got.modes.get(mode(keepalive)) or {}) if got else {}


def capacity(cal: Calibration, client: str, keepalive: bool,
             concurrency: int) -> tuple[float, int] | None:
    """(req/s, calibrated level) the client drove against the ceiling nearest
    to `concurrency`, in this connection mode; None when it has no level."""
    at_level = calibrated(cal, client, keepalive)
    if not at_level or not concurrency:
        return None
    c = nearest(list(at_level), concurrency)
    return at_level[c].rate_rps, c


def above_why(cal: Calibration, m: Manifest, level: int) -> str:
    """Why a server can exceed its client's calibrated figure: a calibration
    made on a busy host (its level's own record says so, or does not say),
    or, on a quiet one, a client whose cost per request depends on the server."""
    lv = calibrated(cal, m.client.tool, m.params.keepalive).get(level)
    busy = lv.host_busy_pct if lv is not None else None
    if busy is None or busy > metrics.HOST_BUSY_PCT:
        return DOES_NOT_HOLD
    return ABOVE_QUIET


def capacity_note(m: Manifest, s: LevelStats) -> CapacityNote | None:
    """'aws 4.9 k req/s at c=8 = 97% of what siege drove against the ceiling here (c=8)'."""
    cal = m.calibration
    if cal is None or s.open_loop or m.params.axis != "concurrency":
        return None
    if why_calibration_differs(m, cal) is not None:
        return None
    got = capacity(cal, m.client.tool, m.params.keepalive, s.value)
    if got is None:
        return None
    cap, level = got
    share = s.rate.median / cap if cap > 0 else float("inf")
    at = f"c={level}" if level == s.value else f"nearest calibrated level c={level}"
    if share > 1.0:
        kind, said = "does-not-hold", above_why(cal, m, level)      # the share says above
    elif share >= metrics.CAPACITY_LIMITED:
        kind, said = "client-limited", CLIENT_LIMITED
    else:
        kind, said = "below", BELOW
    text = (f"{s.server} {s.rate.median / 1000:.1f} k req/s at c={s.value} = {share:.0%} of "
            f"what {m.client.tool} drove against the ceiling here ({at}): {said}")
    return CapacityNote(s.server, s.value, s.rate.median, cap, level, share, kind, text)


# --------------------------------------------------------------------------- what failed

def at_value(axis: str, value: int) -> str:
    return {"concurrency": f"c={value}", "rate": f"rate={value}/s"}.get(axis, f"{axis}={value}")


def failure_facts(m: Manifest, name: str, levels: list[LevelStats]) -> whatfailed.ServerFailed:
    """What failed at a server's levels (lab.analyse.whatfailed), with the
    workers it ran with where requests failed above them; false when nothing
    failed. lab.present.failedwords says it."""
    few = few_workers(m, name, levels)
    return whatfailed.of_server(name, m.params.axis, levels,
                                (few.workers, few.beyond) if few else None)


def workers_note(m: Manifest, name: str, levels: list[LevelStats]) -> str | None:
    """'aws has 5 workers (AWS Max_Connection, AWS's default) for 64 connections; <what
    the server does with the rest>: use aws@64', when requests failed at a
    concurrency above the workers the server ran with."""
    found = few_workers(m, name, levels)
    return None if found is None else found.note()


def few_workers(m: Manifest, name: str, levels: list[LevelStats]) -> findings.FewWorkers | None:
    """The workers a server ran with, when requests failed at a concurrency above them."""
    rec = m.server(name)
    ran: list[tuple[int, str]] = []
    for start in rec.starts:
        said = start.extra.get("ran_with")
        given = start.extra.get("workers")
        if isinstance(given, int) and given > 0:
            ran.append((given, "WORKERS"))
        elif isinstance(said, dict) and isinstance(said.get("workers"), int):
            ran.append((int(said["workers"]), str(said.get("detail") or "as shipped")))
    if not ran or m.params.axis != "concurrency":
        return None
    workers, detail = min(ran)
    over = [s.value for s in levels if s.failed and s.value > workers]
    if not over:
        return None
    return findings.FewWorkers(server=name, workers=workers, detail=detail, top=max(over),
                               over=len(over), beyond=str(rec.extra.get("workers_beyond") or ""))


# --------------------------------------------------------------------------- warnings

def warnings(m: Manifest, stats: dict[str, list[LevelStats]], cal_note: str,
             capacity_notes: list[CapacityNote]) -> list[Finding]:
    """hyperfine-style: what was seen, then what to do (each kind's text is
    lab.analyse.findings')."""
    out: list[Finding] = []
    if m.status != "complete":
        out.append(findings.RunNotComplete(m.status, tuple(m.problems)))
    elif m.problems:                   # a later step's (make profile): the figures stand
        out.append(findings.LaterProblems(tuple(m.problems)))
    tool = m.client.tool
    reps = m.planned.repeat.least
    for name, levels in stats.items():
        n = len(levels)

        def count(flag: str) -> int:
            return sum(1 for s in levels if flag in s.all_flags())
        if count("client-bound"):
            out.append(findings.ClientBound(name, count("client-bound"), n, tool))
        if count("noisy"):
            worst = max(levels, key=lambda s: s.rate.ratio)
            # the starts the worst level was measured on (REPEAT=auto adds some)
            out.append(findings.Noisy(name, count("noisy"), n, worst.rate.n or reps,
                                      worst.rate.ratio,
                                      worst.value, "start pairs" if paired_mode(m)
                                      else "repetitions"))
        if count("littles-law"):
            out.append(findings.LittlesLaw(name, count("littles-law"), n))
        if count("saturated"):
            out.append(findings.Saturated(name, count("saturated"), n))
        for flag in metrics.UNRANKED:        # each flagged level, with its reasons
            said = tuple(f"{at_value(m.params.axis, s.value)}: {'; '.join(s.unranked)}"
                         for s in levels if s.flags.get(flag))
            if said and flag == "client-stopped":
                out.append(findings.ClientStopped(name, len(said), n, said, tool))
            elif said and flag == "client-stalled":
                out.append(findings.ClientStalled(name, len(said), n, said, tool))
            elif said and flag == "wrong-answers":
                out.append(findings.WrongAnswers(name, len(said), n, said, sum(
                    1 for s in levels if s.flags.get(flag) and s.flags.get("answer-changed"))))
            elif said and flag == "port-shared":
                out.append(findings.PortShared(name, len(said), n, said))
            elif said:
                out.append(findings.AnswerChanged(name, len(said), n, said))
        if count("not-steady"):
            out.append(findings.NotSteady(name))
        if count("sampler-gap"):
            out.append(findings.SamplerGap(name, count("sampler-gap"), n))
        if count("accept-queue-full"):
            out.append(findings.AcceptQueueFull(
                name, count("accept-queue-full"), n,
                tuple(at_value(m.params.axis, s.value) for s in levels
                      if "accept-queue-full" in s.all_flags())))
        if count("host-busy"):
            out.append(findings.HostBusy(name, count("host-busy"), n))
        if count("steal"):
            out.append(findings.Steal(name, count("steal"), n))
        if count("neighbour"):
            out.append(findings.Neighbour(name, count("neighbour"), n,
                                              m.params.neighbour or 0))
        if count("failures"):
            found = [f for s in levels for f in s.failures]
            out.append(findings.Failures(
                name, count("failures"), n, tool, sum(s.failed for s in levels),
                sum(s.attempts for s in levels), tuple(failures.by_kind(found))))
            few = few_workers(m, name, levels)
            if few is not None:
                out.append(few)
        out.extend(findings.ServerNote(name, note) for note in m.server(name).notes)
    ranked = max(2, sum(1 for n in stats if m.role(n) != "ceiling"))   # the family's size
    alpha = rule_of(m)[0]
    least = verdicts.starts_needed(ranked, alpha, paired_run=bool(paired_mode(m)))
    if least is not None and reps < least and len(stats) > 1 and \
            not m.planned.repeat.auto:
        out.append(findings.FewRepetitions(reps, "pairs" if paired_mode(m) else "starts",
                                           least, alpha, ranked * (ranked - 1) // 2))
    if m.cgroups.get("used") is False:
        out.append(findings.NoCgroups(str(m.cgroups.get("why") or "no reason recorded")))
    if m.calibration is None and m.extra.get("kind") != "cost":
        out.append(findings.NoCalibration())
    elif cal_note:
        out.append(findings.CalibrationUnused(cal_note))
    if m.calibration is not None and m.calibration.extra.get("host_busy") and not cal_note:
        busy = [x.host_busy_pct or 0.0 for c in m.calibration.clients.values()
                for at_level in c.modes.values() for x in at_level.values()]
        out.append(findings.BusyCalibration(max(busy, default=0.0)))
    for c in capacity_notes:
        if c.kind == "does-not-hold":
            cal = m.calibration
            why = above_why(cal, m, c.level) if cal is not None else DOES_NOT_HOLD
            out.append(findings.AboveCapacity(c.server, m.client.tool, c.value, c.share, why))
    return out


# --------------------------------------------------------------------------- the pass

def analyse(rec: RunRecord) -> Analysis:
    """Everything the reading side shows of a run, from its record alone."""
    m = rec.manifest
    stats = {name: metrics.level_stats(rows) for name, rows in rec.by_server().items()}
    compared = [n for n in stats if m.role(n) != "ceiling"]
    at: list[int] = []
    found: list[Verdict] = []
    first: list[Verdict] = []
    if len(compared) >= 2:
        sub = {n: stats[n] for n in compared}
        at = verdicts.verdict_values(sub, tuple(m.params.verdict_at))
        looks = looks_of(m)
        mode = paired_mode(m)
        alpha, delta = rule_of(m)
        if mode and len(sub) == 2:
            from lab.analyse import pairverdict
            found = pairverdict.verdicts(sub, at, mode, alpha, delta, looks)
            first = pairverdict.primaries(sub, at, mode, alpha, delta, looks, found)
        else:
            found = verdicts.verdicts(sub, at, alpha, delta, looks)
            first = verdicts.primaries(sub, at, alpha, delta, looks)
    answers = responses.answers(m, list(stats) + [n for n in m.servers if n not in stats])
    found = [replace(v, wire_text=responses.size_note(v.a, v.b, answers)) for v in found]
    basis = ("p99 latency at the same offered rate" if any(
        s.open_loop for n in compared for s in stats[n]) else "requests/s")
    if paired_mode(m):
        basis = (f"start pairs {policy.PAIRED_WORDS.get(paired_mode(m), paired_mode(m))}: "
                 "requests/s at one request in flight a side, else server CPU per request")
    note = "" if m.calibration is None else (why_calibration_differs(m, m.calibration) or "")
    notes = [x for levels in stats.values() if levels
             if (x := capacity_note(m, metrics.peak(levels)))]
    return Analysis(stats=stats, compared=compared, verdict_at=at, basis=basis,
                    verdicts=found, calibration_used=m.calibration is not None and not note,
                    calibration_note=note, capacity=notes,
                    warnings=warnings(m, stats, note, notes),
                    costs=None if rec.costs is None else costview.analyse(rec.costs),
                    profiles=profileview.analyse(rec.profiles), answers=answers,
                    failed={n: facts for n, levels in stats.items()
                            if (facts := failure_facts(m, n, levels))},
                    primary=first, method=paired_mode(m))


def rule_of(m: Manifest) -> tuple[float, float]:
    """The run's ALPHA and MIN_EFFECT (%), from its plan (lab.setup.plan; a
    run made before they were run settings: the rule's defaults)."""
    return m.planned.alpha, m.planned.min_effect_pct


def paired_mode(m: Manifest) -> str:
    """PAIRED of the run: "" (one server at a time), duet or rmit."""
    return m.planned.design


def looks_of(m: Manifest) -> policy.LookSchedule:
    """The run's looks (lab.analyse.policy.LookSchedule): REPEAT=auto's, or one;
    start pairs: placed for the levels its per-level verdicts split α over."""
    return policy.planned_looks(m.planned, m.params.verdict_at)


def of(run: Path, cost_runs: list[Path] | None = None) -> tuple[RunRecord, Analysis]:
    """A run folder read (RecordError when it cannot be) and analysed; a
    CPU-per-request verdict gets the instructions per request of `make cost`
    runs of the same builds beside it (lab.analyse.costlink: runs beside this
    one; `cost_runs`: those already found, [] for none)."""
    rec = runrecord.load(run)
    a = analyse(rec)
    if any(v.cpu is not None for v in a.verdicts) and rec.manifest.extra.get("kind") != "cost":
        links = costlink.find(run, rec.manifest, cost_runs)
        if links:
            a = replace(a, verdicts=[replace(v, cost_text=costlink.beside(
                v.a, v.b, v.value, links)) if v.cpu is not None else v for v in a.verdicts])
    return rec, a


def level_json(s: LevelStats) -> dict[str, Any]:
    out = asdict(s) | {"flags": s.all_flags(), "tcp": serverside.level_json(s.tcp)}
    for v in out.values():
        if isinstance(v, dict):
            v.pop("values", None)
    return out


def verdict_json(v: Verdict) -> dict[str, Any]:
    """A verdict for results.json: an unbounded interval's end is null (JSON has no
    infinity)."""
    out = finite(asdict(v) | {"said": v.said(), "verdict": v.kind.replace("faster", "better")})
    assert isinstance(out, dict)
    return out


def finite(x: Any) -> Any:
    """x with every infinite or NaN float as None, through dicts, lists and tuples."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x


def to_json(rec: RunRecord, a: Analysis,
            failed: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """results.json but its rows: the manifest, level statistics, verdicts and
    capacity shares, as one file for other tools; results_text writes it,
    the typed rows last (`rows`), one a line. `failed`: "What failed" of
    each server in plain text, as its writer (lab.present.failedwords) says
    it; the analysis holds facts, not sentences (none given: {})."""
    return {**rec.manifest.to_json(),
            "results_schema": outputs.RESULTS_SCHEMA,
            "levels": {n: [level_json(s) for s in v] for n, v in a.stats.items()},
            "verdict_basis": a.basis,
            "verdict_axis": axis_label(rec.manifest.params.axis),
            # verdict: the rule's own word (verdicts.judge: better, better-at-least,
            # equivalent, undecided, not-comparable, missing), as make compare says it;
            # each with the alpha, delta_pct and starts it was decided at
            "verdicts": [verdict_json(v) for v in a.verdicts],
            "primary_verdicts": [verdict_json(v) for v in a.primary],
            "answers": {n: asdict(x) | {"differs": [d.plain() for d in x.differs]}
                        for n, x in a.answers.items()},
            "capacity": [asdict(c) for c in a.capacity],
            "calibration_note": a.calibration_note,
            "warnings": findings.texts(a.warnings),
            "findings": [f.to_json() for f in a.warnings],     # the same, kind and figures
            "failed": failed or {},
            "costs": None if a.costs is None else asdict(a.costs)}


def results_text(rec: RunRecord, a: Analysis, limit: int = files.MAX_BYTES,
                 failed: dict[str, list[str]] | None = None) -> Iterator[str]:
    """results.json's text (to_json's), in chunks to write as they come: a line
    per key, its value compact, and a line per row, so that a run of 200,000
    levels is neither held as an indented tree nor written larger than the lab
    reads back (`limit`, files.MAX_BYTES). Where the rows would pass `limit`,
    `rows` is {} and `rows_omitted` says why (they are in results.csv);
    TooLarge, before anything is written, where even the rest would.
    `failed`: as to_json's."""
    data = to_json(rec, a, failed)
    head = [f"  {_compact(k)}: {_compact(v)},\n" for k, v in data.items()]
    size = sum(map(len, head)) + 32
    if size > limit:
        raise TooLarge(f"{outputs.RESULTS_JSON} would be {size / 2**20:,.0f} MiB without its "
                       f"rows, more than the {limit / 2**20:,.0f} MiB the lab reads of a file: "
                       "not written (results.csv, summary.md and levels.csv hold the figures)")
    groups = rec.by_server()
    for rows in groups.values():                # measured first, held nowhere
        size += sum(len(_row_line(r)) + 2 for r in rows) + 16
        if size > limit:
            said = (f"{len(rec.rows):,} rows would make {outputs.RESULTS_JSON} larger than "
                    f"the {limit / 2**20:,.0f} MiB the lab reads of a file: they are in "
                    "results.csv")
            return iter(["{\n", *head, f'  "rows_omitted": {_compact(said)},\n',
                         '  "rows": {}\n}\n'])
    return _with_rows(head, groups)


def _with_rows(head: list[str], groups: dict[str, list[Row]]) -> Iterator[str]:
    yield "{\n"
    yield from head
    yield '  "rows": {'
    for i, (name, rows) in enumerate(groups.items()):
        yield f"{',' * (i > 0)}\n    {_compact(name)}: ["
        for j, row in enumerate(rows):
            yield f"{',' * (j > 0)}\n      {_row_line(row)}"
        yield "\n    ]"
    yield "\n  }\n}\n"


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


def _row_line(row: Row) -> str:
    return _compact({name: getattr(row, name) for name in COLUMNS})


class TooLarge(OSError):
    """An output the lab could not read back (over files.MAX_BYTES): not written."""

    def __init__(self, said: str) -> None:
        super().__init__(errno.EFBIG, said)
