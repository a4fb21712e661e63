"""What the index and the history keep of each run folder between two
writes, so that a results folder of 5,000 runs is not read and analysed
whole each time (issue 44, §6): RESULTS/.lab-runs-cache.json, written by the
lab only, in a results folder the lab made (its mark).

Each run's entry is keyed by its `key`: a digest of its manifest.json (every
step that changes a run records it there) with the size and time of the
files beside it that its figures come from (results.csv, cost.json) and
whether its report exists. An entry whose key differs is computed again; a
cache that cannot be read as this one (another version, a hand edit, a
truncated write) is ignored whole and written anew. Only what a reader
computed from the run's own files is kept: never a verdict between runs.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from lab.record import files, folder, manifest, outputs
from lab.record.costs import COST
from lab.record.files import RecordError
from lab.record.rows import CSV

CACHE = ".lab-runs-cache.json"
VERSION = 1
BESIDE = (CSV, COST)              # the files a run's figures come from, besides its manifest


def key(run: Path) -> str | None:
    """The run's key; None when its manifest cannot be read (then it is not cached)."""
    try:
        digest = hashlib.sha256(files.read_bytes(run / manifest.MANIFEST))
    except (OSError, RecordError):
        return None
    for name in BESIDE:
        try:
            st = os.stat(run / name, follow_symlinks=False)
            digest.update(f"{name}:{st.st_size}:{st.st_mtime_ns};".encode())
        except OSError:
            digest.update(f"{name}:-;".encode())
    digest.update(b"report" if (run / outputs.REPORT).is_file() else b"-")
    return digest.hexdigest()


class RunCache:
    """One results folder's cache: `get` a run's part when its key still
    holds, `put` it, `save` once at the end (only when something changed,
    and only in a folder the lab made)."""

    def __init__(self, results_dir: Path) -> None:
        self.dir = results_dir
        self.runs: dict[str, dict[str, Any]] = {}
        self.keys: dict[str, str | None] = {}
        self.changed = False
        try:
            data = files.read_json(results_dir / CACHE)
        except (OSError, RecordError):
            return
        if isinstance(data, dict) and data.get("version") == VERSION and \
                isinstance(data.get("runs"), dict):
            self.runs = {k: v for k, v in data["runs"].items()
                         if isinstance(k, str) and isinstance(v, dict)}

    def _key(self, run: Path) -> str | None:
        if run.name not in self.keys:
            self.keys[run.name] = key(run)
        return self.keys[run.name]

    def get(self, run: Path, part: str) -> Any:
        """The run's cached `part`, or None when there is none for its current key."""
        found = self.runs.get(run.name)
        k = self._key(run)
        if k is None or found is None or found.get("key") != k:
            return None
        return found.get(part)

    def put(self, run: Path, part: str, value: Any) -> None:
        k = self._key(run)
        if k is None:
            return
        entry = self.runs.get(run.name)
        if entry is None or entry.get("key") != k:
            entry = self.runs[run.name] = {"key": k}
        if entry.get(part) != value:
            entry[part] = value
            self.changed = True

    def save(self, present: set[str] | None = None) -> None:
        """Write the cache (runs no longer in `present` left out); a folder the
        lab did not make, or a disk that refuses, leaves it unwritten."""
        if present is not None and set(self.runs) - present:
            self.runs = {k: v for k, v in self.runs.items() if k in present}
            self.changed = True
        path = self.dir / CACHE
        if not self.changed or not (self.dir / folder.MARK).is_file() or \
                path.is_symlink() or (path.exists() and not path.is_file()):
            return                    # not the lab's folder, or not its file there: left alone
        try:
            files.write_atomic(path, json.dumps(
                {"version": VERSION, "runs": self.runs}, separators=(",", ":")))
        except OSError:
            pass                      # a cache: the next write computes it again
        self.changed = False
