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
    for key in kinds.QUIET:            # each runs alone, last in its kind
        file, _, name = key.partition("::")
        assert kinds.kind_of(file, name) != "unit", key
        assert re.search(rf"^def {re.escape(name)}\(", (TESTS / file).read_text(), re.M), key
    assert set(kinds.LONG) <= set(kinds.FILES) and len(set(kinds.LONG)) == len(kinds.LONG)
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
    servers; `-m unit` keeps the units alone, in the same order."""
    files = [str(TESTS / f) for f in ("test_probe.py", "test_faults.py", "test_compare.py")]
    ids = collect(*files)
    order = [kinds.ORDER.index(kind(i)) for i in ids]
    assert order == sorted(order) and set(order) == {0, 1, 2}, ids
    # the faults that judge measurements last among the faults (they run alone)
    marked = collect("-m", "quiet", *files)
    assert marked and all(kind(i) == "fault" for i in marked), marked
    quiet = [i in marked for i in ids if kind(i) == "fault"]
    assert quiet == sorted(quiet) and False in quiet, ids
    units = collect("-m", "unit", *files)
    assert units == [i for i in ids if kind(i) == "unit"] and units
    assert collect("-m", "real-server", *files) == [i for i in ids if kind(i) == "real-server"]


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
    """suite.file_rank: test_probe.py (unit tests, and real-server tests that
    wait for the servers' build) is handed out with the real-server files;
    its units alone would go with the units. test_repeat.py, long but with
    tests that run alone after the build, goes after test_hostile.py."""
    ids = collect(str(TESTS / "test_probe.py"))
    assert suite.file_rank(ids)[0] == kinds.ORDER.index("real-server")
    assert suite.file_rank([i for i in ids if kind(i) == "unit"])[0] == 0
    # a file with tests of QUIET after the other files of its kind
    assert suite.file_rank(collect(str(TESTS / "test_repeat.py"))) > \
        suite.file_rank(collect(str(TESTS / "test_hostile.py")))
