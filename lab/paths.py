"""Where the lab keeps what it installs: LAB_CACHE, or .cache in the repo."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cache_dir() -> Path:
    return Path(os.environ.get("LAB_CACHE") or ROOT / ".cache").resolve()


def go_bin(cache: Path) -> Path:
    """Where the lab's Go-built tools (vegeta) are installed."""
    return cache / "go" / "bin"
