"""What failed, seen from the server's side (issue 45): the kernel's TCP
counters read around each level where the server's sockets are
(lab.host.tcpstat), recorded per level (results.csv `tcp_counters`) and
said as failure kinds beside the client's own (lab.record.tcpkinds,
lab.analyse.serverside), through two test doubles measured live: one that
resets after reading the request (tests/servers/resetter), one that closes
before answering with the request unread (tests/servers/hangup), in the
local and the netns topologies."""
from __future__ import annotations

import dataclasses
import csv
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import bench, free_port, lab_env, leftovers, run_folders
from lab.analyse import analysis, metrics
from lab.present import failedwords
from lab.present.page import escaped
from lab.setup.markdown import md_text
from lab.host import tcpstat
from lab.record import failures, manifest, tcpkinds
from lab.record.failures import Failure
from lab.record.files import RecordError
from lab.record.rows import CSV, read_rows
from lab.measure.topologies import netns

pytestmark = pytest.mark.fault

LANDED = Path(__file__).parent / "fixtures" / "runs" / "20261124-071349-sturdy+paced-landed"


# ---- reading the counters -----------------------------------------------------------

@pytest.mark.unit
@pytest.mark.skipif(shutil.which("nstat") is None, reason="nstat (iproute2) is not installed")
def test_the_counters_are_nstats_figures_read_without_its_history() -> None:
    """Each counter as nstat names and prints it (ignoring and keeping no
    history), between two reads of /proc: the counters only grow."""
    before = tcpstat.read()
    shown = subprocess.run(["nstat", "-a", "-s", "-z", "--json", *tcpstat.COUNTERS],
                           capture_output=True, text=True, check=True, timeout=10).stdout
    after = tcpstat.read()
    nstat = json.loads(shown)["kernel"]
    assert set(tcpstat.COUNTERS) <= set(nstat)
    for c in tcpstat.COUNTERS:
        assert before[c] <= nstat[c] <= after[c], c


@pytest.mark.unit
def test_a_table_that_is_not_one_is_refused() -> None:
    assert tcpstat.parse("Tcp: A B\nTcp: 1 2\n") == {"TcpA": 1, "TcpB": 2}
    with pytest.raises(ValueError):
        tcpstat.parse("Tcp: A B\nUdp: 1 2\n")
    assert tcpstat.read_or_none("/nonexistent") is None


# ---- the record and the kinds ---------------------------------------------------------

def counters(**grown: int) -> dict[str, int]:
    return {c: grown.get(c, 0) for c in tcpstat.COUNTERS}


@pytest.mark.unit
def test_a_levels_growth_round_trips_through_its_cell() -> None:
    before = counters(TcpOutRsts=10, TcpExtTCPAbortOnData=4)
    after = counters(TcpOutRsts=25, TcpExtTCPAbortOnData=16, TcpEstabResets=12)
    d = tcpkinds.measured(before, after, shared=False)
    assert d is not None and d.netns == "server"
    assert d.counters["TcpOutRsts"] == 15 and d.counters["TcpExtTCPAbortOnData"] == 12
    assert tcpkinds.decode(tcpkinds.encode(d), Path(CSV)) == d
    assert tcpkinds.measured(after, before, shared=False) is None     # not one namespace
    assert tcpkinds.measured(None, after, shared=True) is None
    with pytest.raises(RecordError, match="tcp_counters"):
        tcpkinds.decode('{"netns": "elsewhere"}', Path(CSV))


@pytest.mark.unit
def test_each_kind_stands_on_its_counters_and_says_whose_it_is() -> None:
    grown = counters(TcpExtListenOverflows=3, TcpExtListenDrops=5, TcpExtTCPAbortOnClose=7,
                     TcpOutRsts=9, TcpAttemptFails=1, TcpEstabResets=6, TcpRetransSegs=2)
    shared = {s.kind: s for s in tcpkinds.kinds(tcpkinds.TcpDelta("shared", grown))}
    assert {k: s.count for k, s in shared.items()} == {
        "listen": 5, "unread": 7, "resets": 9, "failed": 7, "retrans": 2}
    assert [k for k, s in shared.items() if s.server_alone] == ["listen"]
    own = tcpkinds.kinds(tcpkinds.TcpDelta("server", grown))
    assert all(s.server_alone for s in own)
    assert shared["unread"].counters == {"TcpExtTCPAbortOnClose": 7}


def stats_with(failed: int, grown: dict[str, int], netns: str) -> list[metrics.LevelStats]:
    """The landed run's rows of one server, its top level's repetition 1 with
    `failed` requests (unanswered, as Siege says) and the kernel's growth, its
    others with none failed and nothing grown."""
    rows = read_rows(LANDED)
    name = rows[0].server
    mine = [r for r in rows if r.server == name]
    top = max(r.value for r in mine)
    cell = tcpkinds.encode(tcpkinds.TcpDelta(netns, grown))
    kinds = failures.encode_failures([Failure("unanswered", failed, "siege: failed")])
    still = tcpkinds.encode(tcpkinds.TcpDelta(netns, counters()))
    return metrics.level_stats([
        dataclasses.replace(r, failed=failed, failure_kinds=kinds, tcp_counters=cell)
        if r.value == top and r.rep == 1 else
        dataclasses.replace(r, failed=0, failure_kinds="", tcp_counters=still)
        for r in mine])


def failure_lines(m: manifest.Manifest, name: str, levels: list[metrics.LevelStats]) -> list[str]:
    """What failed at a server's levels, as results.json says it."""
    return failedwords.plain(failedwords.build(
        {name: analysis.failure_facts(m, name, levels)})).get(name, [])


@pytest.mark.unit
def test_what_failed_says_the_kernels_kinds_beside_the_clients_never_added() -> None:
    m = manifest.read_manifest(LANDED)
    levels = stats_with(40, counters(TcpExtTCPAbortOnClose=40, TcpOutRsts=41,
                                     TcpEstabResets=40), "server")
    name, top = levels[0].server, levels[-1].value
    lines = failure_lines(m, name, levels)
    [unread] = [x for x in lines if "closed with the request unread" in x]
    assert f"40 at c={top}" in unread and "TcpExtTCPAbortOnClose 40" in unread
    assert "kernel reset the connection instead of closing it" in unread
    assert "as many as the client's failed requests" in unread
    [resets] = [x for x in lines if "resets sent" in x]
    assert "the client counted 40 failed requests there" in resets and "81" not in resets
    # in a namespace shared with the clients, the same counts are both ends'
    shared = failure_lines(m, name, stats_with(
        40, counters(TcpExtTCPAbortOnClose=55), "shared"))
    [unread] = [x for x in shared if "closed with the request unread" in x]
    assert "both ends" in unread and "differ" in unread and "95" not in unread
    # a count above the client's by no more than the connections open at each
    # level (a reset for what came after a close as the client stopped) matches
    near = failure_lines(m, name, stats_with(40, counters(TcpOutRsts=42), "shared"))
    [resets] = [x for x in near if "resets sent" in x]
    assert "the client counted 40 failed requests there: 2 fewer, at most 2 at a level" in resets
    assert "match to within that, never added" in resets and "82" not in resets
    far = failure_lines(m, name, stats_with(40, counters(TcpOutRsts=40 + 10 * top),
                                                     "shared"))
    [resets] = [x for x in far if "resets sent" in x]
    assert "the counts differ" in resets
    # the server's own account of what it does past its workers, beside a reset kind
    rec = m.servers[name]
    rec.extra["workers_beyond"] = "past them it closes the oldest, its request unread"
    for start in rec.starts:
        start.extra.pop("workers", None)
        start.extra["ran_with"] = {"workers": 1, "detail": "its default"}
    [unread] = [x for x in failure_lines(m, name, levels)
                if "closed with the request unread" in x]
    assert (f"; {name} had 1 worker there: past them it closes the oldest, its request "
            "unread; as many as") in unread


@pytest.mark.unit
def test_a_level_without_counters_says_nothing_of_them() -> None:
    m = manifest.read_manifest(LANDED)
    rows = read_rows(LANDED)
    assert all(r.tcp_counters is None for r in rows)     # a run before they were kept
    levels = metrics.level_stats([r for r in rows if r.server == rows[0].server])
    assert not any("kernel" in x for x in failure_lines(m, rows[0].server, levels))
    # one repetition without them: the level's are not said (the client's count
    # would cover requests the kernel's does not)
    assert tcpkinds.summed([tcpkinds.TcpDelta("server", counters(TcpOutRsts=1)), None]) is None


# ---- the doubles, measured live -------------------------------------------------------

PREFIX = "labk"
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                               reason="TOPOLOGY=netns needs root and iproute2")
OWN = {"resetter": "aborted", "hangup": "unread"}    # each double's kind
CONCURRENCY = 2


@pytest.fixture(params=["local", pytest.param("netns", marks=ROOT_ONLY)])
def topology(request: pytest.FixtureRequest) -> Iterator[tuple[str, dict[str, str]]]:
    """Settings of each topology on a port of its own (netns: namespaces named
    so that no real run's are touched, removed even when the test failed)."""
    port = free_port()
    settings = {"PORT": str(port)}
    if request.param == "netns":
        settings |= {"TOPOLOGY": "netns", "LAB_NETNS_PREFIX": PREFIX}
    try:
        yield request.param, settings
    finally:
        if request.param == "netns" and os.geteuid() == 0:
            netns.remove(netns.Names(PREFIX, port))


@pytest.mark.usefixtures("wrk_installed")
@pytest.mark.parametrize("double", sorted(OWN))
def test_each_double_shows_its_own_kind_from_the_servers_side(
        tmp_path: Path, topology: tuple[str, dict[str, str]], double: str) -> None:
    where, settings = topology
    env = lab_env(tmp_path, SERVER=double, CLIENT="wrk", CONCURRENCY=str(CONCURRENCY),
                  DURATION="2s", WARMUP="0", **settings)
    out = bench(env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    [run] = run_folders(tmp_path)
    [row] = read_rows(run)
    assert row.failed > 0 and {f.kind for f in row.failures()} == {"reset"}
    d = tcpkinds.decode(row.tcp_counters, run / CSV)
    assert d is not None and d.netns == ("server" if where == "netns" else "shared")
    seen = {s.kind: s.count for s in tcpkinds.kinds(d)}
    own, other = OWN[double], next(k for k in OWN.values() if k != OWN[double])
    # each of wrk's read errors is one connection the double reset (the double
    # closes it at once: socketserver's FIN before the close let a client close
    # first, and the kernel then sent no reset, for half of them); the kernel
    # also counts the resets of requests in flight when wrk stopped, at most
    # one a connection, which wrk never counted
    if where == "netns":        # the server's namespace: its own sockets only
        assert row.failed <= seen[own] <= row.failed + CONCURRENCY, (row.failed, seen)
        assert other not in seen
    else:                       # shared: the client's sockets and the host's others too
        assert seen[own] >= row.failed, (row.failed, seen)
    data = json.loads((run / "results.json").read_text())
    [level] = data["levels"][double]
    assert level["tcp"]["netns"] == d.netns
    assert {k["kind"] for k in level["tcp"]["kinds"]} >= {own}
    label = tcpkinds.BY_KEY[own].label
    [said] = [x for x in data["failed"][double] if label in x]
    assert failedwords.MECHANISM[own] in said
    # summary.md: the kind, its count and where the docs say its mechanism
    # (issue 53); report.html: the line whole, the mechanism in it
    summary = (run / "summary.md").read_text()
    assert f"{md_text(label)}: {seen[own]:,} at " in summary and failedwords.SEE_KERNEL in summary
    assert md_text(failedwords.MECHANISM[own]) not in summary
    assert escaped(said.split(" (why: ")[0]) in (run / "report.html").read_text()
    with (run / "levels.csv").open(newline="") as f:    # the spreadsheet's row has them too
        [cells] = list(csv.DictReader(f))
    assert cells["tcp_netns"] == d.netns and int(cells["failed"]) == row.failed
    assert all(int(cells[f"tcp_{k.key}"]) == seen.get(k.key, 0) for k in tcpkinds.KINDS)
    assert leftovers(run) == []
