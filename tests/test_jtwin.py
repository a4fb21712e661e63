"""tests/servers/jtwin, the JVM twin of the twin server: built the way a
user's `make build` builds it (`lab deps`, then `lab build`: javac of its one
source file with the lab's LabEnv), started as the sweep starts it, and held
to what a paired run needs of it: the lab's contract (lab.measure.verify, in
both connection modes), BIND and BACKLOG as `ss` shows them, its pool said
in its `lab-workers:` line, the JIT readable by jcmd, and the burn it is
built around: at least JTWIN_CPU_US of the server's CPU a request."""
from __future__ import annotations

import glob
import http.client
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import suite
from conftest import FAKES, ROOT, free_port, lab, lab_env
from lab.measure import jit, verify
from lab.measure.launch import Knobs, ServerProcess, placeholders
from lab.setup.servers import Server, discover, is_built, lookup

pytestmark = pytest.mark.fault

CPUS = tuple(sorted(os.sched_getaffinity(0)))
FIRST_ANSWER_S = 20.0            # a cold JVM's first request (verify's first_timeout)


def cache_dir() -> Path:
    return Path(os.environ.get("LAB_CACHE") or ROOT / ".cache").resolve()


@pytest.fixture(scope="module")
def jtwin(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Server]:
    """jtwin and jtwin.heavier, built by the lab's own steps: `lab deps`
    installs the JDK where javac is missing (as root; as another user the
    lab's apt-get line is the skip's reason), `lab build` runs javac."""
    env = lab_env(tmp_path_factory.mktemp("jtwin-build"), SERVER="jtwin jtwin.heavier")
    with suite.one_build():
        deps = lab(env, "deps", timeout=900)
        if deps.returncode == 2 and os.geteuid() != 0:
            pytest.skip(deps.stderr.strip()[-300:])
        assert deps.returncode == 0, deps.stderr[-3000:]
        made = lab(env, "build", timeout=300)
    assert made.returncode == 0, made.stderr[-3000:]
    found = discover(ROOT, str(FAKES))
    servers = {n: lookup(found, n) for n in ("jtwin", "jtwin.heavier")}
    values = placeholders(ROOT, cache_dir(), Knobs(0, None, 512, "127.0.0.1"))
    assert all(is_built(s, values) for s in servers.values()), made.stderr[-2000:]
    return servers


@contextmanager
def started(server: Server, knobs: Knobs, log: Path) -> Iterator[ServerProcess]:
    """Started as the sweep starts it, ready; always stopped after."""
    proc = ServerProcess(server, ROOT, cache_dir(), "test-jtwin", knobs, CPUS, log)
    proc.start()
    try:
        proc.ready()
        yield proc
    finally:
        proc.stop()


def cpu_ns(pid: int) -> int:
    """The process's CPU time so far, every thread's (schedstat: ns, no ticks)."""
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            total += int(Path(path).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue                # a thread that ended meanwhile
    return total


def test_the_manifest_pairs_a_base_with_five_percent_more() -> None:
    """The variant differs from the base by its burn alone: 213 against
    200 us, 5% of a request's ~270 us in all (server.toml's arithmetic)."""
    found = discover(ROOT, str(FAKES))
    base, heavier = found["jtwin"], found["jtwin.heavier"]
    assert base.language == "Java" and jit.is_jvm(base)
    assert base.env == {"JTWIN_CPU_US": "200"} and heavier.env == {"JTWIN_CPU_US": "213"}
    assert (heavier.build, heavier.artifact, heavier.run) == (base.build, base.artifact, base.run)
    assert base.workers_default == 4 and base.has_workers and not base.docker
    assert set(base.requires.values()) == {"openjdk-17-jdk-headless"}


def test_jtwin_meets_the_contract_where_the_lab_asks(jtwin: dict[str, Server],
                                                     tmp_path: Path) -> None:
    server = jtwin["jtwin"]
    knobs = Knobs(port=free_port(), workers=2, backlog=100, bind="127.0.0.1")
    with started(server, knobs, tmp_path / "jtwin.log") as proc:
        assert proc.check_listening() == {"address": "127.0.0.1", "backlog": 100}
        said = proc.ran_with()
        assert said is not None and said["workers"] == 2, said
        passed = verify.verify("127.0.0.1", knobs.port, keepalive=False,
                               first_timeout=FIRST_ANSWER_S)
        assert passed == ["GET /api 200", "Content-Type", "Content-Length 27", "exact body",
                          "keep-alive", "404 elsewhere", "Connection: close", "closed after it"]
        sent = verify.wire("127.0.0.1", knobs.port, keepalive=True)
        assert sent["status_line"] == "HTTP/1.1 200 OK" and sent["body_bytes"] == 27
        reading = jit.read(proc.where, proc.pid, server.run.dir, proc.env, CPUS)
        assert reading.compiles is not None and reading.compiles > 0, reading.error

        # The burn: 20 requests on one kept-alive connection cost the JVM at
        # least 20 x 200 us of CPU (its own work comes on top).
        conn = http.client.HTTPConnection("127.0.0.1", knobs.port, timeout=10)
        try:
            before = cpu_ns(proc.pid)
            for _ in range(20):
                conn.request("GET", "/api")
                assert conn.getresponse().read() == verify.BODY
            spent = cpu_ns(proc.pid) - before
        finally:
            conn.close()
        assert spent >= 20 * 200_000, f"{spent / 20 / 1000:.0f} us of CPU a request"


def test_a_bad_burn_stops_the_start_naming_the_variable(jtwin: dict[str, Server]) -> None:
    server = jtwin["jtwin"]
    env = {**os.environ, "PORT": str(free_port()), "JTWIN_CPU_US": "-1"}
    out = subprocess.run(list(server.run.argv), cwd=server.run.dir, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "JTWIN_CPU_US must be a number of microseconds from 0 to 1000000, got '-1'" \
        in out.stderr
