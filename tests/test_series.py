"""Per-second series (lab.record.series): vegeta's running reports read from real
captured output, the sampler's points cut into seconds, the files a run
writes and the chart drawn from them."""
from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, bench, free_port, leftovers, repository_env, run_folders
from lab.record import series
from lab.measure.clients import vegeta

pytestmark = pytest.mark.unit

FIXTURES = ROOT / "tests" / "fixtures"


def test_vegeta_running_reports_give_responses_per_second() -> None:
    # `vegeta report -type=json -every=1s` at 500/s for 3 s against nginx
    # (tests/fixtures/vegeta-series.out, the lab's own command): a report each
    # second after a clear-screen code, then the final one
    out = (FIXTURES / "vegeta-series.out").read_text()
    per_second = series.vegeta_per_second(out)
    assert len(per_second) == 3
    assert all(450 < r < 550 for r in per_second), per_second
    level = vegeta.parse(out, (FIXTURES / "vegeta-series.err").read_text())
    assert level.transactions == 1500 and level.offered_rps == 500   # the final report


def test_a_single_report_gives_its_one_second_and_text_gives_none() -> None:
    one = (FIXTURES / "vegeta-ok.out").read_text()       # 2 s, no running reports
    assert len(series.vegeta_per_second(one)) == 1
    assert series.vegeta_per_second("no report here\n") == []


def test_server_points_are_cut_into_whole_seconds() -> None:
    # (monotonic s, CPU s, RSS kB) every 0.25 s for 2 s: half a core, RSS growing
    points = [(10 + i * 0.25, 5 + i * 0.125, 1000 + i) for i in range(9)]
    cut = series.server_per_second(points)
    assert [cpu for cpu, _ in cut] == [50.0, 50.0]
    assert [rss for _, rss in cut] == [1004, 1008]
    # 0.5 s more at a whole core: a last part-second; 0.25 s more: dropped
    longer = points + [(12.25, 6.25, 1009), (12.5, 6.5, 1010)]
    assert series.server_per_second(longer)[-1] == (100.0, 1010)
    assert len(series.server_per_second(points + [(12.25, 6.25, 1009)])) == 2
    assert series.server_per_second(points[:1]) == []


def test_write_and_read_keep_missing_figures_missing(tmp_path: Path) -> None:
    f = tmp_path / "series-rep1-c8.csv"
    series.write(f, None, [(12.5, 2048), (30.0, 4096)])
    assert next(csv.reader(f.open())) == list(series.HEADER)
    assert series.read(f) == [(0, None, 12.5, 2048), (1, None, 30.0, 4096)]
    for tag in ("rep1-c64", "rep10-c8", "rep2-c8", "rep1-c8"):
        (tmp_path / f"series-{tag}.csv").write_text(",".join(series.HEADER) + "\n")
    assert [p.stem for p in series.files(tmp_path)] == \
        ["series-rep1-c8", "series-rep1-c64", "series-rep2-c8", "series-rep10-c8"]


@pytest.mark.fault
def test_a_short_run_stores_each_level_and_charts_it(tmp_path: Path) -> None:
    """nginx with siege, two short levels: the server's seconds stored, no
    req/s (not available from siege), one chart per server inlined."""
    if shutil.which("gnuplot") is None or shutil.which("siege") is None:
        pytest.skip("gnuplot and siege are needed")
    env = repository_env(tmp_path, SERVER="nginx", CONCURRENCY="1 4", DURATION="2s",
                         WARMUP="0", PORT=str(free_port()))
    out = bench(env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    [run] = run_folders(tmp_path)
    found = series.files(run / "nginx")
    assert [p.name for p in found] == ["series-rep1-c1.csv", "series-rep1-c4.csv"]
    for path in found:
        rows = series.read(path)
        assert len(rows) >= 1
        assert all(rps is None for _, rps, _, _ in rows)          # siege gives none
        assert all(cpu is not None and cpu >= 0 and rss and rss > 0
                   for _, _, cpu, rss in rows)
    assert b"<svg" in (run / "series-nginx.svg").read_bytes()[:2000]
    page = (run / "report.html").read_text()
    assert 'id="chart-series-nginx"' in page and "Per second: nginx" in page
    assert "not available from siege" in page
    assert leftovers(run) == []


@pytest.mark.fault
@pytest.mark.usefixtures("vegeta_installed")             # the lab builds it (conftest)
def test_a_vegeta_run_stores_its_responses_per_second(tmp_path: Path) -> None:
    """nginx at 500/s for 2 s: each second of the level has vegeta's count."""
    if shutil.which("gnuplot") is None:
        pytest.skip("gnuplot is needed")
    env = repository_env(tmp_path, SERVER="nginx", CLIENT="vegeta", RATE="500", DURATION="2s",
                         WARMUP="0", PORT=str(free_port()))
    out = bench(env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    [run] = run_folders(tmp_path)
    [path] = series.files(run / "nginx")
    rows = series.read(path)
    rates = [rps for _, rps, _, _ in rows if rps is not None]
    assert len(rates) == 2 and all(rps > 0 for rps in rates), rows
    assert "not available from" not in (run / "report.html").read_text()
    assert leftovers(run) == []
