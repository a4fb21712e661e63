"""A run folder: manifest.json, results.csv, raw client output, server logs,
and the data files the charts read. A run folder is never overwritten."""
from __future__ import annotations

import csv
import fcntl
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Iterator

MANIFEST = "manifest.json"
CSV = "results.csv"


@dataclass
class Row:
    """One level of one server start: every figure the lab keeps.

    Written to results.csv and read back typed (`read_rows`): empty cells are
    None, booleans are bools.
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

    def has(self, flag: str) -> bool:
        return flag in self.flags.split()


COLUMNS = list(Row.__dataclass_fields__)


def new_folder(root: Path, base: str) -> Path:
    """Make root/<base>[-N], never an existing folder (nothing is overwritten)."""
    root.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        path = root / (base if n == 1 else f"{base}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"no free folder name for {base} under {root}")


def new_run(results: Path, servers: tuple[str, ...]) -> Path:
    """Make results/<date>-<time>-<servers>[-N]."""
    names = "+".join(servers) if len(servers) <= 4 else f"{len(servers)}-servers"
    return new_folder(results, f"{time.strftime('%Y%m%d-%H%M%S')}-{names}")


def unwritable(results: Path) -> str | None:
    """Why run folders cannot be made under `results`, or None when they can.

    Tried for real rather than with os.access, which says yes to root on
    /proc or a read-only mount: a scratch folder with a file in it is made in
    `results`, or in its nearest existing ancestor when `results` does not
    exist yet, and removed again, so the check creates nothing either way.
    """
    existing = results
    while not os.path.lexists(existing):    # lexists: a dangling link is in the way too
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder, so no folder can be made under it"
    try:
        scratch = Path(tempfile.mkdtemp(prefix=".lab-write-test-", dir=existing))
    except OSError as e:
        return f"cannot make a folder in {existing} ({e.strerror or e})"
    try:
        (scratch / MANIFEST).write_text("{}\n")   # a run folder's first file
    except OSError as e:
        return f"cannot write a file in a new folder of {existing} ({e.strerror or e})"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return None


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(tmp, path)


def read_manifest(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / MANIFEST).read_text())
    return data


def update_manifest(run: Path, **changes: Any) -> dict[str, Any]:
    data = read_manifest(run)
    data.update(changes)
    write_json(run / MANIFEST, data)
    return data


def append_row(run: Path, row: Row) -> None:
    path = run / CSV
    new = not path.exists()
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        if new:
            w.writeheader()
        w.writerow({k: "" if v is None else v for k, v in asdict(row).items()})


def _convert(kind: object, text: str) -> Any:
    """A CSV cell back to its field's type ('' is None for optional fields)."""
    spec = str(kind)
    if text == "" and "None" in spec:
        return None
    if spec.startswith("bool"):
        if text not in ("True", "False"):
            raise ValueError(f"not a boolean: {text!r}")
        return text == "True"
    if spec.startswith("int"):
        return int(text)
    if spec.startswith("float"):
        return float(text)
    return text


OPTIONAL = {f.name for f in fields(Row) if f.default is None}   # columns newer than old runs


def from_record(record: dict[str, str]) -> Row:
    record = {**{c: "" for c in OPTIONAL}, **record}
    missing = [c for c in COLUMNS if c not in record]
    if missing:
        raise ValueError(f"results.csv lacks columns {', '.join(missing)}: made by an older lab?")
    return Row(**{f.name: _convert(f.type, record[f.name]) for f in fields(Row)})


def read_rows(run: Path) -> list[Row]:
    path = run / CSV
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return [from_record(r) for r in csv.DictReader(f)]


def rows_by_server(run: Path) -> Iterator[tuple[str, list[Row]]]:
    """Rows grouped by server, in run order; within a server by value, then rep."""
    groups: dict[str, list[Row]] = {}
    for r in read_rows(run):
        groups.setdefault(r.server, []).append(r)
    for name, rows in groups.items():
        yield name, sorted(rows, key=lambda r: (r.value, r.rep))


# ---------------------------------------------------------------- a run whose lab is gone

LOCK = "lock"      # run-benchmark.sh holds an flock on it while it or one of its steps lives


def lab_gone(run: Path) -> bool:
    """True when the run's lab took its lock once and nothing holds it any more:
    the script and every step of it ended. A lock file never written to
    (the few ms between `lab new-run` and the script's flock), or none (a run
    made by steps called one by one), says nothing: False."""
    path = run / LOCK
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if os.fstat(fd).st_size == 0:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return False                # held: the lab still runs
        return True
    finally:
        os.close(fd)                    # (releases the probe's own lock)


def mark_gone(run: Path) -> bool:
    """Mark a run "interrupted" when its manifest says running and its lab is
    gone (SIGKILL, the OOM killer, a reboot); True when it did."""
    try:
        data = read_manifest(run)
    except (OSError, ValueError):
        return False
    if data.get("status") != "running" or not lab_gone(run):
        return False
    servers = data.get("servers", {})
    for rec in servers.values():
        if rec.get("status") not in ("complete", "failed", "not loaded"):
            rec["status"] = "interrupted"
    problems = list(data.get("problems", []))
    problems.append("interrupted: the lab's processes ended without finishing the run "
                    "(killed, or the machine stopped); found by a later lab step")
    update_manifest(run, status="interrupted", servers=servers, problems=problems)
    return True


def mark_gone_runs(results: Path) -> list[Path]:
    """mark_gone for every run folder under `results`; the ones marked."""
    if not results.is_dir():
        return []
    return [run for run in sorted(results.iterdir())
            if (run / LOCK).exists() and mark_gone(run)]
