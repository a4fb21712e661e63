"""`make compare RUN=results/<paired run>`: the regression gate of one
paired run (PAIRED=duet or rmit), its second server (B, the head) against
its first (A, the base), both measured in the same start pairs
(lab.analyse.pairgate). For CI: build the base and the head, run them as a
pair, gate on the pair (docs/ci.md).

Writes results/compare-<run>-paired[-N]/: compare.md, compare.xml (JUnit)
and compare.json, and prints the gate; exit 0 B no worse, 1 B worse, 2
refused (not a paired run of two servers), 3 nothing decided.
"""
from __future__ import annotations

import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path

from lab.analyse import analysis, pairgate
from lab.analyse.gate import GateSettings
from lab.present import junit
from lab.present.compare import EXIT_REFUSED, conditions, gate_lines, last_line, run_id, shown
from lab.record import files, folder, manifest


def rule_settings(run: Path) -> dict[str, str]:
    """The run's own ALPHA and MIN_EFFECT, from its plan (lab.setup.plan), as
    settings (the gate's defaults: ALPHA or MIN_EFFECT given to make compare
    win); none from a folder that is not a readable run (main says why)."""
    try:
        planned = manifest.read_manifest(run).planned
    except files.RecordError:
        return {}
    return {k: v for k, v in planned.settings().items() if k in ("ALPHA", "MIN_EFFECT")}


def main(run: Path, out_root: Path, settings: GateSettings) -> int:
    try:
        rec, a = analysis.of(run)
    except files.RecordError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_REFUSED
    m = rec.manifest
    mode = analysis.paired_mode(m)
    servers = [s for s in m.params.servers if s in a.stats]
    if not mode or len(servers) != 2:
        print(f"error: {run} is not a paired run of two measured servers (PAIRED="
              f"{mode or 'empty'}, measured: {', '.join(a.stats) or 'none'}): give A=<run> "
              "B=<run> to compare two runs", file=sys.stderr)
        return EXIT_REFUSED
    at = sorted({s.value for n in servers for s in a.stats[n]})
    g = pairgate.of({n: a.stats[n] for n in servers}, at, mode, settings, analysis.looks_of(m),
                    settings.metrics if settings.chosen else ())
    rid = run_id(run, m)
    ids = (f"{rid}:{servers[0]}", f"{rid}:{servers[1]}")
    text = (f"# Paired gate: {servers[1]} (B) against {servers[0]} (A), run {rid}\n\n"
            f"Conditions: {conditions(m)}\n\n" + "\n".join(gate_lines(g)) + "\n")
    out = folder.new_folder(out_root, f"compare-{rid}-paired")
    try:
        files.write_atomic(out / "compare.md", text)
        junit.write(out / "compare.xml", g, ids, "c")
        side = [{"run_id": i, "path": str(run), "conditions": conditions(m)} for i in ids]
        files.write_json(out / "compare.json", {
            "made": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "a": side[0], "b": side[1],
            "paired": mode, "axis": m.params.axis, "gate": asdict(g)})
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)     # a failed comparison leaves no folder
        raise
    shown(text, out, out_root)
    last_line(g)
    return g.code
