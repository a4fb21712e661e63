"""Where the lab's output meets other tools (issue 44, section 5's "Also"):
text from outside the lab (server.toml's fields, a server's headers, a
manifest's values) is Markdown-escaped in summary.md and compare.md (which
CI puts into $GITHUB_STEP_SUMMARY), and a CSV cell a spreadsheet would run
as a formula is written as text in levels.csv. On constructed runs."""
from __future__ import annotations

import csv
import io
import re
from dataclasses import replace
from pathlib import Path

import pytest

from lab.analyse import responses
from lab.setup import markdown
from lab.present import compare, report, sends
from lab.record import csvfile
from lab.record.manifest import Response
from test_compare import make_run, manifest, paced_rows

pytestmark = pytest.mark.unit

HOSTILE = "x<script>alert(1)</script> `rm -rf` | *bold* _em_ [a](http://b)"
RATES = {1: [100, 101, 102, 100.5, 101.5], 4: [200, 201, 202, 200.5, 201.5]}


def unescaped(text: str, chars: str) -> list[str]:
    """The characters of `chars` in `text` not preceded by a backslash."""
    return re.findall(r"(?<!\\)[" + re.escape(chars) + "]", text)


def cells(line: str) -> list[str]:
    """A Markdown table row's cells (a \\| stays inside its cell)."""
    return re.split(r"(?<!\\)\|", line.strip().strip("|"))


def hostile_run(tmp: Path, name: str, version: str) -> Path:
    m = manifest(**{"servers.paced": {"version": version, "framework": HOSTILE, "facts": {}},
                    "host.cpu_model": f"EPYC {HOSTILE}", "client.version": "4`|<b>"})
    return make_run(tmp, name, m, paced_rows(RATES))


def test_md_text_shows_outside_text_as_written() -> None:
    said = markdown.md_text("a|b `c` <d> *e* _f_ [g] \\ h\nnext")
    assert unescaped(said, "|`<>*_[]") == []
    assert "\n" not in said
    assert re.sub(r"\\(.)", r"\1", said) == "a|b `c` <d> *e* _f_ [g] \\ h next"


def test_summary_md_escapes_server_toml_fields_and_manifest_values(tmp_path: Path) -> None:
    run = hostile_run(tmp_path, "r1", "1`|<script>")
    text = report.write(run)
    assert text == (run / "summary.md").read_text()
    outside = [c for ln in text.splitlines() for c in (cells(ln) if ln.startswith("|") else [ln])
               if "script" in c or "EPYC" in c]
    assert len(outside) >= 2, text
    for text_or_cell in outside:
        assert unescaped(text_or_cell, "<>|`*[]_") == [], text_or_cell
    [head] = [ln for ln in text.splitlines() if ln.startswith("| server | framework")]
    row = [ln for ln in text.splitlines() if ln.startswith("| paced |")][0]   # the server table's
    assert "script" in row and len(cells(row)) == len(cells(head)), row


def test_compare_md_escapes_what_it_copies_from_the_manifests(tmp_path: Path) -> None:
    a = hostile_run(tmp_path, "ra", "stdlib")
    b = hostile_run(tmp_path, "rb", "2`|<script>")
    out_root = tmp_path / "out"
    assert compare.main(a, b, True, out_root) in (0, 3)
    [folder] = [p for p in out_root.iterdir() if p.is_dir()]
    text = (folder / "compare.md").read_text()
    outside = [ln for ln in text.splitlines() if "script" in ln or "EPYC" in ln]
    assert any("2\\`\\|\\<script\\>" in ln for ln in outside), text
    for line in outside:
        assert unescaped(line, "<>`*[]|") == [], line


def test_a_servers_headers_stay_in_their_cell(tmp_path: Path) -> None:
    r = Response(request="GET /api HTTP/1.1", status_line="HTTP/1.1 200 OK<b>",
                 headers=[("X-Note", "a|b`c` <i>"), ("Server", "t``t")],
                 bytes=100, head_bytes=80, body_bytes=20)
    found = {"paced": responses.ServerAnswer("paced", r, 1, False, ())}
    lines = sends.markdown(found)
    head = [ln for ln in lines if ln.startswith("| server")][0]
    [row] = [ln for ln in lines if ln.startswith("| paced")]
    assert len(cells(row)) == len(cells(head)), row
    assert [c for i, c in enumerate(cells(row)) if i != 2 and unescaped(c, "<>`")] == []
    code = cells(row)[2].strip()                     # in a code span: shown as written
    fence = re.match(r"`+", code)
    assert fence and len(fence.group(0)) > 2 and code.endswith(fence.group(0)), code


def test_levels_csv_cells_a_spreadsheet_would_run_are_text(tmp_path: Path) -> None:
    """OWASP's CSV injection advice: a cell starting with = + - @ tab or CR
    is prefixed with '; figures, negative ones too, stay numbers."""
    from lab.record import files
    assert [csvfile.spreadsheet_cell(x) for x in
            ["=1+2", "+cmd", "-x", "@SUM(A1)", "\tx", "\rx", "-1.5", "+2", "12", 3, -4.0, None]
            ] == ["'=1+2", "'+cmd", "'-x", "'@SUM(A1)", "'\tx", "'\rx", "-1.5", "+2", "12", 3,
                  -4.0, ""]        # a missing figure: an empty cell
    planted = [replace(r, flags='=HYPERLINK("http://x") @x') for r in paced_rows(RATES)]
    run = make_run(tmp_path, "r1", manifest(), planted)
    report.write(run)
    rows = list(csv.reader(io.StringIO(files.read_text(run / "levels.csv"))))
    assert [r[11] for r in rows[1:]] == ["'=HYPERLINK(\"http://x\") @x"] * 2
    assert float(rows[1][3]) > 0                    # figures stay numbers
    assert all(not c.startswith(("=", "+", "@", "\t", "\r")) for r in rows for c in r)
    assert all(not c.startswith("-") or re.fullmatch(r"-[\d.e+-]+", c) for r in rows for c in r)


def test_a_probes_outcome_from_the_server_stays_in_its_cell() -> None:
    """The probe's table in summary.md: what the server answered is text."""
    from lab.present import probetable
    from lab.record.checked import Obj
    from lab.record.probe import ProbeReport
    rep = {"results": [{"probe": "p", "title": "garbage", "ran": True,
                        "outcome": "answered `HTTP/1.1 400 <b>|x`", "cpu_s": 0.1,
                        "answers_after": False}],
           "error": "Connection reset | <script>", "workers": 1}
    text = probetable.table({"paced": ProbeReport.parse(Obj(rep, Path("probe.json"), ""))})
    [row] = [ln for ln in text.splitlines() if ln.startswith("| garbage")]
    assert len(cells(row)) == 2 and unescaped(cells(row)[1], "<`") == [], row
    assert "400 \\<b\\>" in row, row
    [down] = [ln for ln in text.splitlines() if "still answers" in ln]
    assert len(cells(down)) == 2 and "\\<script\\>" in down, down


def test_href_quotes_each_part_and_takes_only_a_relative_path_down() -> None:
    import pytest
    from lab.present.page import href
    assert href("javascript:alert(1)/report.html") == "javascript%3Aalert%281%29/report.html"
    assert href("a b&c/") == "a%20b%26c/"
    assert href("nginx+paced/report.html") == "nginx+paced/report.html"
    assert href(fragment='server-x"><script>') == "#server-x%22%3E%3Cscript%3E"
    for bad in ("/etc/passwd", "../up", "a/../b", "a//b", "http://x/y", "./a", "/"):
        with pytest.raises(ValueError, match="not a relative path"):
            href(bad)


def test_a_profiles_flame_graph_link_is_a_quoted_file_of_its_folder(tmp_path: Path) -> None:
    """profile.json names its flame graph: a name with a ':' becomes a quoted
    relative link (in report.html and summary.md), a path is refused as
    unreadable, and the report is written either way."""
    import json
    import shutil
    from conftest import ROOT
    from lab.present import reportpage
    from lab.record import profiles
    fixture = ROOT / "tests" / "fixtures" / "runs" / "20261123-033407-nginx+paced"
    for graph, ok in (("javascript:alert(1).svg", True), ("../../../../escape.svg", False)):
        run = tmp_path / graph.replace("/", "_")
        shutil.copytree(fixture, run)
        folder = run / "paced" / "profile" / "c1"
        folder.mkdir(parents=True)
        (folder / "profile.json").write_text(json.dumps(
            {"profiler": "perf", "settings": "", "level": 1, "axis": "concurrency",
             "client": "siege", "seconds": 1, "thread_root": False, "flamegraph": graph}))
        (folder / "profile.folded").write_text("main;work 10\n")
        got = profiles.read_profiles(run)["paced"]
        assert isinstance(got, profiles.Profile) == ok, got
        assert reportpage.main_report(run) == 0
        page = (run / "report.html").read_text()
        links = re.findall(r'href="([^"#]*)"', page)
        assert all(":" not in h and ".." not in h.split("/") for h in links), links
        if ok:
            assert 'href="paced/profile/c1/javascript%3Aalert%281%29.svg"' in page
            text = report.write(run)
            assert "(paced/profile/c1/javascript%3Aalert%281%29.svg)" in text
        else:
            assert "not a file or folder name" in page or "cannot be a file" in page, page
