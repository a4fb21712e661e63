"""summary.md as an answer (issue 53, lab/present/answer.py): its first
lines say what was measured, the peak or the verdict, and what limited it;
no prose line of the lab's own words is a paragraph of a mechanism (those are
in the docs, linked); report.html keeps every figure, flag and explanation."""
from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from lab.analyse import analysis, metrics
from lab.analyse.metrics import LevelStats
from lab.analyse.wording import figure
from lab.present import answer, memtable, method, report, reportpage
from lab.present.page import escaped
from lab.record import runrecord

pytestmark = pytest.mark.unit

RUNS = ROOT / "tests" / "fixtures" / "runs"
SAVED = sorted(p.name for p in RUNS.iterdir() if (p / "manifest.json").is_file())
HEAD = 15           # the lines in which the answer must be
LONGEST = 200       # a prose line's most characters


def prose(text: str) -> list[str]:
    """summary.md's prose lines: not a table's rows, not inside a code fence."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and not line.startswith("|"):
            out.append(line)
    return out


def peak_in_head(text: str, stats: dict[str, list[LevelStats]]) -> bool:
    """The highest peak's req/s, as the summary writes it, in the first lines."""
    top = max((metrics.peak(s) for s in stats.values() if s), key=lambda s: s.rate.median)
    return f"{figure(top.rate.median)} req/s at " in "\n".join(text.splitlines()[:HEAD])


def run_copy(tmp_path: Path, name: str) -> Path:
    run = tmp_path / name
    shutil.copytree(RUNS / name, run)
    return run


@pytest.mark.parametrize("name", SAVED)
def test_the_first_lines_answer_what_was_measured_the_peak_and_what_limited_it(
        tmp_path: Path, name: str) -> None:
    rec, a = analysis.of(run_copy(tmp_path, name))
    text = report.summary(rec, a)
    lines = text.splitlines()
    head = lines[:lines.index("", 2)]           # the title, a blank line, then the answer
    assert head[2].startswith("- Measured: ") and head[3].startswith("- How: ")
    assert any(x.startswith(("- Peak: ", "- Peaks: ")) for x in head), head
    assert any(x.startswith("- Limit") for x in head) and head[-1].startswith("- Warnings: ")
    assert len(head) <= HEAD and all(len(x) <= LONGEST for x in head), head
    assert peak_in_head(text, a.stats), head
    if len([s for s in a.stats.values() if s]) > 1:      # several servers: the verdict too
        assert any(x.startswith("- Verdict") for x in head), head
    for kind in {w.kind for w in a.warnings}:              # each warning's kind named
        assert kind in head[-1] or head[-1].endswith("below.")
    # the conditions and the command come last, the command in a fence
    assert lines[-4:] == ["Reproduce:", "```sh", rec.manifest.reproduce, "```"]


@pytest.mark.parametrize("name", SAVED)
def test_the_lab_s_own_notes_link_the_docs_and_the_page_keeps_them_whole(
        tmp_path: Path, name: str) -> None:
    run = run_copy(tmp_path, name)
    rec, a = analysis.of(run)
    text = report.summary(rec, a)
    page = reportpage.render(run)
    if any(levels[-1].pss_kb is not None for levels in a.stats.values() if levels):
        assert memtable.SHORT_NOTE in text and memtable.NOTE not in text
        assert escaped(memtable.NOTE) in page               # the mechanism, whole, on the page
        assert "rss-pss-private-and-shared-memory" in memtable.SHORT_NOTE
    if a.primary:
        assert method.said(a.method) not in text and escaped(method.said(a.method)) in page
        assert method.test_name(a.method) in text
    for line in prose(text):                               # a doc a note points to exists
        for path, anchor in re.findall(r"`(docs/[a-z-]+\.md)#([a-z0-9-]+)`", line):
            doc = (ROOT / path).read_text()
            titles = [re.sub(r"[^a-z0-9 -]", "", t.lower()).replace(" ", "-")
                      for t in re.findall(r"^#+ (.*)$", doc, re.M)]
            assert anchor in titles, (path, anchor)


def test_every_level_s_figures_and_flags_stay_on_the_page(tmp_path: Path) -> None:
    """What the summary no longer spells out is report.html's: each level's
    figures and flags, the probe's table stays there (test_record)."""
    run = run_copy(tmp_path, "20261123-033230-warming+nginx+flaky")
    rec, a = analysis.of(run)
    page = reportpage.render(run)
    for name, levels in a.stats.items():
        for s in levels:
            assert escaped(figure(s.rate.median)) in page
            for flag in s.all_flags():
                assert f'data-flag="{flag}"' in page, (name, s.value, flag)
    for w in a.warnings:
        assert escaped(w.text()) in page


def stats_of(name: str) -> tuple[analysis.Analysis, list[LevelStats], str]:
    rec, a = analysis.of(RUNS / name)
    server, levels = next((n, s) for n, s in a.stats.items() if s)
    return a, levels, server


def plain(s: LevelStats) -> LevelStats:
    """A level without flags (the saved runs were made on a busy host)."""
    return dataclasses.replace(s, flags={})


def test_the_limit_is_the_client_the_host_the_sweep_or_the_server() -> None:
    a, levels, name = stats_of("20261123-033407-nginx+paced")
    m = runrecord.load(RUNS / "20261123-033407-nginx+paced").manifest
    quiet = [plain(s) for s in levels]
    top = metrics.peak(quiet)
    bound = [dataclasses.replace(s, flags={"client-bound": 1}) if s is top else s
             for s in quiet]
    assert answer.limit(m, a, name, bound).who == "the client"
    busy = [dataclasses.replace(s, flags={"host-busy": 1}) if s is top else s for s in quiet]
    assert answer.limit(m, a, name, busy).who == "the host"
    rate = dataclasses.replace(top.rate, median=top.rate.median * 2)
    rising = quiet[:-1] + [dataclasses.replace(quiet[-1], rate=rate)]
    assert answer.limit(m, a, name, rising).who == "the sweep"
    fell = [dataclasses.replace(quiet[0], rate=rate)] + quiet[1:]
    said = answer.limit(m, a, name, fell)
    assert said.who == "the server" and f"of its {answer.cpus(m.pinning.server_cpus)} CPU" \
        in said.said
    assert answer.limit(m, a, name, quiet[:1]).who == "the sweep"      # one level only


def test_a_head_line_is_clipped_at_a_clause_and_cpus_are_counted() -> None:
    long = "; ".join(f"clause {i} of a long verdict" for i in range(20))
    cut = answer.clipped(long, 120, rest="… (more)")
    assert len(cut) <= 120 and cut.endswith("… (more)") and cut.startswith("clause 0")
    assert answer.clipped("short", 120) == "short"
    assert [answer.cpus(x) for x in ("0", "0-1", "0,2-3", "", "a-b")] == [1, 2, 3, 0, 0]
    assert answer.values_said([1, 2]) == "1 2"
    assert answer.values_said(list(range(1, 19))) == "1 to 18 (18 levels)"
