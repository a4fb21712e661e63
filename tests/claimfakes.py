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
    tool, status, workers ({new name: n}); client_bound=True flags every row
    client-bound."""
    dest.mkdir(parents=True)
    with (FIXTURE / "results.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
        fields = list(rows[0])
    with (dest / "results.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        for r in rows:
            if r["server"] in names:
                bound = {"client_bound": "True", "flags": "client-bound"} \
                    if change.get("client_bound") else {}
                w.writerow({**r, "server": names[r["server"]], **bound})
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




def fake_duet(dest: Path, a: str, b: str, pairs: int, b_over_a: float,
              levels: tuple[int, ...] = (5, 15, 50), client_bound: bool = False) -> Path:
    """A duet (PAIRED=duet, wrk) of `a` and `b` made from FIXTURE's first
    row: `pairs` start pairs at `levels`, b's server CPU per request
    `b_over_a` times a's (40 µs), each pair's moment common to both."""
    dest.mkdir(parents=True)
    with (FIXTURE / "results.csv").open(newline="") as f:
        template = next(csv.DictReader(f))
        fields = list(template)
    with (dest / "results.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        for rep in range(1, pairs + 1):
            moment = 1.0 + 0.05 * ((rep * 7) % 5)           # the host at that pair's moment
            for v in levels:
                for server, cost in ((a, 40.0 * moment), (b, 40.0 * moment * b_over_a)):
                    w.writerow({**template, "server": server, "rep": str(rep), "value": str(v),
                                "concurrency": str(v), "rate_rps": f"{5e5 / cost:.2f}",
                                "server_cpu_us_per_req": f"{cost:.3f}",
                                "client_bound": str(client_bound),
                                "flags": "client-bound" if client_bound else ""})
    m = json.loads((FIXTURE / "manifest.json").read_text())
    m["servers"] = {name: {**next(iter(m["servers"].values())), "name": name, "role": "server"}
                    for name in (a, b)}
    m["params"].update(servers=[a, b], paired="duet", repeat=pairs, levels=list(levels),
                       client="wrk")
    m["settings"].update(SERVER=f"{a} {b}", PAIRED="duet", REPEAT=str(pairs))
    m["client"]["tool"] = "wrk"
    m["run_id"] = dest.name
    (dest / "manifest.json").write_text(json.dumps(m))
    return dest
