"""Two chart rules of plots/*.gp, drawn by gnuplot itself: a run of one
level puts its point inside the chart, not on its right border; the
percentiles chart marks a client-bound level, as the requests/s chart does."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

HEAD = ("# value rate rate_lo rate_hi resp_ms resp_lo resp_hi rss_end_MB rss_peak_MB "
        "client_bound cpu_us_per_req cpu_lo cpu_hi failed disturbed noisy p50_ms p90_ms p99_ms "
        "unranked")


def level(value: int, bound: int) -> str:
    return (f"{value} 7000 6900 7100 0.3 0.2 0.4 10 10 {bound} 50 40 60 0 0 0 "
            "0.5 2 30 0")


def draw(run: Path, chart: str, values: list[int], bound: list[int]) -> str:
    """Draw `chart` as SVG for server a; gnuplot's own x range (stderr), and the SVG."""
    (run / "data").mkdir(parents=True, exist_ok=True)
    (run / "data" / "a.dat").write_text(
        "\n".join([HEAD, *(level(v, b) for v, b in zip(values, bound))]) + "\n")
    setup = (f"run='{run}'; servers='a'; ceiling=''; conditions='test'; xlabel='c'; "
             f"xticks='{' '.join(map(str, values))}'; fmt='svg'")
    out = subprocess.run(["gnuplot", "-e", setup, str(ROOT / "plots" / f"{chart}.gp"),
                          "-e", "print GPVAL_X_MIN, GPVAL_X_MAX"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("chart", ["rps", "latency", "percentiles"])
def test_one_level_is_drawn_inside_the_chart(tmp_path: Path, chart: str) -> None:
    lo, hi = (float(x) for x in draw(tmp_path, chart, [8], [0]).split())
    assert lo == 0 and hi == 16                     # the point at 8, in the middle
    lo, hi = (float(x) for x in draw(tmp_path, chart, [1, 8, 64], [0, 0, 0]).split())
    assert lo == 0 and 64 <= hi < 80                # several levels: as before


def test_percentiles_mark_a_client_bound_level(tmp_path: Path) -> None:
    draw(tmp_path, "percentiles", [1000, 4000, 8000], [0, 0, 1])
    assert "client-bound (measures the client)" in (tmp_path / "percentiles.svg").read_text()
    draw(tmp_path, "percentiles", [1000, 4000], [0, 0])
    assert "client-bound" not in (tmp_path / "percentiles.svg").read_text()
