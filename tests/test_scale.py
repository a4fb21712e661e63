"""A large run read by the lab (issue 44, §6): `make report` on a results.csv
of tens of megabytes peaks under ten times its size in memory, and writes no
output the lab could not read back (files.MAX_BYTES). Once a 52.6 MB
results.csv took a 2.94 GB peak and made a 335 MB results.json."""
from __future__ import annotations

import csv
import io
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from lab.record import files, folder, outputs

pytestmark = pytest.mark.fault

LANDED = Path(__file__).parent / "fixtures" / "runs" / "20261124-071349-sturdy+paced-landed"
VARIED = ("rate_rps", "resp_ms", "p50_ms", "p90_ms", "p99_ms", "longest_ms", "in_flight",
          "server_cpu_s", "server_cpu_us_per_req", "server_cpu_pct", "client_cpu_s",
          "client_cpu_pct", "rss_end_kb", "rss_peak_kb")


def large_run(results: Path, levels: int, reps: int) -> Path:
    """The landed fixture run grown to `levels` levels of `reps` starts a
    server, each row's figures drawn anew (as a measured run's differ)."""
    results.mkdir()
    folder.mark(results)
    run = results / LANDED.name
    run.mkdir()
    m = json.loads((LANDED / "manifest.json").read_text())
    m["params"]["values"] = m["params"]["levels"] = list(range(1, levels + 1))
    m["params"]["repeat"] = reps
    (run / "manifest.json").write_text(json.dumps(m))
    rows = list(csv.DictReader(io.StringIO((LANDED / "results.csv").read_text())))
    rng = random.Random(44)
    with (run / "results.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for base in {r["server"]: r for r in rows}.values():
            for value in range(1, levels + 1):
                for rep in range(1, reps + 1):
                    row = dict(base, value=value, concurrency=value, rep=rep)
                    for name in VARIED:
                        x = float(base[name]) * rng.uniform(0.8, 1.2)
                        row[name] = int(x) if name.endswith("_kb") else round(x, 4)
                    w.writerow(row)
    return run


def peak_rss_kb(argv: list[str]) -> tuple[int, subprocess.CompletedProcess[str]]:
    """argv run to its end by a Python of its own, which reports the peak RSS
    of its one child (this process's other children are not counted)."""
    wrapper = ("import json, resource, subprocess, sys\n"
               "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "print(json.dumps([resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,"
               " done.returncode, done.stdout, done.stderr]))\n")
    out = subprocess.run([sys.executable, "-c", wrapper, *argv], cwd=ROOT, capture_output=True,
                         text=True, timeout=900)
    rss, code, stdout, stderr = json.loads(out.stdout)
    return rss, subprocess.CompletedProcess(argv, code, stdout, stderr)


def test_a_large_run_reports_in_bounded_memory_and_readable_outputs(tmp_path: Path) -> None:
    run = large_run(tmp_path / "results", levels=800, reps=50)
    size = (run / "results.csv").stat().st_size
    assert size > 15 * 2**20                      # large enough that no baseline hides it
    rss_kb, done = peak_rss_kb([sys.executable, "-m", "lab", "report", str(run)])
    assert done.returncode == 0, done.stderr[-2000:]
    assert rss_kb * 1024 < 10 * size, f"peak RSS {rss_kb // 1024} MB for {size >> 20} MB"
    for name in outputs.OUTPUTS:                  # the lab reads back every output it wrote
        assert (run / name).stat().st_size <= files.MAX_BYTES, name
    data = files.read_json(run / outputs.RESULTS_JSON)
    assert data["rows"] == {} and "80,000 rows would make results.json larger than the " \
        "64 MiB the lab reads of a file: they are in results.csv" == data["rows_omitted"]
    assert len(data["levels"]["sturdy"]) == 800
    assert json.loads((run / "manifest.json").read_text())["status"] == "complete"
    shutil.rmtree(run)
