"""Adding a client or a topology is one file: tests/extensions holds a test
client (pyload) and a test topology (twin), each one module, and the lab,
given that folder on PYTHONPATH, finds them and runs with them; without it,
it knows neither."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, bench, free_port, lab, lab_env, leftovers, run_folders

from lab.setup.params import TOPOLOGIES

pytestmark = pytest.mark.fault

EXTENSIONS = ROOT / "tests" / "extensions"
FOUND = """
import json, sys
path = list(sys.path)
from lab.measure import deps, topologies
from lab.measure.clients import axes, clients, described, host_tools
print(json.dumps({"clients": axes(), "topologies": topologies.selectable(),
                  "agent_imported": "lab.measure.topologies.ssh.agent" in sys.modules,
                  "path_kept": sys.path == path,
                  "described": described(), "tools": host_tools(),
                  "needed": deps.needed([], "pyload") if "pyload" in clients() else {}}))
"""


def found(pythonpath: str) -> dict[str, object]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": pythonpath}
    out = subprocess.run([sys.executable, "-c", FOUND], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    data: dict[str, object] = json.loads(out.stdout)
    return data


def test_the_lab_finds_a_client_and_a_topology_by_their_file_alone() -> None:
    plain = found("")
    assert plain["clients"] == {"siege": "concurrency", "vegeta": "rate", "wrk": "concurrency"}
    assert plain["topologies"] == ["local", "netns"] == list(TOPOLOGIES)   # params' fallback
    # finding them imports no topology's helper run elsewhere: the ssh agent,
    # a script for the remote host, edits sys.path when imported
    assert plain["agent_imported"] is False and plain["path_kept"] is True
    extended = found(str(EXTENSIONS))
    assert extended["clients"] == {**plain["clients"], "pyload": "concurrency"}  # type: ignore[dict-item]
    assert extended["topologies"] == ["local", "netns", "twin"]
    assert "pyload: test-only closed loop, C Python threads" in str(extended["described"])
    tools = extended["tools"]
    assert isinstance(tools, dict) and str(tools["pyload"]).startswith("stdlib-3.")
    assert extended["needed"] == {"taskset": "util-linux", "ss": "iproute2",
                                  "gnuplot": "gnuplot-nox", "python3": "python3"}


def test_a_module_without_a_topology_beside_the_topologies_is_refused(tmp_path: Path) -> None:
    """Only topologies stand directly in lab/measure/topologies: a helper module
    there, without a TOPOLOGY, belongs inside its topology's package."""
    folder = tmp_path / "lab" / "measure" / "topologies"
    folder.mkdir(parents=True)
    (folder / "helper.py").write_text("SHARED = 1\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", FOUND], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert ("lab.measure.topologies.helper.TOPOLOGY is not a lab.measure.topologies.Topology"
            in out.stderr), out.stderr[-2000:]
    assert "helpers belong inside its package" in out.stderr


def test_each_topologys_helpers_are_modules_of_its_package() -> None:
    """A topology's package holds its helpers under their own names: no name the
    package imports hides one (`from ...ssh import ship` is the module). The ssh
    agent, a script for the remote host, is not imported."""
    import importlib
    import pkgutil
    import types
    from lab.measure import topologies
    for name in sorted(topologies.topologies()):
        package = importlib.import_module(f"lab.measure.topologies.{name}")
        for info in pkgutil.iter_modules(package.__path__):
            if (name, info.name) == ("ssh", "agent"):
                continue
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            assert getattr(package, info.name) is module, (name, info.name)
            assert isinstance(module, types.ModuleType)


def settings(tmp: Path, **more: str) -> dict[str, str]:
    return lab_env(tmp, PYTHONPATH=str(EXTENSIONS), LAB_CACHE=str(tmp / "cache"),
                   SERVER="paced", CLIENT="pyload", TOPOLOGY="twin", PORT=str(free_port()),
                   CONCURRENCY="1 2", DURATION="2s", WARMUP="0", **more)


def test_a_run_with_the_test_client_on_the_test_topology(tmp_path: Path) -> None:
    env = settings(tmp_path)
    out = bench(env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    [run] = run_folders(tmp_path)
    m = json.loads((run / "manifest.json").read_text())
    assert m["status"] == "complete"
    assert m["topology"] == "twin (test topology on loopback)"
    assert m["topology_details"]["steps_log"] == str(tmp_path / "cache" / "twin" / "steps.log")
    assert m["client"]["tool"] == "pyload" and m["client"]["version"].startswith("stdlib-3.")
    assert m["tools"]["pyload"] == m["client"]["version"]
    # `lab deps` asked the client to install itself; up and down ran once each
    assert (tmp_path / "cache" / "pyload" / "installed").read_text() == "yes\n"
    steps = (tmp_path / "cache" / "twin" / "steps.log").read_text().split()
    assert steps == ["up", env["PORT"], "down", env["PORT"]]
    with (run / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["server"], r["concurrency"]) for r in rows] == [("paced", "1"), ("paced", "2")]
    assert all(int(r["successful"]) > 0 and r["failed"] == "0" and float(r["rate_rps"]) > 0
               for r in rows)
    assert (run / "paced" / "pyload-rep1-c2.out").read_text().startswith("pyload {")
    assert leftovers(run) == []


def test_the_test_topology_checks_before_anything_is_built(tmp_path: Path) -> None:
    out = bench(settings(tmp_path, SERVER_CPUS="0", CLIENT_CPUS="0"), timeout=120)
    assert out.returncode == 2, out.stderr
    assert "TOPOLOGY=twin: server and client must not share a CPU" in out.stderr
    assert run_folders(tmp_path) == [] and not (tmp_path / "cache" / "twin").exists()


def test_without_the_folder_neither_is_known(tmp_path: Path) -> None:
    env = settings(tmp_path)
    env.pop("PYTHONPATH")
    out = lab(env, "check")
    assert out.returncode == 2
    assert "unknown" in out.stderr or "known clients are siege, vegeta, wrk" in out.stderr
    env["CLIENT"] = "siege"
    out = lab(env, "check")
    assert out.returncode == 2 and "TOPOLOGY='twin': expected local or netns" in out.stderr


@pytest.mark.unit
def test_every_client_found_is_complete_and_pairs_with_a_known_client() -> None:
    from lab.measure.clients import clients
    found = clients()
    assert set(found) >= {"siege", "wrk", "vegeta"}
    for name, cls in found.items():
        assert cls.name == name and cls.help and isinstance(cls.packages, dict)
        partner = cls.cross_check
        assert partner == "" or (partner in found and found[partner].axis == cls.axis), name
    assert (found["siege"].cross_check, found["wrk"].cross_check) == ("wrk", "siege")
    assert found["siege"].packages == {"siege": "siege"} and found["vegeta"].packages == {}
