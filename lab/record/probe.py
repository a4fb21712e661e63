"""<server>/probe.json: one server's robustness probe, typed (`ProbeReport`),
and its one reader (`read_probe`, `probe_files`). lab.measure.probe makes
and writes it through these types; the report and the page read it here.

A file of an older lab reads: keys it lacks take their defaults (breaches
were not kept: none; a title: the probe's name), the keys derived on writing
(still_answers, stopped_after, cpu_s, kind, verdict) are computed again. A
file that is not a probe record (not an object, a value of the wrong kind)
raises RecordError, which names what is wrong; `probe_files` shows it as
unreadable, never fatal."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from lab.record.checked import Obj
from lab.record.files import RecordError, read_json

PROBE = "probe.json"
Facts = dict[str, float | int | str | None]


@dataclass(frozen=True)
class Check:
    """One check of the contract every server meets before it is loaded
    (lab.analyse.contract; lab.measure.verify makes them). name: the short
    label a passed check is recorded as ("GET /api 200", "keep-alive"); rule:
    what the contract asks ("GET /api must answer 200"); ok: passed; got: what
    came back when it did not."""
    name: str
    rule: str
    ok: bool
    got: str = ""

    def text(self) -> str:
        """A passed check: its label; a breach: the rule, then what came back."""
        return self.name if self.ok else f"{self.rule}; got: {self.got}"

    @classmethod
    def from_json(cls, data: object) -> Check | None:
        """One read back from probe.json; None when it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("rule"), str):
            return None
        return cls(name=str(data.get("name", "")), rule=data["rule"],
                   ok=bool(data.get("ok")), got=str(data.get("got", "")))


def checks_of(data: object) -> tuple[Check, ...]:
    """Checks read back from probe.json (none in one written before they were kept)."""
    if not isinstance(data, (list, tuple)):
        return ()
    return tuple(c for c in (Check.from_json(x) for x in data) if c is not None)


@dataclass(frozen=True)
class Limits:
    """Every bound of the probe. The defaults keep one server's probe well under
    a minute when it behaves, and bounded when it does not."""
    deadline_s: float = 3.0          # each probe's own deadline (the slow and idle ones too)
    verify_timeout_s: float = 2.0    # the contract check after each probe (per socket operation)
    settle_s: float = 1.5            # after a probe: wait up to this for its CPU to go quiet
    recover_s: float = 5.0           # a server that stopped answering: wait this long for it
    quiet_s: float = 30.0            # after the last probe: wait for the tree to use < 5% of a core
    cpus_quiet_s: float = 15.0       # after the stop: wait for its CPUs to be < 10% busy
    settle_window_s: float = 0.3     # quiet after a probe: < 10% of a core over this long
    quiet_window_s: float = 1.0      # quiet after the last probe, and its CPUs after the stop
    idle_connections: int = 1000
    idle_open_s: float = 2.0         # time allowed to open the idle connections
    slow_extra: int = 3              # slow clients = WORKERS + this ...
    slow_max: int = 64               # ... but never more than this
    slow_interval_s: float = 0.1     # a slow client sends one byte this often
    normal_requests: int = 5         # normal requests sent beside the slow clients
    cpu_budget_s: float = 2.0        # 1 MiB of headers: stop sending once the server spent this
    unread_max: int = 16 << 10       # ... and never let it have more than this unread

    @classmethod
    def parse(cls, o: Obj) -> Limits:
        out: dict[str, Any] = {}
        for f in fields(cls):
            value = o.opt_int(f.name) if f.type in ("int", int) else o.opt_num(f.name)
            if value is not None:
                out[f.name] = value
        return cls(**out)


@dataclass(frozen=True)
class ProbeResult:
    probe: str                   # the probe's name (lab.measure.probe.probes.PROBES)
    title: str
    ran: bool                    # False: skipped, the server had stopped answering
    outcome: str                 # what the server did, in a few words
    cpu_s: float                 # server tree CPU from the probe's start until it settled
    elapsed_s: float             # the probe itself (not the settling, not the check)
    settled_s: float | None      # after the probe, until its CPU went quiet; None: still busy
    answers_after: bool          # passed the contract right after this probe
    error_after: str = ""        # why not: breaches_after on one line
    recovered_s: float | None = None   # not answering after the previous probe: time until it did
    facts: Facts = field(default_factory=dict)
    breaches_after: tuple[Check, ...] = ()      # why not, typed

    @classmethod
    def parse(cls, o: Obj) -> ProbeResult:
        facts = o.raw_obj("facts")
        if not all(v is None or isinstance(v, (int, float, str)) for v in facts.values()):
            raise o.fail("facts", "an object of numbers and texts")
        name = o.text("probe")
        return cls(probe=name, title=o.text("title") or name or "?", ran=o.flag("ran"),
                   outcome=o.text("outcome"), cpu_s=o.opt_num("cpu_s") or 0.0,
                   elapsed_s=o.opt_num("elapsed_s") or 0.0, settled_s=o.opt_num("settled_s"),
                   answers_after=o.flag("answers_after"), error_after=o.text("error_after"),
                   recovered_s=o.opt_num("recovered_s"), facts=dict(facts),
                   breaches_after=checks_of(o.data.get("breaches_after")))


@dataclass(frozen=True)
class ProbeOutcome:
    """What one server's probe came to. error: the instance could not be
    started or probed at all; stopped_after: the first probe after which the
    contract check failed; breaches: the final check's (older probe.json:
    final_error, their text, only). Its `text()` is the one place the verdict
    is written: the probe's own report, the pipeline's problem line and the
    run's summary all say it through it."""
    server: str
    still_answers: bool
    error: str = ""
    stopped_after: str | None = None
    breaches: tuple[Check, ...] = ()
    final_error: str = ""

    @property
    def kind(self) -> str:
        if self.error:
            return "unprobed"
        if self.still_answers:
            return "recovered" if self.stopped_after else "still-answers"
        return "stopped-answering"

    def why(self) -> str:
        """Why it does not answer: the final check's breaches, on one line."""
        broken = [c.text() for c in self.breaches if not c.ok]
        return " / ".join(broken) if broken else self.final_error

    def text(self) -> str:
        """One line for logs, the run's problems and its summary."""
        where = f" after {self.stopped_after}" if self.stopped_after else ""
        if self.kind == "unprobed":
            return f"{self.server}: probe failed: {self.error}"
        if self.kind == "recovered":
            return f"{self.server}: still answers (stopped answering{where} and recovered)"
        if self.kind == "still-answers":
            return f"{self.server}: still answers"
        return f"{self.server}: stopped answering{where}: {self.why()}"


@dataclass(frozen=True)
class ProbeReport:
    """One server's probe. `still_answers` is the verdict the pipeline uses:
    the contract passed in the final check, made after the last probe and
    after the server's CPU went quiet (allowing `Limits.recover_s` to
    recover). A server that stopped answering after some probe and came back
    still answers; `stopped_after` names the first probe it failed after."""
    server: str
    host: str
    port: int
    workers: int
    limits: Limits
    results: tuple[ProbeResult, ...] = ()
    final_ok: bool = False
    final_error: str = ""                # final_breaches on one line
    quiet_s: float | None = None         # after the last probe: tree < 5% of a core, one window
    cpus_quiet_s: float | None = None    # after the stop (probe_server): CPUs < 10% busy, one window
    elapsed_s: float = 0.0               # the probe (run_probe) from first probe to final check
    error: str = ""                      # the instance could not be started or probed at all
    final_breaches: tuple[Check, ...] = ()   # the final check's, typed

    @property
    def still_answers(self) -> bool:
        return not self.error and self.final_ok

    @property
    def stopped_after(self) -> str | None:
        """The first probe after which the contract check failed."""
        return next((r.probe for r in self.results if r.ran and not r.answers_after), None)

    @property
    def cpu_s(self) -> float:
        return sum(r.cpu_s for r in self.results)

    def outcome(self) -> ProbeOutcome:
        return ProbeOutcome(server=self.server, still_answers=self.still_answers,
                            error=self.error, stopped_after=self.stopped_after,
                            breaches=self.final_breaches, final_error=self.final_error)

    def verdict(self) -> str:
        """One line for logs and the run summary (ProbeOutcome.text)."""
        return self.outcome().text()

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data.update(still_answers=self.still_answers, stopped_after=self.stopped_after,
                    cpu_s=round(self.cpu_s, 3), kind=self.outcome().kind,
                    verdict=self.verdict())
        return data

    @classmethod
    def parse(cls, o: Obj, server: str = "") -> ProbeReport:
        results = tuple(ProbeResult.parse(Obj(r, o.path, f"results[{i}]"))
                        for i, r in enumerate(o.items("results")))
        # a file of this lab's first probes kept only still_answers, not final_ok
        final_ok = o.flag("final_ok") if "final_ok" in o.data else o.flag("still_answers")
        return cls(server=o.text("server") or server, host=o.text("host"),
                   port=o.integer("port", 0), workers=o.integer("workers", 0),
                   limits=Limits.parse(o.obj("limits")), results=results, final_ok=final_ok,
                   final_error=o.text("final_error"), quiet_s=o.opt_num("quiet_s"),
                   cpus_quiet_s=o.opt_num("cpus_quiet_s"),
                   elapsed_s=o.opt_num("elapsed_s") or 0.0, error=o.text("error"),
                   final_breaches=checks_of(o.data.get("final_breaches")))


def read_probe(path: Path) -> ProbeReport:
    """A probe.json read back, typed; RecordError names what is wrong."""
    return ProbeReport.parse(Obj(read_json(path), path, ""), path.parent.name)


def probe_files(run: Path) -> dict[str, ProbeReport | str]:
    """Each server's <server>/probe.json (the robustness probe): its report,
    or why it cannot be read. A bad one is shown as such, never fatal."""
    out: dict[str, ProbeReport | str] = {}
    for path in sorted(run.glob(f"*/{PROBE}")):
        try:
            out[path.parent.name] = read_probe(path)
        except RecordError as e:
            out[path.parent.name] = e.problem
    return out
