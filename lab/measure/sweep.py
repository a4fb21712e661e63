"""One repetition of one server, top-down: start pinned → wait → verify →
warm up → load each level (client pinned apart, server tree sampled) → stop.

When the swept axis is a server knob (AXIS=workers), each value is a start of
its own, measured at the one load level given."""
from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from lab.record import failures, files, manifest, rows, series, tcpkinds
from lab.measure import clienthosts, jit, neighbour, topologies
from lab.analyse import answers, contract, levelrow, metrics, warmup
from lab.host import logcap, procfs, procs
from lab.measure.clients import Asks, Checks, Client, ClientError, Load, PerSecond
from lab.record.histogram import Histogram
from lab.record.level import Level
from lab.measure.launch import Knobs, ListenError, ServerProcess
from lab.setup.params import KNOBS, WARMUP_SLICE_S, Params
from lab.record.rows import Row
from lab.measure.topologies import (ClientHost, ClientHung, ClientRun, Placement, ServerDied,
                                    ServerHost)
from lab.setup.servers import Server, expand
from lab.measure.verify import TIMEOUT_S, VerifyError, as_client, recheck, verify, wire

WARMUP_WORKERS = 64            # an open-loop client's warm-up connections
DIED_WAIT_S = 2.0              # a server seen gone: its exit status awaited at most this long
CHECK_S = 1                    # the check slice after each level (clients.Checks), not recorded


class SweepError(RuntimeError):
    """The server could not be measured; the message says why."""


class SweepHung(SweepError, ClientHung):
    """The client hung twice at one level."""


class NotLoaded(SweepError):
    """The start failed a check before any load (listener, contract)."""


class StoppedAnswering(SweepError):
    """A level where no request completed: the start ends there."""


def server_facts(server: Server, values: dict[str, str], env: dict[str, str],
                 cpus: tuple[int, ...], where: ServerHost) -> dict[str, str]:
    """key=value lines of the manifest's facts command, run pinned like the server, where it runs."""
    if server.facts is None:
        return {}
    try:
        code, stdout, stderr = where.run(expand(server.facts.argv, values), server.facts.dir,
                                         env, cpus, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        return {"error": str(e)}
    facts = dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)
    if code != 0:
        facts["error"] = stderr.strip()[-300:] or f"exit {code}"
    return {k.strip(): v.strip() for k, v in facts.items()}


def fmt_eta(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


def fmt_value(axis: str, value: int) -> str:
    return {"concurrency": f"c={value}", "rate": f"rate={value}/s"}.get(axis, f"{axis}={value}")


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class ServerSweep:
    """Repetition `rep` of one server: one start for a load sweep, one start
    per value for a knob sweep. Read top-down: run_all → starts → one_start
    (launch → check → warm_up → sweep_levels (one_level → level) → stop);
    below them the client runs (level, run_clients) and the record (save)."""

    def __init__(self, root: Path, cache: Path, run: Path, server: Server,
                 params: Params, client: Client, rep: int = 1,
                 topology: Placement | None = None) -> None:
        self.root, self.cache, self.run, self.server = root, cache, run, server
        self.params, self.client, self.rep = params, client, rep
        self.topology = topology or topologies.current(params)
        self.out = run / server.name
        r = params.repeat
        self.tag = f"[{server.name}]" if r.most == 1 else \
            f"[{server.name} rep {rep}, up to {r.most}]" if r.auto else \
            f"[{server.name} rep {rep}/{r.least}]"
        self.start_record: dict[str, Any] = {}
        # the verified answer to the client's request, this start's (its size is
        # what each level's bytes per response are checked against)
        self.expected: answers.Expected | None = None
        # who else held the server's port at the last check ("": nobody): a
        # level is flagged port-shared when a check before or after it found one
        self.shared = ""
        # set by a paired run (lab.measure.pair) to stop this side's client now
        self.halt = threading.Event()
        # NEIGHBOUR's processes beside this start (lab.measure.neighbour), while they run
        self.neighbour: neighbour.Neighbour | None = None

    # ---- the manifest's record of this server -----------------------------
    def record(self) -> manifest.ServerRecord:
        return manifest.read_manifest(self.run).servers.get(self.server.name) or \
            manifest.ServerRecord.new(self.server.describe())

    def save(self, note: str | None = None, **changes: Any) -> None:
        """Update this server's record (and the current start's, under 'starts')."""
        manifest.update_server(self.run, self.server.describe(), self.start_record or None,
                               note, **changes)

    def note(self, text: str) -> None:
        progress(f"{self.tag} warning: {text}")
        self.save(note=text)

    # ---- what is swept ------------------------------------------------------
    def knobs(self, value: int | None) -> Knobs:
        p = self.params
        workers = self.server.workers(p.workers)
        backlog = p.backlog
        if p.axis == "workers" and value is not None:
            workers = value
        if p.axis == "backlog" and value is not None:
            backlog = value
        return Knobs(port=p.port, workers=workers, backlog=backlog, bind=self.topology.bind)

    def load(self, level: int) -> Load:
        return Load(concurrency=level) if self.params.load_axis == "concurrency" \
            else Load(rate=level)

    # ---- the steps, top-down --------------------------------------------------
    def run_all(self) -> None:
        """Every start of this repetition; the record says where it stopped."""
        files.make_dirs(self.out, self.run)   # never a link planted in the run (UnsafePath)
        for knob_value, levels in self.starts():
            try:
                self.one_start(knob_value, levels)
            except (NotLoaded, StoppedAnswering) as e:
                if knob_value is None:
                    raise
                self.value_failed(knob_value, e)

    def starts(self) -> list[tuple[int | None, list[int]]]:
        """(knob value, levels) of each start: one start at every level for a load
        sweep; one start per value, at the one level, for a knob sweep."""
        p = self.params
        if p.axis in KNOBS:
            return [(value, [p.load[0]]) for value in p.values]
        return [(None, list(p.load))]

    def one_start(self, knob_value: int | None, level_values: list[int]) -> None:
        """Start → ready, listening, verified → warm-up → each level → stop (always)."""
        sp = self.launch(knob_value)
        try:
            workers = self.check(sp, knob_value)
            self.beside(neighbour_of(self.params, len(level_values),
                                     str(self.start_record["id"]), self.run))
            warm = self.warm_up(sp, level_values[-1])
            self.start_record.update(status="measuring", warmup=warm)
            self.save()
            self.sweep_levels(sp, knob_value, level_values, workers, warm.get("steady") is False)
            self.start_record["status"] = "complete"
            self.save()
        finally:
            self.alone()
            self.stopped(sp)
            if logcap.capped(sp.log):
                self.note(f"its log {sp.log.name} reached SERVER_LOG_MAX "
                          f"({self.params.server_log_max:,} bytes): what it wrote past that "
                          "was discarded (the log's last lines say how much)")
        progress(f"{self.tag} stopped")

    def beside(self, hog: neighbour.Neighbour | None, say: bool = True) -> None:
        """NEIGHBOUR: its processes run beside this start from now on (its
        levels flagged neighbour), recorded in the start's `neighbour`."""
        if hog is None:
            return
        self.neighbour = hog
        self.start_record["neighbour"] = hog.plan.record()
        self.save()
        if say:
            progress(f"{self.tag} neighbour: {hog.plan.said()}")

    def alone(self) -> None:
        """The neighbour stopped (killed and reaped), before the server; how it
        ended, when it ended before the start did, said and recorded."""
        hog, self.neighbour = self.neighbour, None
        if hog is None:
            return
        why = hog.stop()
        if why and "neighbour" in self.start_record:
            self.start_record["neighbour"]["ended"] = why
            self.note(f"the neighbour ended before the start did: {why}; a level measured "
                      "after that is not flagged neighbour")

    def stopped(self, sp: ServerProcess) -> None:
        """Stop the start's server: its exit code, and what was left of it
        (killed with its cgroup, or its own child still holding the port),
        recorded. A stranger on the port after it stopped is said, and the
        levels measured stand: the next start on the port is refused."""
        try:
            self.start_record["exit_code"] = sp.stop()
        except procs.PortBusy as e:
            self.start_record["exit_code"] = sp.exit_code
            self.save()
            self.note(f"after it stopped, {e}")
            manifest.add_problem(self.run, f"{self.server.name}: after it stopped, {e}")
            return
        if sp.left is not None:
            self.start_record["left"] = sp.left
        self.save()
        if sp.left:
            self.note(f"{self.start_record.get('id')}: {sp.left_said()}")

    def launch(self, knob_value: int | None) -> ServerProcess:
        """The start's record, the server's facts (once per server), the start itself."""
        p = self.params
        knobs = self.knobs(knob_value)
        suffix = f"-rep{self.rep}" + (f"-{p.axis}{knob_value}" if knob_value is not None else "")
        sp = ServerProcess(self.server, self.root, self.cache, self.run.name, knobs,
                           p.server_cpus, self.out / f"server{suffix}.log",
                           self.topology.server, self.topology.connect, p.server_log_max)
        self.start_record = {"id": suffix.lstrip("-"), "rep": self.rep, "knob": knob_value,
                             "workers": knobs.workers,          # None: as shipped
                             "backlog": knobs.backlog,
                             "bind": knobs.bind, "status": "starting"}
        if self.record().facts is None:
            self.save(facts=server_facts(self.server, sp.values, sp.env, p.server_cpus,
                                         self.topology.server),
                      workers=knobs.workers)
        sp.start()
        assert sp.proc is not None
        self.start_record.update({"pid": sp.pid, "command": sp.argv,
                                  **self.topology.server.start_details(sp.proc)})
        self.save(status="running")
        return sp

    def check(self, sp: ServerProcess, knob_value: int | None) -> int:
        """Ready, listening on BIND only with BACKLOG (ss), the contract verified;
        its idle figures and the pools it reports recorded. Returns its worker
        count for the rows: given, else reported (as shipped), else 0."""
        name = self.server.name
        try:
            took = sp.ready()
        except procs.NotReady as e:
            raise SweepError(f"{name} {e}") from None
        try:
            listening = sp.check_listening()
        except ListenError as e:
            self.if_exited(sp)
            raise NotLoaded(f"{e}; not loaded") from None
        try:                                # its first answer: within its ready_timeout
            passed = verify(sp.host, self.params.port, keepalive=self.params.keepalive,
                            first_timeout=max(TIMEOUT_S, self.server.ready_timeout - took))
        except VerifyError as e:
            self.if_exited(sp)
            raise NotLoaded(f"{name} failed verification, not loaded: "
                            f"{contract.listed(e.breaches)}") from e
        sends = self.as_client(sp)          # what it sends, byte for byte (lab.analyse.responses)
        self.expected = answers.Expected.of(sends)
        if isinstance(self.client, Asks):
            passed.append(f"as {self.client.name} sends it")
        idle = sp.sample()
        said = sp.ran_with()                # the pool sizes it reports, as shipped or given
        self.start_record.update(status="verified", ready_s=round(took, 2), verified=passed,
                                 response=sends, listening=listening, ran_with=said,
                                 threads_idle=idle.threads if idle else None,
                                 rss_idle_kb=idle.rss_kb if idle else None)
        if idle is not None and idle.cgroup_mem_kb is not None:
            self.start_record["cgroup_mem_idle_kb"] = idle.cgroup_mem_kb
        self.shared = sp.strangers()
        if self.shared:
            self.note(f"once it was up, {self.shared}: a level measured so is flagged "
                      "port-shared and not ranked")
        self.save()
        what = f" {fmt_value(self.params.axis, knob_value)}," if knob_value is not None else ""
        progress(f"{self.tag}{what} ready in {took:.2f}s, verified: {', '.join(passed)}")
        if sp.knobs.workers is not None:
            return sp.knobs.workers
        return int(str(said["workers"])) if said else 0

    def as_client(self, sp: ServerProcess) -> dict[str, object]:
        """GET /api as the load client sends it (clients.Asks; else the lab's own
        request), checked like the first answer: a server right only for the
        lab's request is not loaded. What it sent, for the start's record."""
        name, port = self.server.name, self.params.port
        if not isinstance(self.client, Asks):
            try:
                return wire(sp.host, port, self.params.keepalive)
            except (VerifyError, OSError) as e:
                return {"error": f"{type(e).__name__}: {e}"}
        sends, found = as_client(sp.host, port, self.client.request(sp.url), self.client.name)
        broken = contract.breaches(found)
        if broken:
            self.start_record["response"] = sends
            raise NotLoaded(f"{name} failed verification, not loaded: {contract.listed(broken)}")
        return sends

    def sweep_levels(self, sp: ServerProcess, knob_value: int | None, level_values: list[int],
                     workers: int, not_steady: bool) -> None:
        """Each level in turn: measured, kept (a row), shown; a level where nothing
        completed ends the start (the server stopped answering)."""
        started = time.monotonic()
        for i, level_value in enumerate(level_values, 1):
            level, row = self.one_level(sp, knob_value, level_value, workers, not_steady)
            rows.append_row(self.run, row)
            self.start_record["levels_done"] = i
            self.save()
            if level.successful == 0:
                at = fmt_value(self.params.load_axis, level_value)
                raise StoppedAnswering(f"{at}: no request completed in {self.params.duration_s}s "
                                       f"({level.failed} failed): {self.server.name} stopped "
                                       "answering")
            eta = (time.monotonic() - started) / i * (len(level_values) - i)
            self.show(row, i, len(level_values), eta)

    def one_level(self, sp: ServerProcess, knob_value: int | None, level_value: int,
                  workers: int, not_steady: bool) -> tuple[Level, Row]:
        """One level: the client run (lab.measure.sweep.level) and its row."""
        level, m = self.measure_level(sp, knob_value, level_value)
        return level, self.row(sp, knob_value, level_value, workers, not_steady, level, m)

    def measure_level(self, sp: ServerProcess, knob_value: int | None, level_value: int,
                      again: bool = True) -> tuple[Level, levelrow.Measured]:
        """The level's client run, once more when the client stopped early
        (`again`; a paired run does not: the other side would not be loaded
        with it), and the answer checked after it."""
        p = self.params
        load = self.load(level_value)
        tag = f"rep{self.rep}-" + (f"{p.axis}{knob_value}-" if knob_value is not None else "")
        tag += f"c{level_value}" if load.concurrency else f"r{level_value}"
        level, m = self.level(sp, load, p.duration_s, tag)
        if level.stopped and sp.alive() and again:
            # Siege sometimes ends a timed run early with nothing failed (and always
            # after 1,024 failures): once more, the first output kept aside
            stem = f"{self.client.name}-{tag}"
            for f in self.out.glob(f"{stem}.*"):
                if re.fullmatch(r"(\.h\d+)?\.(out|err|hist|dist\.out|dist\.err)",
                                f.name[len(stem):]):
                    files.rename(f, f"{stem}.stopped{f.name[len(stem):]}")
            self.note(f"{tag}: {level.stopped}; measured once more (the first output is "
                      f"{self.client.name}-{tag}.stopped.*)")
            level, m = self.level(sp, load, p.duration_s, tag)
        if level.successful:
            m = self.check_slice(sp, load, tag, m)
        return level, self.checked_after(sp, level, m)       # none completed: the sweep ends

    def check_slice(self, sp: ServerProcess, load: Load, tag: str, m: levelrow.Measured
                    ) -> levelrow.Measured:
        """The answers at the level's load, checked by the client itself
        (clients.Checks: every successful answer's status and exact body) for CHECK_S after
        the level, not recorded: a level whose answers there were wrong is
        flagged wrong-answers with the count and the first wrong one. The
        measured level runs without the check (its cost on every answer);
        one client host only."""
        if not isinstance(self.client, Checks) or len(self.topology.clients) > 1:
            return m
        p = self.params
        host = self.topology.clients[0]
        out = self.out / f"{self.client.name}-{tag}.check.out"
        argv = self.client.check_command(sp.url, load, CHECK_S, contract.BODY)
        try:
            ran = host.run_client(argv, p.client_cpus, sp.env, out, CHECK_S + p.client_grace_s,
                                  lambda: not self.halt.is_set() and sp.alive())
        except ServerDied:
            raise self.died(sp, load, f"{tag} check") from None
        except ClientHung as hung:
            self.note(f"{tag}: the check of the answers after the level hung ({hung}): "
                      "not checked")
            return m
        try:
            got = self.client.check_parse(ran.stdout, ran.stderr)
        except ClientError as e:
            self.note(f"{tag}: the check of the answers after the level gave no count ({e})")
            return m
        why = answers.sampled(got, self.client.name, CHECK_S)
        return replace(m, answers=got, wrong_answers="; ".join(
            x for x in (m.wrong_answers, why) if x))

    def row(self, sp: ServerProcess, knob_value: int | None, level_value: int, workers: int,
            not_steady: bool, level: Level, m: levelrow.Measured) -> Row:
        """A measured level as its row of results.csv."""
        p = self.params
        load = self.load(level_value)
        where = levelrow.Where(
            server=self.server.name, rep=self.rep, axis=p.axis,
            value=knob_value if knob_value is not None else level_value,
            concurrency=load.concurrency, offered_rps=float(load.rate) if load.rate else None,
            workers=workers, backlog=sp.knobs.backlog, duration_s=p.duration_s,
            server_cpus=len(p.server_cpus), client_cpus=len(p.client_cpus),
            lab_cpus=self.topology.lab_cpus(p.server_cpus, p.client_cpus),
            not_steady=not_steady)
        return levelrow.make_row(where, level, m, self.client.name)

    def show(self, row: Row, i: int, n: int, eta: float) -> None:
        """The level's progress line."""
        p = self.params
        p99 = f" p99 {row.p99_ms:.2f} ms" if row.p99_ms is not None else ""
        cgroup = (f" (cgroup {row.cgroup_mem_kb / 1024:.1f} MB)"
                  if row.cgroup_mem_kb is not None else "")
        note = f"  {row.flags}" if row.flags else ""
        if row.failed:          # what failed, by kind (lab.record.failures), on the same line
            counts = ", ".join(f"{key} {sum(f.count for f in group):,}" for key, group in
                               failures.by_kind(row.failures()).items())
            note += f"  failed {row.failed:,}" + (f" ({counts})" if counts else "")
            tcp = row.tcp()             # the server's kernel's kinds (lab.record.tcpkinds)
            note += f"  kernel ({tcp.netns}): " + ", ".join(
                f"{x.kind} {x.count:,}" for x in tcpkinds.kinds(tcp)) if tcp else ""
        if row.unranked:        # client stopped early, answers changed: the reason, and so
            note += f"  NOT RANKED: {row.unranked}"
        ran = f"{row.elapsed_s:.2f}s of {p.duration_s}s" if row.has("client-stopped") \
            else f"{p.duration_s}s"
        progress(f"{self.tag} {fmt_value(p.axis, row.value)} ({i}/{n}) "
                 f"{ran}  {row.rate_rps:,.0f} req/s  {row.resp_ms:.2f} ms{p99}  "
                 f"rss {row.rss_end_kb / 1024:.1f} MB{cgroup}  cpu server "
                 f"{row.server_cpu_pct:.0f}% client {row.client_cpu_pct:.0f}%  "
                 f"ETA {fmt_eta(eta)}{note}")

    def if_exited(self, sp: ServerProcess) -> None:
        """SweepError when the server has exited (right after it became ready):
        what failed after that was only its absence (connection refused)."""
        gone = sp.exited()
        if gone:
            assert sp.proc is not None
            self.start_record["exit_code"] = sp.proc.returncode
            raise SweepError(f"{self.server.name} {gone} right after it became ready "
                             f"(--- last lines of {sp.log}:\n{procs.tail(sp.log)})")

    def value_failed(self, knob_value: int, e: NotLoaded | StoppedAnswering) -> None:
        """One knob value a server cannot serve is a result, and each value is
        a start of its own: the other values are still measured; the run is
        incomplete. Not loaded: it failed the contract at that value (AWS with
        one task closes every connection); failed: it stopped answering under
        the load (AWS with 2 tasks and 32 clients closing every connection)."""
        not_loaded = isinstance(e, NotLoaded)
        self.start_record["status"] = "not loaded" if not_loaded else "failed"
        self.save()
        at = fmt_value(self.params.axis, knob_value)
        self.note(f"{at} {'not loaded' if not_loaded else 'failed'}: {e}")
        manifest.add_problem(self.run, f"{self.server.name} {at}: {e}")

    # ---- warm-up ------------------------------------------------------------
    def warm_up(self, sp: ServerProcess, top: int) -> dict[str, Any]:
        """Load at the top level, not recorded: a fixed time, or (auto) slices
        of WARMUP_SLICE_S until the start's own series (req/s, server CPU per
        request and, for a JVM, its JIT compiler threads' CPU) show a steady
        state by their change points (lab.analyse.warmup), for at most
        WARMUP_MAX of wall time; the start's warm-up class is recorded.

        An open-loop client warms up closed-loop instead (as fast as it can
        with WARMUP_WORKERS connections): an offered rate beyond the server's
        capacity only builds a queue, which is no steady state to wait for."""
        p = self.params
        load = self.warm_load(top)
        at = self.warm_at(top)
        watch = self.jit_watch(sp)
        if not p.warmup_auto:
            if not p.warmup_s:
                return {"mode": "none"}
            if watch:
                watch.take()
            level, _ = self.level(sp, load, p.warmup_s, f"rep{self.rep}-warmup")
            if watch:
                watch.take()
            progress(f"{self.tag} warm-up {p.warmup_s}s at {at}: "
                     f"{level.rate_rps:,.0f} req/s (not recorded){jit_said(watch)}")
            return {"mode": "fixed", "seconds": p.warmup_s, "rate_rps": round(level.rate_rps),
                    **(watch.record(levelrow.jit_quiet(watch.per_s)) if watch else {})}
        got = WarmSeries(watch)
        t0 = time.monotonic()
        # slices while the next one still fits under the cap, in wall time
        # (a slice lasts longer than its nominal length when the server lags)
        while not got.settled() and time.monotonic() - t0 + WARMUP_SLICE_S <= p.warmup_max_s:
            got.add(*self.level(sp, load, WARMUP_SLICE_S, f"rep{self.rep}-warmup{got.n + 1}"))
        return self.warmed("auto", got, time.monotonic() - t0, at)

    def warm_load(self, top: int) -> Load:
        return self.load(top) if self.params.load_axis == "concurrency" else \
            Load(concurrency=WARMUP_WORKERS)

    def warm_at(self, top: int) -> str:
        return fmt_value(self.params.load_axis, top) if self.params.load_axis == "concurrency" \
            else f"{WARMUP_WORKERS} connections, as fast as the client can"

    def warmed(self, how: str, got: WarmSeries, took: float, at: str) -> dict[str, Any]:
        """WARMUP=auto's end, said and recorded: the start's class (flat,
        warm-up, slowdown, no steady state: lab.analyse.warmup) and, where it
        became steady, after how long; a start with no steady state within
        WARMUP_MAX has every level flagged not-steady. `how`: "auto", or
        "auto, together" (a duet's sides, lab.measure.pair)."""
        p = self.params
        got.finish()
        j = got.judged()
        shown = " ".join(f"{r / 1000:.1f}k" for r in got.rates[-6:])
        after = got.steady_after_s()
        if j.steady:
            said = "flat" if j.kind is warmup.WarmClass.FLAT else \
                f"{j.kind.value}, steady after {after:.0f}s"
            progress(f"{self.tag} warm-up {how}: {said} at {at} (by change points; last slices "
                     f"{shown} req/s; not recorded){jit_said(got.watch, got)}")
        else:
            progress(f"{self.tag} warning: warm-up {how} found no steady state within "
                     f"WARMUP_MAX={p.warmup_max_s}s at {at} ({j.kind.value}"
                     f"{', the JIT still compiling' if j.jit_busy else ''}; last slices {shown} "
                     f"req/s{jit_said(got.watch, got)}): every level of this start is flagged "
                     "not-steady; a longer WARMUP_MAX may reach one")
        watch = got.watch
        return {"mode": "auto", "steady": j.steady, "seconds": round(took, 1),
                "slices": got.n, "slice_rates": got.rates, "cap_s": p.warmup_max_s,
                "warm_class": j.kind.value,
                "steady_after_s": None if after is None else round(after, 1),
                "series_class": {k: v.value for k, v in j.by.items()},
                "slice_cpu_us": got.cpu_us, "slice_s": WARMUP_SLICE_S,
                **({"slice_jit_pct": [round(100 * x, 1) for x in got.jit_share]}
                   if got.jit_share is not None else {}),
                **({"together": True} if "together" in how else {}),
                **(watch.record(not j.jit_busy) if watch else {})}

    def checked_after(self, sp: ServerProcess, level: Level, m: levelrow.Measured
                      ) -> levelrow.Measured:
        """The answer checked again after a level (a server may change it
        mid-run): a level whose answers changed is flagged and not ranked. And
        the port's holders: a level with a stranger on the port before it or
        after it (two runs on one PORT, SO_REUSEPORT) is flagged port-shared."""
        broken = recheck(sp.host, self.params.port) if level.successful else []
        if broken:
            m = replace(m, answer_changed="after the level, " + contract.one_line(broken))
        before, self.shared = self.shared, sp.strangers() if sp.alive() else ""
        if before or self.shared:
            m = replace(m, port_shared="; ".join(dict.fromkeys(
                x for x in (before and f"before the level, {before}",
                            self.shared and f"after the level, {self.shared}") if x)))
        return m

    def jit_watch(self, sp: ServerProcess) -> jit.Watch | None:
        """For a JVM server, its JIT's compilations read between warm-up slices."""
        if not jit.is_jvm(self.server):
            return None
        return jit.Watch(lambda: jit.read(sp.where, sp.pid, self.server.run.dir, sp.env,
                                          self.params.server_cpus))

    # ---- one client run -----------------------------------------------------
    def level(self, sp: ServerProcess, load: Load, duration: int, tag: str
              ) -> tuple[Level, levelrow.Measured]:
        """Run the client once at `load`, sampling the server and the host.
        Several client hosts share the load and run at the same time
        (run_clients); their figures are combined (levelrow.combine)."""
        p = self.params
        topo = self.topology
        several = len(topo.clients) > 1
        shares = [(host, share) for host, share in zip(topo.clients,
                                                       clienthosts.split_load(load, len(topo.clients)))
                  if share.concurrency or share.rate]
        outs = [self.out / (f"{self.client.name}-{tag}.h{i}.out" if several
                            else f"{self.client.name}-{tag}.out") for i in range(len(shares))]
        files.make_dirs(self.out, self.run)     # still no link in its place (UnsafePath)
        assert sp.proc is not None
        beside = self.neighbour is not None and self.neighbour.running()
        for attempt in (1, 2):
            busy0, steal0 = topo.cpu_times(p.server_cpus, p.client_cpus)
            # the kernel's, where the server's sockets are; not under PAIRED: both
            # servers share the namespace, so no count would be this one's
            tcp0 = None if p.paired else topo.server.tcp_counters()
            jit0 = self.compilers(sp)
            try:
                with topo.server.sampler(sp.proc, sp.knobs.port) as sampler:
                    runs = self.run_clients(sp, shares, duration, outs)
                jit_s = procfs.compiler_cpu_s(jit0, self.compilers(sp))
                break
            except ServerDied:
                raise self.died(sp, load, tag) from None
            except ClientHung as hung:
                if attempt == 2:
                    raise SweepHung(str(hung)) from None
                # Siege sometimes overruns or hangs at the end of a timed run
                # (JoeDog/siege#66, #178): keep its output, note it, retry once.
                for out in outs:
                    for suffix in (".out", ".err"):
                        if out.with_suffix(suffix).exists():
                            files.rename(out.with_suffix(suffix),
                                         out.with_suffix(".hung" + suffix).name)
                self.note(f"{tag}: {self.client.name} hung ({hung}); stopped and retried once")
        busy1, steal1 = topo.cpu_times(p.server_cpus, p.client_cpus)
        tcp = None if tcp0 is None else \
            tcpkinds.measured(tcp0, topo.server.tcp_counters(), topo.tcp_shared())
        left = [x for ran in runs for x in ran.left]
        if left:
            self.note(f"{tag}: {', '.join(left)} outlived {self.client.name} outside its "
                      "process group: killed with its cgroup")
        if not sp.alive():
            raise self.died(sp, load, tag)
        try:
            host_levels = [self.client.parse(ran.stdout, ran.stderr) for ran in runs]
        except ClientError as e:
            raise SweepError(f"{tag}: {e}") from e
        # a rate is a level's only when the client ran its length, by its own clock
        host_levels = [replace(lv, stopped=levelrow.ran_short(lv, duration, self.client.name))
                       for lv in host_levels]
        # the answers' size, each host's count against the verified answer (lab.analyse.answers)
        wrong = "; ".join(f"{ran.host}: {why}" if several else why for ran, why in (
            (ran, answers.size_check(lv, self.expected, share.concurrency, self.client.name))
            for ran, lv, (_, share) in zip(runs, host_levels, shares)) if why)
        if "warmup" not in tag:
            self.write_series(tag, runs, sampler.points, sampler.queue.points)
        hosts_pct = tuple(100 * ran.cpu_s / (len(p.client_cpus) * max(ran.wall_s, 1e-9))
                          for ran in runs) if several else ()
        merged: Histogram | None = None
        if several:
            merged, why = clienthosts.merged(self.client, [h for h, _ in shares], runs, outs,
                                             self.run, p.client_cpus, sp.env)
            if why:
                self.note(f"{tag}: {why}")
        combined = levelrow.combine(host_levels, merged)
        if several:
            self.record_hosts(tag, [share for _, share in shares], runs, host_levels, hosts_pct,
                              combined.percentiles)
        last = sampler.last
        why = sampler.memory_error if last is None or last.pss_kb is None else ""
        if why and self.start_record.get("memory_split") != why:
            self.start_record["memory_split"] = why     # shown as "unavailable" with this
        queue = sampler.queue
        if queue.error and self.start_record.get("accept_queue") != queue.error:
            self.start_record["accept_queue"] = queue.error     # why its columns are empty
        return combined, levelrow.Measured(
            server_cpu_s=sampler.cpu_s, rss_end_kb=last.rss_kb if last else 0,
            rss_peak_kb=sampler.rss_peak_kb, threads_end=last.threads if last else 0,
            threads_peak=sampler.threads_peak, client_cpu_s=sum(ran.cpu_s for ran in runs),
            wall_s=max(ran.wall_s for ran in runs),
            host_busy_s=busy1 - busy0, host_steal_s=steal1 - steal0,
            sampler_cpu_s=sampler.own_cpu_s, time_wait=topo.time_wait(),
            client_hosts_cpu_pct=hosts_pct,
            cgroup_mem_kb=last.cgroup_mem_kb if last else None,
            cgroup_mem_peak_kb=sampler.cgroup_mem_peak_kb,
            pss_kb=last.pss_kb if last else None,
            private_kb=last.private_kb if last else None,
            shared_kb=last.shared_kb if last else None,
            anon_kb=last.anon_kb if last else None,
            server_sys_s=sampler.sys_s,
            client_stopped_s=max(ran.stopped_s for ran in runs),
            sampler_gap_s=series.longest_gap(sampler.points),
            wrong_answers=wrong, accept_queue_max=queue.max,
            accept_queue_backlog=queue.backlog, accept_queue_samples=queue.samples,
            accept_queue_full=queue.full, tcp=tcp, neighbour=beside,
            server_jit_s=None if jit_s is None else min(jit_s, sampler.cpu_s))

    def compilers(self, sp: ServerProcess) -> dict[tuple[int, str], int] | None:
        """A JVM server's JIT compiler threads' CPU so far, where its process is
        on this host (lab.host.procfs.compiler_threads); None elsewhere."""
        if not jit.is_jvm(self.server) or sp.proc is None or sp.where.name == "ssh":
            return None         # ssh: its PID is another host's
        return procfs.compiler_threads(sp.pid)

    def write_series(self, tag: str, runs: list[ClientRun], points: list[series.Point],
                     queue: list[tuple[float, int]]) -> None:
        """The level's per-second series (lab.record.series): the client's req/s where
        it gives one (summed over client hosts), the sampler's CPU and RSS, and the
        highest accept queue of each second."""
        rps: list[float] | None = None
        if isinstance(self.client, PerSecond):
            each = [self.client.per_second(ran.stdout) for ran in runs]
            rps = [round(sum(x[i] for x in each if i < len(x)), 1)
                   for i in range(max((len(x) for x in each), default=0))]
        server = series.server_per_second(points)
        if rps or server:
            series.write(series.series_file(self.run, self.server.name, tag), rps, server,
                         self.run, series.queue_per_second(points, queue, len(server)))

    def died(self, sp: ServerProcess, load: Load, tag: str) -> SweepError:
        """The server exited during a client run: the level (or warm-up) and its
        exit status go into the start's record and the message."""
        assert sp.proc is not None
        code = sp.proc.poll()
        deadline = time.monotonic() + DIED_WAIT_S     # its end seen before its status
        while code is None and time.monotonic() < deadline:    # was collected: await it
            time.sleep(0.05)
            code = sp.proc.poll()
        at = (f"the warm-up at {fmt_value(self.params.load_axis, load.concurrency or load.rate)}"
              if "warmup" in tag else fmt_value(self.params.load_axis,
                                                load.concurrency or load.rate))
        how = ("status unknown" if code is None else
               f"killed by {signal_name(-code)}" if code < 0 else f"exit code {code}")
        self.start_record.update(died_at=at, exit_code=code)
        return SweepError(f"the server exited during {at} ({tag}): {how}")

    def run_clients(self, sp: ServerProcess, shares: list[tuple[ClientHost, Load]],
                    duration: int, outs: list[Path]) -> list[ClientRun]:
        """Each client host's run of its share, to their end. One host: run
        here and now. Several: released together (lab.measure.clienthosts)."""
        p = self.params
        limit = duration + p.client_grace_s
        if len(shares) == 1:
            [(host, share)] = shares
            return [host.run_client(self.client.command(sp.url, share, duration), p.client_cpus,
                                    sp.env, outs[0], limit,
                                    lambda: not self.halt.is_set() and sp.alive())]
        return clienthosts.run_together(
            [(host, clienthosts.command(self.client, sp.url, share, duration))
             for host, share in shares],
            p.client_cpus, sp.env, outs, limit, lambda: not self.halt.is_set() and sp.alive())

    def record_hosts(self, tag: str, shares: list[Load], runs: list[ClientRun],
                     host_levels: list[Level], cpu_pct: tuple[float, ...],
                     percentiles: str) -> None:
        """Each client host's part of one level, a line in <server>/client-hosts.jsonl."""
        said = clienthosts.record(self.out / "client-hosts.jsonl", self.run,
                                  self.start_record.get("id"), tag, shares, runs, host_levels,
                                  cpu_pct, percentiles)
        if said:
            self.note(f"{tag}: {said}")


def neighbour_of(params: Params, levels: int, seed: str, run: Path
                 ) -> neighbour.Neighbour | None:
    """NEIGHBOUR's processes started beside a start (None: NEIGHBOUR=0);
    SweepError when they cannot be."""
    try:
        return neighbour.beside(params, levels, seed, run.name)
    except neighbour.NeighbourError as e:
        raise SweepError(str(e)) from None


def jit_said(watch: jit.Watch | None, got: WarmSeries | None = None) -> str:
    """The JIT's part of a warm-up's progress line."""
    share = "" if got is None or not got.jit_share else \
        f"; JIT threads {100 * got.jit_share[-1]:.0f}% of its CPU in the last slice"
    if watch is None:
        return share
    if watch.unavailable:
        return f"; JIT compilations unavailable: {watch.error}{share}"
    rate = "" if watch.per_s is None else f", {watch.per_s:g}/s at the end"
    return f"; JIT {watch.compiles:,} compilations{rate}{share}"


class WarmSeries:
    """A start's WARMUP=auto slices as its series: req/s, server CPU µs per
    request without the JIT compiler threads', and the JIT threads' share of
    the server's CPU (None: not read: not a JVM, another host). jcmd's
    compile count is read every warmup.TAIL slices (a JVM's start costs the
    CPUs), not after each."""

    def __init__(self, watch: jit.Watch | None) -> None:
        self.watch = watch
        self.rates: list[float] = []
        self.cpu_us: list[float] = []
        self.jit_share: list[float] | None = []
        if watch:
            watch.take()

    @property
    def n(self) -> int:
        return len(self.rates)

    def add(self, level: Level, m: levelrow.Measured) -> None:
        self.rates.append(round(level.rate_rps, 1))
        jit_s = m.server_jit_s
        own = m.server_cpu_s - (jit_s or 0.0)
        self.cpu_us.append(round(1e6 * own / level.successful, 2) if level.successful else 0.0)
        if jit_s is None or self.jit_share is None:
            self.jit_share = None
        else:
            self.jit_share.append(jit_s / m.server_cpu_s if m.server_cpu_s > 0 else 0.0)
        if self.watch and self.n % warmup.TAIL == 0:
            self.watch.take()

    def judged(self) -> warmup.Judged:
        return warmup.judge(self.rates, self.cpu_us, self.jit_share,
                            rate_step=1 / WARMUP_SLICE_S)

    def settled(self) -> bool:
        return self.n >= warmup.LEAST and self.judged().steady

    def finish(self) -> None:
        """The last jcmd reading, where the last slice had none."""
        if self.watch and self.n % warmup.TAIL:
            self.watch.take()

    def steady_after_s(self) -> float | None:
        """Seconds of warm-up before its steady state began (None: none)."""
        j = self.judged()
        return None if j.steady_from is None else j.steady_from * WARMUP_SLICE_S
