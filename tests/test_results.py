from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from conftest import lab, lab_env
from lab.record import folder, rows

pytestmark = pytest.mark.unit


def test_run_folders_are_never_reused(tmp_path: Path) -> None:
    a = folder.new_run(tmp_path, ("grizzly", "aws"))
    b = folder.new_run(tmp_path, ("grizzly", "aws"))
    assert a != b and a.is_dir() and b.is_dir()
    assert a.name.endswith("-grizzly+aws")
    assert folder.new_run(tmp_path, tuple("abcde")).name.endswith("-5-servers")


@pytest.mark.fault
@pytest.mark.parametrize("settings, tail", [
    ({"CLIENT": "siege", "KEEPALIVE": "0"}, "-paced+stall-siege-close"),
    ({"CLIENT": "wrk", "KEEPALIVE": "1"}, "-paced+stall-wrk-keepalive"),
])
def test_a_bench_run_folder_names_its_client_and_connection(
        tmp_path: Path, settings: dict[str, str], tail: str) -> None:
    # two runs of the same servers told apart by name (make compare A=... B=...)
    out = lab(lab_env(tmp_path, SERVER="paced stall", **settings), "new-run")
    assert out.returncode == 0, out.stderr
    run = Path(out.stdout.strip())
    assert run.is_dir() and run.name.endswith(tail), run.name
    # the readers take conditions from the manifest, not the name: an older,
    # shorter name sorts and reads as before
    assert folder.new_run(tmp_path, ("paced",)).name.endswith("-paced")


def test_rows_are_appended_and_read_back_by_server(tmp_path: Path) -> None:
    def row(server: str, c: int) -> rows.Row:
        values = {f.name: 0 for f in fields(rows.Row)}
        values.update(server=server, rep=1, axis="concurrency", value=c, concurrency=c,
                      offered_rps=None, p50_ms=None, p90_ms=None, p99_ms=1.5,
                      littles_ratio=0.97, client_bound=c > 4, flags="", failure_kinds=None,
                      tcp_counters=None)
        return rows.Row(**values)

    for server, c in (("b", 8), ("b", 1), ("a", 4)):
        rows.append_row(tmp_path, row(server, c))
    grouped = dict(rows.rows_by_server(tmp_path))
    assert list(grouped) == ["b", "a"]                          # run order
    assert [r.value for r in grouped["b"]] == [1, 8]             # sorted by level
    assert grouped["b"][1].client_bound is True and grouped["b"][0].client_bound is False
    assert grouped["a"][0].offered_rps is None and grouped["a"][0].p99_ms == 1.5  # typed back
    header = (tmp_path / rows.CSV).read_text().splitlines()[0]
    assert header.split(",") == rows.COLUMNS


def test_a_csv_from_an_older_lab_is_refused_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / rows.CSV).write_text("server,concurrency\nx,1\n")
    with pytest.raises(ValueError, match="lacks columns rep"):
        rows.read_rows(tmp_path)


@pytest.mark.parametrize("field,cell", [("rate_rps", "nan"), ("rate_rps", "inf"),
                                        ("rate_rps", "1e308"), ("server_cpu_pct", "-inf"),
                                        ("p99_ms", "NaN"), ("rss_peak_kb", "9" * 400)])
def test_a_figure_that_is_no_number_is_refused_as_corrupt(
        tmp_path: Path, field: str, cell: str) -> None:
    """NaN, inf and an absurd figure (a rate of 1e308 req/s) are no figure any
    level measured: the reader refuses the file, naming it, the line and the
    cell, rather than show them in a report (issue 44, §6)."""
    values = {f.name: 0 for f in fields(rows.Row)}
    values.update(server="a", rep=1, axis="concurrency", value=1, concurrency=1,
                  offered_rps=None, p50_ms=None, p90_ms=None, p99_ms=1.5,
                  littles_ratio=1.0, client_bound=False, flags="", failure_kinds="",
                  tcp_counters=None)
    rows.append_row(tmp_path, rows.Row(**values))
    rows.append_row(tmp_path, rows.Row(**values))
    path = tmp_path / rows.CSV
    lines = path.read_text().splitlines()
    cells = lines[2].split(",")
    cells[rows.COLUMNS.index(field)] = cell
    path.write_text("\n".join([*lines[:2], ",".join(cells)]) + "\n")
    with pytest.raises(ValueError) as e:
        rows.read_rows(tmp_path)
    said = str(e.value)
    assert str(path) in said and "line 3" in said and f"`{field}`" in said, said
    assert "corrupt" in said, said


def test_results_json_is_never_larger_than_the_lab_reads(tmp_path: Path) -> None:
    """results.json of a saved run: a line per row while it fits; rows left out,
    saying why, where they would pass the limit; refused, before anything is
    written, where even the rest would (issue 44, §6: a 335 MB results.json
    once, over the 64 MiB the lab reads of a file)."""
    import json
    import shutil
    from lab.analyse import analysis
    from lab.record import files
    run = tmp_path / "run"
    shutil.copytree(Path(__file__).parent / "fixtures" / "runs" /
                    "20261124-071349-sturdy+paced-landed", run)
    rec, a = analysis.of(run)
    whole = "".join(analysis.results_text(rec, a))
    data = json.loads(whole)
    assert [r["rep"] for r in data["rows"]["sturdy"]] == [r.rep for r in rec.by_server()["sturdy"]]
    assert "rows_omitted" not in data and whole.count("\n") > len(rec.rows)
    limit = len(whole.encode()) - 100
    cut = "".join(analysis.results_text(rec, a, limit))
    assert len(cut.encode()) <= limit
    data = json.loads(cut)
    assert data["rows"] == {} and data["rows_omitted"].startswith(f"{len(rec.rows)} rows would")
    assert data["levels"] and data["verdicts"] is not None
    with pytest.raises(OSError, match="results.json would be .* without its rows"):
        analysis.results_text(rec, a, 1000)
    files.write_atomic(tmp_path / "out.json", analysis.results_text(rec, a))
    assert files.read_json(tmp_path / "out.json") == json.loads(whole)
