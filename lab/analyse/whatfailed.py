"""What failed at a server's levels, as facts: each level where a request
failed (its counts, kinds and the client's own words), each level whose
answers during the load were wrong, and the kernel's kinds from the
server's side (lab.analyse.serverside). No sentences: lab.present.failedwords
is the one builder of "What failed" for summary.md, report.html and
results.json."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lab.analyse import metrics, serverside
from lab.analyse.metrics import LevelStats
from lab.analyse.serverside import KernelSeen
from lab.record.failures import Failure


@dataclass(frozen=True)
class LevelFailed:
    """Requests failed at one level, over its repetitions. failures: by kind
    with the client's words (empty: not recorded, a run before the lab kept
    them); worst_pct: the worst repetition's share failed; unranked: that
    share is above metrics.FAILED_SHARE_PCT, so the level's req/s is not
    ranked."""
    value: int
    failed: int
    attempts: int
    by_rep: tuple[int, ...]          # each repetition's, when there were several
    failures: tuple[Failure, ...]
    worst_pct: float
    unranked: bool


@dataclass(frozen=True)
class WrongLevel:
    """A level whose answers during the load were wrong (flag wrong-answers:
    requests the client counted as successful), with its reasons (the row's
    `unranked`)."""
    value: int
    why: tuple[str, ...]


@dataclass(frozen=True)
class ServerFailed:
    """What failed at one server's levels. values: all its levels, in run
    order (to say consecutive ones as a range)."""
    server: str
    axis: str
    values: tuple[int, ...]
    levels: tuple[LevelFailed, ...]
    wrong: tuple[WrongLevel, ...]
    kernel: tuple[KernelSeen, ...]

    def __bool__(self) -> bool:
        return bool(self.levels or self.wrong or self.kernel)


def of_server(name: str, axis: str, levels: list[LevelStats],
              workers: tuple[int, str] | None = None) -> ServerFailed:
    """The facts of one server's levels; false when nothing failed.
    `workers`: the workers it ran with and what it does past them, where
    requests failed above them (analysis.few_workers)."""
    failed = tuple(LevelFailed(s.value, s.failed, s.attempts,
                               s.failed_by_rep if s.rate.n > 1 else (), tuple(s.failures),
                               s.failed_pct, s.failed_pct > metrics.FAILED_SHARE_PCT)
                   for s in levels if s.failed)
    wrong = tuple(WrongLevel(s.value, tuple(s.unranked)) for s in levels
                  if s.flags.get("wrong-answers"))
    open_at: Callable[[int], int] | None = (lambda v: v) if axis == "concurrency" else None
    return ServerFailed(name, axis, tuple(s.value for s in levels), failed, wrong,
                        serverside.seen(levels, workers, open_at))
