"""A level's load shared among several client hosts (TOPOLOGY=ssh with
CLIENT_HOST="a b"): each host's share, their runs released at one moment,
each host's latency distribution kept and merged (a client that keeps one:
lab.measure.clients.Distributes), and each host's part of the level on
record (<server>/client-hosts.jsonl)."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Callable

from lab.analyse import metrics
from lab.measure.clients import Client, Distributes, DistributesAfter, Load
from lab.measure.topologies import ClientHost, ClientHung, ClientRun, ServerDied
from lab.record import files, histogram
from lab.record.histogram import Histogram
from lab.record.level import Level

# Several client hosts start at one wall-clock time this far after all are
# ready: the time for each to be asked; a host asked later starts late.
START_LEAD_S = 0.5
START_SPREAD_NOTED_S = 1.0     # client hosts started further apart are noted
AFTER_TIMEOUT_S = 120          # a client's distribution read after the level (vegeta's)


def split_load(load: Load, hosts: int) -> list[Load]:
    """A level's load shared among `hosts` client hosts as evenly as whole
    numbers go (the first hosts get one more); a host given nothing sits the
    level out. The level keeps its meaning: the total in flight or offered."""
    def part(total: int, i: int) -> int:
        return total // hosts + (1 if i < total % hosts else 0)
    return [Load(concurrency=part(load.concurrency, i), rate=part(load.rate, i))
            for i in range(hosts)]


def command(client: Client, url: str, load: Load, duration_s: int) -> list[str]:
    """A host's command when several share a level: one that also writes the
    client's whole latency distribution, where the client has one."""
    if isinstance(client, Distributes):
        return client.distribution_command(url, load, duration_s)
    return client.command(url, load, duration_s)


def merged(client: Client, hosts: list[ClientHost], runs: list[ClientRun], outs: list[Path],
           run: Path, cpus: tuple[int, ...], env: dict[str, str]
           ) -> tuple[Histogram | None, str]:
    """Each host's latency distribution, kept beside its output
    (<client>-<level>.h<i>.hist), and their sum; (None, why) where the client
    keeps none or a host's is missing (the level's percentiles are then the
    worst host's, a bound). A client whose distribution is read after the
    level (DistributesAfter: vegeta's results file) runs that read on each
    host now, outside the level's measurement."""
    if not isinstance(client, Distributes):
        return None, ""
    each = []
    for host, ran, out in zip(hosts, runs, outs):
        try:
            h = client.distribution(after(client, host, ran, out, run, cpus, env))
        except (ValueError, ClientHung, ServerDied) as e:
            return None, (f"{ran.host}: {e}; the level's percentiles are the worst "
                          "host's (a bound)")
        histogram.write(out.with_suffix(".hist"), run, h, client.name, ran.host)
        each.append(h)
    return histogram.merge(each), ""


def after(client: Client, host: ClientHost, ran: ClientRun, out: Path, run: Path,
          cpus: tuple[int, ...], env: dict[str, str]) -> str:
    """What `client.distribution` reads: the level's output, or the output of
    its command after the level (kept as <client>-<level>.h<i>.dist.out)."""
    if not isinstance(client, DistributesAfter):
        return ran.stdout
    argv = client.distribution_after(ran.stdout, ran.stderr)
    if argv is None:
        raise ValueError(f"{client.name} named no file of its results")
    got = host.run_client(argv, cpus, env, out.with_suffix(".dist.out"), AFTER_TIMEOUT_S,
                          lambda: True)
    if got.exit_code != 0:
        raise ValueError(f"reading {client.name}'s results there failed (exit "
                         f"{got.exit_code}): {got.stderr.strip()[-300:]}")
    return got.stdout


def run_together(commands: list[tuple[ClientHost, list[str]]], cpus: tuple[int, ...],
                 env: dict[str, str], outs: list[Path], limit: float,
                 go_on: Callable[[], bool]) -> list[ClientRun]:
    """Each host's client command, one thread each, prepared and then released
    at one wall-clock time; Ctrl-C or one host's failure stops the others,
    and the first cause is raised (not the "server died" that stopping the
    others raised)."""
    stop = threading.Event()
    at = [0.0]

    def start_time() -> None:               # run once, when every host is ready
        at[0] = time.time() + START_LEAD_S

    barrier = threading.Barrier(len(commands), action=start_time)
    got: list[ClientRun | BaseException | None] = [None] * len(commands)

    def alive() -> bool:
        return not stop.is_set() and go_on()

    def one(i: int, host: ClientHost, argv: list[str]) -> None:
        try:
            host.prepare(argv, env)
            barrier.wait(timeout=300)      # the others' prepare: a copy each
            got[i] = host.run_client(argv, cpus, env, outs[i], limit, alive, at=at[0])
        except BaseException as e:          # handed to the main thread below
            got[i] = e
            stop.set()
            barrier.abort()

    threads = [threading.Thread(target=one, args=(i, host, argv), daemon=True)
               for i, (host, argv) in enumerate(commands)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except BaseException:                   # Ctrl-C: every host stops its client
        stop.set()
        barrier.abort()
        for t in threads:
            t.join()
        raise
    errors = [e for e in got if isinstance(e, BaseException)]
    first = next((e for e in errors if not isinstance(e, (ServerDied,
                                                           threading.BrokenBarrierError))),
                 errors[0] if errors else None)
    if first is not None:
        raise first
    return [ran for ran in got if isinstance(ran, ClientRun)]


def record(path: Path, run: Path, start: object, tag: str, shares: list[Load],
           runs: list[ClientRun], host_levels: list[Level], cpu_pct: tuple[float, ...],
           percentiles: str = "bound") -> str:
    """Each client host's part of one level, a line appended to `path` (in the
    run folder `run`); `percentiles`: the level's ("exact": merged, "bound":
    the worst host's). What to note ("" : nothing): hosts started further
    apart than START_SPREAD_NOTED_S."""
    started = [r.started for r in runs if r.started is not None]
    spread = max(started) - min(started) if len(started) == len(runs) else None
    line = {"start": start, "tag": tag,
            "start_spread_s": None if spread is None else round(spread, 3),
            "percentiles": percentiles,
            "hosts": [{"host": ran.host, "concurrency": share.concurrency,
                       "rate": share.rate, "rate_rps": round(lv.rate_rps, 2),
                       "successful": lv.successful, "failed": lv.failed,
                       "resp_ms": round(lv.resp_ms, 4), "p99_ms": lv.p99_ms,
                       "client_cpu_s": round(ran.cpu_s, 3),
                       "client_cpu_pct": round(pct, 1), "wall_s": round(ran.wall_s, 3),
                       "client_bound": pct >= metrics.CLIENT_BOUND_PCT}
                      for share, ran, lv, pct in zip(shares, runs, host_levels, cpu_pct)]}
    with files.open_text(path, run, append=True) as f:
        f.write(json.dumps(line) + "\n")
    if spread is not None and spread > START_SPREAD_NOTED_S:
        return (f"the client hosts started {spread:.1f}s apart (more than "
                f"{START_SPREAD_NOTED_S:g} s): their loads overlapped only in part")
    return ""
