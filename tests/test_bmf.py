"""A run as bencher.dev's metric format (lab.present.bmf, issue 30): one
benchmark per server and level, one measure per gated figure, value the
median with min and max; flagged levels, the ceiling and make noise's alias
left out and said. The shape is checked against Bencher's published JSON
schema for BMF (https://bencher.dev/docs/reference/bencher-metric-format/),
written out here. On constructed runs (no load)."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, lab_env
from lab.present import bmf
from lab.setup.exits import Exit
from test_compare import make_run, manifest, paced_rows

pytestmark = pytest.mark.unit


def bmf_shape_problems(data: Any) -> list[str]:
    """Bencher's BMF JSON schema: an object; each benchmark an object; each
    measure an object with a number `value` and optional number
    `lower_value`/`upper_value`."""
    if not isinstance(data, dict):
        return ["not an object"]
    found = []
    for bench, measures in data.items():
        if not bench or not isinstance(measures, dict):
            found.append(f"{bench!r}: not an object")
            continue
        for name, got in measures.items():
            if not isinstance(got, dict) or not isinstance(got.get("value"), (int, float)):
                found.append(f"{bench} {name}: no number value")
                continue
            for key in ("lower_value", "upper_value"):
                if key in got and not isinstance(got[key], (int, float)):
                    found.append(f"{bench} {name}: {key} not a number")
            if len(name) > 64:
                found.append(f"{bench} {name}: a measure's name is at most 64 characters")
    return found


def a_run(tmp: Path) -> Path:
    """paced at c=1 and 4 (c=4 host-busy in one repetition), and the nginx
    ceiling reference."""
    m = manifest(**{"servers.nginx": {"version": "1.22", "role": "ceiling", "facts": {}}})
    rows = paced_rows({1: [100, 104, 102], 4: [400, 404, 398]})
    rows = [replace(r, flags="host-busy") if r.value == 4 and r.rep == 2 else r for r in rows]
    return make_run(tmp, "run", m, rows + paced_rows({1: [1000, 1001, 1002]}, server="nginx"))


def test_one_measure_per_gated_figure_with_the_spread(tmp_path: Path) -> None:
    data, left_out = bmf.of_run(a_run(tmp_path))
    assert bmf_shape_problems(data) == []
    assert list(data) == ["paced c=1"]
    paced = data["paced c=1"]
    # closed loop: requests/s as Bencher's throughput; p99 is gated in open loop only
    assert set(paced) == {"throughput", "cpu-us-per-request", "rss-end-kb"}
    assert paced["throughput"] == {"value": 102, "lower_value": 100, "upper_value": 104}
    cpu = sorted(500000 / r for r in (100, 104, 102))
    assert paced["cpu-us-per-request"]["value"] == pytest.approx(cpu[1])
    assert paced["cpu-us-per-request"]["lower_value"] == pytest.approx(cpu[0])
    assert left_out == ["paced c=4: host-busy", "nginx: the ceiling reference, not gated"]


@pytest.mark.fault
def test_the_command_writes_the_file_and_says_what_it_left_out(tmp_path: Path) -> None:
    run = a_run(tmp_path)
    out = tmp_path / "bmf.json"
    env = lab_env(tmp_path)
    done = subprocess.run([sys.executable, "-m", "lab", "bmf", str(run), "--output", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text()) == bmf.of_run(run)[0]
    assert "left out of the BMF export: paced c=4: host-busy" in done.stderr
    printed = subprocess.run([sys.executable, "-m", "lab", "bmf", str(run)], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=120)
    assert json.loads(printed.stdout) == json.loads(out.read_text())
    bad = subprocess.run([sys.executable, "-m", "lab", "bmf", str(tmp_path / "nothing")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_a_run_with_nothing_clean_exports_nothing_and_says_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every level host-busy (a busy shared runner): `{}`, which Bencher's
    schema accepts (BMF has no place for a reason that is no benchmark),
    and exit 3 as the gate does when nothing compared cleanly, the reason
    on stderr; never `{}` with exit 0."""
    from lab.cli.read import cmd_bmf
    rows = [replace(r, flags="host-busy") for r in paced_rows({1: [100, 104, 102],
                                                               4: [400, 404, 398]})]
    run = make_run(tmp_path, "busy", manifest(), rows)
    out = tmp_path / "bmf.json"
    code = cmd_bmf(argparse.Namespace(run=str(run), output=str(out)))
    err = capsys.readouterr().err
    assert code == Exit.NOT_COMPARABLE == 3
    assert json.loads(out.read_text()) == {} and bmf_shape_problems({}) == []
    last = err.strip().splitlines()[-1]
    assert last.startswith("bmf: nothing exported (exit 3): ") and "host-busy" in last, err
    assert "paced c=1: host-busy" in err and "paced c=4: host-busy" in err
    # to stdout as well
    assert cmd_bmf(argparse.Namespace(run=str(run), output="")) == 3
    assert json.loads(capsys.readouterr().out) == {}
    # one clean level: exported, exit 0
    clean = make_run(tmp_path, "clean", manifest(), paced_rows({1: [100, 104, 102]}))
    assert cmd_bmf(argparse.Namespace(run=str(clean), output="")) == 0
    assert list(json.loads(capsys.readouterr().out)) == ["paced c=1"]
