"""Where each server's memory goes, from its level statistics: RSS (from
/proc/PID/stat, the published measure, shared library pages counted in full)
beside PSS, private and shared memory (from /proc/PID/smaps_rollup, summed
over the server's process tree at the end of each level; lab.host.procfs.Memory).
Pure: reads an Analysis's statistics and the manifest's reasons, and returns
typed facts (lab.present.memtable words them)."""
from __future__ import annotations

from dataclasses import dataclass

from lab.analyse.metrics import LevelStats, Spread
from lab.record.manifest import Manifest


@dataclass(frozen=True)
class MemorySplit:
    """One server at the end of its last level; kB over repetitions."""
    server: str
    at: int                        # the last level's value
    rss_kb: Spread
    pss_kb: Spread | None          # None: the split is unavailable (see why)
    private_kb: Spread | None
    shared_kb: Spread | None
    anon_kb: Spread | None
    private_share: float | None    # private ÷ (private + shared), medians; None: no whole
    why: str = ""                  # why the split is unavailable, as the starts recorded it

    @property
    def available(self) -> bool:
        return self.pss_kb is not None and self.private_kb is not None \
            and self.shared_kb is not None


def unavailable(m: Manifest, name: str) -> str:
    """Why a server has no PSS/private figures (its starts recorded why; "": not recorded)."""
    return next((str(s.extra["memory_split"]) for s in m.server(name).starts
                 if s.extra.get("memory_split")), "")


def splits(m: Manifest, stats: dict[str, list[LevelStats]]) -> list[MemorySplit]:
    out = []
    for name, levels in stats.items():
        if not levels:
            continue
        last = levels[-1]
        if last.pss_kb is None or last.private_kb is None or last.shared_kb is None:
            out.append(MemorySplit(name, last.value, last.rss_end_kb, None, None, None, None,
                                   None, unavailable(m, name)))
            continue
        whole = last.private_kb.median + last.shared_kb.median
        out.append(MemorySplit(name, last.value, last.rss_end_kb, last.pss_kb, last.private_kb,
                               last.shared_kb, last.anon_kb,
                               last.private_kb.median / whole if whole > 0 else None))
    return out
