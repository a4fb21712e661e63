"""A load client's whole latency distribution for one level, in a form that
merges: the count of responses at each latency, in whole microseconds.

Several client hosts share a level (TOPOLOGY=ssh, CLIENT_HOST="a b"); each
one's distribution is kept in the run folder (`<client>-<level>.h<i>.hist`)
and the level's percentiles are those of their sum (`merge`): the
percentiles of every response of the level, as if one client had seen them
all. Adding counts loses nothing, so the merge is exact to the histogram's
resolution, 1 us: wrk's own (it records latencies as whole microseconds),
and within 1 us for a client that measures finer (vegeta, nanoseconds).

Percentiles follow wrk's rank rule (wrk's stats.c): the p-th percentile of
n samples is the smallest value whose running count reaches
round(p/100 * n + 0.5), so a single host's distribution gives wrk's own
figure back.

The file: a comment line saying whose distribution it is, then one
"<microseconds> <count>" line per value, rising.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lab.record import files
from lab.record.files import RecordError

UNIT_US = 1          # the histogram's resolution: one value per whole microsecond
HEAD = "# lab latency histogram"


@dataclass(frozen=True)
class Histogram:
    """(latency in us, how many responses took it), values distinct and rising."""
    pairs: tuple[tuple[int, int], ...]

    @staticmethod
    def of(counts: dict[int, int]) -> Histogram:
        for value, n in counts.items():
            if value < 0 or n < 0:
                raise ValueError(f"a negative latency or count: {value} us x {n}")
        return Histogram(tuple(sorted((v, n) for v, n in counts.items() if n)))

    @staticmethod
    def of_samples(samples: Iterable[int]) -> Histogram:
        return Histogram.of(Counter(samples))

    @property
    def count(self) -> int:
        return sum(n for _, n in self.pairs)

    def percentile(self, p: float) -> int | None:
        """The p-th percentile in us (wrk's rank rule); None without samples."""
        total = self.count
        if not total:
            return None
        wanted = min(max(rank(p, total), 1), total)
        running = 0
        for value, n in self.pairs:
            running += n
            if running >= wanted:
                return value
        return self.pairs[-1][0]

    def percentile_ms(self, p: float) -> float | None:
        us = self.percentile(p)
        return None if us is None else us * UNIT_US / 1000


def rank(p: float, n: int) -> int:
    """wrk's rank of the p-th percentile among n samples: C's round(), half
    away from zero, of p/100 * n + 0.5."""
    x = (p / 100.0) * n + 0.5
    return int(math.floor(x + 0.5))


def merge(histograms: Iterable[Histogram]) -> Histogram:
    """The distribution of every sample of every histogram: counts added."""
    counts: Counter[int] = Counter()
    for h in histograms:
        counts.update(dict(h.pairs))
    return Histogram.of(counts)


def from_line(text: str, marker: str) -> Histogram:
    """The last line of `text` that starts with `marker`, a JSON object
    {"complete": true, "values": [us, ...], "counts": [n, ...]} as a client's
    script writes it; ValueError saying why when there is none, it is broken,
    or the client wrote only part of it ("complete": false, "why")."""
    line = next((x for x in reversed(text.splitlines()) if x.startswith(marker)), None)
    if line is None:
        raise ValueError("the client wrote no latency histogram")
    try:
        data = json.loads(line[len(marker):])
    except json.JSONDecodeError as e:
        raise ValueError(f"its latency histogram is not JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError("its latency histogram is not a JSON object")
    if data.get("complete") is not True:
        raise ValueError(f"it wrote only part of its latency histogram: {data.get('why')}")
    values, counts = data.get("values"), data.get("counts")
    if not (isinstance(values, list) and isinstance(counts, list)
            and len(values) == len(counts)
            and all(isinstance(x, int) and x >= 0 for x in values + counts)):
        raise ValueError("its latency histogram has no matching values and counts")
    if any(b <= a for a, b in zip(values, values[1:])):
        raise ValueError("its latency histogram's values do not rise")
    return Histogram(tuple((v, n) for v, n in zip(values, counts) if n))


def write(path: Path, run: Path, h: Histogram, client: str, host: str) -> None:
    """Keep `h` in the run folder `run` (a new file, lab.record.files)."""
    lines = [f"{HEAD}: {client} on {host}, {h.count} responses, latency in us "
             f"(resolution {UNIT_US} us), then the count at it\n"]
    lines += [f"{v} {n}\n" for v, n in h.pairs]
    files.write_atomic(path, lines, run)


def parse(text: str) -> Histogram:
    """'<us> <count>' lines, values rising ('#' lines are comments); ValueError
    naming the line that is not one."""
    counts: dict[int, int] = {}
    last = -1
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        words = line.split()
        if len(words) != 2 or not all(w.isdigit() for w in words) or int(words[0]) <= last:
            raise ValueError(f"line {i} is not '<us> <count>' after a lower value: "
                             f"{line[:60]!r}")
        last = int(words[0])
        counts[last] = int(words[1])
    return Histogram.of(counts)


def read(path: Path) -> Histogram:
    """A kept histogram; RecordError naming the line that is not one."""
    try:
        return parse(files.read_text(path))
    except ValueError as e:
        raise RecordError(path, str(e)) from None
