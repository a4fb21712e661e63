"""Every step under the same settings check (lab/setup/stepcheck.py): a setting the
step would not use, or a name on make's command line close to a setting's,
exits 2 with a line naming it, before anything is built or started; make
rerun repeats the step that made the run; make cost shares bench's warnings
and its reproduce line holds every setting it read."""
from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import FAKES, ROOT, free_port, lab_env, run_folders
from lab.studies import cost
from lab.record import costs, manifest
from replan import plan_of_line

pytestmark = pytest.mark.fault


def make(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "-s", "--no-print-directory", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture
def bench_run(short_run: Path) -> Path:
    """A short bench run of a test double (two levels of 1 s): conftest's, made
    once a session; the tests here only read it, or copy it."""
    return short_run


@pytest.fixture
def cost_run(tmp_path: Path, bench_run: Path) -> Path:
    """A run folder as make cost leaves it (its manifest: kind cost, cost's settings)."""
    run = tmp_path / "made-by-cost"
    run.mkdir()
    m = json.loads((bench_run / manifest.MANIFEST).read_text())
    m["kind"] = "cost"
    m.pop("run_plan")            # not the bench run's plan: read from params and settings
    m["settings"] = {"SERVER": "nginx", "COST_LEVELS": "1", "COST_REQUESTS": "1000 3000",
                     "REPEAT": "1", "PORT": str(free_port()), "BIND": "127.0.0.1"}
    m["reproduce"] = "make cost " + " ".join(f"{k}={shlex.quote(v)}"
                                             for k, v in m["settings"].items())
    (run / manifest.MANIFEST).write_text(json.dumps(m))
    return run


def refused(out: subprocess.CompletedProcess[str], name: str, tmp: Path) -> None:
    assert out.returncode == 2, (out.stdout, out.stderr[-2000:])
    assert any(line.startswith("error:") and name in line for line in out.stderr.splitlines()), \
        out.stderr[-2000:]
    assert run_folders(tmp) == []          # nothing was made, so nothing started


EMPTY = "<empty folder>"
CASES = [
    ("bench", ["SERVER=sturdy", "HEADERS=abc"], "HEADERS"),
    ("bench", ["SERVER=sturdy", "COST_LEVELS=0"], "COST_LEVELS"),
    ("bench", ["SERVER=sturdy", "PROFILE_AT=1"], "PROFILE_AT"),
    ("bench", ["SERVER=sturdy", "STUDY=nosuch"], "STUDY"),
    ("bench", ["SERVER=sturdy", "CLIENTS=wrk"], "CLIENTS"),
    ("bench", ["SERVER=aws", f"ADA_SOURCES={EMPTY}"], "ADA_SOURCES"),
    ("bench", ["SERVER=sturdy", "DURATIN=2s"], "did you mean DURATION"),
    ("cost", ["SERVER=nginx", "CONCURRENCY=4"], "CONCURRENCY"),
    ("cost", ["SERVER=nginx", "CLIENT=vegeta"], "CLIENT"),
    ("cost", ["SERVER=nginx", "DURATION=2s"], "DURATION"),
    ("cost", ["SERVER=nginx", "PROFILE_AT=1"], "PROFILE_AT"),
    ("cost", ["SERVER=nginx", "HEADER=5"], "did you mean HEADERS"),
    ("profile", ["PROFILE_AT=2", "DURATIN=2s"], "did you mean DURATION"),
    ("profile", ["PROFILE_AT=2", "HEADER=5"], "did you mean HEADERS"),
    ("profile", ["PROFILE_AT=2", "BIND=::1"], "BIND"),
    ("profile", ["PROFILE_AT=2", "SERVER=nginx"], "SERVER"),
    ("profile", ["PROFILE_AT=2", "COST_LEVELS=1"], "COST_LEVELS"),
    ("reproduce", ["STUDY=ada-vs-java", "QUICK=1", "COST_LEVELS=1"], "COST_LEVELS"),
    ("reproduce", ["STUDY=ada-vs-java", "QUICK=1", "PROFILE_AT=1"], "PROFILE_AT"),
    ("reproduce", ["STUDY=ada-vs-java", "QUICK=1", "CLIENTS=wrk"], "CLIENTS"),
    ("reproduce", ["STUDY=ada-vs-java", "QUIK=1"], "did you mean QUICK"),
    ("rerun", ["COST_LEVELS=1"], "COST_LEVELS"),
    ("rerun", ["STUDY=ada-vs-java"], "STUDY"),
    ("rerun", ["CONCURENCY=1"], "did you mean CONCURRENCY"),
    ("rerun-cost", ["CONCURRENCY=4"], "CONCURRENCY"),
    ("rerun-cost", ["CLIENT=wrk"], "CLIENT"),
    ("calibrate", ["SERVER=aws"], "SERVER"),
    ("calibrate", ["COST_LEVELS=1"], "COST_LEVELS"),
    ("calibrate", ["CONCURENCY=1"], "did you mean CONCURRENCY"),
]


@pytest.mark.parametrize("step, settings, name", CASES,
                         ids=[f"{c[0]}-{c[1][-1].split('=')[0]}" for c in CASES])
def test_a_setting_the_step_would_not_use_exits_2(tmp_path: Path, request: pytest.FixtureRequest,
                                                  step: str, settings: list[str],
                                                  name: str) -> None:
    env = lab_env(tmp_path, PORT=str(free_port()))
    empty = tmp_path / "empty"
    empty.mkdir()
    args = [a.replace(EMPTY, str(empty)) for a in settings]
    if step == "profile":
        run = request.getfixturevalue("bench_run")
        before = sorted(p.name for p in run.rglob("*"))
        out = make(env, "profile", f"RUN={run}", *args)
        assert sorted(p.name for p in run.rglob("*")) == before      # nothing added
    elif step == "rerun":
        out = make(env, "rerun", f"RUN={request.getfixturevalue('bench_run')}", *args)
    elif step == "rerun-cost":
        out = make(env, "rerun", f"RUN={request.getfixturevalue('cost_run')}", *args)
    else:
        out = make(env, step, *args)
    refused(out, name, tmp_path)


def test_rerun_of_a_cost_run_runs_make_cost(tmp_path: Path, cost_run: Path) -> None:
    """Not make bench: make cost's own check answers (here to a bad COST_REQUESTS
    given now), and no bench run is made."""
    env = lab_env(tmp_path)
    out = make(env, "rerun", f"RUN={cost_run}", "COST_REQUESTS=1000")
    refused(out, "COST_REQUESTS", tmp_path)
    assert "give two request counts" in out.stderr     # make cost's message, not bench's
    assert f"rerun of {cost_run.name}: make cost " in out.stderr


def test_rerun_of_another_kind_of_folder_exits_2(tmp_path: Path, bench_run: Path) -> None:
    run = tmp_path / "made-by-something-else"
    shutil.copytree(bench_run, run)
    m = json.loads((run / manifest.MANIFEST).read_text())
    m["kind"] = "calibrate"
    (run / manifest.MANIFEST).write_text(json.dumps(m))
    out = make(lab_env(tmp_path), "rerun", f"RUN={run}")
    refused(out, "make calibrate", tmp_path)


def test_make_cost_shares_benchs_warnings(tmp_path: Path) -> None:
    for server, extra, warning in (("ews@4", {}, "@N changes its name only"),
                                   ("ews nginx", {"WORKERS": "4"}, "WORKERS has no effect on ews")):
        env = lab_env(tmp_path, SERVER=server, PORT=str(free_port()), **extra)
        params = cost.check(env)[0]
        assert any(warning in w for w in params.warnings), params.warnings


def test_cost_reproduce_line_holds_every_setting_it_read(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The manifest's reproduce line gives back exactly its settings, BIND and
    RESULTS among them (a cost run on ::1 counts another figure)."""
    env = lab_env(tmp_path, SERVER="nginx", BIND="::1", PORT=str(free_port()),
                  COST_LEVELS="1", COST_REQUESTS="1000 3000")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    params, servers, levels, counts, repeat = cost.check(env)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a, 0, "h2load nghttp2/1.0", ""))                   # h2load --version only
    run = tmp_path / "run"
    run.mkdir()
    cost.write_manifest(run, params, levels, counts, repeat, servers)
    m = json.loads((run / manifest.MANIFEST).read_text())
    words = shlex.split(m["reproduce"])
    assert words[:2] == ["make", "cost"]
    line = dict(w.split("=", 1) for w in words[2:])
    assert line == {k: v for k, v in m["settings"].items() if v}
    assert line["BIND"] == "::1" and line["RESULTS"] == str(tmp_path / "results")
    assert line["COST_LEVELS"] == "1" and line["PORT"] == env["PORT"]


def test_bench_reproduce_line_is_its_manifest(bench_run: Path) -> None:
    m = json.loads((bench_run / manifest.MANIFEST).read_text())
    words = shlex.split(m["reproduce"])
    assert words[:2] == ["make", "bench"]
    line = dict(w.split("=", 1) for w in words[2:])
    # the test double lives outside the lab: the line carries where it is found
    assert line.pop("LAB_SERVER_PATH") == str(FAKES.resolve())
    assert line == {k: v for k, v in m["settings"].items() if v}


def test_not_built_names_the_servers_to_build(tmp_path: Path, bench_run: Path) -> None:
    """make profile of a run whose server is not built: the make build line
    to type, with the real names (not SERVER="...")."""
    extra = tmp_path / "servers" / "unbuilt"
    extra.mkdir(parents=True)
    (extra / "server.toml").write_text(
        'name = "unbuilt"\nlanguage = "C"\nframework = "none"\nversion = "0"\n'
        'summary = "never built"\n[build]\ncommand = ["false"]\n'
        'artifact = "never-built.bin"\ninputs = ["."]\n'
        '[run]\ncommand = ["false"]\nready_timeout = 1\n'
        '[workers]\ndefault = 1\nfixed = true\nmeaning = "none"\n')
    run = tmp_path / "run"
    shutil.copytree(bench_run, run)
    m = json.loads((run / manifest.MANIFEST).read_text())
    m["params"]["servers"] = ["unbuilt"]
    m["settings"]["SERVER"] = "unbuilt"
    (run / manifest.MANIFEST).write_text(json.dumps(m))
    env = lab_env(tmp_path, PROFILE_AT="1")
    env["LAB_SERVER_PATH"] += f":{tmp_path / 'servers'}"
    out = make(env, "profile", f"RUN={run}")
    assert out.returncode == 2, out.stderr
    assert 'make build SERVER="unbuilt"' in out.stderr and '"..."' not in out.stderr


def test_rerun_of_a_real_cost_run_is_a_cost_run(tmp_path: Path) -> None:
    """make cost (nginx, tiny counts), then make rerun of it with another PORT:
    a second cost run (not a bench run), noting what it repeats."""
    env = lab_env(tmp_path, SERVER="nginx", COST_LEVELS="1", COST_REQUESTS="200 400",
                  REPEAT="1", PORT=str(free_port()))
    first = make(env, "cost")
    assert first.returncode == 0, first.stderr[-2000:]
    [run] = run_folders(tmp_path)
    port = str(free_port())
    again = make(lab_env(tmp_path), "rerun", f"RUN={run}", f"PORT={port}")
    assert again.returncode == 0, again.stderr[-2000:]
    [new] = [r for r in run_folders(tmp_path) if r != run]
    m = json.loads((new / manifest.MANIFEST).read_text())
    assert m["kind"] == "cost" and (new / costs.COST).exists()
    assert m["rerun"]["of"] == run.name
    assert m["rerun"]["overridden"] == {"PORT": {"recorded": env["PORT"], "given": port}}
    old = json.loads((run / manifest.MANIFEST).read_text())["settings"]
    assert m["settings"] == {**old, "PORT": port}
    # both cost runs plan the same counts, and the line gives that plan again (issue 53)
    planned = manifest.read_manifest(new).planned
    assert planned.kind == "cost" and planned == manifest.read_manifest(run).planned
    assert plan_of_line(m["reproduce"]) == planned


@pytest.mark.parametrize("step", ["cost", "calibrate", "reproduce"])
def test_an_empty_ada_sources_folder_exits_2_in_every_step(tmp_path: Path, step: str) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    extra = {"cost": ["SERVER=nginx"], "calibrate": [],
             "reproduce": ["STUDY=ada-vs-java", "QUICK=1"]}[step]
    out = make(lab_env(tmp_path, PORT=str(free_port())), step, *extra, f"ADA_SOURCES={empty}")
    refused(out, "ADA_SOURCES", tmp_path)
    assert "holds none of the archives" in out.stderr


@pytest.mark.unit
@pytest.mark.parametrize("given, refused", [("0", False), ("0s", False), ("5s", True)])
def test_a_run_s_own_duration_is_its_own_however_written(given: str, refused: bool) -> None:
    """make profile takes back the run's own WARMUP, which its plan wrote as
    0s where the user gave 0; another value is still refused."""
    from lab.setup import stepcheck
    from lab.setup.params import ConfigError
    env = {"WARMUP": given}
    if refused:
        with pytest.raises(ConfigError, match="WARMUP=5s is not used by make profile"):
            stepcheck.check_step("profile", env, recorded={"WARMUP": "0s"})
    else:
        stepcheck.check_step("profile", env, recorded={"WARMUP": "0s"})
