"""What failed, seen from the server's side: the kernel's failure kinds
(lab.record.tcpkinds) of one server over the levels where requests failed
(or its listen queue dropped connections), each with its count, its levels
and how it compares with the client's count, which it is never added to.
Facts only: lab.present.failedwords says them."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from lab.analyse.metrics import LevelStats
from lab.record import tcpkinds
from lab.record.tcpkinds import BY_KEY, KINDS, Seen

# how a kind's count compares with the client's failed requests at its levels
NONE, EQUAL, WITHIN, DIFFER = "", "equal", "within", "differ"


@dataclass(frozen=True)
class KernelSeen:
    """One kind the server's kernel counted over the levels where requests
    failed: its count, the levels (values) and counters it stands on, whose
    count it is, and the client's count there beside it (never added).
    compare: NONE (not a failure kind: segments), EQUAL, WITHIN (above the
    client's by no more than the connections open at each level: `most` the
    most at a level) or DIFFER. workers: the workers the server ran with and
    what it does past them, where this reset kind is seen only above them
    (given once, at the first such kind)."""
    kind: str
    count: int
    values: tuple[int, ...]
    counters: dict[str, int] = field(default_factory=dict)
    own_netns: bool = True               # read in the server's own namespace
    server_alone: bool = True            # the count is the server's alone
    failed: int = 0
    compare: str = NONE
    most: int = 0
    workers: tuple[int, str] | None = None


def seen(levels: list[LevelStats], workers: tuple[int, str] | None = None,
         open_at: Callable[[int], int] | None = None) -> tuple[KernelSeen, ...]:
    """A fact per kind the kernel counted at the levels where requests failed
    or the listen queue dropped connections. `workers`: the workers the
    server ran with, and what it does past them (its manifest's `[workers]
    beyond`). `open_at`: the connections open at a level (its value on the
    concurrency axis), within which a kernel's count above the client's
    still matches it."""
    by_kind: dict[str, list[tuple[LevelStats, Seen]]] = {}
    netns = set()
    for s in levels:
        if s.tcp is None:
            continue
        found = tcpkinds.kinds(s.tcp)
        if not s.failed and not any(x.kind == "listen" for x in found):
            continue
        netns.add(s.tcp.netns)
        for x in found:
            by_kind.setdefault(x.kind, []).append((s, x))
    out = []
    for kind in (k for k in KINDS if k.key in by_kind):
        got = by_kind[kind.key]
        count = sum(x.count for _, x in got)
        counters: dict[str, int] = {}
        for _, x in got:
            for c, n in x.counters.items():
                counters[c] = counters.get(c, 0) + n
        alone = all(x.server_alone for _, x in got)
        failed = sum(s.failed for s, _ in got)
        most = 0
        if not kind.failure:            # segments: no failed request
            compare = NONE
        elif count == failed:
            compare = EQUAL
        elif open_at and all(0 <= x.count - s.failed <= open_at(s.value) for s, x in got):
            compare, most = WITHIN, max(x.count - s.failed for s, x in got)
        else:
            compare = DIFFER
        values = tuple(s.value for s, _ in got)
        why = None
        if workers and kind.key in ("unread", "aborted", "resets") and \
                min(values) > workers[0] and workers[1]:     # said once, at the first
            why, workers = workers, None
        out.append(KernelSeen(kind.key, count, values, counters, netns == {"server"}, alone,
                              failed, compare, most, why))
    return tuple(out)


def level_json(d: tcpkinds.TcpDelta | None) -> dict[str, object] | None:
    """A level's `tcp` in results.json: where the counters were read, their
    growth, and the kinds they make."""
    if d is None:
        return None
    return {"netns": d.netns, "counters": d.counters,
            "kinds": [{"kind": x.kind, "label": BY_KEY[x.kind].label, "count": x.count,
                       "server_alone": x.server_alone} for x in tcpkinds.kinds(d)]}
