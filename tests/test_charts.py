"""Chart rules of plots/*.gp, drawn by gnuplot itself: a run of one
level puts its point inside the chart, not on its right border; the
percentiles chart marks a client-bound level, as the requests/s chart does,
and every chart of a run's levels a saturated one."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.unit

HEAD = ("# value rate rate_lo rate_hi resp_ms resp_lo resp_hi rss_end_MB rss_peak_MB "
        "client_bound cpu_us_per_req cpu_lo cpu_hi failed disturbed noisy p50_ms p90_ms p99_ms "
        "unranked failing saturated")


def level(value: int, bound: int, saturated: int = 0) -> str:
    return (f"{value} 7000 6900 7100 0.3 0.2 0.4 10 10 {bound} 50 40 60 0 0 0 "
            f"0.5 2 30 0 0 {saturated}")


def draw(run: Path, chart: str, values: list[int], bound: list[int],
         saturated: list[int] | None = None) -> str:
    """Draw `chart` as SVG for server a; gnuplot's own x range (stderr), and the SVG."""
    (run / "data").mkdir(parents=True, exist_ok=True)
    (run / "data" / "a.dat").write_text("\n".join([HEAD, *(
        level(v, b, s) for v, b, s in zip(values, bound, saturated or [0] * len(values)))]) + "\n")
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


SATURATED = "saturated (achieved rate short of the offered)"


@pytest.mark.parametrize("chart", ["percentiles", "rps", "latency"])
def test_every_chart_of_the_levels_marks_a_saturated_level(tmp_path: Path, chart: str) -> None:
    """Exercise 6 reads the hockey stick on percentiles.png, where a level
    flagged saturated (open loop: the achieved rate fell short of the
    offered) was not marked (issue 54): it is, as in the other charts."""
    draw(tmp_path, chart, [1000, 4000, 8000], [0, 0, 0], saturated=[0, 0, 1])
    assert SATURATED in (tmp_path / f"{chart}.svg").read_text()
    draw(tmp_path, chart, [1000, 4000], [0, 0])
    assert "saturated" not in (tmp_path / f"{chart}.svg").read_text()


def test_a_saturated_level_is_exported_as_saturated(tmp_path: Path) -> None:
    """plot.export's `saturated` column: 1 where the level has the flag."""
    import shutil
    from dataclasses import replace
    from lab.analyse import analysis
    from lab.present import plot
    run = tmp_path / "run"
    shutil.copytree(ROOT / "tests" / "fixtures" / "runs" / "20261123-033407-nginx+paced", run)
    rec, a = analysis.of(run)
    first, *rest = a.stats["paced"]
    a.stats["paced"] = [replace(first, flags={**first.flags, "saturated": 1}), *rest]
    plot.export(rec, a)
    lines = (run / "data" / "paced.dat").read_text().splitlines()
    col = lines[0].lstrip("# ").split().index("saturated")
    assert [x.split()[col] for x in lines[1:]] == ["1"] + ["0"] * len(rest)
    assert {x.split()[col] for x in (run / "data" / "nginx.dat").read_text().splitlines()[1:]} \
        == {"0"}


def test_a_saturated_point_is_drawn_alike_in_every_chart() -> None:
    """The saturated marker (point type 12) is one style wherever it is drawn,
    and every chart that circles a client-bound level of a run (data column
    10) marks a saturated one too."""
    styles, charts = set(), set()
    for gp in sorted((ROOT / "plots").glob("*.gp")):
        text = gp.read_text()
        for line in text.splitlines():
            if re.search(r"\bpt 12\b", line):
                styles.add(line.split("with", 1)[1].strip())
                charts.add(gp.name)
        if "column(10) == 1" in text:
            assert gp.name in charts and SATURATED in text, gp.name
    assert len(styles) == 1 and charts >= {"percentiles.gp", "rps.gp", "latency.gp"}, styles


def knob_level(value: int, bound: int = 0, failing: int = 0, unranked: int = 0) -> str:
    return (f"{value} 7000 6900 7100 0.3 0.2 0.4 10 10 {bound} 50 40 60 "
            f"{500 if failing else 0} 0 0 0.5 2 30 {unranked} {failing} 0")


def draw_knob(run: Path, rows: list[str]) -> str:
    (run / "data").mkdir(parents=True, exist_ok=True)
    (run / "data" / "aws.dat").write_text("\n".join([HEAD, *rows]) + "\n")
    setup = (f"run='{run}'; servers='aws'; ceiling=''; conditions='test'; xlabel='workers'; "
             "xticks='2 4 8 16'; fmt='svg'")
    out = subprocess.run(["gnuplot", "-e", setup, str(ROOT / "plots" / "knob.gp")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return (run / "knob.svg").read_text()


def test_the_knob_chart_marks_failing_and_unclean_points(tmp_path: Path) -> None:
    """Exercise 3's sweep: aws with 2 and 4 tasks failed about half the
    requests of 32 clients, drawn as plain points; they are marked, as the
    requests/s chart marks its unclean points."""
    svg = draw_knob(tmp_path, [knob_level(2, failing=1), knob_level(4, failing=1),
                               knob_level(8), knob_level(16, bound=1, unranked=1)])
    assert "requests failed" in svg
    assert "client-bound (measures the client)" in svg and "not ranked" in svg
    clean = draw_knob(tmp_path, [knob_level(v) for v in (2, 4, 8, 16)])
    assert "requests failed" not in clean and "client-bound" not in clean


def test_a_level_whose_requests_failed_is_exported_as_failing(tmp_path: Path) -> None:
    """plot.export writes a `failing` column: more than FAILED_SHARE_PCT of
    a repetition's requests failed (the share above which its req/s is not
    ranked), from a saved run with such levels (flaky: 10% failed)."""
    import shutil
    from lab.analyse import analysis, metrics
    from lab.present import plot
    run = tmp_path / "run"
    shutil.copytree(ROOT / "tests" / "fixtures" / "runs" /
                    "20261123-033230-warming+nginx+flaky", run)
    rec, a = analysis.of(run)
    plot.export(rec, a)
    for name in ("flaky", "warming"):
        lines = (run / "data" / f"{name}.dat").read_text().splitlines()
        col = lines[0].lstrip("# ").split().index("failing")
        got = {int(x.split()[0]): x.split()[col] for x in lines[1:]}
        want = {s.value: str(int(s.failed_pct > metrics.FAILED_SHARE_PCT))
                for s in a.stats[name]}
        assert got == want, (name, got)
    assert set(got.values()) == {"0"} and "1" in {x.split()[col] for x in (
        run / "data" / "flaky.dat").read_text().splitlines()[1:]}


def png_rows(path: Path) -> list[list[tuple[int, ...]]]:
    """The pixels of an 8-bit RGB or RGBA, non-interlaced PNG (as pngcairo
    writes them), row by row: zlib and the five PNG filters, nothing more."""
    import struct
    import zlib
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    channels = 0
    while pos < len(data):
        size, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + size]
        if kind == b"IHDR":
            width, _height, depth, colour, _c, _f, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + size
    raw, stride, rows = zlib.decompress(idat), width * channels, []
    prev = bytearray(stride)
    for y in range(len(raw) // (stride + 1)):
        at = y * (stride + 1)
        kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            pred = {0: 0, 1: a, 2: b, 3: (a + b) // 2,
                    4: min((a, b, c), key=lambda v: (abs(a + b - c - v), (a, b, c).index(v)))}[kind]
            line[i] = (line[i] + pred) & 0xFF
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        prev = line
    return rows


def test_the_compare_chart_s_title_is_not_cut_off(tmp_path: Path) -> None:
    """Two run ids of a few servers each: the title was centred over the plot
    area, narrowed by the legend, and ran off the chart's left edge."""
    (tmp_path / "data").mkdir()
    for side in ("a", "b"):
        (tmp_path / "data" / f"{side}-aws@8.dat").write_text(
            "# value rate lo hi client_bound host_busy\n"
            "1 4500 4400 4600 0 0\n8 5200 5100 5300 0 1\n")
    ids = ("20261128-121031-aws@8+aws@16+aws@32-wrk-close",
           "20261128-121101-aws@8+aws@16+aws@32-wrk-close")
    setup = (f"dir='{tmp_path}'; servers='aws@8'; label_a='{ids[0]}'; label_b='{ids[1]}'; "
             "cond_a='A: test'; cond_b='B: test'; xticks='1 8'; fmt='png'")
    out = subprocess.run(["gnuplot", "-e", setup, str(ROOT / "plots" / "compare.gp")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    rows = png_rows(tmp_path / "compare.png")
    inked = [y for y, row in enumerate(rows[:80]) if any(sum(p) < 600 for p in row)]
    assert inked, "no title drawn"
    for y in range(len(rows)):           # nothing touches the left or right edge
        assert all(sum(p) >= 600 for p in rows[y][:3] + rows[y][-3:]), f"row {y}"


def test_an_open_circle_means_client_bound_in_every_chart() -> None:
    """The workshop's text says an open circle is a client-bound point: in
    compare.png it was run B, in percentiles.png p90 (issue 54). Point type
    6 (gnuplot's open circle) is drawn in black, as the client-bound marker,
    and only there."""
    for gp in sorted((ROOT / "plots").glob("*.gp")):
        for n, line in enumerate(gp.read_text().splitlines(), 1):
            if re.search(r"\bpt 6\b", line):
                assert 'lc rgb "black"' in line, f"{gp.name}:{n}: {line.strip()}"
