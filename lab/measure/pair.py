"""One start pair of a paired run (PAIRED=duet or rmit), top-down: both
servers started on their seats → both verified → both warmed up at once →
each level → both stopped (always).

- duet: at each level both clients run at the same moment, each loading its
  own server, so both sides see the same interference (Bulej et al., ICPE
  2020);
- rmit: both servers up, each level measured in short slices of one server
  at a time, alternating in a random order (Abedi and Brecht, ICPE 2017), for
  a server that must have the CPUs to itself while it is measured.

The pair is the independent unit (lab.analyse.pairverdict). Its seats swap
every other pair: the port, the CPUs and which client starts first, so that
neither server always has the better seat (the analysis checks it).
"""
from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from lab.analyse import levelrow
from lab.measure.clients import Client
from lab.measure.launch import ServerProcess
from lab.measure.sweep import (ServerSweep, StoppedAnswering, fmt_value, neighbour_of, WarmSeries,
                               progress)
from lab.measure.topologies import ServerDied
from lab.record import files, rows
from lab.record.level import Level
from lab.record.rows import Row
from lab.setup.params import WARMUP_SLICE_S, Params
from lab.setup.servers import Server

T = TypeVar("T")
SLICES = 5          # slices of each side a level (at most one a second of DURATION),
                    # DURATION split among them: the pair's figure at the level is
                    # the Hodges-Lehmann estimate of their log ratios (lab.analyse.pairverdict)


@dataclass(frozen=True)
class Seat:
    """Where one side of a start pair runs."""
    number: int                   # 1 or 2
    port: int
    server_cpus: tuple[int, ...]
    client_cpus: tuple[int, ...]
    client_first: bool            # duet: its client is started first

    def record(self) -> dict[str, object]:
        return {"seat": self.number, "port": self.port, "server_cpus": list(self.server_cpus),
                "client_cpus": list(self.client_cpus), "client_first": self.client_first}


def halves(cpus: tuple[int, ...], split: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if not split:
        return cpus, cpus
    return cpus[:len(cpus) // 2], cpus[len(cpus) // 2:]


def shares_cpus(params: Params) -> bool:
    """The two sides share their CPUs: a duet on fewer than 2 server and 2
    client CPUs (a 2-core host: both servers on one CPU, both clients on the
    other), and always under rmit (each server has every CPU while measured)."""
    return params.paired == "rmit" or len(params.server_cpus) < 2 or len(params.client_cpus) < 2


def seats(params: Params, rep: int) -> tuple[Seat, Seat]:
    """The seats of start pair `rep` for the servers in params.servers' order:
    seat 1 has PORT, the first half of the CPUs (where there are enough to
    split) and the client started first; seat 2 PORT+1 and the rest. Odd
    pairs give the first server seat 1, even pairs swap."""
    split = not shares_cpus(params)
    s1, s2 = halves(params.server_cpus, split)
    c1, c2 = halves(params.client_cpus, split)
    one, two = Seat(1, params.port, s1, c1, True), Seat(2, params.port + 1, s2, c2, False)
    return (one, two) if rep % 2 == 1 else (two, one)


class PairSweep:
    """Start pair `rep` of two servers, each side a ServerSweep on its seat."""

    def __init__(self, root: Path, cache: Path, run: Path, servers: tuple[Server, Server],
                 params: Params, client: Client, rep: int) -> None:
        self.run, self.params, self.rep = run, params, rep
        self.seats = seats(params, rep)
        self.sides = tuple(self.side(root, cache, server, seat, client)
                           for server, seat in zip(servers, self.seats))
        self.procs: list[ServerProcess] = []

    def side(self, root: Path, cache: Path, server: Server, seat: Seat,
             client: Client) -> ServerSweep:
        p = self.params
        mine = replace(p, port=seat.port, server_cpus=seat.server_cpus,
                       client_cpus=seat.client_cpus)
        sweep = ServerSweep(root, cache, self.run, server, mine, client, self.rep)
        most = f"up to {p.repeat.most}" if p.repeat.auto else str(p.repeat.least)
        sweep.tag = f"[{server.name} pair {self.rep}/{most} {p.paired} seat {seat.number}]"
        return sweep

    # ---- the steps, top-down --------------------------------------------------
    def run_all(self) -> None:
        """Both started, verified, warmed up; each level; both stopped, always."""
        levels = list(self.params.load)
        for side in self.sides:
            files.make_dirs(side.out, self.run)
        try:
            for side in self.sides:
                self.procs.append(side.launch(None))
            workers = [side.check(sp, None) for side, sp in zip(self.sides, self.procs)]
            self.note_seats()
            hog = neighbour_of(self.params, len(levels), f"rep{self.rep}", self.run)
            for i, side in enumerate(self.sides):   # one neighbour beside both, on every
                side.beside(hog, say=i == 0)         # CPU of the run
            warm = self.warm_up(levels[-1])
            for side, w in zip(self.sides, warm):
                side.start_record.update(status="measuring", warmup=w)
                side.save()
            self.sweep_levels(levels, workers, [w.get("steady") is False for w in warm])
            for side in self.sides:
                side.start_record["status"] = "complete"
                side.save()
        finally:
            for side in self.sides:
                side.alone()
            for side, sp in zip(self.sides, self.procs):
                side.stopped(sp)
                progress(f"{side.tag} stopped")

    def note_seats(self) -> None:
        """Each start's record: its seat and its partner."""
        names = [side.server.name for side in self.sides]
        for i, (side, seat) in enumerate(zip(self.sides, self.seats)):
            side.start_record["pair"] = {"mode": self.params.paired, "rep": self.rep,
                                         "with": names[1 - i], **seat.record()}
            side.save()

    def warm_up(self, top: int) -> list[dict[str, Any]]:
        """Both warmed up together (duet: as they will be measured), or each
        alone in turn (rmit)."""
        if self.params.paired == "rmit":
            return [side.warm_up(sp, top) for side, sp in zip(self.sides, self.procs)]
        if not self.params.warmup_auto:                  # a fixed time: the same for both
            return self.both(lambda i: self.sides[i].warm_up(self.procs[i], top))
        return self.warm_together(top)

    def warm_together(self, top: int) -> list[dict[str, Any]]:
        """WARMUP=auto under duet: slices of both sides at the same moment
        until each side's series show a steady state (lab.analyse.warmup) or
        WARMUP_MAX: a side warmed alone after its partner settled would run
        faster than it will be measured. Both sides start and are measured
        at the same age, steady or not."""
        p = self.params
        got = [WarmSeries(side.jit_watch(sp)) for side, sp in zip(self.sides, self.procs)]
        t0 = time.monotonic()
        while not (got[0].settled() and got[1].settled()) and \
                time.monotonic() - t0 + WARMUP_SLICE_S <= p.warmup_max_s:
            tag = f"rep{self.rep}-warmup{got[0].n + 1}"
            both = self.both(lambda i: self.sides[i].level(
                self.procs[i], self.sides[i].warm_load(top), WARMUP_SLICE_S, tag))
            for series_, (level, m) in zip(got, both):
                series_.add(level, m)
        took = time.monotonic() - t0
        return [side.warmed("auto, together", got[i], took, side.warm_at(top))
                for i, side in enumerate(self.sides)]

    def sweep_levels(self, level_values: list[int], workers: list[int],
                     not_steady: list[bool]) -> None:
        started = time.monotonic()
        for k, value in enumerate(level_values, 1):
            measured = self.measure(value)
            got = [(level, m) for level, m, _, _, _ in measured]
            made = [replace(side.row(sp, None, value, w, ns, level, m), slice_rps=rps,
                            slice_cpu_us=cpu, slice_jit_us=jit)
                    for side, sp, w, ns, (level, m), (_, _, rps, cpu, jit)
                    in zip(self.sides, self.procs, workers, not_steady, self.partnered(got),
                           measured)]
            eta = (time.monotonic() - started) / k * (len(level_values) - k)
            for side, row in zip(self.sides, made):
                rows.append_row(self.run, row)
                side.start_record["levels_done"] = k
                side.save()
                side.show(row, k, len(level_values), eta)
            silent = [side.server.name for side, (level, _) in zip(self.sides, got)
                      if level.successful == 0]
            if silent:
                raise StoppedAnswering(f"{fmt_value(self.params.load_axis, value)}: no request "
                                       f"completed in {self.params.duration_s}s: "
                                       f"{', '.join(silent)} stopped answering")

    def measure(self, value: int
                ) -> list[tuple[Level, levelrow.Measured, str, str, str | None]]:
        """One level of both sides in SLICES slices: each slice of both at the
        same moment (duet), or one server's slice at a time in a random order
        (rmit: seeded by the run, the pair and the level, so a rerun repeats
        it). Each side's slices summed into its level, with each slice's req/s
        and CPU per request (the pair's figure: lab.analyse.pairverdict)."""
        p = self.params
        load = [side.load(value) for side in self.sides]
        stem = f"rep{self.rep}-" + (f"c{value}" if load[0].concurrency else f"r{value}")
        got: list[list[tuple[Level, levelrow.Measured]]] = [[], []]
        order = random.Random(f"{self.run.name}/{self.rep}/{value}")
        for k, length in enumerate(slice_lengths(p.duration_s), 1):
            tag = f"{stem}-slice{k}"
            if p.paired == "rmit":
                for i in order.sample((0, 1), 2):
                    got[i].append(self.sides[i].level(self.procs[i], load[i], length, tag))
            else:
                both = self.both(lambda i: self.sides[i].level(self.procs[i], load[i], length,
                                                               tag))
                for i in (0, 1):
                    got[i].append(both[i])
        summed_ = [summed(parts) for parts in got]
        if p.paired == "duet":        # the answers at the level's load, both at once
            summed_ = self.both(lambda i: (summed_[i][0], self.sides[i].check_slice(
                self.procs[i], load[i], stem, summed_[i][1]) if summed_[i][0].successful
                else summed_[i][1]))
        out = []
        for side, sp, parts, (level, m) in zip(self.sides, self.procs, got, summed_):
            rps, cpu, jit = slice_figures(parts)
            out.append((level, side.checked_after(sp, level, m), rps, cpu, jit))
        return out

    def partnered(self, got: list[tuple[Level, levelrow.Measured]]
                  ) -> list[tuple[Level, levelrow.Measured]]:
        """Duet: each side's host figures without the other side's server and
        client (they are the pair, not other processes), and its client CPUs'
        load with the other client's where they share them."""
        if self.params.paired != "duet":
            return got
        out = []
        for i, (level, m) in enumerate(got):
            mine, theirs = self.seats[i], self.seats[1 - i]
            other = got[1 - i][1]
            lab = set(mine.server_cpus) | set(mine.client_cpus)
            partner = (other.server_cpu_s if lab & set(theirs.server_cpus) else 0.0) + \
                (other.client_cpu_s if lab & set(theirs.client_cpus) else 0.0)
            shared = other.client_cpu_s if set(mine.client_cpus) & set(theirs.client_cpus) \
                else 0.0
            out.append((level, replace(m, partner_cpu_s=partner, shared_client_cpu_s=shared)))
        return out

    def both(self, work: Callable[[int], T]) -> list[T]:
        """work(0) and work(1) at the same moment, seat 1's started first; the
        first failure (or a Ctrl-C) stops the other side's client."""
        got: list[T | BaseException | None] = [None, None]

        def one(i: int) -> None:
            try:
                got[i] = work(i)
            except BaseException as e:          # handed to the main thread below
                got[i] = e
                for side in self.sides:
                    side.halt.set()
        first = 0 if self.seats[0].number == 1 else 1
        threads = {i: threading.Thread(target=one, args=(i,), daemon=True)
                   for i in (first, 1 - first)}
        for t in threads.values():
            t.start()
        try:
            for t in threads.values():
                t.join()
        except BaseException:
            for side in self.sides:
                side.halt.set()
            for t in threads.values():
                t.join()
            raise
        errors = [e for e in got if isinstance(e, BaseException)]
        if errors:      # the cause, not the other side's client stopped because of it
            raise next((e for e in errors if not isinstance(e, ServerDied)), errors[0])
        return [x for x in got if x is not None and not isinstance(x, BaseException)]


def slice_lengths(duration_s: int) -> list[int]:
    """DURATION split into min(SLICES, DURATION) whole seconds, the longer first
    (7 s: 2 2 1 1 1)."""
    count = max(1, min(SLICES, duration_s))
    base, extra = divmod(duration_s, count)
    return [base + (k < extra) for k in range(count)]


def slice_figures(parts: list[tuple[Level, levelrow.Measured]]
                  ) -> tuple[str, str, str | None]:
    """Each slice's req/s, server CPU µs per request and, for a JVM whose
    compiler threads were read, their part of it, as Row's cells."""
    rps = " ".join(f"{lv.rate_rps:.1f}" for lv, _ in parts)
    cpu = " ".join(f"{1e6 * m.server_cpu_s / lv.successful:.2f}" if lv.successful else "0"
                   for lv, m in parts)
    if any(m.server_jit_s is None for _, m in parts):
        return rps, cpu, None
    jit = " ".join(f"{min(1e6 * (m.server_jit_s or 0.0), 1e6 * m.server_cpu_s) / lv.successful:.2f}"
                   if lv.successful else "0" for lv, m in parts)
    return rps, cpu, jit


def summed(parts: list[tuple[Level, levelrow.Measured]]) -> tuple[Level, levelrow.Measured]:
    """An RMIT side's slices of one level as one level: counts, times and CPU
    added, the rate over the slices' whole elapsed time, the mean response
    weighted by responses; each percentile and the longest response the worst
    slice's (an upper bound of the whole's); memory at the last slice's end."""
    levels, ms = [lv for lv, _ in parts], [m for _, m in parts]
    transactions = sum(x.transactions for x in levels)
    elapsed = sum(x.elapsed_s for x in levels)
    weights = [x.transactions for x in levels] if transactions else [1] * len(levels)
    combined = levelrow.combine(levels)            # counts, percentiles, failures
    # several slices: each percentile the worst slice's, an upper bound ("bound")
    level = replace(combined, elapsed_s=elapsed,
                    percentiles="bound" if len(levels) > 1 and combined.p99_ms is not None
                    else "",
                    rate_rps=transactions / elapsed if elapsed > 0 else 0.0,
                    resp_ms=sum(x.resp_ms * w for x, w in zip(levels, weights)) / sum(weights),
                    in_flight=sum(x.in_flight * x.elapsed_s for x in levels) / elapsed
                    if elapsed > 0 else 0.0)
    last = ms[-1]
    return level, replace(
        last, server_cpu_s=sum(m.server_cpu_s for m in ms),
        rss_peak_kb=max(m.rss_peak_kb for m in ms),
        threads_peak=max(m.threads_peak for m in ms),
        client_cpu_s=sum(m.client_cpu_s for m in ms), wall_s=sum(m.wall_s for m in ms),
        host_busy_s=sum(m.host_busy_s for m in ms), host_steal_s=sum(m.host_steal_s for m in ms),
        sampler_cpu_s=sum(m.sampler_cpu_s for m in ms),
        server_sys_s=None if any(m.server_sys_s is None for m in ms)
        else sum(m.server_sys_s or 0.0 for m in ms),
        server_jit_s=None if any(m.server_jit_s is None for m in ms)
        else sum(m.server_jit_s or 0.0 for m in ms),
        answer_changed="; ".join(m.answer_changed for m in ms if m.answer_changed),
        client_stopped_s=sum(m.client_stopped_s for m in ms),
        sampler_gap_s=max(m.sampler_gap_s for m in ms),
        clock_over_s=max(m.wall_s - lv.elapsed_s if m.clock_over_s is None else m.clock_over_s
                         for lv, m in parts),
        wrong_answers="; ".join(m.wrong_answers for m in ms if m.wrong_answers),
        port_shared="; ".join(m.port_shared for m in ms if m.port_shared),
        accept_queue_max=max((m.accept_queue_max for m in ms if m.accept_queue_max is not None),
                             default=None),
        accept_queue_samples=sum(m.accept_queue_samples for m in ms),
        accept_queue_full=sum(m.accept_queue_full for m in ms),
        neighbour=any(m.neighbour for m in ms))
