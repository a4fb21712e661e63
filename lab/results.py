"""A run folder: manifest.json, results.csv, raw client output, server logs,
and the data files the charts read. A run folder is never overwritten."""
from __future__ import annotations

import csv
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

MANIFEST = "manifest.json"
CSV = "results.csv"


@dataclass
class Row:
    """One concurrency level of one server: every figure the lab keeps."""
    server: str
    concurrency: int
    duration_s: int
    transactions: int
    successful: int
    failed: int
    availability_pct: float
    elapsed_s: float
    rate_rps: float
    resp_ms: float
    longest_ms: float
    in_flight: float
    littles_ratio: float          # in-flight / concurrency (Little's law)
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
    time_wait: int                # TCP sockets in TIME_WAIT after the level
    flags: str


COLUMNS = list(Row.__dataclass_fields__)


def new_run(results: Path, servers: tuple[str, ...]) -> Path:
    """Make results/<date>-<time>-<servers>[-N]; never reuses a folder."""
    results.mkdir(parents=True, exist_ok=True)
    names = "+".join(servers) if len(servers) <= 4 else f"{len(servers)}-servers"
    base = f"{time.strftime('%Y%m%d-%H%M%S')}-{names}"
    for n in range(1, 1000):
        path = results / (base if n == 1 else f"{base}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"no free run folder name under {results}")


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
        w.writerow(asdict(row))


def read_rows(run: Path) -> list[dict[str, str]]:
    path = run / CSV
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def rows_by_server(run: Path) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """Rows grouped by server, in run order."""
    groups: dict[str, list[dict[str, str]]] = {}
    for r in read_rows(run):
        groups.setdefault(r["server"], []).append(r)
    for name, rows in groups.items():
        yield name, sorted(rows, key=lambda r: int(r["concurrency"]))
