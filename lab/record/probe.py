"""<server>/probe.json: each server's robustness probe (lab.measure.probe
writes it), read for the report and the page."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.record.checked import kind
from lab.record.files import RecordError, read_json

PROBE = "probe.json"


def probe_files(run: Path) -> dict[str, dict[str, Any] | str]:
    """Each server's <server>/probe.json (the robustness probe): its object,
    or why it cannot be read. A bad one is shown as such, never fatal."""
    out: dict[str, dict[str, Any] | str] = {}
    for path in sorted(run.glob(f"*/{PROBE}")):
        try:
            data = read_json(path)
        except RecordError as e:
            out[path.parent.name] = e.problem
            continue
        out[path.parent.name] = data if isinstance(data, dict) else \
            {"rows": data} if isinstance(data, list) else \
            f"should be an object, found {kind(data)}"
    return out
