"""Where the memory goes (lab.analyse.memsplit's facts) in words: the table's
head, cells and note, written once for summary.md and report.html; and its
Markdown section of summary.md."""
from __future__ import annotations

from lab.analyse.memsplit import MemorySplit, splits
from lab.analyse.metrics import LevelStats
from lab.analyse.wording import median_range
from lab.record.manifest import Manifest
from lab.setup.markdown import Table

TITLE = "Where the memory goes"
HEAD = ["server", "at", "RSS MB (/proc/PID/stat)", "PSS MB", "private MB", "shared MB",
        "anonymous MB", "private share"]
NOTE = ("RSS counts every resident page of a shared library in full, in every process "
        "that maps it; PSS divides a shared page among the processes sharing it; private "
        "memory is what no other process maps (Private_Clean + Private_Dirty of "
        "/proc/PID/smaps_rollup), shared the rest of its RSS; anonymous memory (heap, "
        "stacks: what the server allocated) is part of either, the rest is file-backed "
        "(code and libraries). A library only this server maps counts as private: the "
        "private figure discounts only what other processes of this host share. Private "
        "share: private ÷ (private + shared), both from smaps_rollup. At the end of the "
        "last level, median [min–max] over repetitions.")
# summary.md's: the mechanism is explained once, in the docs (report.html keeps NOTE)
SHORT_NOTE = ("At the end of the last level, median [min–max] over repetitions; RSS counts "
              "shared pages in full, PSS shares them out: "
              "`docs/analysis.md#rss-pss-private-and-shared-memory`.")


def head(axis: str) -> list[str]:
    """HEAD with the level's column named after the run's axis."""
    return [h if h != "at" else axis for h in HEAD]


def unavailable(why: str) -> str:
    return f"unavailable: {why}" if why else "unavailable (not recorded by this run)"


def cells(x: MemorySplit) -> list[str]:
    """HEAD's cells of one server."""
    rss = median_range(x.rss_kb, 1024, ".1f")
    if not x.available:
        return [x.server, str(x.at), rss, unavailable(x.why), "–", "–", "–", "–"]
    share = "–" if x.private_share is None else f"{x.private_share:.0%}"
    return [x.server, str(x.at), rss, median_range(x.pss_kb, 1024, ".1f"),
            median_range(x.private_kb, 1024, ".1f"), median_range(x.shared_kb, 1024, ".1f"),
            median_range(x.anon_kb, 1024, ".1f"), share]


def rows(m: Manifest, stats: dict[str, list[LevelStats]]) -> list[list[str]]:
    return [cells(x) for x in splits(m, stats)]


def markdown(m: Manifest, stats: dict[str, list[LevelStats]], axis: str) -> list[str]:
    found = rows(m, stats)
    if not found:
        return []
    return [f"## {TITLE}", "", *Table(head(axis), found).lines(), "", SHORT_NOTE]
