"""What the processes of one test session share: the folder they meet in, whose
turn it is, and the servers' build in the background.

`make test` runs the suite on three pytest-xdist workers where that plugin is
installed (one process otherwise). The main process (pytest's controller, or
the only process) makes the session's folder and hands it to each worker.

- Ranks: each process that collects writes every test's kinds.rank there
  (write_ranks): pytest-xdist's main process collects nothing, and hands
  work out (file_scheduler) and starts the build by these.
- Turns: a quiet test judges measurements, so it runs alone: it holds the
  folder's lock exclusively while every other test holds it shared.
- Builds: `built` and the clients' installs write the same LAB_CACHE, one at
  a time (`one_build`), after the background build.
- The background build (Prebuild) runs in the main process; a test that needs
  the servers built, in any process, waits until the folder says it ended.
"""
from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import kinds

DONE = "prebuild.json"          # written when the background build ended
STARTED = "prebuild.started"
RANKS = "ranks.json"            # node id -> kinds.rank, from the collection


class Session:
    """The session's folder (set by the main process, given to workers)."""
    top: Path | None = None

    @classmethod
    def path(cls, name: str) -> Path:
        assert cls.top is not None, "the session's folder is set in pytest_configure"
        return cls.top / name


def write_ranks(ranks: dict[str, kinds.Rank]) -> None:
    """The collection's ranks, for the processes that did not collect (each
    worker writes the same)."""
    tmp = Session.path(f"{RANKS}.{os.getpid()}")
    tmp.write_text(json.dumps(ranks))
    tmp.rename(Session.path(RANKS))


def read_ranks() -> dict[str, kinds.Rank]:
    """write_ranks' map ({} before any collection ended)."""
    try:
        data = json.loads(Session.path(RANKS).read_text())
    except FileNotFoundError:
        return {}
    return {nodeid: (bool(q), int(k), int(long)) for nodeid, (q, k, long) in data.items()}


@contextmanager
def locked(name: str, exclusive: bool) -> Iterator[None]:
    """flock on the session folder's file `name`: exclusive, or shared."""
    with Session.path(name).open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def turn(alone: bool) -> AbstractContextManager[None]:
    """A test's turn: alone (no other test runs meanwhile) or beside others."""
    return locked("turn.lock", exclusive=alone)


def one_build() -> AbstractContextManager[None]:
    """One writer of LAB_CACHE at a time: a build, a client's install."""
    return locked("build.lock", exclusive=True)


class Prebuild:
    """The whole suite (`make test`) builds every repository server in the
    background while its unit and fault tests run, as `python3 -m lab deps`
    and `python3 -m lab build` with SERVER=all, the way a user's `make build`
    does. A cold build (the Ada toolchain's bootstrap, AWS, ASF, the Java
    servers) takes minutes, and everything real waits for it, so it runs at
    the tests' own priority: at idle priority (SCHED_IDLE) beside two busy
    workers it took 375 s instead of 245, and tests waited 206 s for it.
    What needs the servers built or the host quiet waits for it to end
    (`wait`): the real-server tests, `built`, and the quiet tests.
    A session without every test file (one file alone, -m unit) builds
    nothing in the background."""
    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.thread: threading.Thread | None = None
        self.stopping = False
        self.waited_s = 0.0               # this process's, not yet reported

    def start(self, env: dict[str, str], root: Path) -> None:
        """In the main process: the build in a thread of its own; the folder
        says it started now and, when it ends, how (DONE)."""
        Session.path(STARTED).touch()
        self.thread = threading.Thread(target=self._run, args=(env, root), daemon=True)
        self.thread.start()

    def _run(self, env: dict[str, str], root: Path) -> None:
        t0 = time.monotonic()
        log = Session.path("build.log")
        code = 0
        with log.open("wb") as out:
            for step in ("deps", "build"):
                if self.stopping:
                    code = -1
                    break
                proc = self.proc = subprocess.Popen(
                    [sys.executable, "-m", "lab", step], cwd=root, env=env, stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True)
                code = proc.wait()
                if code != 0:            # what fails is told by `built`
                    break
        self.proc = None
        done = {"code": code, "took_s": time.monotonic() - t0, "log": str(log)}
        tmp = Session.path(DONE + ".tmp")
        tmp.write_text(json.dumps(done))
        tmp.rename(Session.path(DONE))

    @staticmethod
    def result() -> dict[str, object] | None:
        """How the background build ended; None if none ran or it runs."""
        if Session.top is None or not Session.path(DONE).exists():
            return None
        data: dict[str, object] = json.loads(Session.path(DONE).read_text())
        return data

    def wait(self) -> None:
        """Until the background build ended (at once if none runs). Its
        failures are not told here: `built` builds again and fails saying why."""
        if Session.top is None or not Session.path(STARTED).exists():
            return
        t0 = time.monotonic()
        while not Session.path(DONE).exists():
            time.sleep(0.5)
        self.waited_s += time.monotonic() - t0

    def stop(self) -> None:
        """In the main process: the build stopped, if it still runs."""
        self.stopping = True
        proc = self.proc
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        if self.thread is not None:
            self.thread.join(timeout=60)


def scope_of(nodeid: str, ranks: dict[str, kinds.Rank]) -> str:
    """The work unit a test goes to a worker in: its file's, but for the quiet
    tests (a unit of their own per file, after every other unit) and the
    tests of the files of kinds.SPLIT (a unit each)."""
    path = nodeid.partition("::")[0]
    if ranks[nodeid][0]:
        return f"{path}::quiet"
    return nodeid if kinds.split_nodeid(nodeid)[0] in kinds.SPLIT else path


def unit_rank(nodeids: list[str], ranks: dict[str, kinds.Rank]) -> kinds.Rank:
    """Where a unit goes in the workers' queue: kinds.rank, with the last kind
    its tests hold (test_probe.py's real-server tests wait for the build with
    the other real-server files, not with the units)."""
    return max(ranks[n] for n in nodeids)


# The workers that run the unit and fault tests while the background build
# runs. The others (make test's third) start on the real-server units: they
# wait for the build without taking a CPU from it, then work beside the first
# two, whose real-server tests leave a third of the CPUs idle (each waits on
# its levels' timers).
EARLY = 2


def late(worker: str) -> bool:
    """A worker ("gw2") that starts on the real-server units."""
    return int(worker.removeprefix("gw")) >= EARLY


def real(rank: kinds.Rank) -> bool:
    """A unit of real-server tests, outside the quiet ones."""
    return not rank[0] and rank[1] == kinds.ORDER.index("real_server")


def file_scheduler(config: Any, log: Any) -> Any:
    """pytest-xdist's loadfile (each file whole on one worker), changed in
    three ways: its units are scope_of's, not whole files; they go out by
    unit_rank, then in the collection's order, not by their count of tests;
    and a worker gets its next unit only when its last test is about to run
    (a worker runs a test once it knows the next one, or that none is left),
    so that no unit waits queued behind a long one while the other worker has
    nothing. The quiet tests come last: the first worker to reach
    them waits for its turn until the others' last tests outside them end
    (LONG and SPLIT keep those last ones short). A late worker takes the
    real-server units first (EARLY)."""
    from xdist.scheduler import LoadFileScheduling

    class InOrder(LoadFileScheduling):  # type: ignore[misc]
        def schedule(self) -> None:
            if hasattr(self.config.option, "loadscopereorder"):   # by count of tests
                self.config.option.loadscopereorder = False
            super().schedule()

        ranks: dict[str, kinds.Rank] = {}

        def _split_scope(self, nodeid: str) -> str:
            if nodeid not in self.ranks:      # the workers wrote them as they collected
                self.ranks = read_ranks()
            return scope_of(nodeid, self.ranks)

        def _assign_work_unit(self, node: Any) -> None:
            ranks = {scope: unit_rank(list(tests), self.ranks)
                     for scope, tests in self.workqueue.items()}
            if late(node.gateway.id):
                ranks = {s: r for s, r in ranks.items() if real(r)} or ranks
            # min: the first of the lowest rank, in the collection's order
            first = min(ranks, key=ranks.__getitem__)
            self.workqueue.move_to_end(first, last=False)
            super()._assign_work_unit(node)

        def _reschedule(self, node: Any) -> None:
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            # a worker runs a test once it knows the next one: 1 left is its last
            if self._pending_of(self.assigned_work[node]) <= 1:
                self._assign_work_unit(node)

    return InOrder(config, log)
