"""A run folder's files written whole or not at all: the one writer of every
file the lab puts in a run folder, a results folder or its cache."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_atomic(path: Path, text: str) -> Path:
    """`path` written whole or not at all: a temporary file of this writer's
    own (concurrent writers never share one), then a rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)                 # as a plain write would (mkstemp makes 0600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json(path: Path, data: Any) -> None:
    """JSON, written atomically."""
    write_atomic(path, json.dumps(data, indent=2, default=str) + "\n")
