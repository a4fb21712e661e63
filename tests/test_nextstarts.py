"""lab next (lab.analyse.nextstarts): rounds of starts in ABBA order; with
REPEAT=auto, starts past the minimum only for servers of undecided pairs, up
to REPEAT_MAX, none for a server whose start failed. On constructed run
folders (no load)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from lab.analyse import analysis, nextstarts
from lab.record import checked
from lab.record.manifest import RunParams, read_manifest
from lab.setup.fromenv import from_env
from lab.setup.params import Repeat
from lab.setup.servers import discover
from test_compare import make_run, manifest, paced_rows

pytestmark = pytest.mark.unit


def run_with(tmp: Path, rates: dict[str, list[float]], auto: bool = True, first: int = 5,
             most: int = 10, failed: str = "") -> Path:
    m: dict[str, Any] = manifest(**{"params.repeat": first})
    m["params"]["repeat_auto"] = auto
    m["params"]["repeat_max"] = most
    m["servers"] = {name: {"version": "1", "facts": {}, "starts": [
        {"id": f"{name}-{i + 1}", "rep": i + 1,
         "status": "failed" if name == failed and i == 0 else "complete"}
        for i in range(len(xs))]} for name, xs in rates.items()}
    rows = [r for name, xs in rates.items() for r in paced_rows({1: xs}, server=name)]
    return make_run(tmp, "run", m, rows)


def plan(run: Path, servers: list[str]) -> nextstarts.Next:
    return nextstarts.plan(read_manifest(run), servers, analysis.of(run)[1])


def test_repeat_is_one_typed_value_from_the_settings_to_the_reader(tmp_path: Path) -> None:
    """REPEAT=N or auto with its minimum and maximum: the settings, the manifest and
    its reader hold one Repeat; a run written before (no repeat_auto) reads as N."""
    auto = from_env({"SERVER": "aws", "REPEAT": "auto", "REPEAT_MIN": "3", "REPEAT_MAX": "6"},
                    list(discover(ROOT)), ["siege"])
    assert auto.repeat == Repeat(least=3, most=6, auto=True)
    read = RunParams.parse(checked.obj(auto.to_json(), tmp_path, "params"))
    assert read.repeat == auto.repeat and "repeat_auto" not in read.extra
    assert read.repeat.text() == "auto (3 to 6)"
    fixed = read_manifest(run_with(tmp_path / "f", {"a": [1.0]}, auto=False, first=4))
    assert fixed.params.repeat == Repeat(least=4, most=4) and fixed.params.repeat.text() == "4"
    old = read_manifest(ROOT / "tests/fixtures/runs/20261125-120537-sturdy+paced-pre21")
    assert old.params.repeat == Repeat(least=2, most=2, auto=False)


def test_rounds_alternate_which_server_starts_first() -> None:
    assert nextstarts.ordered(["a", "b", "c"], 1) == ["a", "b", "c"]
    assert nextstarts.ordered(["a", "b", "c"], 2) == ["c", "b", "a"]


def test_fixed_repeat_gives_every_server_each_round_then_nothing(tmp_path: Path) -> None:
    run = run_with(tmp_path, {"a": [100.0, 101.0], "b": [100.0]}, auto=False, first=3)
    n = plan(run, ["a", "b"])
    assert n.starts == [("b", 2)]                 # b is behind: round 2 is its
    done = run_with(tmp_path / "d", {"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0, 3.0]}, auto=False,
                    first=3)
    assert plan(done, ["a", "b"]).starts == []


def test_auto_stops_once_the_pair_is_decided(tmp_path: Path) -> None:
    apart = run_with(tmp_path, {"a": [100.0, 101.0, 102.0, 100.5, 101.5],
                                "b": [150.0, 151.0, 152.0, 150.5, 151.5]})
    n = plan(apart, ["a", "b"])
    assert n.starts == [] and "every pair decided" in n.said


def test_auto_adds_one_round_for_an_undecided_pair_in_abba_order(tmp_path: Path) -> None:
    mixed = run_with(tmp_path, {"a": [100.0, 120.0, 90.0, 110.0, 105.0],
                                "b": [104.0, 95.0, 118.0, 101.0, 99.0]})
    n = plan(mixed, ["a", "b"])
    assert n.starts == [("b", 6), ("a", 6)] and "undecided: a vs b" in n.said   # round 6: BA
    full = run_with(tmp_path / "f", {"a": [100.0, 120.0, 90.0], "b": [104.0, 95.0, 118.0]},
                    first=2, most=3)
    n = plan(full, ["a", "b"])
    assert n.starts == [] and "REPEAT_MAX=3 reached" in n.said


def test_a_failed_server_gets_no_more_starts(tmp_path: Path) -> None:
    mixed = run_with(tmp_path, {"a": [100.0, 120.0, 90.0, 110.0, 105.0],
                                "b": [104.0, 95.0, 118.0, 101.0, 99.0],
                                "c": [150.0, 151.0, 152.0, 150.5, 151.5]}, failed="b")
    n = plan(mixed, ["a", "b", "c"])
    assert ("b", 6) not in n.starts
