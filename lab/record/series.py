"""Per-second series of one level: the client's req/s, the server's CPU and RSS.

One CSV per measured level, `<server>/series-<tag>.csv` (`series_file`: the tag
of its client output, e.g. rep1-c8), columns
`second,rps,server_cpu_pct,rss_kb,accept_queue`:
second n covers [n, n+1) s from the start of the level. `rps` is empty when
the client gives no per-second figure: vegeta does (its report every second,
lab.measure.clients.vegeta), wrk does not (a Lua response() hook costs wrk too much
req/s, see docs/methodology.md) and siege does not (not available from
siege). The server's figures come from the sweep's sampler (lab.host.procfs),
every 0.2 s, cut into 1 s bins; `accept_queue` is the highest accept queue
of the server's listening socket the second's samples saw (lab.host.acceptq;
empty where it was not read).

Pure functions: what measures a run writes these files, what reads one
(lab.present.plot) reads them; neither side's modules are imported here.
"""
from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from pathlib import Path

from lab.record import csvfile
from lab.record.files import RecordError, read_text

# <server>/series-<tag>.csv: one measured level's per-second series, the tag of
# the level's client output (rep1-c8, rep2-r500)
PREFIX = "series-"
HEADER = ("second", "rps", "server_cpu_pct", "rss_kb", "accept_queue")

Point = tuple[float, float, int]          # (monotonic s, tree CPU s so far, RSS kB)


def server_per_second(points: list[Point]) -> list[tuple[float, int]]:
    """(CPU % of one core, RSS kB at the bin's end) for each second covered
    by the samples, from the first one; a last part-second counts when it
    lasted at least 0.5 s (a level's end rarely falls on a whole second)."""
    if len(points) < 2:
        return []
    t0 = points[0][0]
    out: list[tuple[float, int]] = []
    start = points[0]
    for p in points[1:]:
        if p[0] - t0 >= len(out) + 1:       # this sample closes the bin
            span = p[0] - start[0]
            out.append((round(100 * (p[1] - start[1]) / span, 1) if span > 0 else 0.0, p[2]))
            start = p
    last = points[-1]
    span = last[0] - start[0]
    if span >= 0.5:                          # a last part-second of at least half of one
        out.append((round(100 * (last[1] - start[1]) / span, 1), last[2]))
    return out


def queue_per_second(points: list[Point], queue: list[tuple[float, int]],
                     seconds: int) -> list[int | None]:
    """The highest accept queue (lab.host.acceptq) of each of `seconds` bins,
    the bins of server_per_second (from the first sample; what falls past the
    last one counts in it); None for a second without a reading."""
    if not points or not seconds:
        return []
    t0 = points[0][0]
    out: list[int | None] = [None] * seconds
    for at, waiting in queue:
        i = min(max(int(at - t0), 0), seconds - 1)
        got = out[i]
        out[i] = waiting if got is None else max(got, waiting)
    return out


def longest_gap(points: list[Point]) -> float:
    """The longest time between two consecutive samples (0.0 with fewer than
    two): the sampler takes one every 0.2 s, so a gap of seconds means the
    lab itself was stopped or starved while the level ran."""
    return max((b[0] - a[0] for a, b in zip(points, points[1:])), default=0.0)


def _when(stamp: str) -> float:
    """vegeta's RFC 3339 time (nanoseconds, Z) as POSIX seconds."""
    head, _, frac = stamp.rstrip("Z").partition(".")
    base = datetime.fromisoformat(head + "+00:00").timestamp()
    return base + (float("0." + frac) if frac else 0.0)


def vegeta_per_second(stdout: str) -> list[float]:
    """Responses per second from `vegeta report -every=1s`'s running reports
    (cumulative: requests, status 0 = no response, `latest` = the last
    request's time): the difference of consecutive reports over the time
    between their `latest`."""
    reports = []
    for line in stdout.splitlines():
        start = line.find("{")
        if start < 0:
            continue
        try:
            data = json.loads(line[start:])
            answered = int(data["requests"]) - int(data["status_codes"].get("0", 0))
            reports.append((_when(str(data["latest"])), answered, _when(str(data["earliest"]))))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    out: list[float] = []
    prev_t, prev_n = (reports[0][2], 0) if reports else (0.0, 0)
    for t, n, _ in reports:
        if t - prev_t >= 0.5 and n >= prev_n:   # the last report repeats the one before
            out.append(round((n - prev_n) / (t - prev_t), 1))
            prev_t, prev_n = t, n
    return out


def write(path: Path, rps: list[float] | None, server: list[tuple[float, int]],
          root: Path | None = None, queue: list[int | None] | None = None) -> None:
    """The series file, never written through a link (lab.record.files);
    `queue`: each second's highest accept queue (empty where unread)."""
    n = max(len(rps or []), len(server))

    def second(i: int) -> list[object]:
        cpu, rss = server[i] if i < len(server) else (None, None)
        return [i, rps[i] if rps is not None and i < len(rps) else None, cpu, rss,
                queue[i] if queue is not None and i < len(queue) else None]
    csvfile.write(path, HEADER, (second(i) for i in range(n)), root)


Row = tuple[int, float | None, float | None, int | None]


def read(path: Path) -> list[Row]:
    """A series file's rows (None: no figure that second)."""
    def num(x: str) -> float | None:
        return float(x) if x.strip() else None
    rows: list[Row] = []
    try:
        for d in csv.DictReader(io.StringIO(read_text(path), newline="")):
            rss = num(d.get("rss_kb") or "")
            rows.append((int(d["second"]), num(d.get("rps") or ""),
                         num(d.get("server_cpu_pct") or ""), None if rss is None else int(rss)))
    except (ValueError, KeyError, TypeError, csv.Error) as e:
        if isinstance(e, RecordError):
            raise
        raise RecordError(path, f"is not a series file the lab wrote ({e})") from None
    return rows


def files(server_folder: Path) -> list[Path]:
    """The series files of a server, measured levels in the order they ran
    (rep, then level as the tags sort by their number)."""
    def number(text: str) -> int:
        digits = "".join(c for c in text if c.isdigit())
        return int(digits) if digits else 0

    def key(p: Path) -> tuple[int, int, str]:
        rep, _, level = p.stem[len(PREFIX):].partition("-")
        return number(rep), number(level), level
    return sorted(server_folder.glob(PREFIX + "*.csv"), key=key)


def series_file(run: Path, server: str, tag: str) -> Path:
    """<run>/<server>/series-<tag>.csv."""
    return run / server / f"{PREFIX}{tag}.csv"
