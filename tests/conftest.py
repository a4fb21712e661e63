"""Shared helpers: run the lab as a user would, find what it left behind."""
from __future__ import annotations

import json
import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import kinds
import suite

ROOT = Path(__file__).resolve().parents[1]
FAKES = ROOT / "tests" / "servers"
MIRROR = "../shared/ada-sources"     # ADA_SOURCES for the tests (relative to ROOT)
sys.path.insert(0, str(ROOT))


def same_interpreter() -> Path:
    """Every `python3` the suite starts (the lab's steps, make's recipes, the
    test doubles) is the interpreter that runs the suite, with its bytecode
    cached for the session: a version manager's shim (pyenv: a bash script,
    0.2-0.3 s a start here) and PYTHONDONTWRITEBYTECODE (every module compiled
    again in each step) took a third of a short fault run. The folder holds a
    `python3` that execs sys.executable (a venv stays the venv) and the
    bytecode; pytest_unconfigure removes it."""
    top = Path(tempfile.mkdtemp(prefix="lab-tests-python-"))
    (top / "bin").mkdir()
    python = top / "bin" / "python3"
    python.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} \"$@\"\n")
    python.chmod(0o755)
    os.environ["PATH"] = f"{top / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(top / "bytecode")
    return top


INTERPRETER = same_interpreter()


def free_port() -> int:
    """A free port below the ephemeral range: clients' outgoing connections
    (thousands with connection close) take ephemeral ports, and one of them
    can hold a port that bind(0) had just handed out."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(200):
        port = rng.randrange(20000, min(low, 32000))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port below the ephemeral range")


def lab_env(tmp: Path, **settings: str) -> dict[str, str]:
    """The user's environment plus the settings; results go to tmp."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")}
    # PROBE=0: the robustness probe has tests of its own (test_probe, test_e2e)
    env.update(RESULTS=str(tmp / "results"), LAB_SERVER_PATH=str(FAKES), PROBE="0")
    if "LAB_CACHE" in os.environ:
        env["LAB_CACHE"] = os.environ["LAB_CACHE"]
    if "ADA_SOURCES" not in env and (ROOT / MIRROR).is_dir():
        env["ADA_SOURCES"] = MIRROR              # the pinned Ada archives, offline
    env.update(settings)
    return env


def repository_env(tmp: Path, **settings: str) -> dict[str, str]:
    """lab_env for the repository's servers alone (no test doubles)."""
    env = lab_env(tmp, **settings)
    del env["LAB_SERVER_PATH"]
    return env


def until(check: Callable[[], object], deadline_s: float = 60, why: str = "") -> None:
    """Poll check() until it is true; fail after deadline_s, saying what was awaited."""
    end = time.monotonic() + deadline_s
    while not check():
        assert time.monotonic() < end, f"not within {deadline_s:g} s: {why or 'timed out'}"
        time.sleep(0.05)


def lab(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lab", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


# Siege sometimes hangs at the end of a timed run; the lab stops it after
# CLIENT_GRACE past DURATION and runs the level again. The tests' levels last
# a second or a few: 10 s past them is a hang, where the default waits 45 s.
GRACE = {"CLIENT_GRACE": "10s"}


def bench(env: dict[str, str], timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "run-benchmark.sh")], cwd=ROOT, env={**GRACE, **env},
                          capture_output=True, text=True, timeout=timeout)


def run_folders(tmp: Path) -> list[Path]:
    results = tmp / "results"
    return sorted(p for p in results.iterdir() if p.is_dir()) if results.exists() else []


def server_sessions(run: Path) -> set[int]:
    """Session ids of the servers a run started (each server leads its own)."""
    try:
        servers = json.loads((run / "manifest.json").read_text())["servers"]
    except (OSError, ValueError, KeyError):
        return set()
    return {start["pid"] for s in servers.values() for start in s.get("starts", [])
            if "pid" in start}


def another_results(environ: bytes, run: Path) -> bool:
    """The process's RESULTS is not the run's folder: a run of another test
    that started in the same second under the same name (run ids are the
    time and the servers: two workers' runs of nginx can share one)."""
    for entry in environ.split(b"\0"):
        if entry.startswith(b"RESULTS="):
            given = Path(entry[len(b"RESULTS="):].decode(errors="replace"))
            return (given if given.is_absolute() else ROOT / given).resolve() != \
                run.parent.resolve()
    return False


def leftovers(run: Path) -> list[str]:
    """Live processes the run started: carrying its LAB_RUN marker (nginx
    overwrites its environment with its title) or in a server's session."""
    needle = f"LAB_RUN={run.name}".encode() + b"\0"
    sessions = server_sessions(run)
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            stat = Path(f"/proc/{pid}/stat").read_text()
            session = int(stat[stat.rindex(")") + 2:].split()[3])
            if (needle in environ and not another_results(environ, run)) or session in sessions:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                found.append(f"{pid}: {cmd.decode(errors='replace')}")
        except OSError:
            continue
    return found


@pytest.fixture
def port() -> int:
    return free_port()


def readable_copy(dest: Path) -> Path:
    """The lab's code and front door (lab/, Makefile, tests/need_pytest.py)
    copied into dest, readable by every user: a checkout may live where
    another user cannot read it (a clone under /root, mode 700)."""
    shutil.copytree(ROOT / "lab", dest / "lab", ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "need_pytest.py", dest / "tests")
    shutil.copy(ROOT / "Makefile", dest)
    for path in [dest, *dest.rglob("*")]:       # modes as if umask were 022
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dest


@pytest.fixture
def shared_checkout() -> Iterator[Path]:
    """A readable_copy in a fresh folder under the system's temp dir, for a
    process running as `nobody` (pytest's tmp_path is private to its user)."""
    # /tmp itself, not TMPDIR: that may be as private as the checkout
    shared = "/tmp" if Path("/tmp").is_dir() else None
    top = Path(tempfile.mkdtemp(prefix="lab-shared-", dir=shared))
    try:
        yield readable_copy(top)
    finally:
        shutil.rmtree(top, ignore_errors=True)


Build = Callable[..., None]


PREBUILD = suite.Prebuild()


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Build:
    """built(name, ...): each repository server built once a session, the way a
    user's `make build SERVER=name` does it (`lab deps` installs its packages,
    `lab build` its toolchain and artifact, both cached per LAB_CACHE). A
    server that cannot be built fails the test that needs it: never a skip."""
    PREBUILD.wait()
    failed: dict[str, str] = {}
    done: set[str] = set()

    def steps(names: list[str]) -> str:
        """deps then build of these servers in one call each: "" or what failed."""
        env = repository_env(tmp_path_factory.mktemp("build"), SERVER=" ".join(names))
        with suite.one_build():
            for step in ("deps", "build"):
                out = lab(env, step, timeout=3600)
                if out.returncode != 0:
                    return (f"`python3 -m lab {step}` of {' '.join(names)} ended with exit "
                            f"{out.returncode}:\n{out.stderr[-3000:]}")
        return ""

    def build(*names: str) -> None:
        todo = [n for n in dict.fromkeys(names) if n not in done]
        if todo and steps(todo):             # then one at a time: which one cannot
            for name in todo:
                if why := steps([name]):
                    failed[name] = why
        done.update(todo)
        for name in names:
            if name in failed:
                pytest.fail(failed[name], pytrace=False)
    return build


@pytest.fixture(scope="session")
def short_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One short run of a test double (sturdy, levels 1 and 2 of 1 s, no
    warm-up), made once a session for the tests that only read a run
    folder; a test that changes one works on a copy (copy_of_run)."""
    tmp = tmp_path_factory.mktemp("short-run")
    made = bench(lab_env(tmp, SERVER="sturdy", CONCURRENCY="1 2", DURATION="1s", WARMUP="0",
                         PORT=str(free_port())))
    assert made.returncode == 0, made.stderr[-3000:]
    [run] = run_folders(tmp)
    assert leftovers(run) == []
    return run


@dataclass(frozen=True)
class Made:
    """What one command of the lab made: its output, and the results folder."""
    out: subprocess.CompletedProcess[str]
    results: Path


@pytest.fixture(scope="session")
def quick_study(tmp_path_factory: pytest.TempPathFactory) -> Made:
    """`make reproduce STUDY=ada-vs-java QUICK=1` as a user types it, once a
    session: two real runs (siege, wrk) of the study's eight servers, 3 levels
    of 1 s, one start each. Its two readers live in test_e2e.py (a file goes
    whole to one pytest-xdist worker, so it is made once): the smoke test
    reads its claims, the end-to-end test checks the study's servers on its
    runs and runs only the others."""
    tmp = tmp_path_factory.mktemp("quick-study")
    env = repository_env(tmp, PORT=str(free_port()), **GRACE)
    del env["PROBE"]                                # QUICK's PROBE
    out = subprocess.run(["make", "-s", "--no-print-directory", "reproduce", "STUDY=ada-vs-java",
                          "QUICK=1"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=1500)
    return Made(out, tmp / "results")


def copy_of_run(run: Path, dest: Path) -> Path:
    """A copy of a run folder under dest (its own results folder), same name."""
    copy = dest / "results" / run.name
    shutil.copytree(run, copy)
    return copy


def install_client(tool: str, tmp: Path) -> None:
    """A load client through the lab's own install step (`CLIENT=<tool>
    python3 -m lab deps`, as `make test` runs it): installed as root; as
    another user the lab exits 2 with the apt-get line, the skip's reason."""
    if shutil.which(tool):
        return
    env = repository_env(tmp, SERVER="nginx", CLIENT=tool)
    with suite.one_build():
        out = lab(env, "deps", timeout=900)
    if out.returncode == 2 and os.geteuid() != 0:
        pytest.skip(out.stderr.strip()[-300:])
    assert out.returncode == 0 and shutil.which(tool), out.stderr[-3000:]


@pytest.fixture(scope="session")
def wrk_installed(tmp_path_factory: pytest.TempPathFactory) -> None:
    install_client("wrk", tmp_path_factory.mktemp("deps"))


@pytest.fixture(scope="session")
def vegeta_installed(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The lab's vegeta (a Go build into LAB_CACHE) through `CLIENT=vegeta
    python3 -m lab deps`; where Go 1.22+ is missing the lab exits 2 saying
    so, and that is the skip's reason."""
    from lab.measure.clients import vegeta
    if vegeta.Vegeta().version() == vegeta.VEGETA_VERSION:
        return
    env = repository_env(tmp_path_factory.mktemp("deps"), SERVER="nginx", CLIENT="vegeta")
    with suite.one_build():
        out = lab(env, "deps", timeout=1800)
    if out.returncode == 2:
        pytest.skip(out.stderr.strip()[-300:])
    assert out.returncode == 0, out.stderr[-3000:]
    assert vegeta.Vegeta().version() == vegeta.VEGETA_VERSION


@pytest.fixture(scope="session")
def siege_installed(tmp_path_factory: pytest.TempPathFactory) -> None:
    install_client("siege", tmp_path_factory.mktemp("deps"))


@pytest.fixture(scope="session")
def chromium() -> str:
    """Headless Chromium for the tests that look at the lab's pages, installed
    where it is missing, the way the lab installs a package (deps.ensure: as
    root `apt-get install chromium`, as CI's .ci/run does; as another user
    the skip says that line, and the suite's last lines list it). Never
    skipped where it can be installed: a failed install fails the test."""
    from lab.measure import deps
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.geteuid() != 0:
        pytest.skip("chromium is missing: as root, apt-get install chromium")
    with suite.one_build():
        code = deps.ensure({"chromium": "chromium"})
    found = shutil.which("chromium")
    assert code == 0 and found, f"installing chromium ended with exit {code} (its error above)"
    return found


@pytest.fixture(scope="session", autouse=True)
def results_json_fit_their_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every results.json the lab wrote during this session (under pytest's
    temporary folders; copies of saved runs keep their old time and are left
    out, and so are the saved runs of a copied checkout's tests/fixtures) is
    checked against docs/results.schema.json when the session ends."""
    import schemacheck
    top = tmp_path_factory.getbasetemp()
    started = time.time() - 1
    yield
    bad: list[str] = []
    for path in top.rglob("results.json"):
        try:
            saved = "fixtures" in path.parts and "tests" in path.parts
            if path.is_file() and not saved and path.stat().st_mtime >= started:
                bad += schemacheck.check_file(path)
        except (OSError, ValueError) as e:
            bad.append(f"{path}: {e}")
    assert not bad, "results.json not fitting docs/results.schema.json:\n" + "\n".join(bad[:20])


STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@pytest.fixture(autouse=True)
def stop_signals_left_as_found() -> Iterator[None]:
    """Each test leaves this process's stop signals as it found them, and
    fails if it left one ignored or blocked: every process a later test
    starts would inherit that (run-benchmark.sh then cannot trap a Ctrl-C,
    make ends with 2). A handler a test installed (the lab's own, by
    `cli.main` in-process) is put back silently."""
    before = [signal.getsignal(s) for s in STOPS]
    yield
    after = [signal.getsignal(s) for s in STOPS]
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    for sig, handler in zip(STOPS, before):
        signal.signal(sig, handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
    ignored = [s.name for s, h in zip(STOPS, after) if h == signal.SIG_IGN
               and h != before[STOPS.index(s)]]
    held = [s.name for s in STOPS if s in blocked]
    assert not ignored and not held, (f"this test left {', '.join(ignored + held)} "
                                      f"{'ignored' if ignored else 'blocked'} in the test process "
                                      f"(put back now)")


# ---------------------------------------------------------------- kinds, order, what was not checked
# Each test carries its kind as a mark where it is defined (tests/kinds.py);
# the hooks here check that every test has one, run units, then faults, then
# real servers, then the quiet tests (kinds.rank), and end the suite with
# what it did not check.

def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--shuffle-seed", metavar="N|random", default=None,
                     help="the unit and fault tests in an order shuffled by N (random: a "
                          "seed drawn now), said first and last (kinds.places)")


class Shuffle:
    """The session's --shuffle-seed, the same in every process (the main
    process draws `random` and hands it to the workers)."""
    seed: int | None = None

    @classmethod
    def configure(cls, config: pytest.Config, worker: dict[str, Any] | None) -> None:
        given = config.getoption("shuffle_seed")
        if worker is not None:
            cls.seed = worker["lab_shuffle_seed"]
        elif given == "random":
            cls.seed = random.SystemRandom().randrange(1_000_000)
        elif given is not None:
            if not given.isascii() or not given.isdigit():
                raise pytest.UsageError(f"--shuffle-seed={given}: give a whole number or random")
            cls.seed = int(given)

    @classmethod
    def said(cls) -> str:
        return (f"unit and fault tests shuffled: --shuffle-seed={cls.seed} (make test "
                f"TEST_SEED={cls.seed}) runs this order again" if cls.seed is not None
                else "in the collection's order (no --shuffle-seed)")


def pytest_configure(config: pytest.Config) -> None:
    for name, text in kinds.MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    worker = getattr(config, "workerinput", None)
    if worker is None:          # the main process: pytest's controller, or the only one
        suite.Session.top = Path(tempfile.mkdtemp(prefix="lab-tests-session-"))
    else:
        suite.Session.top = Path(worker["lab_session"])
    Shuffle.configure(config, worker)


def pytest_sessionstart(session: pytest.Session) -> None:
    """The order's seed, first (pytest's header is not shown under -q)."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and not hasattr(session.config, "workerinput"):
        reporter.write_line(f"order: {Shuffle.said()}")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: each worker meets the others in the main process's
    folder, and shuffles by its seed."""
    node.workerinput["lab_session"] = str(suite.Session.top)
    node.workerinput["lab_shuffle_seed"] = Shuffle.seed


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """--dist=loadfile (make test): suite.file_scheduler."""
    return suite.file_scheduler(config, log) if config.getoption("dist") == "loadfile" else None


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(INTERPRETER, ignore_errors=True)
    if not hasattr(config, "workerinput"):     # the session's folder is the main one's
        PREBUILD.stop()
        built = PREBUILD.result()
        if built is None or built["code"] == 0:  # a failed build's log is kept (the summary)
            shutil.rmtree(suite.Session.path(""), ignore_errors=True)


def settle(items: list[pytest.Item]) -> dict[str, kinds.Rank]:
    """Each test's kind (kinds.kind_of), or a UsageError naming every test
    without one, with two, or unit yet quiet or using a fixture that
    installs (kinds.INSTALLS). Then each test holds its kind as its own
    mark, alone: a test's own kind replaces its file's, so that `-m unit`
    selects by the kind that holds, not by any kind found on the way up.
    Returns each test's rank, by node id."""
    found: dict[pytest.Item, str] = {}
    problems = []
    for item in items:
        try:
            found[item] = kind = kinds.kind_of(item)
        except ValueError as e:
            problems.append(str(e))
            continue
        if kind == "unit" and item.get_closest_marker("quiet"):
            problems.append(f"{item.nodeid}: quiet, and a unit test: a test that judges "
                            f"measurements runs a server under load (fault or real_server)")
        if kind == "unit" and (installs := kinds.INSTALLS & set(getattr(item, "fixturenames", ()))):
            problems.append(f"{item.nodeid}: a unit test installs nothing, and "
                            f"{', '.join(sorted(installs))} installs: mark it fault")
    if problems:
        raise pytest.UsageError("tests whose kind does not hold (tests/kinds.py):\n  "
                                + "\n  ".join(problems))
    for item in items:
        for node in item.listchain()[:-1]:
            node.own_markers[:] = [m for m in node.own_markers if m.name not in kinds.ORDER]
    ranks = {}
    for item, kind in found.items():
        item.own_markers[:] = [m for m in item.own_markers if m.name not in kinds.ORDER]
        item.add_marker(kind)
        ranks[item.nodeid] = kinds.rank(item.path.name, kind,
                                        item.get_closest_marker("quiet") is not None)
    return ranks


@pytest.hookimpl(tryfirst=True)        # before -m deselects by these marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ranks = settle(items)
    suite.write_ranks(ranks)
    places = kinds.places([item.nodeid for item in items], ranks, Shuffle.seed)
    items.sort(key=lambda item: places[item.nodeid])


def kind_of(rank: kinds.Rank) -> str:
    return kinds.ORDER[rank[1]]


def start_prebuild(nodeids: list[str]) -> None:
    """The background build, in the main process, once a session that holds
    every test file and a real-server test (Prebuild)."""
    if suite.Session.path(suite.STARTED).exists():
        return
    ranks = suite.read_ranks()         # none where the collection stopped (settle)
    files = {kinds.split_nodeid(n)[0] for n in nodeids}
    every = {p.name for p in (ROOT / "tests").glob("test_*.py")}
    if files >= every and any(n in ranks and kind_of(ranks[n]) == "real_server" for n in nodeids):
        PREBUILD.start(repository_env(suite.Session.path("build"), SERVER="all"), ROOT)


def pytest_collection_finish(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):
        start_prebuild([item.nodeid for item in session.items])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    start_prebuild(ids)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A real-server test and a quiet test wait for the background build,
    before their turn: a quiet test runs alone, the others beside each other."""
    quiet = item.get_closest_marker("quiet") is not None
    if quiet or item.get_closest_marker("real_server"):
        PREBUILD.wait()
    with suite.turn(alone=quiet):
        yield


# Exit 3 ("nothing compared cleanly", "undecided") that a test accepted from
# the lab: a busy host's answer, no verdict checked. Counted at the end, from
# the reports (a worker's report reaches the main process with them).
ACCEPTED = "exit 3 accepted"
WAITED = "waited for the background build (s)"
PENDING: list[str] = []


def accepted_exit_3(code: int, reason: str) -> None:
    """Record that the running test accepted the lab's exit 3 (nothing is
    recorded for another code), with the reason the lab gave."""
    if code == 3:
        PENDING.append(reason)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    report.user_properties.extend((ACCEPTED, why) for why in PENDING)
    PENDING.clear()
    if PREBUILD.waited_s >= 0.5:
        report.user_properties.append((WAITED, round(PREBUILD.waited_s, 1)))
    PREBUILD.waited_s = 0.0


def properties(tr: pytest.TerminalReporter, key: str) -> list[tuple[str, Any]]:
    """(nodeid, value) of every report's user property `key`."""
    return [(report.nodeid, value) for reports in tr.stats.values() for report in reports
            for k, value in getattr(report, "user_properties", ()) if k == key]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The suite's last lines: how many tests of each kind ran, and what it did
    not check (each skip and each accepted exit 3, with its reason)."""
    tr = terminalreporter
    counts: dict[str, dict[str, int]] = {}
    ranks = suite.read_ranks()
    for outcome in ("passed", "failed", "error", "skipped"):
        for report in tr.stats.get(outcome, []):
            if outcome == "passed" and getattr(report, "when", "") != "call":
                continue                                   # its setup and teardown
            kind = kind_of(ranks[report.nodeid]) if report.nodeid in ranks else "?"
            counts.setdefault(kind, {}).setdefault(outcome, 0)
            counts[kind][outcome] += 1
    if not counts:
        return
    built = PREBUILD.result()
    if built is not None:
        waited = sum(s for _, s in properties(tr, WAITED))
        tr.write_line(f"servers built beside the other tests: {built['took_s']:.0f} s, exit "
                      f"{built['code']}; tests waited {waited:.0f} s for it "
                      f"(log: {built['log']})")
    tr.write_sep("=", "by kind")
    tr.write_line(f"order: {Shuffle.said()}")
    for kind in [*kinds.ORDER, "?"]:
        if kind in counts:
            tr.write_line(f"{kind}: " + ", ".join(f"{n} {o}" for o, n in counts[kind].items()))
    skipped = tr.stats.get("skipped", [])
    accepted = properties(tr, ACCEPTED)
    if not skipped and not accepted:
        return                                  # everything collected was checked
    reasons: dict[str, list[str]] = {}
    for report in skipped:
        longrepr = report.longrepr
        why = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reasons.setdefault(why.removeprefix("Skipped: "), []).append(report.nodeid)
    tr.write_sep("=", f"not checked here: {len(skipped)} skipped, "
                      f"{len(accepted)} accepted exit 3")
    for why, nodes in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
        tr.write_line(f"skipped {len(nodes)}: {why}  ({nodes[0]}{', ...' if len(nodes) > 1 else ''})")
    for test, why in accepted:
        tr.write_line(f"exit 3 accepted: {test}: {why}")
