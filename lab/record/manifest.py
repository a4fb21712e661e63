"""manifest.json: what was run, where and how, and each server's starts
(`Manifest`); its one writer at a time (`update`), and the pending report.

Reading never shows a traceback: a manifest that is empty, truncated, binary,
not an object, lacks what a run has, or comes from a newer lab raises
`RecordError`, which names the file and what is wrong (the CLI exits 2 with
it). Runs written before the schema had a version (schema 1, the manifest has
no "schema" key) have the same shape and open as they are.

Keys this module does not know are kept (`extra`) and written back, so a
field another part of the lab adds survives every read-modify-write.
"""
from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from lab.record import files
from lab.record.calibration import Calibration
from lab.record.checked import Obj, dump, names
from lab.record.files import RecordError, read_json, write_json
from lab.record.outputs import in_words
from lab.record.pinning import Pinning
from lab.setup.names import why_not_a_recorded_name
from lab.setup.params import Repeat
from lab.record.hostfacts import HostFacts
from lab.record import runplan
from lab.setup.plan import RunPlan

SCHEMA = 2                 # 1: the landed tree's manifest, without a "schema" key
MANIFEST = "manifest.json"
MANIFEST_LOCK = ".manifest.lock"

T = TypeVar("T")


@dataclass
class ClientInfo:
    """The load client as the run prepared it."""
    tool: str
    version: str = ""
    connection: str = ""               # close | keep-alive
    threads: str | None = None         # as the client counts them ("" or absent: its own)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, o: Obj) -> ClientInfo:
        threads = o.data.get("threads")
        return cls(tool=o.text("tool", None), version=o.text("version"),
                   connection=o.text("connection"),
                   threads=None if threads is None else str(threads),
                   extra=o.rest(names(cls)))


@dataclass
class RunParams:
    """The settings as the lab understood them (lab.setup.params.Params.to_json); the
    fields the reading side decides on are typed, the rest kept as they are."""
    servers: list[str]
    axis: str
    duration_s: int
    repeat: Repeat = field(default_factory=Repeat)
    client: str = ""
    keepalive: bool = False
    verdict_at: list[int] = field(default_factory=list)
    # None below: not recorded (a run made before it was)
    # the topology that ran (docker under RUNTIME=docker; a lab before this one
    # recorded "local" there)
    topology: str | None = None
    paired: str | None = None          # PAIRED: "" (one server at a time), duet or rmit
    warmup_auto: bool | None = None
    warmup_s: int | None = None
    warmup_max_s: int | None = None
    workers: int | None = None
    backlog: int | None = None
    neighbour: int | None = None       # NEIGHBOUR: the lab's bursty processes per CPU (0:
                                       # none; None: a run made before it, none either)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, o: Obj) -> RunParams:
        def kept(key: str) -> str | None:
            return o.text(key) if o.data.get(key) is not None else None
        ran = "docker" if o.text("runtime") == "docker" else kept("topology")
        return cls(servers=o.texts("servers"), axis=o.text("axis", None),
                   duration_s=o.integer("duration_s", 0), repeat=repeat_of(o),
                   client=o.text("client"), keepalive=o.flag("keepalive"),
                   verdict_at=o.ints("verdict_at"), topology=ran, paired=kept("paired"),
                   warmup_auto=o.opt_flag("warmup_auto"), warmup_s=o.opt_int("warmup_s"),
                   warmup_max_s=o.opt_int("warmup_max_s"), workers=o.opt_int("workers"),
                   backlog=o.opt_int("backlog"), neighbour=o.opt_int("neighbour"),
                   extra=o.rest(names(cls) | {"repeat_auto", "repeat_max"}))

    def to_json(self) -> dict[str, Any]:
        """As read: REPEAT under its keys (Repeat.to_json), workers even when null
        (as Params records it: the server's own count), the rest as dump writes it."""
        out: dict[str, Any] = dump(self)
        return {**{k: v for k, v in out.items() if k != "repeat"}, "workers": self.workers,
                **self.repeat.to_json()}


def repeat_of(o: Obj) -> Repeat:
    """REPEAT as Params.to_json records it (a run written before REPEAT=auto has
    `repeat` only: N starts a server)."""
    least, auto = o.integer("repeat", 1), o.flag("repeat_auto")
    return Repeat(least, (o.opt_int("repeat_max") or least) if auto else least, auto)


@dataclass
class Warmup:
    mode: str = "none"                 # none | fixed | auto
    seconds: float | None = None
    steady: bool | None = None
    slices: int | None = None
    slice_rates: list[float] = field(default_factory=list)
    cap_s: int | None = None
    rate_rps: float | None = None
    # a JVM's JIT at the end of the warm-up (lab.measure.jit); absent for other servers
    # and in runs before it was recorded; jit_error says why it could not be read
    jit_compiles: int | None = None
    jit_per_s: float | None = None
    jit_quiet: bool | None = None
    jit_error: str = ""
    # WARMUP=auto by change points (lab.analyse.warmup): the start's class
    # ("flat", "warm-up", "slowdown", "no steady state"; "" in runs before it),
    # the seconds before its steady state began (None: none), each series'
    # class, and a JVM's JIT compiler threads' share of its CPU in each slice (%)
    warm_class: str = ""
    steady_after_s: float | None = None
    series_class: dict[str, str] = field(default_factory=dict)
    slice_jit_pct: list[float] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    KINDS: ClassVar[tuple[str, ...]] = ("flat", "warm-up", "slowdown", "no steady state")

    @property
    def never_steady(self) -> bool:
        """WARMUP=auto ended at its cap with no steady state (or, before the
        classes, with its slices never agreeing)."""
        return self.mode == "auto" and self.steady is False

    @classmethod
    def parse(cls, o: Obj) -> Warmup:
        rates = o.items("slice_rates")
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in rates):
            raise o.fail("slice_rates", "a list of numbers")
        return cls(mode=o.text("mode", "none"), seconds=o.opt_num("seconds"),
                   steady=o.opt_flag("steady"), slices=o.opt_int("slices"),
                   slice_rates=[float(x) for x in rates], cap_s=o.opt_int("cap_s"),
                   rate_rps=o.opt_num("rate_rps"), jit_compiles=o.opt_int("jit_compiles"),
                   jit_per_s=o.opt_num("jit_per_s"), jit_quiet=o.opt_flag("jit_quiet"),
                   jit_error=o.text("jit_error"), warm_class=o.text("warm_class"),
                   steady_after_s=o.opt_num("steady_after_s"),
                   series_class={str(k): str(v) for k, v in
                                 (o.data.get("series_class") or {}).items()},
                   slice_jit_pct=[float(x) for x in o.items("slice_jit_pct")
                                  if isinstance(x, (int, float))],
                   extra=o.rest(names(cls)))


@dataclass
class Response:
    """What a server sent for GET /api when its start was verified
    (lab.measure.verify.wire), byte for byte: the status line, each header as sent
    (name, value with its spacing; Date's value masked), the bytes on the
    wire; or why it could not be read (`error`)."""
    request: str = ""
    status_line: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    bytes: int | None = None
    head_bytes: int | None = None
    body_bytes: int | None = None
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, o: Obj) -> Response:
        pairs = o.items("headers")
        if not all(isinstance(h, list) and len(h) == 2 and all(isinstance(x, str) for x in h)
                   for h in pairs):
            raise o.fail("headers", "a list of [name, value] texts")
        return cls(request=o.text("request"), status_line=o.text("status_line"),
                   headers=[(h[0], h[1]) for h in pairs], bytes=o.opt_int("bytes"),
                   head_bytes=o.opt_int("head_bytes"), body_bytes=o.opt_int("body_bytes"),
                   error=o.text("error"), extra=o.rest(names(cls)))

    def header(self, name: str) -> str | None:
        """A header's value, stripped; None when it was not sent."""
        return next((v.strip() for k, v in self.headers if k.strip().lower() == name.lower()),
                    None)


@dataclass
class Start:
    """One start of a server (a repetition, or a knob value of one)."""
    id: str
    rep: int | None = None
    status: str = ""
    warmup: Warmup | None = None
    response: Response | None = None   # absent in runs before it was recorded
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, o: Obj) -> Start:
        return cls(id=o.text("id"), rep=o.opt_int("rep"), status=o.text("status"),
                   warmup=Warmup.parse(o.obj("warmup")) if o.data.get("warmup") else None,
                   response=Response.parse(o.obj("response")) if o.data.get("response")
                   else None,
                   extra=o.rest(names(cls)))

    @classmethod
    def of(cls, data: dict[str, Any]) -> Start:
        return cls.parse(Obj(data, Path(MANIFEST), "start"))


@dataclass
class ServerRecord:
    """What the run recorded of one server: its manifest's description, and
    how each of its starts went."""
    name: str
    language: str = ""
    framework: str = ""
    version: str = ""
    role: str = "server"               # server | ceiling
    summary: str = ""
    status: str = ""                   # starting | running | complete | failed | interrupted
    starts: list[Start] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    facts: dict[str, str] | None = None   # None: not asked yet
    workers: int | None = None
    reps_done: int | None = None
    error: str | None = None           # why it stopped
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, o: Obj, name: str) -> ServerRecord:
        facts = o.data.get("facts")
        if facts is not None and not isinstance(facts, dict):
            raise o.fail("facts", "an object")
        starts = [Start.parse(Obj(s, o.path, f"{o.where}.starts[{i}]"))
                  for i, s in enumerate(o.items("starts"))]
        return cls(name=o.text("name") or name, language=o.text("language"),
                   framework=o.text("framework"), version=o.text("version"),
                   role=o.text("role") or "server", summary=o.text("summary"),
                   status=o.text("status"), starts=starts, notes=o.texts("notes"),
                   facts=None if facts is None else {str(k): str(v) for k, v in facts.items()},
                   workers=o.opt_int("workers"), reps_done=o.opt_int("reps_done"),
                   error=o.text("error") or None, extra=o.rest(names(cls)))

    @classmethod
    def new(cls, describe: dict[str, Any]) -> ServerRecord:
        """A server's first record, from lab.setup.servers.Server.describe()."""
        rec = cls.parse(Obj(dict(describe), Path(MANIFEST), "server"), str(describe["name"]))
        rec.status = rec.status or "starting"
        return rec


@dataclass
class Manifest:
    """manifest.json: what was run, where and how, and how each server went."""
    run_id: str
    params: RunParams
    client: ClientInfo
    status: str = "running"            # running | complete | incomplete
    started: str = ""
    finished: str = ""
    reproduce: str = ""
    settings: dict[str, str] = field(default_factory=dict)
    plan: str = ""
    topology: str = ""
    topology_details: dict[str, Any] = field(default_factory=dict)
    pinning: Pinning = field(default_factory=Pinning)
    calibration: Calibration | None = None
    host: HostFacts = field(default_factory=HostFacts)
    client_hosts: list[HostFacts] = field(default_factory=list)
    tools: dict[str, str | None] = field(default_factory=dict)   # None: not installed
    lab: dict[str, Any] = field(default_factory=dict)
    # whether the lab's processes run in cgroups of its own (lab.host.cgroup.describe:
    # "used", and "under" and "kill", or "why" not); {}: a run made before
    cgroups: dict[str, Any] = field(default_factory=dict)
    servers: dict[str, ServerRecord] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    schema: int = SCHEMA
    # the run's rule and plan (lab.setup.plan): given by its writer; for a run
    # made before it was recorded, built once from params and settings
    run_plan: RunPlan | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.run_plan is None:
            self.run_plan = runplan.older(self.params, self.settings,
                                          str(self.extra.get("kind") or "bench"))

    @property
    def planned(self) -> RunPlan:
        """The run's rule and plan (run_plan), typed."""
        assert self.run_plan is not None        # __post_init__
        return self.run_plan

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = dump(self)
        out["params"] = self.params.to_json()
        out[runplan.KEY] = self.planned.to_json()
        out["calibration"] = None if self.calibration is None else self.calibration.to_json()
        return out

    def server(self, name: str) -> ServerRecord:
        """The record of `name`, or an empty one when the run has none."""
        return self.servers.get(name) or ServerRecord(name)

    def role(self, name: str) -> str:
        return self.server(name).role


# "complete" is written by the report step only, once every output exists
# (lab finish records a complete run as incomplete with this one problem; the
# report step, and `make plots`, read such a run as the complete run it will
# be, `as_reported`). Killed, or on a full disk, before the end, the run stays
# incomplete with this reason.
REPORT_PENDING = (f"report pending: {in_words()} are "
                  "not all written (the report step did not finish: run `make report "
                  "RUN=<run>` again)")
_as_reported: ContextVar[bool] = ContextVar("as_reported", default=False)


@contextmanager
def as_reported() -> Iterator[None]:
    """Within: a run whose only problem is its pending report reads as complete."""
    token = _as_reported.set(True)
    try:
        yield
    finally:
        _as_reported.reset(token)


def pending(m: Manifest) -> bool:
    """The run is complete but for its report (REPORT_PENDING, and why)."""
    return m.status == "incomplete" and any(p.startswith(REPORT_PENDING) for p in m.problems)


def reported(m: Manifest) -> None:
    """m as it is once its report is written: a run complete but for it is complete."""
    if pending(m):
        m.status = "complete"
        m.problems = [p for p in m.problems if not p.startswith(REPORT_PENDING)]


def parse_manifest(data: Any, path: Path) -> Manifest:
    m = _parse_manifest(data, path)
    if _as_reported.get():
        reported(m)
    return m


def _parse_manifest(data: Any, path: Path) -> Manifest:
    o = Obj(data, path, "")
    schema = o.integer("schema", 1)
    if schema > SCHEMA:
        raise RecordError(path, f"written by a newer lab (schema {schema}; this lab reads "
                                f"schema {SCHEMA} and older): update the lab to read it")
    if schema < 1:
        raise RecordError(path, f"unknown schema {schema}")
    foreign = ": not a manifest this lab wrote (a foreign or partial folder?)"
    for key in ("params", "client"):
        o.need(key, foreign)
    servers = o.obj("servers")
    for name in [*servers.data, *o.obj("params").texts("servers")]:
        why = why_not_a_recorded_name(name)
        if why:
            raise RecordError(path, why)
    settings = o.obj("settings")
    return Manifest(
        schema=SCHEMA, run_id=o.text("run_id") or path.parent.name,
        params=RunParams.parse(o.obj("params", True)),
        client=ClientInfo.parse(o.obj("client", True)), status=o.text("status") or "unknown",
        started=o.text("started"), finished=o.text("finished"), reproduce=o.text("reproduce"),
        settings={k: "" if v is None else str(v) for k, v in settings.data.items()},
        plan=o.text("plan"), topology=o.text("topology"),
        topology_details=o.raw_obj("topology_details"), pinning=Pinning.parse(o.obj("pinning")),
        calibration=Calibration.parse(o.obj("calibration")) if o.data.get("calibration")
        else None,
        host=HostFacts.parse(o.obj("host")),
        client_hosts=[HostFacts.parse(Obj(x, path, f"client_hosts[{i}]"))
                      for i, x in enumerate(o.items("client_hosts"))],
        tools={k: None if v is None else str(v) for k, v in o.raw_obj("tools").items()}, lab=o.raw_obj("lab"),
        cgroups=o.raw_obj("cgroups"),
        servers={n: ServerRecord.parse(servers.obj(n), n) for n in servers.data},
        problems=o.texts("problems"), extra=o.rest(names(Manifest)),
        run_plan=runplan.parse(o.obj(runplan.KEY)) if o.data.get(runplan.KEY) else None)


def read_manifest(run: Path) -> Manifest:
    """The run folder's manifest, typed; RecordError names what is wrong."""
    if not run.is_dir():
        raise RecordError(run, "no such run folder" if not run.exists() else
                          "is not a folder")
    path = run / MANIFEST
    if not path.exists() and not path.is_symlink():
        hint = " (it is a comparison, not a run)" if (run / "compare.json").exists() else ""
        raise RecordError(path, f"missing: {run} is not a run folder{hint}")
    return parse_manifest(read_json(path), path)


def write_manifest(run: Path, m: Manifest) -> None:
    """The manifest, atomically (a failing step's last words: files.last_words)."""
    write_json(run / MANIFEST, m.to_json())


@contextmanager
def locked(run: Path, make: bool = True) -> Iterator[None]:
    """One writer of the manifest at a time (a sweep, a probe, finish).
    make=False: no lock file is made where there is none (another run's
    folder, in which the lab adds nothing)."""
    if not make and not os.path.lexists(run / MANIFEST_LOCK):
        yield
        return
    with files.open_binary(run / MANIFEST_LOCK, run, append=True) as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def update(run: Path, change: Callable[[Manifest], T]) -> T:
    """Read the manifest, change it in place, write it back: one writer at a time."""
    with locked(run):
        m = read_manifest(run)
        out = change(m)
        write_manifest(run, m)
        return out


def update_server(run: Path, describe: dict[str, Any], start: dict[str, Any] | None = None,
                  note: str | None = None, **changes: Any) -> ServerRecord:
    """Change one server's record (made from `describe` on first use): fields
    of ServerRecord by name, the current start (replacing the one of the same
    id), a note appended."""
    name = str(describe["name"])
    known = names(ServerRecord) - {"name", "starts", "extra"}

    def change(m: Manifest) -> ServerRecord:
        rec = m.servers.get(name) or ServerRecord.new(describe)
        for key, value in changes.items():
            if key in known:
                setattr(rec, key, value)
            else:
                rec.extra[key] = value
        if start:
            s = Start.of(start)
            rec.starts = [x for x in rec.starts if x.id != s.id] + [s]
        if note is not None:
            rec.notes.append(note)
        m.servers[name] = rec
        return rec
    return update(run, change)


def add_problem(run: Path, problem: str, status: str | None = None) -> None:
    """One more reason the run is not complete (and, given, its status now)."""
    def change(m: Manifest) -> None:
        m.problems.append(problem)
        if status is not None:
            m.status = status
    update(run, change)

