"""Paired runs as a user runs them (run-benchmark.sh, PAIRED=duet or rmit)
against the lab's twin server (tests/servers/twin: a set CPU cost a
request): both servers of a start pair verified and loaded at the same
moment on swapped seats, every side recorded; an A/A pair whose second
seat is slower caught as unbalanced; RMIT's slices; nothing left running."""
from __future__ import annotations

import csv
import json
import shutil
import socket
from pathlib import Path

import pytest

from conftest import bench, free_port, lab, lab_env, leftovers, run_folders
from lab.record import manifest
from replan import plan_of_line

pytestmark = [pytest.mark.fault, pytest.mark.usefixtures("wrk_installed")]    # the lab installs it (conftest)


def two_ports() -> str:
    """An even free port whose next one is free too (the second seat's)."""
    for _ in range(200):
        port = free_port()
        if port % 2:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return str(port)
    raise RuntimeError("no two free ports")


def paired_run(tmp: Path, expect: int = 0, **settings: str) -> tuple[Path, str]:
    env = lab_env(tmp, CLIENT="wrk", KEEPALIVE="1", PORT=two_ports(), **settings)
    done = bench(env, timeout=600)
    assert done.returncode == expect, done.stderr[-3000:]
    [run] = run_folders(tmp)
    assert leftovers(run) == []
    return run, done.stderr


def starts(run: Path) -> dict[str, list[dict[str, object]]]:
    m = json.loads((run / "manifest.json").read_text())
    return {name: s["starts"] for name, s in m["servers"].items()}


def test_a_duet_loads_both_servers_at_the_same_moment_on_swapped_seats(tmp_path: Path) -> None:
    run, said = paired_run(tmp_path, SERVER="twin twin.heavier", PAIRED="duet",
                           CONCURRENCY="1 4", DURATION="2s", REPEAT="2", WARMUP="auto",
                           WARMUP_MAX="6s")
    got = starts(run)
    # WARMUP=auto: both sides' slices at the same moment, as many for each
    warm = [st["warmup"] for ss in got.values() for st in ss]
    assert all(w["together"] for w in warm)            # type: ignore[index]
    assert warm[0]["slices"] == warm[2]["slices"]      # type: ignore[index]
    seats = {name: [(st["pair"]["seat"], st["pair"]["port"]) for st in ss]   # type: ignore
             for name, ss in got.items()}
    assert seats["twin"][0][0] == 1 and seats["twin"][1][0] == 2
    assert seats["twin.heavier"][0][0] == 2 and seats["twin.heavier"][1][0] == 1
    assert seats["twin"][0][1] == seats["twin.heavier"][1][1]     # the port goes with the seat
    assert all(st["verified"] for ss in got.values() for st in ss)
    with (run / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert sorted((r["server"], r["rep"], r["value"]) for r in rows) == sorted(
        (s, rep, c) for s in ("twin", "twin.heavier") for rep in "12" for c in "14")
    # the kernel's TCP counters are not read under PAIRED: both servers share the
    # namespace, so no count would be one seat's (run-folder.md; issue 54)
    assert [r["tcp_counters"] for r in rows] == [""] * len(rows)
    # each level in slices (2 s: two of 1 s), each slice's two clients ended
    # together, not a slice's length apart; each slice's figures recorded
    for tag in ("rep1-c1-slice1", "rep1-c1-slice2", "rep2-c4-slice2"):
        a, b = (run / name / f"wrk-{tag}.out" for name in ("twin", "twin.heavier"))
        assert abs(a.stat().st_mtime - b.stat().st_mtime) < 0.5, tag
    for r in rows:
        rps, cpu = r["slice_rps"].split(), r["slice_cpu_us"].split()
        assert len(rps) == len(cpu) == 2 and all(float(x) > 0 for x in rps + cpu), r
        assert 0.5 < sum(map(float, rps)) / 2 / float(r["rate_rps"]) < 1.5
    assert "pair 2/2 duet seat 1" in said
    # its Reproduce line, read by the lab's settings parser, plans this run (issue 53)
    m = manifest.read_manifest(run)
    assert m.planned.design == "duet" and plan_of_line(m.reproduce) == m.planned
    summary = (run / "summary.md").read_text()
    assert "under duet" in summary and "signed-rank" in summary
    # the paired gate (make compare RUN=...): 2 pairs decide nothing, said so, exit 3
    gated = lab(lab_env(tmp_path, MIN_EFFECT="3%"), "compare", str(run))
    assert gated.returncode == 3, gated.stderr[-2000:]
    assert "too few pairs" in gated.stderr
    [out] = (tmp_path / "results").glob("compare-*-paired")
    assert (out / "compare.xml").is_file() and (out / "compare.json").is_file()
    # another copy of the run (the same run id) gated next: a folder of its own,
    # the first comparison kept as it was (issue 54)
    first = (out / "compare.json").read_bytes()
    copy = tmp_path / "copy" / run.name
    shutil.copytree(run, copy)
    assert lab(lab_env(tmp_path, MIN_EFFECT="3%"), "compare", str(copy)).returncode == 3
    again = out.with_name(f"{out.name}-2")
    assert sorted((tmp_path / "results").glob("compare-*")) == [out, again]
    assert (out / "compare.json").read_bytes() == first
    assert json.loads((again / "compare.json").read_text())["b"]["path"] == str(copy)


def test_an_a_a_duet_with_a_slower_seat_is_unbalanced_not_a_difference(
        tmp_path: Path) -> None:
    """twin.lopsided costs 50% more CPU a request on an odd port, the second
    seat's: whichever copy sits there is slower, so the odd and the even
    pairs disagree and the pair is not ranked."""
    run, _ = paired_run(tmp_path, SERVER="twin.lopsided twin.lopsided#2", PAIRED="duet",
                        CONCURRENCY="1", DURATION="1s", REPEAT="10", WARMUP="0")
    [primary] = json.loads((run / "results.json").read_text())["primary_verdicts"]
    assert primary["kind"] == "not-comparable", primary
    assert "unbalanced: seat 1 favoured" in primary["text"]


def test_rmit_measures_each_level_in_alternating_slices(tmp_path: Path) -> None:
    run, _ = paired_run(tmp_path, SERVER="twin twin#2", PAIRED="rmit", CONCURRENCY="2",
                        DURATION="2s", REPEAT="2", WARMUP="0")
    for name in ("twin", "twin#2"):
        slices = sorted(p.name for p in (run / name).glob("wrk-rep1-c2-slice*.out"))
        assert slices == ["wrk-rep1-c2-slice1.out", "wrk-rep1-c2-slice2.out"]
    with (run / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and all(1.6 < float(r["elapsed_s"]) < 2.6 for r in rows)
    assert "under RMIT" in (run / "summary.md").read_text()


def test_a_server_that_dies_in_a_duet_is_said_with_its_exit_status(tmp_path: Path) -> None:
    """crasher SIGKILLs itself at c=2, in the middle of a duet's slice: the
    run says how it died, with its signal, never "status unknown" (the lab
    saw it gone before its status was collected: issue 54), and records the
    level and the exit code in the start; nothing is left running."""
    run, said = paired_run(tmp_path, SERVER="crasher paced", PAIRED="duet", CONCURRENCY="1 2",
                           DURATION="1s", REPEAT="2", WARMUP="0", expect=1)
    assert "status unknown" not in said
    assert "killed by SIGKILL" in said, said[-3000:]
    dead = [st for st in starts(run)["crasher"] if st.get("died_at")]
    assert dead and all(st["died_at"] == "c=2" and st["exit_code"] == -9 for st in dead)
    assert leftovers(run) == []
