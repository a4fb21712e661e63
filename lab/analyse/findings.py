"""A run's warnings as typed values, each kind the one owner of its text.

Like hyperfine's `Warnings` enum, whose Display is the one place its words
are written: lab.analyse.analysis.warnings finds them (the figures), and the
summary (lab.present.report), the report page (lab.present.reportpage) and
results.json (analysis.to_json: `warnings`, the texts; `findings`, kind +
figures + text) all render the same values through `text()`. A warning says
what was seen, then what to do. "Finding" is only the type's name: a finding
and a warning are one thing (docs/glossary.md).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from lab.analyse import metrics, policy


@dataclass(frozen=True)
class Finding(ABC):
    """One warning: its kind (a short stable name for tools) and its figures."""
    kind: ClassVar[str]

    @abstractmethod
    def text(self) -> str:
        """What happened and what to do, as one sentence or two."""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **asdict(self), "text": self.text()}


@dataclass(frozen=True)
class AtLevels(Finding):
    """A warning about some levels of one server: `count` of its `n_levels`."""
    server: str
    count: int                  # levels flagged
    n_levels: int               # levels of the server

    def of_levels(self) -> str:
        """Says "2 of 5 levels"."""
        return f"{self.count} of {self.n_levels} levels"


NOT_CONTRACT = "they count answers not the contract's"


@dataclass(frozen=True)
class WithReasons(AtLevels):
    """The flagged levels' reasons, each "c=8: ...", said in the text."""
    why: tuple[str, ...]

    def unranked(self, what: str, then: str) -> str:
        """'<server>: <what> at N of M levels (<reasons>): not ranked, <then>', the
        text of every kind that takes levels out of ranking."""
        return (f"{self.server}: {what} at {self.of_levels()} ({'; '.join(self.why)}): "
                f"not ranked, {then}")


@dataclass(frozen=True)
class RunNotComplete(Finding):
    kind: ClassVar[str] = "run-not-complete"
    status: str
    problems: tuple[str, ...]

    def text(self) -> str:
        return (f"This run is {self.status}: " +
                ("; ".join(self.problems) or "not every server finished") + ".")


@dataclass(frozen=True)
class LaterProblems(Finding):
    """A later step's problems (make profile): the run's figures stand."""
    kind: ClassVar[str] = "later-problems"
    problems: tuple[str, ...]

    def text(self) -> str:
        return ("Problems recorded after the run (its figures are complete): " +
                "; ".join(self.problems) + ".")


@dataclass(frozen=True)
class ClientBound(AtLevels):
    kind: ClassVar[str] = "client-bound"
    tool: str

    def text(self) -> str:
        return (f"{self.tool} used at least {metrics.CLIENT_BOUND_PCT:.0f}% of its CPU at "
                f"{self.of_levels()} of {self.server}: those points measure "
                f"{self.tool}, not {self.server}. Give it more CPUs (CLIENT_CPUS), use "
                "KEEPALIVE=1, or CLIENT=wrk.")


@dataclass(frozen=True)
class Noisy(AtLevels):
    kind: ClassVar[str] = "noisy"
    repeat: int
    worst_ratio: float          # max/min of req/s over the repetitions, at the worst level
    worst_value: int
    unit: str = "repetitions"   # or "start pairs" (a paired run)

    def text(self) -> str:
        said = (f"{self.server}: {self.of_levels()} spread more than "
                f"{metrics.NOISY_SPREAD - 1:.0%} across {self.repeat} {self.unit} (worst: "
                f"{self.worst_ratio - 1:.0%} at {self.worst_value}).")
        if self.unit != "repetitions":          # the pairs' verdicts stand on the ratios
            return (f"{said} Both sides of each pair moved alike: the verdicts stand on "
                    "each pair's ratio.")
        return (f"{said} Consider more repetitions (REPEAT), a longer DURATION, or a "
                "quieter machine.")


@dataclass(frozen=True)
class LittlesLaw(AtLevels):
    kind: ClassVar[str] = "littles-law"

    def text(self) -> str:
        return (f"{self.server}: at {self.of_levels()} the requests in flight were not the "
                f"concurrency (Little's law, {metrics.LITTLES_LOW}-{metrics.LITTLES_HIGH}): "
                "client-side queueing, errors or timeouts, or, with wrk, its latency "
                "corrected for coordinated omission after stalls? Check the failures and the "
                "client's CPU (docs/methodology.md#numbers-you-can-trust).")


@dataclass(frozen=True)
class Saturated(AtLevels):
    kind: ClassVar[str] = "saturated"

    def text(self) -> str:
        return (f"{self.server}: at {self.count} of {self.n_levels} offered rates the achieved "
                f"rate fell more than {metrics.SATURATED_SHORTFALL:.0%} short: past its "
                "saturation point; latency there is queueing.")


@dataclass(frozen=True)
class NotSteady(Finding):
    kind: ClassVar[str] = "not-steady"
    server: str

    def text(self) -> str:
        return (f"{self.server}: the warm-up found no steady state within WARMUP_MAX (its "
                "class in summary.md's Warm-up); its figures may still be moving. Raise "
                "WARMUP_MAX or use a fixed WARMUP; under PAIRED=duet both sides are measured "
                "at the same age.")


@dataclass(frozen=True)
class HostBusy(AtLevels):
    kind: ClassVar[str] = "host-busy"

    def text(self) -> str:
        return (f"{self.of_levels()} of {self.server} ran while other "
                f"processes took more than {metrics.HOST_BUSY_PCT:.0f}% of the lab's "
                "CPUs: those figures are not the server's alone. Rerun on a quiet host.")


@dataclass(frozen=True)
class Neighbour(AtLevels):
    """Levels measured beside the lab's own noisy neighbour (NEIGHBOUR), on purpose."""
    kind: ClassVar[str] = "neighbour"
    per_cpu: int                      # NEIGHBOUR: its processes per CPU (0: not recorded)

    def text(self) -> str:
        given = f"NEIGHBOUR={self.per_cpu}" if self.per_cpu else "NEIGHBOUR"
        return (f"{self.of_levels()} of {self.server} ran beside the lab's noisy neighbour "
                f"({given}, on purpose): this host's noise, not the server alone. "
                "Run without NEIGHBOUR to measure the servers.")


@dataclass(frozen=True)
class Steal(AtLevels):
    kind: ClassVar[str] = "steal"

    def text(self) -> str:
        return (f"{self.of_levels()} of {self.server} lost more than "
                f"{metrics.STEAL_PCT:.0f}% of the lab's CPU time to the hypervisor "
                "(steal): on a shared VM, figures vary from run to run; repeat, or "
                "compare runs on a dedicated host.")


@dataclass(frozen=True)
class ClientStopped(WithReasons):
    """The client ended levels before their length (Siege after 1,024 failures)."""
    kind: ClassVar[str] = "client-stopped"
    tool: str

    def text(self) -> str:
        return self.unranked(
            f"{self.tool} stopped early", "their rate is not the server's. For Siege: fewer "
            "failures (more workers, KEEPALIVE=0) or CLIENT=wrk.")


@dataclass(frozen=True)
class ClientStalled(WithReasons):
    """The client was stopped mid-level (SIGSTOP, a tracer), or ran past its own
    clock: its rate counts time it sent nothing (lab.analyse.levelrow.stalled)."""
    kind: ClassVar[str] = "client-stalled"
    tool: str

    def text(self) -> str:
        return self.unranked(
            f"{self.tool} stalled", f"their rate counts time {self.tool} sent nothing "
            "(stopped or starved). Measure again on a quiet host.")


@dataclass(frozen=True)
class SamplerGap(AtLevels):
    """The lab's sampler of the server took no sample for a while mid-level:
    the lab itself was stopped or starved (lab.analyse.levelrow.sampler_gap)."""
    kind: ClassVar[str] = "sampler-gap"

    def text(self) -> str:
        return (f"{self.of_levels()} of {self.server} had a gap of over "
                f"{metrics.STALL_MIN_S:g} s in the lab's own sampling (the lab was stopped or "
                "starved): their req/s is not ranked. Do not suspend the lab mid-run; rerun on "
                "a quiet host.")


@dataclass(frozen=True)
class AcceptQueueFull(AtLevels):
    """The server's accept queue sat at its backlog (lab.host.acceptq): a
    property of the server at that load, ranked as measured."""
    kind: ClassVar[str] = "accept-queue-full"
    at: tuple[str, ...]               # the flagged levels, "c=16" each

    def text(self) -> str:
        return (f"{self.server}'s accept queue sat at its backlog at {', '.join(self.at)} "
                f"({self.of_levels()}): the kernel dropped connections it could not queue. "
                "Ranked as measured; a backlog too small or a server too slow? Sweep "
                "AXIS=backlog.")


@dataclass(frozen=True)
class AnswerChanged(WithReasons):
    """The server's answer broke the contract after the load had started."""
    kind: ClassVar[str] = "answer-changed"

    def text(self) -> str:
        return self.unranked(
            "its answer changed during the load", f"{NOT_CONTRACT}. Fix the server; its "
            "log is in the run folder.")


@dataclass(frozen=True)
class WrongAnswers(WithReasons):
    """Answers during the load that were not the verified answer
    (lab.analyse.answers); `wrong_after`: of these levels, those whose answer
    checked after the level was wrong too (answer-changed)."""
    kind: ClassVar[str] = "wrong-answers"
    wrong_after: int = 0

    def text(self) -> str:
        if not self.wrong_after:
            checks = "when the server started and after each of these levels was right"
        else:
            after = "these levels" if self.wrong_after == self.count else \
                f"{self.wrong_after} of these levels"
            checks = f"when the server started was right, but after {after} it was wrong too"
        return self.unranked(
            "wrong answers during the load", f"{NOT_CONTRACT}; the answer checked {checks}. "
            "Fix the server; its log is in the run folder.")


@dataclass(frozen=True)
class PortShared(WithReasons):
    """Another process held the server's port during levels (two runs on one PORT)."""
    kind: ClassVar[str] = "port-shared"

    def text(self) -> str:
        return self.unranked(
            "another process held its port", "the client may have loaded that process. "
            "Measure again with the port to itself (another PORT).")


@dataclass(frozen=True)
class Failures(AtLevels):
    """count: the levels where a request failed."""
    kind: ClassVar[str] = "failures"
    tool: str
    failed: int                 # requests, over the levels and repetitions
    attempts: int
    kinds: tuple[str, ...]      # lab.record.failures.by_kind's keys; (): not recorded

    def text(self) -> str:
        how = (f"kinds: {', '.join(self.kinds)}" if self.kinds else
               "how is not recorded: an older run")
        return (f"{self.server}: {self.failed:,} of {self.attempts:,} requests failed at "
                f"{self.of_levels()} ({how}). \"What failed\" says how, level by level; "
                f"{self.tool}'s output is in {self.server}/ in the run folder.")


@dataclass(frozen=True)
class FewWorkers(Finding):
    """Requests failed at a concurrency above the workers the server ran with."""
    kind: ClassVar[str] = "few-workers"
    server: str
    workers: int
    detail: str                 # where the count comes from: WORKERS, or as shipped
    top: int                    # the highest concurrency where requests failed
    over: int                   # levels where requests failed above the workers
    beyond: str                 # what the server does with the others ("" : not known)

    def note(self) -> str:
        """The sentence without its full stop (analysis.workers_note)."""
        what = self.beyond or "what it does with the others is in its client's failures above"
        where = f"{self.over} level{'s' * (self.over != 1)}"
        return (f"{self.server} has {self.workers} workers ({self.detail}) for up to "
                f"{self.top} connections at the {where} where requests failed above "
                f"{self.workers}; {what}: use {self.server}@{self.top} (or WORKERS) to give "
                "it one per connection")

    def text(self) -> str:
        """The warning: the workers and what to do; what the server does past them
        (`beyond`) is said once, under "What failed"."""
        where = f"{self.over} level{'s' * (self.over != 1)}"
        return (f"{self.server} has {self.workers} workers ({self.detail}) for up to "
                f"{self.top} connections; requests failed above {self.workers} at {where}: "
                f"use {self.server}@{self.top} (or WORKERS) to give it one per connection.")


@dataclass(frozen=True)
class ServerNote(Finding):
    """A note the server's record carries (a `make noise` alias, a setting ignored)."""
    kind: ClassVar[str] = "server-note"
    server: str
    note: str

    def text(self) -> str:
        return f"{self.server}: {self.note}."


@dataclass(frozen=True)
class FewRepetitions(Finding):
    kind: ClassVar[str] = "few-repetitions"
    repeat: int
    unit: str = "starts"        # or "pairs" (a paired run): the paired test's own minimum
    need: int = 0               # the starts (pairs) a side the run's family needs
                                # (verdicts.starts_needed); 0: one pair's at 1%
    alpha: float = policy.ALPHA  # the run's ALPHA
    pairs: int = 1              # the pairs of servers it is split over

    def text(self) -> str:
        from lab.analyse.decide import pct
        need = self.need or (metrics.MIN_PAIRS if self.unit == "pairs" else metrics.MIN_STARTS)
        each = f"α={pct(100 * self.alpha)}%" + (
            f" (split over {self.pairs} pairs: {pct(100 * self.alpha / self.pairs)}% each)"
            if self.pairs > 1 else "")
        if self.unit == "pairs":
            return (f"{self.repeat} start pairs cannot reach the verdicts' {each} (the exact "
                    f"paired test needs {need}): use REPEAT={need} or more (or REPEAT=auto "
                    f"with REPEAT_MIN={need}) for verdicts.")
        if self.repeat == 1:
            return ("One run per level ranks nothing on a noisy host: use "
                    f"REPEAT={need} or more (or REPEAT=auto) for verdicts.")
        return (f"{self.repeat} starts a server cannot reach the verdicts' {each} (an exact "
                f"test needs {need} a side): use REPEAT={need} or more (or REPEAT=auto) "
                "for verdicts.")


@dataclass(frozen=True)
class NoCgroups(Finding):
    """The lab's processes ran without cgroups of its own (the manifest's cgroups)."""
    kind: ClassVar[str] = "no-cgroups"
    why: str

    def text(self) -> str:
        return (f"The lab's processes had no cgroup of their own here ({self.why}): a "
                "process that left its group could outlive the run. Run as root on a host "
                "with cgroup v2 (docs/methodology.md).")


@dataclass(frozen=True)
class NoCalibration(Finding):
    kind: ClassVar[str] = "no-calibration"

    def text(self) -> str:
        return ("No calibration on record: run `make calibrate` once to see each "
                "server's rate as a share of what the client can drive here.")


@dataclass(frozen=True)
class BusyCalibration(Finding):
    """The calibration on record was saved on a busy host (make calibrate
    found no quiet moment): its capacities are the host's, not the client's."""
    kind: ClassVar[str] = "calibration-busy"
    busy_pct: float             # the most other processes took during it, % of the lab's CPUs

    def text(self) -> str:
        return (f"The calibration on record was made on a busy host (others took up to "
                f"{self.busy_pct:.0f}% of the lab's CPUs): the capacity shares below "
                "understate it. Run `make calibrate` again when nothing else runs.")


@dataclass(frozen=True)
class CalibrationUnused(Finding):
    kind: ClassVar[str] = "calibration-unused"
    why: str                    # analysis.calibration_mismatch

    def text(self) -> str:
        return f"The calibration on record is not used for this run: {self.why}."


@dataclass(frozen=True)
class AboveCapacity(Finding):
    """A server's peak above what its client drove against the ceiling."""
    kind: ClassVar[str] = "above-capacity"
    server: str
    tool: str
    value: int
    share: float
    why: str                    # analysis.above_why

    def text(self) -> str:
        return (f"{self.server} reached {self.share:.0%} of the calibrated capacity of "
                f"{self.tool} at c={self.value}: {self.why}.")


def texts(found: list[Finding]) -> list[str]:
    """results.json's `warnings`, the summary's and the page's lines."""
    return [f.text() for f in found]
