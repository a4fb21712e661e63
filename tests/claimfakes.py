"""Run folders for make claims tests, made from a real fixture run
(tests/fixtures/runs/20261123-033407-nginx+paced: siege, connection close,
REPEAT=3, levels 1 and 4, a calibration on record) with its servers renamed
and its conditions changed as a test needs."""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).parent / "fixtures" / "runs" / "20261123-033407-nginx+paced"
KEEP = ("manifest.json", "results.csv")


def fake_run(dest: Path, names: dict[str, str], **change: Any) -> Path:
    """A copy of FIXTURE in `dest` with servers renamed (fixture name -> new
    name, e.g. {"nginx": "aws@8"}; a server not named is dropped) and
    manifest fields changed: keepalive, server_cpus, client_cpus, java_opts,
    tool, status, workers ({new name: n})."""
    dest.mkdir(parents=True)
    with (FIXTURE / "results.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
        fields = list(rows[0])
    with (dest / "results.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        for r in rows:
            if r["server"] in names:
                w.writerow({**r, "server": names[r["server"]]})
    m = json.loads((FIXTURE / "manifest.json").read_text())
    m["servers"] = {names[k]: {**v, "name": names[k], "role": "server"}
                    for k, v in m["servers"].items() if k in names}
    for name, n in change.get("workers", {}).items():
        m["servers"][name]["workers"] = n
    m["params"]["servers"] = list(names.values())
    m["settings"]["SERVER"] = " ".join(names.values())
    if "keepalive" in change:
        m["params"]["keepalive"] = change["keepalive"]
        m["client"]["connection"] = "keep-alive" if change["keepalive"] else "close"
    for key in ("server_cpus", "client_cpus"):
        if key in change:
            m["pinning"][key] = change[key]
    if "java_opts" in change:
        m["settings"]["JAVA_OPTS"] = m["params"]["java_opts"] = change["java_opts"]
    if "tool" in change:
        m["client"]["tool"] = m["params"]["client"] = change["tool"]
    if "status" in change:
        m["status"] = change["status"]
    m["run_id"] = dest.name
    (dest / "manifest.json").write_text(json.dumps(m))
    return dest


