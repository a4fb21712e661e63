"""`python3 -m lab.studies.probetable [--port N] [--cpus 0] [--run DIR] SERVER...|all`:
the robustness probe (lab.measure.probe) of built servers one after another,
each with its default WORKERS, and their table (lab.present.probetable);
what regenerates docs/probe-table.md."""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from lab.measure.launch import Knobs
from lab.measure.probe import probe_server
from lab.present.probetable import table
from lab.record.probe import PROBE
from lab.setup.fromenv import UNKNOWN_HINT
from lab.setup.paths import ROOT, cache_dir
from lab.setup.servers import found_here


def main(argv: list[str]) -> int:
    """Probe the servers and print the table: 0 all still answer, 1 one does
    not, 2 an unknown server."""
    root, cache = ROOT, cache_dir()
    ap = argparse.ArgumentParser(prog="python3 -m lab.studies.probetable", description=__doc__)
    ap.add_argument("servers", nargs="+")
    ap.add_argument("--port", type=int, default=18090)
    ap.add_argument("--cpus", default="0", help="CPU list for the servers, e.g. 0 or 0,1")
    ap.add_argument("--run", type=Path, default=None, help="folder for probe.json and logs")
    args = ap.parse_args(argv)
    known = found_here(root)
    names = list(known) if args.servers == ["all"] else args.servers
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"error: unknown server {', '.join(unknown)}; known: {', '.join(known)} "
              f"({UNKNOWN_HINT})", file=sys.stderr)
        return 2
    run = args.run or Path(tempfile.mkdtemp(prefix="lab-probe."))
    cpus = tuple(int(c) for c in args.cpus.split(","))
    reports = {}
    for name in names:
        server = known[name]
        knobs = Knobs(port=args.port, workers=server.workers_default, backlog=512,
                      bind="127.0.0.1")
        reports[name] = probe_server(server, root, cache, run, knobs, cpus)
        print(f"{reports[name].verdict()} ({reports[name].elapsed_s:.0f} s; "
              f"{run / name / PROBE})", file=sys.stderr, flush=True)
    print(table(reports))
    return 0 if all(r.still_answers for r in reports.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
