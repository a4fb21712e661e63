"""tests/kinds.py, the one table of test kinds: every test file has a kind,
every test named apart exists, and `make test` runs them unit, fault, then
real-server (checked on a collection of the whole suite)."""
from __future__ import annotations

import fcntl
import re
import subprocess
import sys

import kinds
import suite
from conftest import ROOT

TESTS = ROOT / "tests"


def test_every_test_file_has_a_kind_and_every_named_test_exists() -> None:
    files = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert sorted(kinds.FILES) == files
    assert set(kinds.FILES.values()) <= set(kinds.ORDER)
    for key, kind in kinds.TESTS.items():
        file, _, name = key.partition("::")
        assert kind in kinds.ORDER and kind != kinds.FILES[file], key
        assert re.search(rf"^def {re.escape(name)}\(", (TESTS / file).read_text(), re.M), key
    for key in kinds.QUIET:            # each runs alone, after every other test
        file, _, name = key.partition("::")
        assert kinds.kind_of(file, name) != "unit", key
        assert re.search(rf"^def {re.escape(name)}\(", (TESTS / file).read_text(), re.M), key
    assert set(kinds.LONG) <= set(kinds.FILES) and len(set(kinds.LONG)) == len(kinds.LONG)
    assert set(kinds.SPLIT) <= set(kinds.FILES)
    for key, needs in kinds.NEEDS.items():
        assert key.partition("::")[0] in kinds.FILES, key
        assert needs and set(needs) <= set(kinds.MARKERS) - set(kinds.ORDER), key


def collect(*args: str) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                          "-p", "no:cacheprovider", "--strict-markers", *args],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return [line for line in out.stdout.splitlines() if "::" in line]


def kind(nodeid: str) -> str:
    path, _, test = nodeid.partition("::")
    return kinds.kind_of(path.rpartition("/")[2], test.partition("[")[0])


def test_units_run_first_then_faults_then_real_servers() -> None:
    """Files given in the reverse of the kinds' order, each holding more than
    one kind: the collection puts every unit first, then faults, then real
    servers, then the tests of QUIET (they run alone, when nothing else is
    left); `-m unit` keeps the units alone, in the same order."""
    files = [str(TESTS / f) for f in ("test_probe.py", "test_faults.py", "test_compare.py")]
    ids = collect(*files)
    marked = collect("-m", "quiet", *files)
    assert marked and {kind(i) for i in marked} == {"fault"}, marked
    assert ids[-len(marked):] == marked, ids
    order = [kinds.ORDER.index(kind(i)) for i in ids if i not in marked]
    assert order == sorted(order) and set(order) == {0, 1, 2}, ids
    units = collect("-m", "unit", *files)
    assert units == [i for i in ids if kind(i) == "unit"] and units
    real = [i for i in ids if kind(i) == "real-server" and i not in marked]
    assert collect("-m", "real-server", *files) == real


def test_a_quiet_test_runs_alone_and_the_others_beside_each_other() -> None:
    """suite.turn, which conftest takes around each test in every process of
    the session: a turn held alone (a test of QUIET) admits no other; a turn
    held beside others (this test's, now) admits another such turn, the
    other worker's, but not one alone."""
    def admits(name: str, exclusive: bool) -> bool:
        with suite.Session.path(name).open("a") as f:
            try:
                fcntl.flock(f, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            fcntl.flock(f, fcntl.LOCK_UN)
            return True
    assert admits("turn.lock", exclusive=False) and not admits("turn.lock", exclusive=True)
    with suite.locked("probe.lock", exclusive=True):
        assert not admits("probe.lock", exclusive=False)
    with suite.locked("probe.lock", exclusive=False):
        assert admits("probe.lock", exclusive=False)
        assert not admits("probe.lock", exclusive=True)
    assert admits("probe.lock", exclusive=True)


def test_a_file_goes_to_the_workers_with_the_last_kind_it_holds() -> None:
    """suite.scope_of and unit_rank, what the workers are handed: test_probe.py
    (unit tests, and real-server tests that wait for the servers' build) goes
    whole, with the real-server files; its units alone would go with the
    units. test_repeat.py's tests of QUIET go apart from its others, after
    every unit without them; the workshop's exercises go one by one."""
    def units(ids: list[str]) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = {}
        for i in ids:
            grouped.setdefault(suite.scope_of(i), []).append(i)
        return grouped

    probe = collect(str(TESTS / "test_probe.py"))
    [whole] = units(probe).values()
    assert suite.unit_rank(whole) == (False, kinds.ORDER.index("real-server"),
                                      kinds.LONG.index("test_probe.py"))
    assert suite.unit_rank([i for i in probe if kind(i) == "unit"])[1] == 0
    repeat = units(collect(str(TESTS / "test_repeat.py")))
    assert len(repeat) == 2
    rest, quiet = sorted(repeat.values(), key=suite.unit_rank)
    assert all(kinds.quiet(*kinds.split_nodeid(i)) for i in quiet) and rest
    assert suite.unit_rank(quiet) > max(suite.unit_rank(probe), suite.unit_rank(rest))
    workshop = collect(str(TESTS / "test_workshop.py"))
    assert len(units(workshop)) == len(workshop) > 9


def test_a_late_worker_starts_on_the_real_server_units() -> None:
    """make test's third worker (gw2) takes real-server units outside QUIET
    first: it waits for the build instead of running units beside it."""
    assert [suite.late(f"gw{i}") for i in range(4)] == [False, False, True, True]
    probe = collect(str(TESTS / "test_probe.py"))
    repeat = collect(str(TESTS / "test_repeat.py"))
    assert suite.real(suite.unit_rank(probe))
    assert not suite.real(suite.unit_rank([i for i in probe if kind(i) == "unit"]))
    assert not suite.real(suite.unit_rank([i for i in repeat
                                           if kinds.quiet(*kinds.split_nodeid(i))]))
