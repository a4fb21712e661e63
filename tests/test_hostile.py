"""Hostile run folders and manifests (issue 29): links at every file name the
lab writes, traversal names, deep and huge JSON, FIFOs, NUL bytes,
non-UTF-8, a full disk. Every step gives one line and exit 2 (or goes on,
for a neighbour), and no file outside the run folder changes: checked by
content, not by timestamp. Steps are called as `python3 -m lab ...` for
their own exit codes."""
from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import sys
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import FAKES, ROOT, free_port, lab, lab_env, run_folders, bench
from lab.record import files, folder, manifest, outputs, runrecord, series
from lab.record.rows import CSV, Row, append_row, read_rows

pytestmark = pytest.mark.fault

FIXTURE = ROOT / "tests" / "fixtures" / "runs" / "20261123-033407-nginx+paced"


# ---------------------------------------------------------------- the corpus

def results_of(tmp: Path) -> Path:
    results = tmp / "results"
    results.mkdir(exist_ok=True)
    (results / folder.MARK).write_text("The lab's results folder\n")
    return results


def healthy(tmp: Path, name: str = FIXTURE.name) -> Path:
    """A saved run, copied into tmp/results."""
    run = results_of(tmp) / name
    shutil.copytree(FIXTURE, run)
    return run


def outside(tmp: Path) -> Path:
    """Files that are not the lab's: nothing may change them."""
    out = tmp / "outside"
    out.mkdir(exist_ok=True)
    for name in ("a.dat", "b.svg", "c.png", "d.svg", "x.dat", "e.dat", "notes.txt"):
        (out / name).write_text(f"the user's own {name}\n")
    return out


def snapshot(top: Path) -> dict[str, bytes | None]:
    """Every entry under top with its content (None: a folder), links not followed."""
    found: dict[str, bytes | None] = {}
    for p in sorted(top.rglob("*")):
        key = str(p.relative_to(top))
        found[key] = None if p.is_dir() and not p.is_symlink() else \
            (b"->" + os.readlink(p).encode()) if p.is_symlink() else p.read_bytes()
    return found


def env_for(tmp: Path, **settings: str) -> dict[str, str]:
    env = lab_env(tmp, LAB_CACHE=str(tmp / "cache"), **settings)
    env.pop("SERVER", None)
    env.update(settings)
    return env


def one_error(out: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The step's one error line (and no traceback)."""
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == code, out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, out.stderr
    return errors[0]


def no_traceback(out: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in out.stderr and "Traceback" not in out.stdout, out.stderr


def link(at: Path, to: Path) -> None:
    if at.exists() or at.is_symlink():
        at.unlink()
    at.parent.mkdir(parents=True, exist_ok=True)
    at.symlink_to(to)


def fifo(at: Path) -> None:
    if at.exists():
        at.unlink()
    os.mkfifo(at)


def set_manifest(run: Path, change: dict[str, object]) -> None:
    data = json.loads((run / manifest.MANIFEST).read_text())
    data.update(change)
    (run / manifest.MANIFEST).write_text(json.dumps(data, indent=2) + "\n")


# ---------------------------------------------------------------- 1. links at the names plots writes

def test_plots_never_write_through_a_link(tmp_path: Path) -> None:
    """#1: data/*.dat, <server>/rps.dat, rps.svg, rps.png, latency.svg, each a
    link to a file elsewhere: every target keeps its content."""
    run, out = healthy(tmp_path), outside(tmp_path)
    planted = {"data/nginx.dat": "a.dat", "paced/rps.dat": "e.dat", "rps.svg": "b.svg",
               "rps.png": "c.png", "latency.svg": "d.svg", "data/rss.dat": "x.dat"}
    for name, target in planted.items():
        link(run / name, out / target)
    before = snapshot(out)
    done = lab(env_for(tmp_path), "plot", str(run), timeout=120)
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert snapshot(out) == before
    for name in planted:                    # replaced by the lab's own file, not followed
        assert (run / name).is_file() and not (run / name).is_symlink(), name


def test_a_linked_server_folder_is_refused_by_plots(tmp_path: Path) -> None:
    """#1/#3: <run>/<server> a link to a folder elsewhere: exit 2, nothing written there."""
    run, out = healthy(tmp_path), outside(tmp_path)
    link(run / "paced", out)
    before = snapshot(out)
    line = one_error(lab(env_for(tmp_path), "plot", str(run), timeout=120))
    assert "is a link" in line
    assert snapshot(out) == before


# ---------------------------------------------------------------- 2. a name that is a path

def traversal(run: Path, name: str) -> None:
    csv = (run / CSV).read_text().replace("\npaced,", f"\n{name},")
    (run / CSV).write_text(csv)
    data = json.loads((run / manifest.MANIFEST).read_text())
    data["params"]["servers"] = ["nginx", name]
    data["servers"][name] = data["servers"].pop("paced")
    (run / manifest.MANIFEST).write_text(json.dumps(data, indent=2))


@pytest.mark.parametrize("step", ["plot", "report"])
def test_a_server_name_from_a_run_never_becomes_a_path(tmp_path: Path, step: str) -> None:
    """#2: '../../outside/x' as a server name in results.csv and the manifest."""
    run, out = healthy(tmp_path), outside(tmp_path)
    traversal(run, "../../outside/x")
    before = snapshot(out)
    line = one_error(lab(env_for(tmp_path), step, str(run), timeout=120))
    assert "not one the lab writes" in line
    assert snapshot(out) == before
    assert not (out / "x").exists()


@pytest.mark.unit
def test_a_server_name_with_a_nul_or_a_slash_is_refused_when_read(tmp_path: Path) -> None:
    for name in ("a\0b", "a/b", "..", ".hidden", "-x"):
        run = healthy(tmp_path, f"run-{abs(hash(name))}")
        traversal(run, name)
        with pytest.raises(files.RecordError):
            runrecord.load(run)
    from lab.record.costs import COST, read_costs
    for name in ("../x", "aws#1", "aws@0"):            # cost.json's names are checked too
        run = healthy(tmp_path, f"cost-{abs(hash(name))}")
        (run / COST).write_text(json.dumps({"servers": {name: {"reps": []}}}))
        with pytest.raises(files.RecordError, match="not one the lab writes"):
            read_costs(run)


# ---------------------------------------------------------------- 3. a link planted during a run

@pytest.mark.unit
def test_the_measuring_side_never_writes_into_a_linked_server_folder(tmp_path: Path) -> None:
    """#3, each writer: the series, probe.json, the client's output folder."""
    run, out = healthy(tmp_path), outside(tmp_path)
    link(run / "paced", out)
    before = snapshot(out)
    with pytest.raises(files.UnsafePath, match="is a link"):
        series.write(series.series_file(run, "paced", "rep1-c1"), [1.0], [(1.0, 1)], run)
    with pytest.raises(files.UnsafePath, match="is a link"):
        files.write_atomic(run / "paced" / "probe.json", "{}", run)
    with pytest.raises(files.UnsafePath, match="is a link"):
        files.make_dirs(run / "paced", run)
    with pytest.raises(files.UnsafePath, match="is a link"):
        files.open_binary(run / "paced" / "server.log", run, append=True)
    assert snapshot(out) == before


def test_a_link_planted_right_after_the_run_folder_appeared(tmp_path: Path) -> None:
    """#3 end to end: a watcher links <run>/paced to a folder elsewhere as
    soon as the run folder appears; the bench writes nothing there."""
    out = outside(tmp_path)
    before = snapshot(out)
    results = tmp_path / "results"
    planted: list[Path] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for run in results.glob("*-paced") if results.is_dir() else []:
                try:
                    (run / "paced").symlink_to(out)
                    planted.append(run)
                except OSError:
                    pass
                return
            time.sleep(0.002)
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        done = bench(env_for(tmp_path, SERVER="paced", CONCURRENCY="1", DURATION="1s",
                             WARMUP="0", PORT=str(free_port())), timeout=300)
    finally:
        stop.set()
        watcher.join()
    if not planted:
        pytest.skip("the sweep made the server's folder before the watcher could link it")
    no_traceback(done)
    assert done.returncode != 0
    assert snapshot(out) == before
    [run] = run_folders(tmp_path)
    m = json.loads((run / manifest.MANIFEST).read_text())
    assert m["status"] != "complete"
    assert any("is a link" in p for p in m["problems"]), m["problems"]


# ---------------------------------------------------------------- 4. RESULTS/.lab-results

@pytest.mark.unit
def test_a_dangling_results_mark_is_not_written_through(tmp_path: Path) -> None:
    """#4"""
    results = tmp_path / "results"
    results.mkdir()
    target = tmp_path / "elsewhere" / "made-by-the-lab"
    (tmp_path / "elsewhere").mkdir()
    (results / folder.MARK).symlink_to(target)
    folder.new_run(results, ("paced",))
    assert not target.exists()
    assert (results / folder.MARK).is_symlink()          # left as the user made it


# ---------------------------------------------------------------- 5. another run's manifest

def gone_lock(run: Path) -> None:
    (run / folder.LOCK).write_text("held by run-benchmark.sh\n")   # taken once, held by nobody


def test_a_report_never_rewrites_another_runs_manifest(tmp_path: Path) -> None:
    """#5: a finished neighbour with a lock stays byte for byte; a running one
    whose lab is gone changes only its statuses (no schema upgrade)."""
    run = healthy(tmp_path)
    done_one = healthy(tmp_path, "20261101-000000-old")
    data = json.loads((done_one / manifest.MANIFEST).read_text())
    data.pop("schema", None)                 # a schema-1 manifest, as the landed tree wrote
    (done_one / manifest.MANIFEST).write_text(json.dumps(data, indent=1))
    gone_lock(done_one)
    running = healthy(tmp_path, "20261102-000000-running")
    data = json.loads((running / manifest.MANIFEST).read_text())
    data.pop("schema", None)
    data["status"] = "running"
    data["servers"]["paced"]["status"] = "running"
    (running / manifest.MANIFEST).write_text(json.dumps(data, indent=1))
    gone_lock(running)
    kept = snapshot(done_one)
    out = lab(env_for(tmp_path), "report", str(run), timeout=120)
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    assert snapshot(done_one) == kept        # every file of it, not only its manifest
    assert not (running / manifest.MANIFEST_LOCK).exists()
    after = json.loads((running / manifest.MANIFEST).read_text())
    assert after["status"] == "interrupted" and "schema" not in after
    assert after["servers"]["paced"]["status"] == "interrupted"
    for key in ("status", "problems", "servers"):
        after.pop(key), data.pop(key)
    assert after == data                     # nothing else changed


# ---------------------------------------------------------------- 6, 14: corrupt neighbours

def deep(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000)


def huge(path: Path) -> None:
    path.write_text('{"schema": 2, "run_id": ' + "9" * 5000 + "}")


CORRUPT = {"deep": deep, "huge": huge, "fifo": fifo,
           "nul": lambda p: p.write_bytes(b'{"a": "\0"}\0\0'),
           "latin1": lambda p: p.write_bytes('{"run_id": "caf\xe9"}'.encode("latin-1")),
           "zero": lambda p: link(p, Path("/dev/zero")),
           "folder": lambda p: p.mkdir()}


def neighbours(tmp: Path) -> list[Path]:
    made = []
    for kind, make in CORRUPT.items():
        run = results_of(tmp) / f"20260101-000000-{kind}"
        run.mkdir()
        make(run / manifest.MANIFEST)
        gone_lock(run)
        made.append(run)
    return made


def test_a_corrupt_neighbour_never_stops_a_step(tmp_path: Path) -> None:
    """#6, #14: deep, huge, FIFO, NUL, latin-1, /dev/zero and folder manifests
    beside a healthy run: report, history and compare of the healthy runs go
    on, the index lists each neighbour as unreadable."""
    run = healthy(tmp_path)
    other = healthy(tmp_path, "20261123-033407-nginx+paced-2")
    bad = neighbours(tmp_path)
    env = env_for(tmp_path, SERVER="nginx")
    out = lab(env, "report", str(run), timeout=120)
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    index = (run.parent / "index.html").read_text()
    for b in bad:
        assert b.name in index
    assert index.count("unreadable") >= len(bad)
    out = lab(env, "history", timeout=120)
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    for b in bad:                            # each said, in one line
        assert len([x for x in out.stderr.splitlines()
                    if x.startswith(f"note: {b.name} left out, unreadable: ")]) == 1, out.stderr
    out = lab(env, "compare", str(run), str(other), timeout=120)
    no_traceback(out)
    assert out.returncode in (0, 1, 3), out.stderr


@pytest.mark.parametrize("kind", sorted(CORRUPT))
@pytest.mark.parametrize("step", ["report", "plot", "rerun"])
def test_a_corrupt_manifest_is_one_line_and_exit_2(tmp_path: Path, kind: str,
                                                   step: str) -> None:
    """#6, #14: the step on the corrupt run itself: one line, exit 2, no wait."""
    run = healthy(tmp_path)
    (run / manifest.MANIFEST).unlink()
    CORRUPT[kind](run / manifest.MANIFEST)
    out_dir = outside(tmp_path)
    before = snapshot(out_dir)
    t0 = time.monotonic()
    line = one_error(lab(env_for(tmp_path), step, str(run), timeout=60))
    assert time.monotonic() - t0 < 30
    assert manifest.MANIFEST in line
    assert snapshot(out_dir) == before


@pytest.mark.parametrize("kind", ["fifo", "zero", "nul", "latin1", "folder"])
def test_a_corrupt_results_csv_is_one_line_and_exit_2(tmp_path: Path, kind: str) -> None:
    """#14: a FIFO or a link to /dev/zero as results.csv never blocks."""
    run = healthy(tmp_path)
    (run / CSV).unlink()
    {"fifo": fifo, "zero": lambda p: link(p, Path("/dev/zero")),
     "nul": lambda p: p.write_bytes(b"server,rep\n\0\0\0"),
     "latin1": lambda p: p.write_bytes("server\ncaf\xe9\n".encode("latin-1")),
     "folder": lambda p: p.mkdir()}[kind](run / CSV)
    for step in ("report", "plot"):
        line = one_error(lab(env_for(tmp_path), step, str(run), timeout=60))
        assert CSV in line


def test_a_corrupt_neighbour_never_stops_a_new_run(tmp_path: Path) -> None:
    """#6: `lab new-run` (make bench's first step that reads the results
    folder) goes on beside every corrupt neighbour."""
    neighbours(tmp_path)
    out = lab(env_for(tmp_path, SERVER="paced", PORT=str(free_port())), "new-run",
              timeout=120)
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).is_dir()


@pytest.mark.unit
def test_files_reader_limits() -> None:
    for text, said in (("[" * 5000 + "]" * 5000, "nests deeper"),
                       ("[" * 150 + "]" * 150, "nests deeper"),
                       ('{"a": ' + "1" * 5000 + "}", "number"),
                       ("", "empty")):
        with pytest.raises(files.RecordError, match=said):
            files.parse_json(text, "x.json")


# ---------------------------------------------------------------- 10. noise floors

@pytest.mark.unit
@pytest.mark.parametrize("floor", [
    {"conditions": [1]}, {"floors_pct": {"rate": float("nan")}},
    {"floors_pct": {"rate": float("inf")}}, {"floors_pct": {"rate": -1}},
    {"levels": ["x"]}, {"repeat": True}])
def test_a_bad_noise_floor_is_refused_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     floor: dict[str, object]) -> None:
    """#10: conditions of the wrong type, NaN, inf: not used, one warning."""
    from lab.analyse import floors
    good = {"server": "nginx", "made": "2026-01-01", "run": "r", "conditions": {},
            "floors_pct": {"rate": 3.0}, "levels": [1], "duration_s": 1, "repeat": 2}
    path = floors.path_for(tmp_path, "nginx")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"schema": 1, "floors": [{**good, **floor}]}))
    assert floors.read_all(tmp_path, "nginx") == []
    assert "noise floor not used" in capsys.readouterr().err
    path.write_text(json.dumps({"schema": 1, "floors": [good]}))
    assert len(floors.read_all(tmp_path, "nginx")) == 1


@pytest.mark.parametrize("kind", ["deep", "huge", "fifo"])
def test_a_corrupt_noise_floor_does_not_stop_compare(tmp_path: Path, kind: str) -> None:
    """#6, #14: the same corrupt file as a floor in LAB_CACHE/noise/."""
    run, other = healthy(tmp_path), healthy(tmp_path, "20261123-033407-nginx+paced-2")
    for name in ("nginx", "paced"):
        path = tmp_path / "cache" / "noise" / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        CORRUPT[kind](path)
    out = lab(env_for(tmp_path), "compare", str(run), str(other), timeout=120)
    no_traceback(out)
    assert out.returncode in (0, 1, 3), out.stderr
    assert "noise floor not used" in out.stderr


# ---------------------------------------------------------------- 7, 12: full disk, interrupted report

def no_space(*_args: object, **_kw: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_finish_then_report_is_complete_only_with_every_output(tmp_path: Path) -> None:
    """#12: `lab finish` does not say complete; the report does, once its files exist."""
    run = healthy(tmp_path)
    for name in outputs.OUTPUTS:
        (run / name).unlink(missing_ok=True)
    set_manifest(run, {"status": "running", "problems": []})
    env = env_for(tmp_path)
    out = lab(env, "finish", str(run), "0", timeout=60)
    assert out.returncode == 0, out.stderr
    m = manifest.read_manifest(run)
    assert m.status == "incomplete" and manifest.pending(m)
    out = lab(env, "report", str(run), timeout=120)
    assert out.returncode == 0, out.stderr
    m = manifest.read_manifest(run)
    assert m.status == "complete" and m.problems == []
    assert all((run / name).is_file() for name in outputs.OUTPUTS)


@pytest.mark.unit
@pytest.mark.parametrize("fail_at", [1, 2, 3, 4])
def test_a_full_disk_during_the_report_leaves_it_incomplete(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_at: int) -> None:
    """#7, #12: ENOSPC at the n-th output: exit 1 with one line, the run
    incomplete with the reason, what was written kept."""
    from lab import cli
    run = healthy(tmp_path)
    for name in outputs.OUTPUTS:
        (run / name).unlink(missing_ok=True)
    real = files.write_atomic
    written: list[str] = []

    def full(path: Path, text: str | bytes, root: Path | None = None,
             spare: bool = False) -> Path:
        if path.name in outputs.OUTPUTS:
            written.append(path.name)
            if len(written) == fail_at:
                no_space()
        return real(path, text, root, spare)
    monkeypatch.setattr(files, "write_atomic", full)
    monkeypatch.chdir(ROOT)
    code = cli.main(["report", str(run)])
    assert code == 1
    m = manifest.read_manifest(run)
    assert m.status == "incomplete"
    assert any("report pending" in p and "No space left" in p for p in m.problems), m.problems
    assert sorted(p.name for p in run.iterdir() if p.name in outputs.OUTPUTS) == \
        sorted(written[:fail_at - 1])


def test_a_killed_report_leaves_the_run_incomplete(tmp_path: Path) -> None:
    """#12: SIGKILL of the report step at any moment: the run is complete only
    if every output is there."""
    run = healthy(tmp_path)
    for name in outputs.OUTPUTS:
        (run / name).unlink(missing_ok=True)
    env = env_for(tmp_path)
    assert lab(env, "finish", str(run), "0", timeout=60).returncode == 0
    for delay in (0.0, 0.3, 0.6, 1.0):
        proc = subprocess.Popen([sys.executable, "-m", "lab", "report", str(run)],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.kill()
        proc.wait()
        m = manifest.read_manifest(run)
        if m.status == "complete":
            assert all((run / name).is_file() for name in outputs.OUTPUTS)
        else:
            assert manifest.pending(m)


@pytest.mark.unit
def test_finish_on_a_full_disk_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """#7: `lab finish` out of space: one line, exit 1, no traceback."""
    from lab import cli
    run = healthy(tmp_path)
    set_manifest(run, {"status": "running"})
    monkeypatch.setattr(files, "write_atomic", lambda *a, **k: no_space())
    assert cli.main(["finish", str(run), "0"]) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and "Traceback" not in err


@pytest.mark.usefixtures("wrk_installed")                # the lab installs it (conftest)
def test_a_full_disk_mid_sweep_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """#7: ENOSPC on the second level's row: the sweep stops with one line,
    the server `failed`, the run incomplete with the reason, the first row kept."""
    from lab import cli
    env = env_for(tmp_path, SERVER="paced", CONCURRENCY="1 2", DURATION="1s", WARMUP="0",
                  PORT=str(free_port()), CLIENT="wrk")
    for k in list(os.environ):
        if k.startswith("LAB_") or k in ("SERVER", "RESULTS", "CONCURRENCY"):
            monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(ROOT)
    assert cli.main(["new-run"]) == 0
    run = Path(capsys.readouterr().out.strip())
    real = append_row
    rows: list[object] = []

    def full(r: Path, row: Row) -> None:
        rows.append(row)
        if len(rows) == 2:
            no_space()
        real(r, row)
    monkeypatch.setattr("lab.record.rows.append_row", full)
    try:
        code = cli.main(["sweep", str(run), "paced"])
    finally:

        for sig in cli.STOP_SIGNALS:
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT
                          else signal.SIG_DFL)
    err = capsys.readouterr().err
    assert code == 1, err
    assert "Traceback" not in err and "No space left on device" in err
    m = manifest.read_manifest(run)
    assert m.status == "incomplete"
    assert m.servers["paced"].status == "failed"
    assert any("No space left on device" in p for p in m.problems)
    assert len(read_rows(run)) == 1


def can_mount_tmpfs(where: Path) -> str | None:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return "not root: no tmpfs can be mounted"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40k", "lab-test", str(where)],
                          capture_output=True, text=True)
    return None if done.returncode == 0 else f"mount failed: {done.stderr.strip()}"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "small"
    why = can_mount_tmpfs(where)
    if why:
        pytest.skip(why)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_disk_that_fills_mid_run(tmp_path: Path, small_disk: Path) -> None:
    """#7 for real: RESULTS on a 40 KB tmpfs. No traceback; the run is not
    left `running`, nor called complete."""
    env = env_for(tmp_path, SERVER="paced", CONCURRENCY="1 2 3 4 5 6 7 8", DURATION="1s",
                  WARMUP="0", PORT=str(free_port()), RESULTS=str(small_disk / "results"))
    done = bench(env, timeout=300)
    no_traceback(done)
    assert done.returncode != 0
    for run in [p for p in (small_disk / "results").iterdir() if p.is_dir()]:
        m = json.loads((run / manifest.MANIFEST).read_text())
        assert m["status"] in ("incomplete", "interrupted"), m["status"]
        assert m["problems"]


# ---------------------------------------------------------------- 8, 9, 14, 15: manifests

FAKE = """name = "{name}"
language = "Python"
framework = "test"
version = "1"
[run]
command = ["python3", "{paced}"]
[workers]
default = 1
"""


def server_path(tmp: Path, **bad: object) -> Path:
    """LAB_SERVER_PATH with a good server `fine` and the bad ones given."""
    top = tmp / "servers-extra"
    (top / "fine").mkdir(parents=True)
    (top / "fine" / "server.toml").write_text(
        FAKE.format(name="fine", paced=FAKES / "paced" / "paced.py"))
    for name, make in bad.items():
        (top / name).mkdir()
        make(top / name / "server.toml")  # type: ignore[operator]
    return top


@pytest.mark.parametrize("kind", ["latin1", "folder", "fifo", "bad-toml", "deep-toml"])
def test_a_broken_server_toml_makes_only_its_own_server_unusable(tmp_path: Path,
                                                                 kind: str) -> None:
    """#8, #14: the others still list and check; the broken one, asked for, is one line."""
    make = {"latin1": lambda p: p.write_bytes(b'name = "caf\xe9"\n'),
            "folder": lambda p: p.mkdir(),
            "fifo": fifo,
            "bad-toml": lambda p: p.write_text("name = \n"),
            "deep-toml": lambda p: p.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")}[kind]
    top = server_path(tmp_path, broken=make)
    env = env_for(tmp_path, LAB_SERVER_PATH=str(top), PORT=str(free_port()))
    out = lab(env, "list", timeout=60)
    no_traceback(out)
    assert out.returncode == 0 and "fine" in out.stdout
    assert "unusable: broken:" in out.stderr
    out = lab({**env, "SERVER": "fine", "CLIENT": "wrk"}, "check", timeout=60)
    no_traceback(out)
    assert "warning: server broken cannot be used" in out.stderr
    line = one_error(lab({**env, "SERVER": "broken"}, "check", timeout=60))
    assert "server.toml" in line


@pytest.mark.parametrize("extra,said", [
    ('dir = "/nonexistent"\n', "does not exist"),
    ('[env]\nPATH = "/nonexistent"\n', "PATH may not be set"),
    ('[env]\nLD_PRELOAD = "/tmp/x.so"\n', "LD_PRELOAD may not be set")])
def test_check_refuses_what_would_fail_at_the_first_start(tmp_path: Path, extra: str,
                                                          said: str) -> None:
    """#9: before any run folder is made."""
    text = FAKE.format(name="bad", paced=FAKES / "paced" / "paced.py")
    text = text.replace('[run]\n', '[run]\n' + extra) if extra.startswith("dir") else \
        text + extra
    top = server_path(tmp_path, bad=lambda p: p.write_text(text))
    env = env_for(tmp_path, LAB_SERVER_PATH=str(top), SERVER="bad", PORT=str(free_port()))
    line = one_error(lab(env, "check", timeout=60))
    assert said in line
    assert run_folders(tmp_path) == []


def test_a_name_that_cannot_be_selected_is_refused(tmp_path: Path) -> None:
    """#15: a folder "a b" was listed but never selectable."""
    top = server_path(tmp_path, **{"a b": lambda p: p.write_text(
        FAKE.format(name="a b", paced=FAKES / "paced" / "paced.py"))})
    out = lab(env_for(tmp_path, LAB_SERVER_PATH=str(top)), "list", timeout=60)
    assert "a b" not in out.stdout.replace("unusable", "")
    assert "server name 'a b' is not allowed" in out.stderr


def test_a_server_folder_named_bin_is_said(tmp_path: Path) -> None:
    """#15: skipped, but not silently."""
    top = server_path(tmp_path, bin=lambda p: p.write_text(
        FAKE.format(name="bin", paced=FAKES / "paced" / "paced.py")))
    out = lab(env_for(tmp_path, LAB_SERVER_PATH=str(top)), "list", timeout=60)
    assert "skipped: a folder named bin is a build output" in out.stderr


def test_an_empty_results_is_an_error(tmp_path: Path) -> None:
    """#15: RESULTS= as CONCURRENCY= is."""
    env = env_for(tmp_path, SERVER="paced", PORT=str(free_port()))
    env["RESULTS"] = ""
    line = one_error(lab(env, "check", timeout=60))
    assert "RESULTS is empty" in line
    line = one_error(lab(env, "history", timeout=60))
    assert "RESULTS is empty" in line


@pytest.mark.unit
def test_workers_is_optional_as_the_readme_says(tmp_path: Path) -> None:
    """#15: servers/README.md's [workers] is optional; the loader agrees."""
    from lab.setup.servers import load
    assert "# optional" in (ROOT / "servers" / "README.md").read_text().split("[workers]")[1][:40]
    top = server_path(tmp_path)
    path = top / "fine" / "server.toml"
    path.write_text(path.read_text().replace("[workers]\ndefault = 1\n", ""))
    s = load(path)
    assert s.has_workers and s.workers_default is None
