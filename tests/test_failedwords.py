"""What failed, in words (issue 53): one builder (lab.present.failedwords)
of the lines summary.md, report.html and results.json show; a way of failing
repeated at several levels said once, with each level's count; a client's
silence pointed at the docs, not explained again at every level."""
from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest

from lab.analyse import analysis, metrics, serverside, whatfailed
from lab.analyse.whatfailed import LevelFailed, ServerFailed
from lab.present import failedwords, report, reportpage
from lab.record.failures import Failure
from lab.setup.markdown import md_text

pytestmark = pytest.mark.unit

RUNS = Path(__file__).parent / "fixtures" / "runs"
PRE21 = RUNS / "20261125-120537-sturdy+paced-pre21"     # wrk's read errors at 2 levels each
DOCS = Path(__file__).parent.parent / "docs"


def silent(value: int, failed: int, worst_pct: float = 0.5) -> LevelFailed:
    """A level where Siege counted `failed` requests without a word."""
    return LevelFailed(value, failed, 10 * failed, (failed // 2, failed - failed // 2),
                       (Failure("unanswered", failed, "siege: failed"),), worst_pct,
                       worst_pct > metrics.FAILED_SHARE_PCT)


SIEGE = ServerFailed("aws", "concurrency", (1, 8, 16, 32, 64),
                     tuple(silent(v, 7 * v, 2.0 if v == 64 else 0.5) for v in (8, 16, 32, 64)),
                     (), ())


def test_a_way_of_failing_at_n_levels_is_said_once_with_each_levels_count() -> None:
    [item] = failedwords.build({"aws": SIEGE})
    assert item.values == (8, 16, 32, 64)
    assert item.text.startswith("aws at 4 levels, c=8–64: ")
    label = failedwords.KIND_WORDS["unanswered"]
    assert item.text.count(label) == 1 and item.text.count("siege: failed") == 1
    for lv in SIEGE.levels:                          # each level's own count beside
        assert f"c={lv.value} {lv.failed:,} of {lv.attempts:,}" in item.text
    total = sum(lv.failed for lv in SIEGE.levels)
    assert f"{total:,} of {sum(lv.attempts for lv in SIEGE.levels):,} failed" in item.text
    assert "; not ranked at c=64: more than" in item.text and "(2.0%)" in item.text
    # the silence's why: a section of the docs, pointed at, that exists
    doc, anchor = item.see.split("#")
    heads = [re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-")
             for h in re.findall(r"^#+ (.*)$", (DOCS.parent / doc).read_text(), re.M)]
    assert anchor in heads


def test_levels_that_failed_differently_are_lines_of_their_own() -> None:
    other = LevelFailed(1, 3, 30, (), (Failure("refused", 3, "siege: unable to connect"),),
                        0.1, False)
    f = ServerFailed("aws", "concurrency", SIEGE.values, (other,) + SIEGE.levels, (), ())
    items = failedwords.build({"aws": f})
    assert [i.values for i in items] == [(1,), (8, 16, 32, 64)]
    assert items[0].text == ("aws c=1: 3 of 30 failed: could not connect (refused) "
                             "(3: siege: unable to connect)") and not items[0].see


def test_a_kernel_kinds_mechanism_is_said_at_its_first_line_only() -> None:
    seen = serverside.KernelSeen("unread", 40, (64,), {"TcpExtTCPAbortOnClose": 40},
                                 failed=40, compare=serverside.EQUAL)
    two = {n: ServerFailed(n, "concurrency", (64,), (), (), (seen,)) for n in ("aws", "ews")}
    a, b = failedwords.build(two)
    mechanism = failedwords.MECHANISM["unread"]
    assert mechanism in a.text and mechanism not in b.text
    assert "its mechanism as under aws" in b.text and "as many as the client's" in b.text


def test_summary_and_report_page_show_the_same_items(tmp_path: Path) -> None:
    run = tmp_path / PRE21.name
    shutil.copytree(PRE21, run)
    rec, a = analysis.of(run)
    items = failedwords.build(a.failed)
    assert items and {i.server for i in items} == set(a.failed)
    # one line a server: both its levels failed alike (wrk's read errors)
    assert all(len(i.values) == len(a.stats[i.server]) for i in items)
    said = report.summary(rec, a)
    part = said[said.index("## What failed"):].split("\n## ")[0]
    lines = [x for x in part.splitlines() if x.startswith("- ")]
    assert lines == [report.failed_line(i) for i in items]
    # summary.md: each item's figures (issue 53: the client's words and the
    # mechanisms are the page's, and the docs'); the page: its whole text
    assert all(md_text(i.brief or i.text) in said for i in items)
    assert all(i.brief and len(i.brief) < len(i.text) for i in items)
    for i in items:
        assert f"{a.stats[i.server][0].failed:,}" in i.text
    page = reportpage.render(run)
    shown = re.findall(r'<ul class="failed">(.*?)</ul>', page)
    li = [html.unescape(x) for ul in shown for x in re.findall(r"<li>(.*?)</li>", ul)]
    assert li == [i.text + (f" (why: <code>{i.see}</code>)" if i.see else "") for i in items]
    # results.json's lines are the same items in plain text
    report.write(run)
    data = json.loads((run / "results.json").read_text())
    assert data["failed"] == failedwords.plain(items)


def test_a_server_where_nothing_failed_has_no_facts() -> None:
    m_levels: list[metrics.LevelStats] = []
    assert not whatfailed.of_server("x", "concurrency", m_levels)
    assert failedwords.build({}) == [] and report.failed_section([]) == []
