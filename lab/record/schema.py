"""The run record: the one owner of a run folder's schema.

A run folder holds manifest.json (what was run, where, how, and each server's
starts: `Manifest`) and results.csv (one `Row` per level of one server start).
Every step that writes them (new-run, sweep, probe, finish, calibrate) and
every step that reads them (report, plots, compare, claims, rerun, the index)
goes through this module, typed.

Reading never shows a traceback: a folder that is not a run, a manifest that
is empty, truncated, binary, not an object, lacks what a run has, or comes
from a newer lab, and a results.csv that is truncated or not a file, raise
`RecordError`, which names the file and what is wrong (the CLI exits 2 with
it). Runs written before the schema had a version (schema 1, the manifest
has no "schema" key) have the same shape and open as they are.

Keys this module does not know are kept (`extra`) and written back, so a
field another part of the lab adds survives every read-modify-write.
"""
from __future__ import annotations

import csv
import fcntl
import io
import json
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from lab.record import files
from lab.setup.names import why_not_a_recorded_name
from lab.record.files import write_json

SCHEMA = 2                 # 1: the landed tree's manifest, without a "schema" key
RESULTS_SCHEMA = 1         # results.json's own version: docs/results.schema.json, docs/run-folder.md
MANIFEST = "manifest.json"
CSV = "results.csv"
RESULTS_JSON = "results.json"   # the analysis of a run (lab.analyse.analysis.to_json), written by its report
MANIFEST_LOCK = ".manifest.lock"

T = TypeVar("T")


# RecordError and read_json are lab.record.files' (the one reader); kept here
# under their old names for every reader of a run.
RecordError = files.RecordError
read_json = files.read_json


class _Obj:
    """A JSON object read with its place, for messages: 'manifest.json: servers.aws.status ...'."""

    def __init__(self, data: Any, path: Path, where: str) -> None:
        if not isinstance(data, dict):
            raise RecordError(path, f"{where or 'the top level'} should be an object, "
                                    f"found {_kind(data)}")
        self.data: dict[str, Any] = data
        self.path, self.where = path, where

    def _at(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, want: str) -> RecordError:
        return RecordError(self.path, f"`{self._at(key)}` should be {want}, "
                                      f"found {_kind(self.data[key])}")

    def need(self, key: str, why: str = "") -> None:
        if key not in self.data:
            raise RecordError(self.path, f"lacks `{self._at(key)}`{why}")

    def text(self, key: str, default: str | None = "") -> str:
        value = self.data.get(key)
        if value is None:
            if default is None:
                self.need(key)
            return default or ""
        if not isinstance(value, str):
            raise self.fail(key, "text")
        return value

    def opt_int(self, key: str) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, "a whole number")
        return value

    def integer(self, key: str, default: int | None = None) -> int:
        value = self.opt_int(key)
        if value is not None:
            return value
        if default is None:
            self.need(key)
            raise self.fail(key, "a whole number")
        return default

    def opt_num(self, key: str) -> float | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(key, "a number")
        return float(value)

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.data.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, "true or false")
        return value

    def opt_flag(self, key: str) -> bool | None:
        return None if self.data.get(key) is None else self.flag(key)

    def obj(self, key: str, required: bool = False) -> _Obj:
        if key not in self.data or self.data[key] is None:
            if required:
                self.need(key)
            return _Obj({}, self.path, self._at(key))
        return _Obj(self.data[key], self.path, self._at(key))

    def raw_obj(self, key: str) -> dict[str, Any]:
        return self.obj(key).data

    def items(self, key: str) -> list[Any]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(key, "a list")
        return value

    def texts(self, key: str) -> list[str]:
        value = self.items(key)
        if not all(isinstance(v, str) for v in value):
            raise self.fail(key, "a list of texts")
        return list(value)

    def ints(self, key: str) -> list[int]:
        value = self.items(key)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise self.fail(key, "a list of whole numbers")
        return list(value)

    def rest(self, known: set[str]) -> dict[str, Any]:
        return {k: v for k, v in self.data.items() if k not in known}


def obj(data: Any, path: Path, where: str) -> _Obj:
    """`data` (tuples become lists, as JSON has them) to be parsed by a
    record's `parse`, as found at `where` of `path`."""
    return _Obj(json.loads(json.dumps(data, default=str)), path, where)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "text", bool: "true/false",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _names(cls: type) -> set[str]:
    return {f.name for f in fields(cls)}


def _dump(obj: Any) -> Any:
    """A record as JSON: fields, then the keys it kept (`extra`) after them."""
    if hasattr(obj, "__dataclass_fields__"):
        out: dict[str, Any] = {}
        for f in fields(obj):
            value = getattr(obj, f.name)
            if f.name != "extra" and not (value is None and f.default is None):
                out[f.name] = _dump(value)
        extra = getattr(obj, "extra", {})
        return {**out, **{k: v for k, v in extra.items() if k not in out}}
    if isinstance(obj, dict):
        return {str(k): _dump(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_dump(v) for v in obj]
    return obj


# --------------------------------------------------------------------------- manifest

@dataclass
class ClientInfo:
    """The load client as the run prepared it."""
    tool: str
    version: str = ""
    connection: str = ""               # close | keep-alive
    threads: str | None = None         # as the client counts them ("" or absent: its own)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, o: _Obj) -> ClientInfo:
        threads = o.data.get("threads")
        return cls(tool=o.text("tool", None), version=o.text("version"),
                   connection=o.text("connection"),
                   threads=None if threads is None else str(threads),
                   extra=o.rest(_names(cls)))


@dataclass
class Pinning:
    server_cpus: str = ""
    client_cpus: str = ""

    @classmethod
    def parse(cls, o: _Obj) -> Pinning:
        return cls(o.text("server_cpus"), o.text("client_cpus"))


@dataclass
class RunParams:
    """The settings as the lab understood them (lab.setup.params.Params.to_json); the
    fields the reading side decides on are typed, the rest kept as they are."""
    servers: list[str]
    axis: str
    duration_s: int
    repeat: int = 1
    client: str = ""
    keepalive: bool = False
    verdict_at: list[int] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, o: _Obj) -> RunParams:
        return cls(servers=o.texts("servers"), axis=o.text("axis", None),
                   duration_s=o.integer("duration_s", 0), repeat=o.integer("repeat", 1),
                   client=o.text("client"), keepalive=o.flag("keepalive"),
                   verdict_at=o.ints("verdict_at"), extra=o.rest(_names(cls)))


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
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, o: _Obj) -> Warmup:
        rates = o.items("slice_rates")
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in rates):
            raise o.fail("slice_rates", "a list of numbers")
        return cls(mode=o.text("mode", "none"), seconds=o.opt_num("seconds"),
                   steady=o.opt_flag("steady"), slices=o.opt_int("slices"),
                   slice_rates=[float(x) for x in rates], cap_s=o.opt_int("cap_s"),
                   rate_rps=o.opt_num("rate_rps"), jit_compiles=o.opt_int("jit_compiles"),
                   jit_per_s=o.opt_num("jit_per_s"), jit_quiet=o.opt_flag("jit_quiet"),
                   jit_error=o.text("jit_error"), extra=o.rest(_names(cls)))


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
    def parse(cls, o: _Obj) -> Response:
        pairs = o.items("headers")
        if not all(isinstance(h, list) and len(h) == 2 and all(isinstance(x, str) for x in h)
                   for h in pairs):
            raise o.fail("headers", "a list of [name, value] texts")
        return cls(request=o.text("request"), status_line=o.text("status_line"),
                   headers=[(h[0], h[1]) for h in pairs], bytes=o.opt_int("bytes"),
                   head_bytes=o.opt_int("head_bytes"), body_bytes=o.opt_int("body_bytes"),
                   error=o.text("error"), extra=o.rest(_names(cls)))

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
    def parse(cls, o: _Obj) -> Start:
        return cls(id=o.text("id"), rep=o.opt_int("rep"), status=o.text("status"),
                   warmup=Warmup.parse(o.obj("warmup")) if o.data.get("warmup") else None,
                   response=Response.parse(o.obj("response")) if o.data.get("response")
                   else None,
                   extra=o.rest(_names(cls)))

    @classmethod
    def of(cls, data: dict[str, Any]) -> Start:
        return cls.parse(_Obj(data, Path(MANIFEST), "start"))


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
    def parse(cls, o: _Obj, name: str) -> ServerRecord:
        facts = o.data.get("facts")
        if facts is not None and not isinstance(facts, dict):
            raise o.fail("facts", "an object")
        starts = [Start.parse(_Obj(s, o.path, f"{o.where}.starts[{i}]"))
                  for i, s in enumerate(o.items("starts"))]
        return cls(name=o.text("name") or name, language=o.text("language"),
                   framework=o.text("framework"), version=o.text("version"),
                   role=o.text("role") or "server", summary=o.text("summary"),
                   status=o.text("status"), starts=starts, notes=o.texts("notes"),
                   facts=None if facts is None else {str(k): str(v) for k, v in facts.items()},
                   workers=o.opt_int("workers"), reps_done=o.opt_int("reps_done"),
                   error=o.text("error") or None, extra=o.rest(_names(cls)))

    @classmethod
    def new(cls, describe: dict[str, Any]) -> ServerRecord:
        """A server's first record, from lab.setup.servers.Server.describe()."""
        rec = cls.parse(_Obj(dict(describe), Path(MANIFEST), "server"), str(describe["name"]))
        rec.status = rec.status or "starting"
        return rec


@dataclass
class CalLevel:
    """What one client drove against the ceiling at one concurrency."""
    rate_rps: float
    client_cpu_pct: float
    client_bound: bool
    failed: int = 0
    server_cpu_pct: float | None = None    # absent in calibrations of the landed tree
    host_busy_pct: float | None = None
    steal_pct: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, o: _Obj) -> CalLevel:
        rate, cpu = o.opt_num("rate_rps"), o.opt_num("client_cpu_pct")
        if rate is None or cpu is None:
            raise RecordError(o.path, f"`{o.where}` lacks rate_rps or client_cpu_pct")
        return cls(rate_rps=rate, client_cpu_pct=cpu, client_bound=o.flag("client_bound"),
                   failed=o.integer("failed", 0), server_cpu_pct=o.opt_num("server_cpu_pct"),
                   host_busy_pct=o.opt_num("host_busy_pct"), steal_pct=o.opt_num("steal_pct"),
                   extra=o.rest(_names(cls)))


MODES = ("close", "keep-alive")


@dataclass
class CalClient:
    version: str
    modes: dict[str, dict[int, CalLevel]]  # connection mode: level: figures
    refused: dict[str, dict[int, str]] = field(default_factory=dict)   # levels not saved: why


@dataclass
class Calibration:
    """`make calibrate`: what each client drove against the ceiling here, and
    under which conditions (a run uses it only when they match its own)."""
    made: str
    ceiling: str
    duration_s: int
    levels: list[int]
    pinning: Pinning
    host: dict[str, Any]
    clients: dict[str, CalClient]
    topology: str = ""                 # "" in calibrations of the landed tree
    client_threads: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, o: _Obj) -> Calibration:
        clients: dict[str, CalClient] = {}
        for name in o.raw_obj("clients"):
            c = o.obj("clients").obj(name)
            modes: dict[str, dict[int, CalLevel]] = {}
            refused: dict[str, dict[int, str]] = {}
            for mode in MODES:
                levels = c.obj(mode)
                modes[mode] = {_level(levels, k): CalLevel.parse(levels.obj(k))
                               for k in levels.data}
                why = c.obj("refused").obj(mode)
                refused[mode] = {_level(why, k): why.text(k) for k in why.data}
            clients[name] = CalClient(c.text("version"), modes, refused)
        return cls(made=o.text("made"), ceiling=o.text("ceiling"),
                   duration_s=o.integer("duration_s", 0), levels=o.ints("levels"),
                   pinning=Pinning.parse(o.obj("pinning")), host=o.raw_obj("host"),
                   clients=clients, topology=o.text("topology"),
                   client_threads=o.opt_int("client_threads"), extra=o.rest(_names(cls)))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = _dump(self)
        out["clients"] = {
            name: {"version": c.version,
                   **{mode: _dump(levels) for mode, levels in c.modes.items()},
                   **({"refused": _dump(c.refused)} if any(c.refused.values()) else {})}
            for name, c in self.clients.items()}
        return out


def _level(o: _Obj, key: str) -> int:
    if not key.isdigit():
        raise RecordError(o.path, f"`{o.where}` has {key!r} where a concurrency belongs")
    return int(key)


def read_calibration(path: Path) -> Calibration:
    return Calibration.parse(_Obj(read_json(path), path, ""))


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
    host: dict[str, Any] = field(default_factory=dict)
    client_hosts: list[dict[str, Any]] = field(default_factory=list)
    tools: dict[str, str | None] = field(default_factory=dict)   # None: not installed
    lab: dict[str, Any] = field(default_factory=dict)
    servers: dict[str, ServerRecord] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    schema: int = SCHEMA
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = _dump(self)
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
REPORT_PENDING = ("report pending: summary.md, levels.csv, results.json and report.html are "
                  "not all written (the report step did not finish: run `make report "
                  "RUN=<run>` again)")
OUTPUTS = ("summary.md", "levels.csv", RESULTS_JSON, "report.html")
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
    o = _Obj(data, path, "")
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
        host=o.raw_obj("host"),
        client_hosts=[_Obj(x, path, f"client_hosts[{i}]").data
                      for i, x in enumerate(o.items("client_hosts"))],
        tools={k: None if v is None else str(v) for k, v in o.raw_obj("tools").items()}, lab=o.raw_obj("lab"),
        servers={n: ServerRecord.parse(servers.obj(n), n) for n in servers.data},
        problems=o.texts("problems"), extra=o.rest(_names(Manifest)))


def manifest_value(m: Any, path: str) -> Any:
    """A manifest's (or any nested dict's) value at a dotted path ('host.cores'):
    m['host']['cores']; None when any step is missing."""
    node: Any = m
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


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
    known = _names(ServerRecord) - {"name", "starts", "extra"}

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


# --------------------------------------------------------------------------- failures

@dataclass(frozen=True)
class Failure:
    """Failed requests of one kind at one level, as the client reported them.

    kind: one of lab.record.failures.KINDS; status: the HTTP status of a non-2xx
    answer when the client says which (None otherwise); said: the client's
    own words (its error string, or the counter it keeps)."""
    kind: str
    count: int
    said: str
    status: int | None = None


def encode_failures(found: list[Failure] | tuple[Failure, ...]) -> str:
    """A results.csv cell: a JSON list of [kind, count, said, status]; "" for none."""
    if not found:
        return ""
    return json.dumps([[f.kind, f.count, f.said, f.status] for f in found],
                      separators=(",", ":"), ensure_ascii=False)


def decode_failures(text: str, path: Path = Path(CSV)) -> list[Failure]:
    """The cell back; RecordError when it is not what encode_failures writes."""
    if not text:
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    ok = isinstance(data, list) and all(
        isinstance(x, list) and len(x) == 4 and isinstance(x[0], str)
        and isinstance(x[1], int) and isinstance(x[2], str)
        and (x[3] is None or isinstance(x[3], int)) for x in data)
    if not ok:
        raise RecordError(path, f"`failure_kinds` is {text[:80]!r}, not a list of "
                                "[kind, count, words, status]")
    return [Failure(x[0], x[1], x[2], x[3]) for x in data]


# --------------------------------------------------------------------------- rows

@dataclass
class Row:
    """One level of one server start: every figure the lab keeps.

    Written to results.csv and read back typed (`read_rows`): empty cells are
    None, booleans are bools.
    """
    server: str
    rep: int                      # repetition (a fresh server start each)
    axis: str                     # concurrency, rate, workers or backlog
    value: int                    # the swept value of that axis
    concurrency: int              # closed-loop clients kept busy (0: open loop)
    offered_rps: float | None     # open loop: rate asked for
    workers: int
    backlog: int
    duration_s: int
    transactions: int
    successful: int
    failed: int
    availability_pct: float
    elapsed_s: float
    rate_rps: float
    resp_ms: float
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    longest_ms: float
    in_flight: float
    littles_ratio: float | None   # in-flight / concurrency (Little's law), closed loop only
    rss_end_kb: int
    rss_peak_kb: int
    threads_end: int
    threads_peak: int
    server_cpu_s: float
    server_cpu_us_per_req: float
    server_cpu_pct: float         # of the server's CPU allotment over the level
    client_cpu_s: float
    client_cpu_pct: float         # of the client's CPU allotment over the level
    client_bound: bool
    other_cpu_pct: float          # CPU used on the lab's CPUs by anything else
    steal_pct: float              # time the hypervisor took from the lab's CPUs
    sampler_cpu_pct: float        # the lab's own /proc sampler, % of one core
    time_wait: int                # TCP sockets in TIME_WAIT after the level
    flags: str                    # space-separated: client-bound failures host-busy ...
    # RUNTIME=docker: the container's memory as its cgroup counts it (usage less
    # inactive page cache, as `docker stats` shows it) at the end and peak; absent
    # (None, and no column in older runs) for a server run as a process
    cgroup_mem_kb: int | None = None
    cgroup_mem_peak_kb: int | None = None
    # where the memory goes, at the end of the level (lab.host.procfs.Memory, from
    # /proc/PID/smaps_rollup summed over the tree): PSS, private (unique) and
    # shared memory; None ("unavailable", and no column in older runs) where it
    # could not be read (the start's record says why)
    pss_kb: int | None = None
    private_kb: int | None = None
    shared_kb: int | None = None
    anon_kb: int | None = None    # anonymous memory (heap, stacks), part of private and shared
    # the kernel's part of server_cpu_us_per_req (syscalls, TCP work charged to
    # the server's processes); None in older runs
    server_sys_us_per_req: float | None = None
    # what failed, and how: `encode_failures` of the client's report (absent,
    # None, in runs made before it was recorded; "" when nothing failed)
    failure_kinds: str | None = None
    # why this level is not ranked, in the lab's words (the client stopped
    # early, the answers changed: lab.analyse.metrics.UNRANKED); "" when it is,
    # None in runs made before it was recorded
    unranked: str | None = None

    def has(self, flag: str) -> bool:
        return flag in self.flags.split()

    def failures(self) -> list[Failure]:
        """The failed requests of this level by kind ([] when none or not recorded)."""
        return decode_failures(self.failure_kinds or "")


COLUMNS = list(Row.__dataclass_fields__)
OPTIONAL = {f.name for f in fields(Row) if f.default is None}   # columns newer than old runs


def append_row(run: Path, row: Row) -> None:
    path = run / CSV
    new = not os.path.lexists(path)
    with files.open_text(path, run, append=True) as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        if new:
            w.writeheader()
        w.writerow({k: "" if v is None else v for k, v in asdict(row).items()})


def _convert(kind: object, text: str) -> Any:
    """A CSV cell back to its field's type ('' is None for optional fields)."""
    spec = str(kind)
    if text == "" and "None" in spec:
        return None
    if spec.startswith("bool"):
        if text not in ("True", "False"):
            raise ValueError(f"not a boolean: {text!r}")
        return text == "True"
    if spec.startswith("int"):
        return int(text)
    if spec.startswith("float"):
        return float(text)
    return text


def from_record(record: dict[str, str | None], path: Path = Path(CSV), line: int = 0) -> Row:
    """One results.csv line as a Row; RecordError names the line and the cell."""
    where = f"line {line}: " if line else ""
    if None in record:
        raise RecordError(path, f"{where}more cells than columns (corrupt)")
    record = {**{c: "" for c in OPTIONAL}, **record}
    missing = [c for c in COLUMNS if c not in record]
    if missing:
        raise RecordError(path, f"lacks columns {', '.join(missing)}: made by an older lab?")
    values = {}
    for f in fields(Row):
        cell = record[f.name]
        if cell is None:
            raise RecordError(path, f"{where}ends before the `{f.name}` cell (truncated)")
        try:
            values[f.name] = _convert(f.type, cell)
        except ValueError:
            raise RecordError(path, f"{where}`{f.name}` is {cell!r}, not a "
                                    f"{str(f.type).split(' ')[0]}") from None
    why = why_not_a_recorded_name(values["server"])
    if why:
        raise RecordError(path, f"{where}{why}")
    try:
        decode_failures(values["failure_kinds"] or "", path)
    except RecordError as e:
        raise RecordError(path, f"{where}{e.problem}") from None
    return Row(**values)


def read_rows(run: Path) -> list[Row]:
    """results.csv typed; [] when no level was measured yet."""
    path = run / CSV
    if not path.exists() and not path.is_symlink():
        return []
    text = files.read_text(path)
    if "\0" in text:
        raise RecordError(path, "holds a NUL byte: binary or corrupt, not CSV")
    try:
        return [from_record(r, path, i + 2)
                for i, r in enumerate(csv.DictReader(io.StringIO(text, newline="")))]
    except csv.Error as e:
        raise RecordError(path, f"is not valid CSV ({e})") from None


def group(rows: list[Row]) -> dict[str, list[Row]]:
    """Rows grouped by server, in run order; within a server by value, then rep."""
    groups: dict[str, list[Row]] = {}
    for r in rows:
        groups.setdefault(r.server, []).append(r)
    return {name: sorted(rs, key=lambda r: (r.value, r.rep)) for name, rs in groups.items()}


def rows_by_server(run: Path) -> Iterator[tuple[str, list[Row]]]:
    yield from group(read_rows(run)).items()


# --------------------------------------------------------------------------- probes

PROBE = "probe.json"


def probe_files(run: Path) -> dict[str, dict[str, Any] | str]:
    """Each server's <server>/probe.json (the robustness probe): its object,
    or why it cannot be read. A bad one is shown as such, never fatal."""
    out: dict[str, dict[str, Any] | str] = {}
    for path in sorted(run.glob(f"*/{PROBE}")):
        try:
            data = read_json(path)
        except RecordError as e:
            out[path.parent.name] = e.problem
            continue
        out[path.parent.name] = data if isinstance(data, dict) else \
            {"rows": data} if isinstance(data, list) else \
            f"should be an object, found {_kind(data)}"
    return out


# --------------------------------------------------------------------------- per-second series

# <server>/series-<tag>.csv: one measured level's per-second series (lab.record.series
# writes and reads it), the tag of the level's client output (rep1-c8, rep2-r500)
SERIES_PREFIX = "series-"
SERIES_HEADER = ("second", "rps", "server_cpu_pct", "rss_kb")


def series_file(run: Path, server: str, tag: str) -> Path:
    return run / server / f"{SERIES_PREFIX}{tag}.csv"


# --------------------------------------------------------------------------- costs, profiles

COST = "cost.json"                 # make cost (lab.studies.cost): instructions per request
PROFILE_DIR = "profile"            # make profile (lab.studies.profile): <server>/profile/
PROFILE_JSON = "profile.json"
FOLDED = "profile.folded"


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


def _num(o: _Obj, key: str) -> float | None:
    return o.opt_num(key)


def read_costs(run: Path) -> Costs | None:
    """<run>/cost.json, typed; None when the run has none."""
    path = run / COST
    if not path.exists():
        return None
    o = _Obj(read_json(path), path, "")
    servers: dict[str, CostServer] = {}
    table = o.obj("servers", True)
    for name in table.data:
        x = table.obj(name)
        reps = []
        for i, r in enumerate(x.items("reps")):
            ro = _Obj(r, path, f"servers.{name}.reps[{i}]")
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


@dataclass
class Profile:
    """<server>/profile/: how the profile was taken, and its folded stacks."""
    server: str
    profiler: str
    settings: str
    level: int
    axis: str
    client: str
    seconds: int
    rate_rps: float | None             # the client's rate while profiled
    thread_root: bool                  # each stack starts with the thread's name
    flamegraph: str                    # relative to the run folder
    stacks: list[tuple[list[str], int]]


def read_folded(path: Path) -> list[tuple[list[str], int]]:
    """Folded stacks: "frame;frame;frame count" per line."""
    stacks = []
    for line in files.read_bytes(path).decode(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks.append((stack.split(";"), int(count)))
    return stacks


def read_profiles(run: Path) -> dict[str, Profile | str]:
    """Each server's profile, or why it cannot be read (shown, never fatal)."""
    out: dict[str, Profile | str] = {}
    # <server>/profile/<level>/ (c8, c8-2: one folder per profile), or
    # <server>/profile/ itself (runs profiled before levels had folders)
    found = sorted(run.glob(f"*/{PROFILE_DIR}/{PROFILE_JSON}")) + \
        sorted(run.glob(f"*/{PROFILE_DIR}/*/{PROFILE_JSON}"))
    found = [p for p in found if not any(part.startswith(".") for part in
                                         p.relative_to(run).parts)]   # a profile under way
    several = {p.parts[len(run.parts)] for p in found
               if sum(q.parts[len(run.parts)] == p.parts[len(run.parts)] for q in found) > 1}
    for path in found:
        folder = path.parent.relative_to(run)
        name = folder.parts[0]
        key = f"{name} ({folder.name})" if name in several and len(folder.parts) > 2 else name
        try:
            o = _Obj(read_json(path), path, "")
            graph = o.text("flamegraph")
            out[key] = Profile(
                server=name, profiler=o.text("profiler"), settings=o.text("settings"),
                level=o.integer("level"), axis=o.text("axis"), client=o.text("client"),
                seconds=o.integer("seconds"), rate_rps=o.opt_num("rate_during_profile"),
                thread_root=o.flag("thread_root"),
                flamegraph=f"{folder.as_posix()}/{graph}" if graph else "",
                stacks=read_folded(path.parent / FOLDED))
        except (RecordError, OSError) as e:
            out[key] = str(e)
    return out


# --------------------------------------------------------------------------- a run

@dataclass
class RunRecord:
    """A run folder read whole: its manifest and its rows, and its
    instruction counts (make cost) and CPU profiles (make profile) if any."""
    folder: Path
    manifest: Manifest
    rows: list[Row]
    costs: Costs | None = None
    profiles: dict[str, Profile | str] = field(default_factory=dict)

    def by_server(self) -> dict[str, list[Row]]:
        return group(self.rows)


def load(run: Path) -> RunRecord:
    """A run folder, typed; RecordError names the file and what is wrong."""
    m = read_manifest(run)
    return RunRecord(run, m, read_rows(run), read_costs(run), read_profiles(run))


def finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)
