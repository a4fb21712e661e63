"""What a load client measured at one level: the one type every client's
output becomes (lab.measure.clients), the sweep records (results.csv) and the
analysis reads (lab.analyse.levelrow, lab.analyse.metrics)."""
from __future__ import annotations

from dataclasses import dataclass

from lab.record.failures import Failure


@dataclass(frozen=True)
class Level:
    """What the client measured at one level: any swept point (a concurrency,
    an offered rate, a knob's value; Params.concurrencies are CONCURRENCY's)."""
    transactions: int      # responses received, successful or not
    successful: int        # 2xx/3xx responses
    failed: int            # socket errors, timeouts and non-2xx/3xx responses
    availability_pct: float
    elapsed_s: float
    rate_rps: float        # responses per second (achieved throughput)
    resp_ms: float         # mean response time
    in_flight: float       # mean requests in flight (rate x mean response time)
    longest_ms: float
    data_mb: float
    p50_ms: float | None = None     # latency percentiles, where the client gives them
    p90_ms: float | None = None
    p99_ms: float | None = None
    offered_rps: float | None = None   # open loop: the rate it was asked to offer
    # what failed, and how (lab.record.failures): counts summing to `failed`, the client's words
    failures: tuple[Failure, ...] = ()
    # why the client ended before the level's length ("" : it ran its length):
    # lab.analyse.levelrow.ran_short, from the client's own elapsed time and words
    stopped: str = ""
    # what data_mb counts, for the check of the answers' size (lab.analyse.answers):
    # "wire" (every byte read, heads and bodies: wrk), "body" (bodies: siege,
    # vegeta) or "" (nothing that can be checked)
    counted: str = ""
    counted_slack: float = 0.0       # bytes data_mb may be off by, either way (rounding)
    counted_partial: bool = False    # it counts the part read of the answers in flight at the
                                     # end (at most one a connection)
    # several client hosts: where p50/p90/p99 come from: "exact" (the hosts'
    # whole distributions merged, lab.record.histogram) or "bound" (the worst
    # host's, an upper bound); "" for one client's own figures
    percentiles: str = ""


@dataclass(frozen=True)
class Answers:
    """What a client checked itself in a check slice (lab.measure.clients.Checks):
    how many answers, how many of the successful (2xx/3xx) ones were not the
    contract's (status 200 and the exact body; the others are failures), and
    the first wrong one as received ("" : none)."""
    checked: int
    wrong: int
    example: str = ""
