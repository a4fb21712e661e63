"""What a reader meets first on the pages (issue 30): report.html and
compare.html open with one line (what was measured, how, the verdict in
words); a complete run does not read as "good"; compare.html words each
row's verdict from the gate (no "faster by 1766%" beside a level the gate
refused) and marks the host-busy points on its chart; index.html shows each
comparison's gate outcome; the pages look right in headless Chromium."""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace
from html import unescape
from pathlib import Path

import pytest

from lab.analyse import contract
from lab.present import compare, reportpage
from lab.record import folder
from lab.setup.exits import Exit
from test_compare import make_run, manifest, paced_rows
from test_gate import CLEAN, run_pair
from test_html import COMPLETE, FIXTURES

pytestmark = pytest.mark.unit


def lead(text: str) -> str:
    m = re.search(r'<p class="lead" id="lead">(.*?)</p>', text, re.S)
    assert m, text[:500]
    return unescape(m.group(1))


def test_report_opens_with_what_how_and_the_verdict(tmp_path: Path) -> None:
    run = tmp_path / COMPLETE
    shutil.copytree(FIXTURES / COMPLETE, run)
    text = reportpage.write_report(run).read_text()
    line = lead(text)
    assert text.index('id="lead"') < text.index("<h2>")          # first, before any section
    assert f"GET {contract.PATH}" in line and contract.BODY.decode() in line
    assert "c = simultaneous connections" in line and "closed loop" in line
    assert "Verdict: " in line and ("faster" in line or "no verdict" in line
                                    or "peaked at" in line or "no clear" in line)
    # complete is said as what it is, in a neutral colour: not green, not "good"
    assert "Status: complete: every level measured" in text
    css = text.split("<style>")[1].split("</style>")[0]
    assert ".complete{background:#e5f4e8" not in css and "#17572a" not in css
    # internals behind a details element; no Python words in what a person reads
    assert '<details class="internals"><summary>Tool versions' in text
    visible = re.sub(r"<details.*?</details>", "", text, flags=re.S)
    assert not re.search(r">(True|False|None)<", visible)


def test_compare_words_a_refused_level_from_the_gate_and_marks_it(tmp_path: Path) -> None:
    """B was measured beside other load (host-busy): 1766% faster is what the
    ratio says, but the gate refused the level: the row says so, in no colour."""
    a, b = run_pair(tmp_path, {1: [100, 101, 102]}, {1: [1866, 1870, 1868]},
                    flags_b="host-busy")
    out = tmp_path / "out"
    out.mkdir()
    folder.mark(out)
    assert compare.main(a, b, False, out, CLEAN) == Exit.NOT_COMPARABLE
    [cmp] = out.glob("compare-*")
    text = (cmp / "compare.html").read_text()
    line = lead(text)
    assert "not comparable" in line and "exit 3" in line and f"GET {contract.PATH}" in line
    table = text.split('<table class="compare">')[1].split("</table>")[0]
    assert "faster" not in table and "slower" not in table
    said = unescape(table)          # req/s refused (host-busy); CPU per request undecided
    assert "not judged by the gate: " in said and "req/s not clean (host-busy" in said
    assert 'class="worse"' not in table and 'class="better"' not in table
    # compare.md says the same
    md = (cmp / "compare.md").read_text()
    assert "not judged by the gate" in md and "faster than" not in md.split("## Other")[0]
    # the chart's data marks B's host-busy point, A's none
    assert (cmp / "data" / "b-paced.dat").read_text().splitlines()[1].split()[-1] == "1"
    assert (cmp / "data" / "a-paced.dat").read_text().splitlines()[1].split()[-1] == "0"
    if (cmp / "compare.svg").is_file():
        assert "host-busy (refused by the gate)" in (cmp / "compare.svg").read_text()
    # the index shows the comparison's gate outcome
    index = (out / "index.html").read_text()
    row = next(r for r in index.split("<tr>") if cmp.name in r)
    assert "gate: not-comparable (exit 3)" in row


def test_the_ceiling_beside_a_not_comparable_gate_says_it_is_not_gated(tmp_path: Path) -> None:
    """nginx 17 times faster in B, paced host-busy: the gate is not
    comparable, and no row says "faster" beside it."""
    m = manifest(**{"servers.nginx": {"version": "1.22", "role": "ceiling", "facts": {}}})
    busy = [replace(r, flags="host-busy") for r in paced_rows({1: [50, 51, 52]})]
    a = make_run(tmp_path, "ra", m, paced_rows({1: [100, 101, 102]}) +
                 paced_rows({1: [100, 101, 102]}, server="nginx"))
    b = make_run(tmp_path, "rb", m, busy + paced_rows({1: [1866, 1870, 1868]}, server="nginx"))
    out = tmp_path / "out"
    assert compare.main(a, b, False, out, CLEAN) == Exit.NOT_COMPARABLE
    [cmp] = out.glob("compare-*")
    table = (cmp / "compare.html").read_text().split('<table class="compare">')[1]
    table = unescape(table.split("</table>")[0])
    assert "faster" not in table and "slower" not in table
    assert "not gated: the ceiling reference is not gated" in table


def test_a_regression_reads_red_and_a_pass_does_not(tmp_path: Path) -> None:
    # six starts a side: each level's own check (at α/4) can decide, as the row's colour needs
    a, b = run_pair(tmp_path, {1: [100, 101, 102, 100.5, 101.5, 99.5],
                               4: [400, 404, 398, 402, 401, 399]},
                    {1: [70, 71, 70, 70.5, 71.5, 69.5], 4: [399, 402, 405, 400.5, 403.5, 401]})
    out = tmp_path / "out"
    assert compare.main(a, b, False, out, CLEAN) == Exit.FAILED
    [cmp] = out.glob("compare-*")
    text = (cmp / "compare.html").read_text()
    assert "B is worse than A beyond the noise" in lead(text)
    rows = text.split('<table class="compare">')[1].split("</table>")[0].split("<tr>")[2:]
    assert 'class="worse"' in rows[0] and 'class="worse"' not in rows[1]


@pytest.mark.fault                      # chromium: installed where missing (conftest)
def test_the_pages_render_in_headless_chromium(tmp_path: Path, chromium: str) -> None:
    """The lead line is what Chromium shows first (its DOM, as rendered)."""
    a, b = run_pair(tmp_path, {1: [100, 101, 102]}, {1: [1866, 1870, 1868]},
                    flags_b="host-busy")
    out = tmp_path / "out"
    assert compare.main(a, b, False, out, CLEAN) == Exit.NOT_COMPARABLE
    [cmp] = out.glob("compare-*")
    done = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                           "--dump-dom", (cmp / "compare.html").as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
    body = done.stdout.split("<body>")[1]
    first = re.sub(r"<[^>]+>", "\n", body).split("\n")
    said = [x.strip() for x in first if x.strip()]
    assert said[1].startswith("Measured: GET /api") and "not comparable" in said[1]
