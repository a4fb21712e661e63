"""What failed, seen from the server's side: the kernel's failure kinds
(lab.record.tcpkinds) of one server over the levels where requests failed
(or its listen queue dropped connections), each with its count, its levels
and its mechanism, beside the client's count, which it never adds to."""
from __future__ import annotations

from collections.abc import Callable

from lab.analyse.metrics import LevelStats
from lab.record import tcpkinds
from lab.record.tcpkinds import BY_KEY, KINDS, Seen


def levels_said(values: list[int], at: Callable[[int], str], every: list[int]) -> str:
    """'c=30–50' for a run of consecutive swept levels, else 'c=3, c=8'."""
    if len(values) > 2 and every[every.index(values[0]):every.index(values[-1]) + 1] == values:
        return f"{at(values[0])}–{at(values[-1]).split('=', 1)[-1]}"
    return ", ".join(at(v) for v in values)


def lines(name: str, levels: list[LevelStats], at: Callable[[int], str],
          workers: tuple[int, str] | None = None,
          open_at: Callable[[int], int] | None = None) -> list[str]:
    """A line per kind the kernel counted at the levels where requests failed
    or the listen queue dropped connections, with its count, levels, counters
    and mechanism, and the client's count there beside it (never added):
    'aws, its kernel (own namespace): connections closed with the request
    unread: 1,020 at c=30–50 (TcpExtTCPAbortOnClose 1,020): <mechanism>; the
    client counted 1,028 failed requests there: the counts differ, ...'.
    `workers`: the workers the server ran with, and what it does past them
    (its manifest's `[workers] beyond`), said beside the kinds of a reset
    seen only above them. `open_at`: the connections open at a level (its
    value on the concurrency axis), within which a kernel's count above the
    client's still matches it."""
    every = [s.value for s in levels]
    by_kind: dict[str, list[tuple[LevelStats, Seen]]] = {}
    netns = set()
    for s in levels:
        if s.tcp is None:
            continue
        seen = tcpkinds.kinds(s.tcp)
        if not s.failed and not any(x.kind == "listen" for x in seen):
            continue
        netns.add(s.tcp.netns)
        for x in seen:
            by_kind.setdefault(x.kind, []).append((s, x))
    out = []
    for kind in (k for k in KINDS if k.key in by_kind):
        found = by_kind[kind.key]
        count = sum(x.count for _, x in found)
        counters: dict[str, int] = {}
        for _, x in found:
            for c, n in x.counters.items():
                counters[c] = counters.get(c, 0) + n
        alone = all(x.server_alone for _, x in found)
        where = ("own namespace" if netns == {"server"} else
                 "namespace shared with its clients: "
                 + ("the server's alone" if alone else "both ends' and any other process's"))
        failed = sum(s.failed for s, _ in found)
        if not kind.failure:            # its mechanism says it is no failed request
            compare = ""
        elif count == failed:
            compare = f"as many as the client's failed requests there ({failed:,})"
        elif open_at and all(0 <= x.count - s.failed <= open_at(s.value) for s, x in found):
            most = max(x.count - s.failed for s, x in found)
            compare = (f"the client counted {failed:,} failed requests there: {count - failed:,} "
                       f"fewer, at most {most:,} at a level, no more than the connections open "
                       "as it ended (a reset also answers what comes after a close as the client "
                       "stops): the counts match to within that, never added")
        else:
            compare = (f"the client counted {failed:,} failed requests there: the counts "
                       f"differ (a count of {'connections' if alone else 'both ends'}, not "
                       "of requests), never added")
        values = [s.value for s, _ in found]
        why = ""
        if workers and kind.key in ("unread", "aborted", "resets") and \
                min(values) > workers[0] and workers[1]:     # said once, at the first
            why = (f"; {name} had {workers[0]} worker{'s' * (workers[0] != 1)} there: "
                   f"{workers[1]}")
            workers = None
        said = ", ".join(f"{c} {n:,}" for c, n in counters.items())
        out.append(f"{name}, its kernel ({where}): {kind.label}: {count:,} at "
                   f"{levels_said(values, at, every)} ({said}): {kind.mechanism}{why}"
                   + (f"; {compare}" if compare else ""))
    return out


def level_json(d: tcpkinds.TcpDelta | None) -> dict[str, object] | None:
    """A level's `tcp` in results.json: where the counters were read, their
    growth, and the kinds they make."""
    if d is None:
        return None
    return {"netns": d.netns, "counters": d.counters,
            "kinds": [{"kind": x.kind, "label": BY_KEY[x.kind].label, "count": x.count,
                       "server_alone": x.server_alone} for x in tcpkinds.kinds(d)]}
