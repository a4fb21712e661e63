"""Test kinds, marked where each test is defined (tests/kinds.py): a test
without one stops the collection, a test's own kind replaces its file's,
and `make test` runs them unit, fault, then real_server, the quiet ones last."""
from __future__ import annotations

import ast
import fcntl
import json
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kinds
import suite
from conftest import ROOT

pytestmark = pytest.mark.unit

TESTS = ROOT / "tests"

# Prints the collection's ranks (suite.write_ranks) before pytest ends.
DUMP = """
import json
def pytest_collection_finish(session):
    import suite
    print("RANKS " + json.dumps({i.nodeid: suite.read_ranks()[i.nodeid] for i in session.items}))
"""


def collect(*args: str, cwd: Path = ROOT, plugin: Path | None = None,
            code: int = 0) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if plugin is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(plugin), env.get("PYTHONPATH")]))
        args = ("-p", "rankdump", *args)
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                          "-p", "no:cacheprovider", "--strict-markers", *args],
                         cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == code, out.stdout[-3000:] + out.stderr[-3000:]
    return out


def ranked(tmp_path: Path, *args: str) -> tuple[list[str], dict[str, kinds.Rank]]:
    """The node ids collected, in order, and their ranks."""
    (tmp_path / "rankdump.py").write_text(DUMP)
    out = collect(*args, plugin=tmp_path).stdout.splitlines()
    [line] = [ln for ln in out if ln.startswith("RANKS ")]
    ranks = {i: (bool(q), k, n) for i, (q, k, n) in json.loads(line[6:]).items()}
    return [ln for ln in out if "::" in ln and not ln.startswith("RANKS ")], ranks


def kind(rank: kinds.Rank) -> str:
    return kinds.ORDER[rank[1]]


def checkout_with(tmp_path: Path, test: str) -> Path:
    """A tests/ folder with the harness and one test file, test_x.py."""
    top = tmp_path / "checkout"
    (top / "tests").mkdir(parents=True)
    for name in ("conftest.py", "kinds.py", "suite.py"):
        shutil.copy(TESTS / name, top / "tests")
    (top / "tests" / "test_x.py").write_text(test)
    return top


def test_a_test_without_one_kind_stops_the_collection_saying_what_to_write(tmp_path: Path) -> None:
    """Every test of the collection that has no kind, two, or a unit kind
    with a quiet mark or an installing fixture, named at once."""
    top = checkout_with(tmp_path, "import pytest\n\n"
                                  "def test_none():\n    pass\n\n"
                                  "@pytest.mark.fault\ndef test_one():\n    pass\n\n"
                                  "@pytest.mark.fault\n@pytest.mark.unit\ndef test_two():\n    pass\n\n"
                                  "@pytest.mark.unit\n@pytest.mark.quiet\ndef test_q():\n    pass\n\n"
                                  "@pytest.mark.unit\ndef test_i(wrk_installed):\n    pass\n")
    err = collect("tests", cwd=top, code=pytest.ExitCode.USAGE_ERROR).stderr
    assert "tests/test_x.py::test_none: no kind: put `pytestmark = pytest.mark.unit`" in err, err
    assert "test_x.py::test_two: two kinds (fault, unit) on the test: keep one" in err
    assert "test_x.py::test_q: quiet, and a unit test" in err
    assert "test_x.py::test_i: a unit test installs nothing, and wrk_installed installs" in err
    assert "test_one" not in err
    assert "--shuffle-seed=x: give a whole number or random" in \
        collect("--shuffle-seed=x", "tests", cwd=top, code=pytest.ExitCode.USAGE_ERROR).stderr


def test_a_tests_own_kind_replaces_its_files_for_m(tmp_path: Path) -> None:
    """-m unit selects by the kind that holds: a fault test in a unit file
    is a fault test only (pytest alone would see both marks); what the file
    needs beyond its kind stays."""
    top = checkout_with(tmp_path, "import pytest\n\npytestmark = [pytest.mark.unit, pytest.mark.root]\n\n"
                                  "def test_u():\n    pass\n\n"
                                  "@pytest.mark.fault\ndef test_f():\n    pass\n")

    def ids(*args: str) -> list[str]:
        return [ln for ln in collect(*args, "tests", cwd=top).stdout.splitlines() if "::" in ln]
    assert ids("-m", "unit") == ["tests/test_x.py::test_u"]
    assert ids("-m", "fault and root") == ["tests/test_x.py::test_f"]


def test_units_run_first_then_faults_then_real_servers(tmp_path: Path) -> None:
    """Files given in the reverse of the kinds' order, each holding more than
    one kind: the collection puts every unit first, then faults, then real
    servers, then the quiet tests (they run alone, when nothing else is
    left); a seed shuffles the unit and fault tests (kinds.places) and keeps
    the rest."""
    files = [str(TESTS / f) for f in ("test_probe.py", "test_faults.py", "test_compare.py")]
    ids, ranks = ranked(tmp_path, *files)
    quiet = [i for i in ids if ranks[i][0]]
    assert quiet and {kind(ranks[i]) for i in quiet} == {"fault"}, quiet
    assert ids[-len(quiet):] == quiet, ids
    order = [ranks[i][1] for i in ids if i not in quiet]
    assert order == sorted(order) and set(order) == {0, 1, 2}, ids
    shuffled = [ln for ln in collect("--shuffle-seed=1", *files).stdout.splitlines() if "::" in ln]
    assert sorted(shuffled) == sorted(ids) and shuffled != ids
    assert [ranks[i][:2] for i in shuffled] == [ranks[i][:2] for i in ids]
    kept = [i for i in ids if ranks[i][0] or kind(ranks[i]) == "real_server"]
    assert [i for i in shuffled if i in kept] == kept


def test_a_quiet_test_runs_alone_and_the_others_beside_each_other() -> None:
    """suite.turn, which conftest takes around each test in every process of
    the session: a turn held alone (a quiet test) admits no other; a turn
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


def test_a_file_goes_to_the_workers_with_the_last_kind_it_holds(tmp_path: Path) -> None:
    """suite.scope_of and unit_rank, what the workers are handed: test_probe.py
    (unit tests, and real-server tests that wait for the servers' build) goes
    whole, with the real-server files; its units alone would go with the
    units. test_repeat.py's quiet tests go apart from its others, after
    every unit without them; the workshop's exercises go one by one; a late
    worker starts on the real-server units."""
    def units(ids: list[str]) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = {}
        for i in ids:
            grouped.setdefault(suite.scope_of(i, ranks), []).append(i)
        return grouped

    ids, ranks = ranked(tmp_path, *(str(TESTS / f) for f in
                                    ("test_probe.py", "test_repeat.py", "test_workshop.py")))
    probe = [i for i in ids if "test_probe.py" in i]
    [whole] = units(probe).values()
    assert suite.unit_rank(whole, ranks) == (False, kinds.ORDER.index("real_server"),
                                             kinds.LONG.index("test_probe.py"))
    probe_units = [i for i in probe if kind(ranks[i]) == "unit"]
    assert suite.unit_rank(probe_units, ranks)[1] == 0
    repeat = units([i for i in ids if "test_repeat.py" in i])
    assert len(repeat) == 2
    rest, quiet = sorted(repeat.values(), key=lambda u: suite.unit_rank(u, ranks))
    assert all(ranks[i][0] for i in quiet) and rest
    assert suite.unit_rank(quiet, ranks) > max(suite.unit_rank(probe, ranks),
                                               suite.unit_rank(rest, ranks))
    workshop = [i for i in ids if "test_workshop.py" in i]
    assert len(units(workshop)) == len(workshop) > 9

    # make test's third worker (gw2) takes real-server units outside the
    # quiet ones first: it waits for the build instead of running units beside it.
    assert [suite.late(f"gw{i}") for i in range(4)] == [False, False, True, True]
    assert suite.real(suite.unit_rank(probe, ranks))
    assert not suite.real(suite.unit_rank(probe_units, ranks))
    assert not suite.real(suite.unit_rank(quiet, ranks))


def test_a_seed_shuffles_the_unit_and_fault_tests_and_the_same_seed_again() -> None:
    """kinds.places: the kinds keep their order, the unit and fault files and
    their tests move with the seed, a file's tests stay together, the
    real-server and quiet tests keep theirs; a seed again is the same order."""
    ranks: dict[str, kinds.Rank] = {}
    for f in range(12):
        for t in range(6):
            k = (f + t) % 3 if f < 8 else 0
            ranks[f"tests/test_{f}.py::test_{t}"] = (f == 11 and t > 3, k, len(kinds.LONG))
    ids = list(ranks)
    fixed = sorted(ids, key=kinds.places(ids, ranks, None).__getitem__)
    assert fixed == sorted(ids, key=ranks.__getitem__)               # the collection's, by rank

    def order(seed: int) -> list[str]:
        return sorted(ids, key=kinds.places(ids, ranks, seed).__getitem__)
    one, two = order(1), order(2)
    assert one == order(1) and one != two
    for got in (one, two):
        assert [ranks[i] for i in got] == [ranks[i] for i in fixed]
        kept = [i for i in fixed if ranks[i][0] or kind(ranks[i]) == "real_server"]
        assert [i for i in got if i in kept] == kept
        groups = [(i.partition("::")[0], ranks[i]) for i in got]
        runs = [g for n, g in enumerate(groups) if n == 0 or groups[n - 1] != g]
        assert len(runs) == len(set(groups)), runs                 # a file's tests together
        units = [i for i in got if kind(ranks[i]) == "unit"]
        assert units != [i for i in fixed if kind(ranks[i]) == "unit"]


def with_code(path: Path) -> bool:
    """A module with logic: a function or a class (not constants alone)."""
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               for n in ast.walk(ast.parse(path.read_text())))


def test_every_module_with_code_has_its_test_file_or_a_row_in_testing_md() -> None:
    """tests/test_<module>.py (a package's __init__: its package's name),
    or a row of docs/testing.md's table naming the test files that test it."""
    text = (ROOT / "docs" / "testing.md").read_text()
    rows = dict(re.findall(r"^\| `(lab/[^`]+\.py)` \| (.+) \|$", text, re.M))
    own = {p.stem.removeprefix("test_") for p in TESTS.glob("test_*.py")}
    needed = {path.relative_to(ROOT).as_posix() for path in sorted((ROOT / "lab").rglob("*.py"))
              if (path.parent.name if path.name == "__init__.py" else path.stem) not in own
              and with_code(path)}
    assert sorted(needed - set(rows)) == [], (
        "no tests/test_<module>.py and no row in docs/testing.md's table "
        "(Where each module's tests are): write the one, or add the other")
    assert sorted(set(rows) - needed) == [], (
        "a row of docs/testing.md for a module that is gone, or that has its own "
        "test file now: remove the row")
    for module, cell in rows.items():
        named = re.findall(r"`(test_\w+\.py)`", cell)
        assert named and all((TESTS / n).is_file() for n in named), (module, cell)
