"""Where the memory goes: PSS, private, shared and anonymous memory from
/proc/PID/smaps_rollup, on a real process tree whose pages are shared by
fork; "unavailable" with its reason where it cannot be read; old runs
without the columns still open; the summary, report and chart show it."""
from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import ROOT
from lab.analyse import analysis, memsplit
from lab.present import memtable, plot, report, reportpage
from lab.host import procfs
from lab.record import runrecord
from lab.record.rows import CSV, append_row, read_rows

pytestmark = pytest.mark.unit

MB = 1024
# 64 MB touched by the parent, then shared with a forked child (copy on write);
# the child then writes to its first 16 MB, which become its own.
FORKED = r"""
import os, sys, time
block = bytearray(64 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
pid = os.fork()
if pid == 0:
    for i in range(0, 16 * 1024 * 1024, 4096):
        block[i] = 2
    print("child ready", flush=True)
    time.sleep(60)
    os._exit(0)
time.sleep(0.2)
sys.stdin.readline()
"""

ROLLUP = """5595be486000-7ffc5b447000 ---p 00000000 00:00 0                          [rollup]
Rss:                1732 kB
Pss:                 274 kB
Pss_Anon:            112 kB
Shared_Clean:       1580 kB
Shared_Dirty:          0 kB
Private_Clean:        40 kB
Private_Dirty:       112 kB
Anonymous:           112 kB
"""


def test_parse_rollup_reads_the_kb_figures() -> None:
    got = procfs.parse_rollup(ROLLUP)
    assert got["Rss"] == 1732 and got["Pss"] == 274 and got["Private_Dirty"] == 112
    assert "5595be486000-7ffc5b447000 ---p 00000000 00" not in got


@pytest.fixture
def forked() -> object:
    proc = subprocess.Popen([sys.executable, "-c", FORKED], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "child ready"
    yield proc
    for p in procfs.tree(proc.pid)[1:]:
        subprocess.run(["kill", "-9", str(p.pid)], check=False)
    proc.kill()
    proc.wait()


def test_shared_pages_count_in_full_in_rss_and_once_in_pss(forked: subprocess.Popen[str]
                                                            ) -> None:
    """The 48 MB still shared after fork: in both processes' RSS (and shared),
    once in the tree's PSS; the child's 16 MB written since are private."""
    pids = [p.pid for p in procfs.tree(forked.pid)]
    assert len(pids) == 2
    mem = procfs.tree_memory(pids)
    assert mem is not None
    assert mem.rss_kb == mem.private_kb + mem.shared_kb
    assert mem.shared_kb >= 2 * 48 * MB             # in each process's RSS
    assert mem.private_kb >= 16 * MB                # the child's own copy
    assert mem.rss_kb - mem.pss_kb >= 40 * MB       # PSS counts the shared 48 MB once
    assert mem.anon_kb >= 2 * 64 * MB               # the block is anonymous in both


def test_the_sampler_reads_it_once_at_the_end(forked: subprocess.Popen[str]) -> None:
    with procfs.Sampler(forked.pid, interval=0.05) as s:
        pass
    assert s.first is not None and s.first.pss_kb is None     # not in every sample
    assert s.last is not None and s.memory_error == ""
    assert s.last.pss_kb is not None and s.last.private_kb is not None
    assert s.last.shared_kb is not None and s.last.shared_kb >= 2 * 48 * MB
    assert s.last.pss_kb < s.last.rss_kb


def test_an_unreadable_rollup_is_unavailable_with_its_reason(tmp_path: Path) -> None:
    """A kernel without the figures (or a process of another user): no partial
    sum, the reason instead."""
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "smaps_rollup").write_text("Rss: 100 kB\nPss: 50 kB\n")
    with pytest.raises(OSError, match="lacks Private_Clean"):
        procfs.tree_memory([7], str(tmp_path))
    sample = procfs.TreeSample(1, 0.0, 1, 100)
    got, why = procfs.with_memory(sample, [7], str(tmp_path))
    assert got.pss_kb is None and why.startswith("smaps_rollup unavailable (")
    assert procfs.tree_memory([8], str(tmp_path)) is None      # gone


LANDED = ROOT / "tests" / "fixtures" / "runs" / "20261124-071349-sturdy+paced-landed"


def test_a_landed_run_without_the_columns_opens_and_says_unavailable(tmp_path: Path) -> None:
    run = tmp_path / LANDED.name
    shutil.copytree(LANDED, run)
    rec, a = analysis.of(run)
    assert rec.rows and all(r.pss_kb is None and r.private_kb is None for r in rec.rows)
    facts = memsplit.splits(rec.manifest, a.stats)
    assert facts and all(not x.available and x.why == "" and x.private_share is None
                         for x in facts)
    rows = memtable.rows(rec.manifest, a.stats)
    assert {r[0] for r in rows} == set(a.stats)
    assert all(r[3] == "unavailable (not recorded by this run)" for r in rows)
    assert "## Where the memory goes" in report.write(run)
    assert 'id="memory"' in reportpage.render(run)


def test_rows_with_the_split_show_it_in_summary_report_levels_and_chart(tmp_path: Path) -> None:
    run = tmp_path / LANDED.name
    shutil.copytree(LANDED, run)
    rows = read_rows(run)
    (run / CSV).unlink()
    for r in rows:
        append_row(run, replace(r, pss_kb=9 * MB, private_kb=6 * MB, shared_kb=12 * MB,
                                anon_kb=5 * MB))
    back = read_rows(run)
    assert all((r.pss_kb, r.private_kb, r.shared_kb, r.anon_kb) ==
               (9 * MB, 6 * MB, 12 * MB, 5 * MB) for r in back)
    summary = report.write(run)
    section = summary[summary.index("## Where the memory goes"):]
    assert "| 9.0 [9.0–9.0] | 6.0 [6.0–6.0] | 12.0 [12.0–12.0] | 5.0 [5.0–5.0] | 33% |" in section
    with (run / "levels.csv").open() as f:
        levels = list(csv.DictReader(f))
    assert levels and all(
        [float(x[k]) for k in ("pss_kb_median", "private_kb_median", "shared_kb_median",
                               "anon_kb_median")] == [9 * MB, 6 * MB, 12 * MB, 5 * MB]
        for x in levels)
    page = reportpage.render(run)
    assert 'id="memory"' in page and "private share" in page
    _, a = analysis.of(run)
    rec = runrecord.load(run)
    plot.export(rec, a)
    dat = (run / "data" / "rss.dat").read_text().splitlines()
    assert dat[0] == "# server rss_end_MB rss_peak_MB role pss_end_MB private_end_MB"
    assert all(line.split()[4:] == ["9", "6"] for line in dat[1:])
    if shutil.which("gnuplot"):
        assert plot.draw(run) == 0 and (run / "rss.svg").is_file()
        assert "private end" in (run / "rss.svg").read_text()


def test_the_ssh_agent_reports_the_split_and_the_remote_sampler_reads_it(
        forked: subprocess.Popen[str]) -> None:
    """TOPOLOGY ssh: the agent (run here without ssh, as test_topology_ssh does)
    samples with lab.host.procfs and sends the split; ssh_remote reads it back."""
    import json
    from lab.measure.topologies.ssh import remote as ssh_remote, session as ssh_session
    agent = ssh_session.Session([sys.executable, str(ROOT / ssh_session.AGENT), "serve"],
                                "agent")
    try:
        def ask(*request: object) -> dict[str, object]:
            agent.send(json.dumps(list(request)))
            got: dict[str, object] = agent.json(timeout=30)
            return got
        watched = ask("watch", forked.pid, 0.05)
        ended = ask("unwatch", watched["watch"])
    finally:
        agent.close(wait=15)
    assert ended["memory_error"] == ""
    last = ssh_remote.tree_sample(ended["last"])
    assert last is not None and last.pss_kb is not None and last.private_kb is not None
    assert last.shared_kb is not None and last.shared_kb >= 2 * 48 * MB
    assert last.anon_kb is not None and last.anon_kb >= 2 * 64 * MB
