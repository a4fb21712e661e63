"""`make noise SERVER=x` (issue 20): the same server twice as two interleaved
entries of one run (x and its alias x#2, recorded as such), the A/A floor
per metric kept in the cache with its conditions, and `make compare`
naming the floor it used. Constructed runs first, then one short real
A/A run of ada-mini."""
from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import GRACE, ROOT, accepted_exit_3, bench, free_port, lab, lab_env, run_folders
from lab.present import compare
from lab.analyse.gate import GateSettings
from lab.analyse import floors, metrics
from lab.studies import noise
from lab.setup.exits import Exit
from lab.setup.fromenv import check_servers
from lab.setup.params import ConfigError
from lab.setup.servers import discover, lookup
from test_compare import make_run, manifest, paced_rows, row

pytestmark = pytest.mark.unit


# ---- the alias NAME#K ---------------------------------------------------------------

def test_an_alias_is_the_same_server_under_its_own_name() -> None:
    assert check_servers("paced paced#2", ["paced"]) == ("paced", "paced#2")
    assert check_servers("paced@4#2", ["paced"]) == ("paced@4#2",)
    for bad in ("paced#1", "paced#10", "paced#x"):
        with pytest.raises(ConfigError, match="after # comes an entry number from 2 to 9"):
            check_servers(bad, ["paced"])
    with pytest.raises(ConfigError, match="unknown server nope#2"):
        check_servers("nope#2", ["paced"])
    found = discover(ROOT, str(ROOT / "tests" / "servers"))
    one, two = lookup(found, "paced"), lookup(found, "paced#2")
    assert two.name == "paced#2" and two.alias_of == "paced"
    assert replace(two, name="paced", alias_of=None) == one          # nothing else differs
    assert two.describe()["alias_of"] == "paced" and "alias_of" not in one.describe()


# ---- the floor, from constructed A/A levels -----------------------------------------

def stats(server: str, value: int, rates: list[float], flags: str = "") -> metrics.LevelStats:
    [s] = metrics.level_stats([row(server, i + 1, value, r, flags) for i, r in enumerate(rates)])
    return s


def test_the_floor_is_the_largest_a_a_difference_over_clean_levels() -> None:
    got = {"x": [stats("x", 1, [100, 100, 100]), stats("x", 4, [400, 400, 400]),
                 stats("x", 8, [800, 800, 800])],
           "x#2": [stats("x#2", 1, [103, 103, 103]), stats("x#2", 4, [390, 390, 390]),
                   stats("x#2", 8, [500, 500, 500], "host-busy")]}
    found, levels, left_out = noise.floors_of(got, "x")
    assert levels == [1, 4] and left_out == ["8: host-busy"]
    assert found["rate"] == pytest.approx(3.0)           # |103/100 - 1|, |390/400 - 1| = 2.5
    # row() spends 0.5 s of CPU per repetition: CPU per request moves with the rate
    assert found["cpu"] == pytest.approx(100 * abs(500000 / 103 / (500000 / 100) - 1), abs=0.01)
    assert found["rss"] == 0.0 and "p99" not in found    # closed loop: p99 is not gated


def test_a_floor_is_recorded_from_an_a_a_run_and_compare_names_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    aa = make_run(tmp_path, "aa", manifest(),
                  paced_rows({1: [100, 101, 102, 100.5, 101.5]}) +
                  paced_rows({1: [108, 109, 110, 108.5, 109.5]}, server="paced#2"))
    cache = tmp_path / "cache"
    assert noise.record_floor(aa, "paced", cache) == Exit.OK
    [kept] = floors.read_all(cache, "paced")
    assert kept.floors_pct["rate"] == pytest.approx(100 * (109 / 101 - 1), abs=0.01)
    assert kept.levels == [1] and kept.conditions["client tool"] == "siege"
    assert kept.run == str(aa.resolve())
    out = capsys.readouterr()
    assert "| rate | 7.92% |" in out.out and f"recorded in {cache}" in out.err
    # a 6% drop: a regression at MIN_EFFECT=5% alone, not under the 7.9% floor
    a = make_run(tmp_path, "ra", manifest(), paced_rows({1: [100, 100.5, 101, 100.2, 100.8]}))
    b = make_run(tmp_path, "rb", manifest(), paced_rows({1: [94.5, 95, 95, 94.8, 95.2]}))
    assert compare.main(a, b, False, tmp_path / "o1", GateSettings()) == Exit.FAILED
    assert compare.main(a, b, False, tmp_path / "o2",
                        GateSettings(cache=cache)) == Exit.OK
    err = capsys.readouterr().err
    assert "noise floor for paced: A/A floor of paced from `make noise`" in err
    assert f"run {aa.name}" in err
    # a second A/A measurement is kept beside the first, nothing overwritten
    assert noise.record_floor(aa, "paced", cache) == Exit.OK
    assert len(floors.read_all(cache, "paced")) == 2


def test_an_a_a_run_without_a_clean_level_records_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = paced_rows({1: [100, 101, 102]}) + paced_rows({1: [100, 101, 102]}, server="paced#2")
    aa = make_run(tmp_path, "aa", manifest(),
                  [replace(r, flags="host-busy") if r.rep == 2 else r for r in rows])
    # exit 3, as compare says "nothing compared cleanly" (1 means a failure
    # while running, results marked incomplete: not the case, the run is complete)
    assert noise.record_floor(aa, "paced", tmp_path / "cache") == Exit.NOT_COMPARABLE
    assert "again on a quieter host" in capsys.readouterr().err
    assert not (tmp_path / "cache").exists()


@pytest.mark.fault
@pytest.mark.parametrize("server", ["", "paced nginx", "all", "paced#2"])
def test_noise_measures_one_server_else_exit_2_with_nothing_started(
        tmp_path: Path, server: str) -> None:
    with pytest.raises(ConfigError, match="measures one server"):
        noise.settings({"SERVER": server})
    done = lab(lab_env(tmp_path, SERVER=server), "noise", timeout=60)
    assert done.returncode == 2 and "measures one server" in done.stderr, done.stderr
    assert run_folders(tmp_path) == []


def test_noise_names_its_server_as_the_run_records_it() -> None:
    """SERVER=paced@016 runs as paced@16 and paced@16#2 (lab.setup.fromenv
    writes a SERVER word plainly): the floor is read from those entries and
    kept under that name, the one `make compare` looks up."""
    server, env = noise.settings({"SERVER": "paced@016"})
    assert server == "paced@16" and env["SERVER"] == "paced@16 paced@16#2"
    assert noise.second("jersey.jetty@8") == "jersey.jetty@8#2"
    with pytest.raises(ConfigError, match="SERVER: paced@0: after @ comes a worker count"):
        noise.settings({"SERVER": "paced@0"})


def test_noise_runs_both_entries_with_five_repetitions_unless_told() -> None:
    server, env = noise.settings({"SERVER": "paced", "PROBE": "1"})
    assert (server, env["SERVER"], env["REPEAT"], env["PROBE"]) == \
        ("paced", "paced paced#2", "5", "0")
    assert noise.settings({"SERVER": "paced", "REPEAT": "7"})[1]["REPEAT"] == "7"


def test_noise_counts_the_false_alarms_of_its_verdicts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 8% apart at both levels: a difference between two entries of the same
    # server is a false alarm, what make noise is there to count
    aa = make_run(tmp_path, "aa", manifest(),
                  paced_rows({1: [100, 101, 102, 100.5, 101.5], 4: [400, 404, 398, 402, 399]})
                  + paced_rows({1: [108, 109, 110, 108.5, 109.5], 4: [433, 436, 430, 434, 431]},
                               server="paced#2"))
    assert noise.record_floor(aa, "paced", tmp_path / "cache") == Exit.OK
    _, a = noise.analysis.of(aa)
    said, able, allowed, _same = noise.false_alarms(a)
    assert able >= 1 and said >= 1 and 0 < allowed <= 0.01 * able
    out = capsys.readouterr().out
    assert f"A/A verdicts: {said} of {able} said \"better\" between paced and paced#2" in out
    quiet = make_run(tmp_path, "q", manifest(),
                     paced_rows({1: [100, 101, 102, 100.5, 101.5]})
                     + paced_rows({1: [101, 100, 102, 101.5, 100.5]}, server="paced#2"))
    _, b = noise.analysis.of(quiet)
    assert noise.false_alarms(b)[0] == 0


# ---- a real A/A run -----------------------------------------------------------------

def borrowed_cache(tmp: Path) -> Path:
    """A cache of the test's own whose entries are the shared cache's (the
    built ada-mini and its toolchain): the floor is written here, not there."""
    shared = Path(os.environ.get("LAB_CACHE") or ROOT / ".cache").resolve()
    cache = tmp / "cache"
    cache.mkdir()
    if shared.is_dir():
        for entry in shared.iterdir():
            if entry.name != floors.FOLDER:
                (cache / entry.name).symlink_to(entry)
    return cache


@pytest.mark.real_server
@pytest.mark.quiet
def test_make_noise_on_ada_mini_records_a_floor_that_compare_names(tmp_path: Path) -> None:
    cache = borrowed_cache(tmp_path)
    settings = dict(CONCURRENCY="1 4", DURATION="1s", WARMUP="0", PORT=str(free_port()),
                    LAB_CACHE=str(cache), **GRACE)
    env = lab_env(tmp_path, **settings)
    done = subprocess.run(["make", "-s", "noise", "SERVER=ada-mini"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    [aa] = run_folders(tmp_path)
    m = json.loads((aa / "manifest.json").read_text())
    assert m["status"] == "complete", done.stderr[-3000:]
    assert set(m["servers"]) == {"ada-mini", "ada-mini#2"}
    assert m["servers"]["ada-mini#2"]["alias_of"] == "ada-mini"
    assert m["params"]["repeat"] == 5
    reps = [ln.split(",")[:2] for ln in (aa / "results.csv").read_text().splitlines()[1:]]
    # interleaved: each repetition runs both entries before the next repetition
    assert [r for _, r in reps] == sorted(r for _, r in reps)
    assert re.search(r'A/A verdicts: \d+ of \d+ said "better" between ada-mini and ada-mini#2',
                     done.stdout), done.stdout[-2000:]
    if "no floor recorded" in done.stderr:
        # each level left out names its flag: host-busy, client-bound or the hypervisor's steal
        assert re.search(r"level \d+: .*(host-busy|client-bound|steal).*: left out of the floor",
                         done.stderr), done.stderr
        pytest.skip("this host was busy, stolen or client-bound at every level: no floor (said so, exit "
                    f"{done.returncode}); the constructed tests cover the floor")
    assert done.returncode == 0, done.stderr[-3000:]
    [kept] = floors.read_all(cache, "ada-mini")
    assert kept.run == str(aa.resolve()) and kept.levels
    assert "rate" in kept.floors_pct
    # a plain run of ada-mini under the same conditions: compare names the floor
    one = bench(lab_env(tmp_path, SERVER="ada-mini", REPEAT="3", **settings), timeout=600)
    assert one.returncode == 0, one.stderr[-3000:]
    [run] = [p for p in run_folders(tmp_path) if p != aa]
    cmp = lab(env, "compare", str(aa), str(run), timeout=120)
    assert cmp.returncode in (0, 1, 3), cmp.stderr
    gate = [line for line in cmp.stderr.splitlines() if line.startswith("gate:")]
    accepted_exit_3(cmp.returncode, gate[-1] if gate else cmp.stderr.strip()[-300:])
    assert "noise floor for ada-mini: A/A floor of ada-mini from `make noise`" in cmp.stderr
    assert f"run {aa.name}" in cmp.stderr
