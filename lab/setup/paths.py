"""Where the lab keeps what it installs (LAB_CACHE, or .cache in the repo) and
finds servers (LAB_SERVER_PATH): the one reader of each (lab/setup/params.py declares them)."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]   # the checkout: every module names it from here
PLOTS = ROOT / "plots"                       # the gnuplot files, one per chart


def cache_dir() -> Path:
    return Path(os.environ.get("LAB_CACHE") or ROOT / ".cache").resolve()


def server_path() -> list[Path]:
    """LAB_SERVER_PATH: more folders with server manifests (colon-separated)."""
    return [Path(p).resolve() for p in os.environ.get("LAB_SERVER_PATH", "").split(":") if p]


def go_bin(cache: Path) -> Path:
    """Where the lab's Go-built tools (vegeta) are installed."""
    return cache / "go" / "bin"
