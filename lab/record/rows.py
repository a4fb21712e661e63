"""results.csv: one `Row` per level of one server start, written as it is
measured (`append_row`) and read back typed (`read_rows`); a truncated or
corrupt file raises `RecordError` naming the line and the cell."""
from __future__ import annotations

import csv
import math
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from lab.record import csvfile, files, tcpkinds
from lab.record.failures import Failure, decode_failures
from lab.record.files import RecordError
from lab.record.tcpkinds import TcpDelta
from lab.setup.names import why_not_a_recorded_name

CSV = "results.csv"


@dataclass(slots=True)
class Row:
    """One level of one server start: every figure the lab keeps.

    Written to results.csv and read back typed (`read_rows`): empty cells are
    None, booleans are bools. Slots, not a dict each: a run of 200,000 levels
    is read whole (issue 44, §6: a 52.6 MB results.csv once took 2.9 GB).
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
    # the check slice after the level (lab.measure.clients.Checks): answers the
    # client checked at the level's load, and how many were not the contract's;
    # None where no check slice ran (a client without one, RMIT, several client
    # hosts) and in runs made before it
    answers_checked: int | None = None
    answers_wrong: int | None = None
    # the accept queue of the server's listening socket, read at each of the
    # sampler's samples (lab.host.acceptq; ss's Recv-Q and Send-Q): the highest,
    # the backlog the kernel holds, and the share of samples at it, %; None where
    # it was not read (the start's record says why) and in runs made before it
    accept_queue_max: int | None = None
    accept_queue_backlog: int | None = None
    accept_queue_full_pct: float | None = None
    # the kernel's TCP counters' growth over the level where the server's sockets
    # are (lab.record.tcpkinds.encode: {"netns": "server" or "shared", counter:
    # growth}); None where they were not read, and in older runs
    tcp_counters: str | None = None
    # several client hosts (CLIENT_HOST="a b"): "exact" where p50/p90/p99 are
    # those of the hosts' latency distributions merged (each kept as
    # <client>-<level>.h<i>.hist), "bound" where they are the worst host's (a
    # client that keeps none: siege); "" for one client host (the client's own
    # figures), None in runs made before it was recorded
    percentiles: str | None = None
    # a paired run's level in slices, measured at the same moment on both sides
    # (duet) or in turn (rmit; lab.measure.pair): each slice's req/s and server
    # CPU µs per request, space-separated, in slice order; None where the level
    # was one window, and in runs made before it was recorded
    slice_rps: str | None = None
    slice_cpu_us: str | None = None
    # a JVM's JIT compiler threads' part of server_cpu_us_per_req (C1/C2
    # CompilerThread, by their schedstat), and of each slice's slice_cpu_us;
    # None where not a JVM, not read (another host), and in older runs
    server_jit_us_per_req: float | None = None
    slice_jit_us: str | None = None

    def has(self, flag: str) -> bool:
        return flag in self.flags.split()

    def failures(self) -> list[Failure]:
        """The failed requests of this level by kind ([] when none or not recorded)."""
        return decode_failures(self.failure_kinds or "", Path(CSV))

    def slices(self) -> tuple[tuple[float, float], ...]:
        """(req/s, server CPU µs per request) of each slice of the level (()
        where it was one window), a JVM's JIT compiler threads' CPU left out
        where it was read (slice_jit_us: compiling is the warm-up's cost, not
        the request's, and it falls at random moments in two JVMs:
        docs/methodology.md#paired-runs); RecordError where the cells do not
        agree."""
        if not self.slice_rps or not self.slice_cpu_us:
            return ()
        try:
            rps = [float(x) for x in self.slice_rps.split()]
            cpu = [float(x) for x in self.slice_cpu_us.split()]
            jit = [float(x) for x in (self.slice_jit_us or "").split()]
        except ValueError:
            raise RecordError(Path(CSV), f"{self.server} rep {self.rep} at {self.value}: "
                              f"slice cells {self.slice_rps!r}, {self.slice_cpu_us!r} are not "
                              "numbers (corrupt)") from None
        if len(rps) != len(cpu) or not all(math.isfinite(x) and 0 <= x <= FIGURE_LIMIT
                                           for x in rps + cpu):
            raise RecordError(Path(CSV), f"{self.server} rep {self.rep} at {self.value}: "
                              f"{len(rps)} slice rates against {len(cpu)} slice costs, or a "
                              "figure out of range (corrupt)")
        if jit and (len(jit) != len(cpu) or not all(math.isfinite(x) and 0 <= x <= c
                                                    for x, c in zip(jit, cpu))):
            raise RecordError(Path(CSV), f"{self.server} rep {self.rep} at {self.value}: "
                              f"slice JIT cells {self.slice_jit_us!r} do not fit the slices' "
                              "CPU (corrupt)")
        if jit:
            cpu = [round(c - x, 2) for c, x in zip(cpu, jit)]
        return tuple(zip(rps, cpu))

    def tcp(self) -> TcpDelta | None:
        """The kernel's TCP counters over this level (None: not read)."""
        return tcpkinds.decode(self.tcp_counters, Path(CSV))


COLUMNS = list(Row.__dataclass_fields__)
# no figure a level can measure comes near this (a rate of 10^15 req/s, a
# petabyte of memory in KB is 10^12): a cell beyond it, like NaN or inf, is
# no measurement, and shown as a figure it would mislead
FIGURE_LIMIT = 1e15
OPTIONAL = {f.name for f in fields(Row) if f.default is None}   # columns newer than old runs


def append_row(run: Path, row: Row) -> None:
    """A level's row appended to the run's results.csv (lab.record.csvfile)."""
    csvfile.append_row(run / CSV, run, COLUMNS, asdict(row))


# a cell this short (0.0, 100.0, a worker count) is converted once a read and
# its value shared by every row that has it: a large run repeats them
SHARED_CELL = 6


class NotAFigure(ValueError):
    """A number cell that holds NaN, inf or a figure beyond FIGURE_LIMIT."""


def _convert(kind: object, text: str) -> Any:
    """A CSV cell back to its field's type ('' is None for optional fields)."""
    spec = str(kind)
    if text == "" and "None" in spec:
        return None
    if spec.startswith("bool"):
        if text not in ("True", "False"):
            raise ValueError(f"not a boolean: {text!r}")
        return text == "True"
    if spec == "str" or spec.startswith("str "):
        return sys.intern(text)             # a server's name, its flags: shared, not copied
    if spec.startswith("int") or spec.startswith("float"):
        number = int(text) if spec.startswith("int") else float(text)
        if abs(number) > FIGURE_LIMIT or (isinstance(number, float)
                                          and not math.isfinite(number)):
            raise NotAFigure(f"{text[:40]!r}, no figure a level can measure (corrupt)")
        return number
    return text


def from_record(record: dict[str, str | None], path: Path = Path(CSV), line: int = 0,
                seen: dict[tuple[str, str], Any] | None = None) -> Row:
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
            if seen is None or len(cell) > SHARED_CELL:
                values[f.name] = _convert(f.type, cell)
            else:                           # 0.0, 100.0, 512: one object for every row
                key = (str(f.type), cell)
                if key not in seen:
                    seen[key] = _convert(f.type, cell)
                values[f.name] = seen[key]
        except NotAFigure as e:
            raise RecordError(path, f"{where}`{f.name}` is {e}") from None
        except ValueError:
            raise RecordError(path, f"{where}`{f.name}` is {cell!r}, not a "
                                    f"{str(f.type).split(' ')[0]}") from None
    why = why_not_a_recorded_name(values["server"])
    if why:
        raise RecordError(path, f"{where}{why}")
    try:
        decode_failures(values["failure_kinds"] or "", path)
        tcpkinds.decode(values["tcp_counters"], path)
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
    try:     # line by line: a StringIO of the whole would hold 4 bytes a character
        seen: dict[tuple[str, str], Any] = {}
        return [from_record(r, path, i + 2, seen)
                for i, r in enumerate(csv.DictReader(_lines(text)))]
    except csv.Error as e:
        raise RecordError(path, f"is not valid CSV ({e})") from None


def _lines(text: str) -> Iterator[str]:
    """`text`'s lines, each with its end ("\\r\\n" too), as csv reads them."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


def group(rows: list[Row]) -> dict[str, list[Row]]:
    """Rows grouped by server, in run order; within a server by value, then rep."""
    groups: dict[str, list[Row]] = {}
    for r in rows:
        groups.setdefault(r.server, []).append(r)
    return {name: sorted(rs, key=lambda r: (r.value, r.rep)) for name, rs in groups.items()}


def rows_by_server(run: Path) -> Iterator[tuple[str, list[Row]]]:
    yield from group(read_rows(run)).items()

