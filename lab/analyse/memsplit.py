"""Where each server's memory goes, from its level statistics: RSS (from
/proc/PID/stat, the published measure, shared library pages counted in full)
beside PSS, private and shared memory (from /proc/PID/smaps_rollup, summed
over the server's process tree at the end of each level; lab.host.procfs.Memory).
Pure: reads an Analysis's statistics and the manifest's reasons."""
from __future__ import annotations

from lab.analyse.wording import median_range
from lab.analyse.metrics import LevelStats
from lab.record.manifest import Manifest
from lab.setup.markdown import Table

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


def unavailable(m: Manifest, name: str) -> str:
    """Why a server has no PSS/private figures (its starts recorded why)."""
    why = next((str(s.extra["memory_split"]) for s in m.server(name).starts
                if s.extra.get("memory_split")), "")
    return f"unavailable: {why}" if why else "unavailable (not recorded by this run)"


def rows(m: Manifest, stats: dict[str, list[LevelStats]]) -> list[list[str]]:
    out = []
    for name, levels in stats.items():
        if not levels:
            continue
        last = levels[-1]
        at = f"{last.value}"
        if last.pss_kb is None or last.private_kb is None or last.shared_kb is None:
            out.append([name, at, median_range(last.rss_end_kb, 1024, ".1f"), unavailable(m, name),
                        "–", "–", "–", "–"])
            continue
        whole = last.private_kb.median + last.shared_kb.median
        share = f"{last.private_kb.median / whole:.0%}" if whole > 0 else "–"
        out.append([name, at, median_range(last.rss_end_kb, 1024, ".1f"), median_range(last.pss_kb, 1024, ".1f"),
                    median_range(last.private_kb, 1024, ".1f"), median_range(last.shared_kb, 1024, ".1f"),
                    median_range(last.anon_kb, 1024, ".1f"), share])
    return out


def markdown(m: Manifest, stats: dict[str, list[LevelStats]], axis: str) -> list[str]:
    found = rows(m, stats)
    if not found:
        return []
    head = [h if h != "at" else axis for h in HEAD]
    return ["## Where the memory goes", "", *Table(head, found).lines(), "", SHORT_NOTE]
