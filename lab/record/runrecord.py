"""A run folder read whole (`load`): its manifest, its rows, and its
instruction counts and CPU profiles if any. Every step that reads a run
(report, plots, compare, claims, rerun, the index) starts here."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lab.record.costs import Costs, read_costs
from lab.record.manifest import Manifest, read_manifest
from lab.record.profiles import Profile, read_profiles
from lab.record.rows import Row, group, read_rows


@dataclass
class RunRecord:
    """A run folder read whole: its manifest and its rows, and its
    instruction counts (make cost) and CPU profiles (make profile) if any."""
    folder: Path
    manifest: Manifest
    rows: list[Row]
    costs: Costs | None = None
    profiles: dict[str, Profile | str] = field(default_factory=dict)

    def by_server(self) -> dict[str, list[Row]]:
        return group(self.rows)


def load(run: Path) -> RunRecord:
    """A run folder, typed; RecordError names the file and what is wrong."""
    m = read_manifest(run)
    return RunRecord(run, m, read_rows(run), read_costs(run), read_profiles(run))
