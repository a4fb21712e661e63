"""A results folder of many runs (issue 44, §6: with 5,000 runs `make report`
took 28.8 s, `make history` 13.2 s, and index.html was 13.8 MB). What the
index and the history take of each run is kept in the runs' cache
(lab.record.runcache), keyed by the run's manifest digest, and computed
again only for a run that changed; the index shows the newest runs a page,
the older ones on pages of their own. On constructed runs; what is counted
is the work done (runs analysed), never the time."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from lab.analyse import history
from lab.present import indexpage
from lab.record import files, folder, runcache
from test_compare import make_run, manifest, paced_rows

pytestmark = pytest.mark.unit


def results(top: Path, count: int) -> list[Path]:
    top.mkdir(parents=True)
    folder.mark(top)
    return [make_run(top, f"r{i:03d}", manifest(started=f"2026-11-20T10:{i // 60:02d}:"
                                                         f"{i % 60:02d}+0000"),
                     paced_rows({1: [50 + i] * 3, 4: [100 + i] * 3}))
            for i in range(count)]


@pytest.fixture
def analysed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The runs history.run_points analyses, in order."""
    seen: list[str] = []
    real = history.run_points

    def counting(run: Path) -> list[history.Point]:
        seen.append(run.name)
        return real(run)
    monkeypatch.setattr(history, "run_points", counting)
    return seen


def test_each_run_is_analysed_once_until_it_changes(tmp_path: Path,
                                                    analysed: list[str]) -> None:
    top = tmp_path / "results"
    runs = results(top, 6)
    first = history.points(top)
    assert sorted(analysed) == [r.name for r in runs]
    assert (top / runcache.CACHE).is_file()
    analysed.clear()
    assert history.points(top) == first and analysed == []       # all from the cache
    indexpage.write_index(top)
    assert analysed == []
    m = json.loads((runs[2] / "manifest.json").read_text())      # one run measured again
    files.write_json(runs[2] / "manifest.json", {**m, "status": "incomplete"})
    history.points(top)
    assert analysed == [runs[2].name]


def test_a_cache_that_is_not_the_labs_is_ignored_and_written_anew(
        tmp_path: Path, analysed: list[str]) -> None:
    top = tmp_path / "results"
    runs = results(top, 3)
    want = history.points(top)
    for bad in ("{", json.dumps({"version": 1, "runs": {"r000": {"key": "x", "history": 7}}}),
                json.dumps({"version": 1, "runs": {runs[0].name: {
                    "key": runcache.key(runs[0]), "history": {"points": [{"server": 1}]}}}}),
                json.dumps({"version": 1, "runs": {runs[0].name: {
                    "key": runcache.key(runs[0]), "history": {"points": [
                        {**history.point_json(want["paced"][0]), "peak_rps": "1e308"}]}}}})):
        (top / runcache.CACHE).write_text(bad)
        analysed.clear()
        assert history.points(top) == want, bad
        assert analysed, bad                       # computed again, not taken from it
    assert files.read_json(top / runcache.CACHE)["version"] == runcache.VERSION


def test_no_cache_is_written_in_a_folder_the_lab_did_not_make(tmp_path: Path) -> None:
    top = tmp_path / "results"
    results(top, 2)
    (top / folder.MARK).unlink()
    history.points(top)
    assert not (top / runcache.CACHE).exists()


def test_the_index_shows_the_newest_runs_a_page(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    top = tmp_path / "results"
    runs = results(top, 25)
    monkeypatch.setattr(indexpage, "PAGE", 10)
    monkeypatch.setattr(indexpage, "HISTORY_SHOWN", 5)
    index = indexpage.write_index(top)
    assert index == top / "index.html"
    text = index.read_text()
    assert "25 runs, 0 comparisons, newest first; 1-10 here." in text
    table = text.split("History per server")[0]
    assert [n for n in re.findall(r"<td>(r\d+) ", table)] == [r.name for r in runs[::-1][:10]]
    assert '<a href="index-3.html">3</a>' in text
    second, third = (top / "index-2.html").read_text(), (top / "index-3.html").read_text()
    assert "; 11-20 here" in second and "<td>r004 " in third and "; 21-25 here" in third
    history_part = text.split("History per server")[1]
    assert "The newest 5 of its 25 runs" in history_part
    assert f'<li value="25"><a href="{runs[-1].name}/' in history_part
    assert f">{runs[0].name}<" not in history_part and len(re.findall("<li value", history_part)) == 5
    for r in runs[12:]:                             # fewer runs: the lab's third page goes
        for p in sorted(r.rglob("*"), reverse=True):
            p.unlink() if p.is_file() else p.rmdir()
        r.rmdir()
    (top / "index-4.html").write_text("not the lab's")
    indexpage.write_index(top)
    assert (top / "index-2.html").is_file() and not (top / "index-3.html").exists()
    assert (top / "index-4.html").read_text() == "not the lab's"
    kept: dict[str, Any] = files.read_json(top / runcache.CACHE)["runs"]
    assert sorted(kept) == [r.name for r in runs[:12]]          # gone runs left out


def test_a_link_in_the_cache_s_place_is_left_alone(tmp_path: Path) -> None:
    top = tmp_path / "results"
    results(top, 2)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("theirs")
    (top / runcache.CACHE).symlink_to(elsewhere)
    assert history.points(top)
    assert (top / runcache.CACHE).is_symlink() and elsewhere.read_text() == "theirs"


def test_an_index_entry_the_lab_did_not_make_is_made_again(tmp_path: Path) -> None:
    top = tmp_path / "results"
    runs = results(top, 2)
    indexpage.write_index(top)
    data = files.read_json(top / runcache.CACHE)
    data["runs"][runs[0].name]["index"]["started"] = 5          # no page can show it
    (top / runcache.CACHE).write_text(json.dumps(data))
    text = indexpage.write_index(top).read_text()
    assert "<td>2026-11-20 10:00:00+0000</td><td>r000 " in text
