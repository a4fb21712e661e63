"""What failed, seen from the server's side: the kernel's TCP counters over a
level (lab.host.tcpstat) as failure kinds, beside the client's own
(lab.record.failures).

A level's record (results.csv `tcp_counters`) is each counter's growth over
the client run and where it was read: `server`, the server's own network
namespace (TOPOLOGY=netns, a container, an ssh server host no client shares),
where every count is the server's side; or `shared`, the namespace the server
shares with its clients (loopback on one host), where only the listen queue's
counters are the server's alone and the others count both ends (and any other
process there). The kinds are derived from the counters, never stored.

A connection can show in several kinds (an abort is also a reset sent and an
established connection reset), and a kind counts connections or segments,
not requests: the kinds are never added together, nor to the client's count.
Facts only: each kind's mechanism in words is lab.present.failedwords'.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from lab.host.tcpstat import COUNTERS
from lab.record.files import RecordError

# where the counters were read: the server's own network namespace, or the one
# it shares with its clients (both ends counted, but for the listen queue)
NETNS = ("server", "shared")


@dataclass(frozen=True)
class TcpDelta:
    """The kernel's TCP counters' growth over one level (or the sum over its
    repetitions), and where they were read: one of NETNS."""
    netns: str
    counters: dict[str, int] = field(default_factory=dict)


def measured(before: dict[str, int] | None, after: dict[str, int] | None,
             shared: bool) -> TcpDelta | None:
    """Two reads of one namespace around a level; None when either is missing
    or a counter shrank (not the same namespace)."""
    if before is None or after is None:
        return None
    grown = {c: after[c] - before[c] for c in COUNTERS if c in before and c in after}
    if len(grown) < len(COUNTERS) or min(grown.values()) < 0:
        return None
    return TcpDelta("shared" if shared else "server", grown)


def encode(d: TcpDelta | None) -> str | None:
    """The results.csv cell: {"netns": ..., counter: growth, ...}; None: not read."""
    if d is None:
        return None
    return json.dumps({"netns": d.netns, **d.counters}, separators=(",", ":"))


def decode(text: str | None, path: Path) -> TcpDelta | None:
    """The cell back; RecordError (naming `path`) when it is not encode's."""
    if not text:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    ok = isinstance(data, dict) and data.get("netns") in NETNS and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0
        for k, v in data.items() if k != "netns")
    if not ok:
        raise RecordError(path, f"`tcp_counters` is {text[:80]!r}, not an object of "
                                "netns (server or shared) and counters' growth")
    return TcpDelta(str(data.pop("netns")), {str(k): int(v) for k, v in data.items()})


def summed(deltas: Iterable[TcpDelta | None]) -> TcpDelta | None:
    """One level over its repetitions: each counter summed; `shared` when any
    repetition's was. None when a repetition's were not read: the client's
    count of the level would cover requests the kernel's does not."""
    given = list(deltas)
    known = [d for d in given if d is not None]
    if not known or len(known) < len(given):
        return None
    total: dict[str, int] = {}
    for d in known:
        for c, n in d.counters.items():
            total[c] = total.get(c, 0) + n
    return TcpDelta("shared" if any(d.netns == "shared" for d in known) else "server", total)


@dataclass(frozen=True)
class Kind:
    """A failure kind the kernel tells: its short label, its counters and how
    they make its count."""
    key: str
    label: str
    counters: tuple[str, ...]
    count_of: Callable[[list[int]], int]
    server_alone: bool = False        # the server's even in a shared namespace
    failure: bool = True              # False: a count of segments, never a failed request


def _first(values: list[int]) -> int:
    return values[0]


KINDS: tuple[Kind, ...] = (
    Kind("listen", "connections dropped by a full listen queue",
         ("TcpExtListenDrops", "TcpExtListenOverflows"), max, server_alone=True),
    Kind("unread", "connections closed with the request unread",
         ("TcpExtTCPAbortOnClose",), _first),
    Kind("aborted", "connections aborted", ("TcpExtTCPAbortOnData",), _first),
    Kind("resets", "resets sent", ("TcpOutRsts",), _first),
    Kind("failed", "connections failed or reset", ("TcpAttemptFails", "TcpEstabResets"), sum),
    Kind("retrans", "segments retransmitted", ("TcpRetransSegs", "TcpExtTCPTimeouts"), _first,
         failure=False),
)
BY_KEY = {k.key: k for k in KINDS}


@dataclass(frozen=True)
class Seen:
    """One kind at one level (or over levels): its count, the counters it
    stands on, and whether the count is the server's alone."""
    kind: str
    count: int
    counters: dict[str, int]
    server_alone: bool


def kinds(d: TcpDelta) -> list[Seen]:
    """The kinds whose count grew, in KINDS' order."""
    out = []
    for k in KINDS:
        values = [d.counters.get(c, 0) for c in k.counters]
        n = k.count_of(values)
        if n:
            out.append(Seen(k.key, n, {c: v for c, v in zip(k.counters, values) if v},
                            k.server_alone or d.netns == "server"))
    return out
