"""Every test's kind, marked where the test is defined: what `make test` runs
first, and what `make test-fast` runs alone.

- unit: constructed inputs, saved runs, captured outputs, small local
  processes; no server under load, nothing installed or built
  (make test-fast: `pytest -m unit`);
- fault: the lab run as a user runs it (run-benchmark.sh, make, lab steps)
  against the doubles of tests/servers and the nginx ceiling, faults
  injected; and what needs a tool installed first (a client run live,
  headless Chromium: the fixtures of INSTALLS install it);
- real_server: the repository's Ada and Java servers, built once a session
  (conftest's `built`) and run.

A test file says its kind once, under its imports:

    pytestmark = pytest.mark.unit

and a test whose kind differs says its own, which replaces the file's:

    @pytest.mark.fault
    def test_...

A test with no kind, or two, stops the collection (conftest.py, `settle`).
root, docker and ssh say what a file's tests need beyond their kind (in its
pytestmark, a list then), `pytest -m "not docker"` leaves them out.
`@pytest.mark.quiet` marks a test that judges measurements: it runs alone,
after all the others (rank)."""
from __future__ import annotations

import random
from typing import Any

ORDER = ("unit", "fault", "real_server")

MARKERS = {
    "unit": "constructed inputs and saved runs, no server under load, nothing installed (make test-fast)",
    "fault": "the lab run as a user runs it against the test doubles and nginx",
    "real_server": "the repository's Ada and Java servers, built once a session, run",
    "root": "needs root (namespaces, mounts, another user, packages installed)",
    "docker": "needs a Docker engine (RUNTIME=docker)",
    "ssh": "runs against emulated ssh hosts (namespaces with their own sshd; root)",
    "quiet": "a test that judges measurements: runs alone, after every other test",
}


# The files that take longest in their kind, longest first (their tests
# outside quiet, in a `make test` here on two workers: from 4 minutes for the
# workshop down to 40 s), first in it: the pytest-xdist workers take files
# in this order (suite.file_scheduler), so the long ones start early and the
# short ones fill in, and no worker is left alone with a long file while
# the others wait to run the quiet tests. An order, not a kind: a file
# missing here only starts later.
LONG = (
    "test_workshop.py", "test_e2e.py", "test_probe.py", "test_topology_docker.py",
    "test_lifetime.py", "test_escapes.py", "test_faults.py", "test_topology_ssh.py",
    "test_cost.py",
    "test_topology_netns.py", "test_listen.py",
    "test_repeat.py", "test_stepcheck.py", "test_record.py", "test_hostile.py",
)

# Files whose tests go to the workers one by one, not as a whole file: each
# test of the workshop runs an exercise of its own (half a minute each).
SPLIT = ("test_workshop.py",)

# The fixtures of conftest.py that install or build (a client, Chromium, the
# servers): a unit test that uses one stops the collection.
INSTALLS = frozenset({"built", "quick_study", "wrk_installed", "siege_installed",
                      "vegeta_installed", "chromium"})

Rank = tuple[bool, int, int]


def rank(file: str, kind: str, quiet: bool) -> Rank:
    """Where a test goes in the suite's order (conftest sorts the collection
    by it; suite.file_scheduler hands work out by it): the quiet tests after
    all the others, then by kind (ORDER), then the LONG files first."""
    return (quiet, ORDER.index(kind), LONG.index(file) if file in LONG else len(LONG))


# The kinds whose order is shuffled by --shuffle-seed (make test, make
# test-fast): no test of theirs may depend on another having run first.
SHUFFLED = ("unit", "fault")


def places(nodeids: list[str], ranks: dict[str, Rank], seed: int | None
           ) -> dict[str, tuple[Rank, int, int]]:
    """Each test's place in the suite: by rank, and in a rank, for the unit
    and fault tests, their files in an order shuffled by seed and each file's
    tests shuffled too (a file's tests stay together: its module fixtures are
    made once); the collection's order without a seed, and for the
    real-server and quiet tests."""
    rng = random.Random(seed)
    files = list(dict.fromkeys(n.partition("::")[0] for n in nodeids))
    file_key = dict(zip(files, rng.sample(range(len(files)), len(files))))
    test_key = rng.sample(range(len(nodeids)), len(nodeids))
    found = {}
    for i, nodeid in enumerate(nodeids):
        rank = ranks[nodeid]
        mixed = seed is not None and not rank[0] and ORDER[rank[1]] in SHUFFLED
        found[nodeid] = (rank, file_key[nodeid.partition("::")[0]] if mixed else 0,
                         test_key[i] if mixed else i)
    return found


def split_nodeid(nodeid: str) -> tuple[str, str]:
    """(file name, test function) of a pytest node id, parameters left out."""
    path, _, name = nodeid.partition("::")
    return path.rpartition("/")[2], name.partition("[")[0]


def kind_of(item: Any) -> str:
    """A collected test's kind: its own mark, else its class's, else its
    file's (pytestmark). ValueError, saying what to write, where it has none
    or two on one level."""
    for node in reversed(item.listchain()):
        found: list[str] = sorted({m.name for m in getattr(node, "own_markers", ())
                                   if m.name in ORDER})
        if len(found) > 1:
            raise ValueError(f"{item.nodeid}: two kinds ({', '.join(found)}) on "
                             f"{'the test' if node is item else node.name}: keep one")
        if found:
            return found[0]
    raise ValueError(f"{item.nodeid}: no kind: put `pytestmark = pytest.mark.unit` (or "
                     f"{', '.join(ORDER[1:])}) under the file's imports, or "
                     f"`@pytest.mark.<kind>` on the test (tests/kinds.py)")
