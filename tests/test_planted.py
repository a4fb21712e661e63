"""Links planted during a run, or in the cache (issue 44, section 4): a hard
link at a name before the lab creates the file, a run folder swapped for a
symbolic link mid-run, the cache's build log as a link. The file outside
never changes: checked by content. Each writer is called as a step calls it
(results.csv's rows, a client's captured output, a series file, the build
log); a client or a build command is a small local process. One bench
whose run folder is swapped mid-run (a fault test)."""
from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from conftest import ROOT, bench, free_port, lab_env, leftovers
from lab.cli import prepare
from lab.measure.topologies.local import LocalClientHost
from lab.record import files, series
from lab.record.rows import CSV, Row, append_row, read_rows

pytestmark = pytest.mark.unit

FIXTURE = ROOT / "tests" / "fixtures" / "runs" / "20261123-033407-nginx+paced"
SECRET = "the user's own file: not the lab's\n"


def a_row() -> Row:
    return read_rows(FIXTURE)[0]


def planted(tmp: Path, at: Path) -> Path:
    """A file outside the run, hard-linked at `at` (the lab has not made it yet)."""
    out = tmp / "outside" / f"{at.name}.kept"
    out.parent.mkdir(exist_ok=True)
    out.write_text(SECRET)
    at.parent.mkdir(parents=True, exist_ok=True)
    os.link(out, at)
    return out


def run_folder(tmp: Path) -> Path:
    run = tmp / "results" / "20260101-000000-paced"
    run.mkdir(parents=True)
    return run


def test_a_hard_link_at_results_csv_is_never_appended_to(tmp_path: Path) -> None:
    """Planted before the first level: the row never reaches the outside file."""
    run = run_folder(tmp_path)
    out = planted(tmp_path, run / CSV)
    with pytest.raises(files.UnsafePath, match="2 names"):
        append_row(run, a_row())
    assert out.read_text() == SECRET


def test_a_hard_link_made_to_results_csv_after_it_is_refused(tmp_path: Path) -> None:
    """Linked from outside after the lab made it: the next row is refused, the
    rows written so far stay as they were."""
    run = run_folder(tmp_path)
    append_row(run, a_row())
    before = (run / CSV).read_bytes()
    os.link(run / CSV, tmp_path / "outside.csv")
    with pytest.raises(files.UnsafePath, match="2 names"):
        append_row(run, a_row())
    assert (tmp_path / "outside.csv").read_bytes() == before


def test_a_clients_output_is_created_new_beside_planted_hard_links(tmp_path: Path) -> None:
    """<server>/wrk-rep1-c3.out and .err: created new, the planted names replaced."""
    run = run_folder(tmp_path)
    out = run / "paced" / "wrk-rep1-c3.out"
    kept = [planted(tmp_path, out), planted(tmp_path, out.with_suffix(".err"))]
    done = LocalClientHost().run_client(
        ["sh", "-c", "echo the client said; echo its errors >&2"], (0,), dict(os.environ), out,
        30, lambda: True)
    assert done.exit_code == 0
    assert [p.read_text() for p in kept] == [SECRET, SECRET]
    assert out.read_text() == "the client said\n"
    assert out.with_suffix(".err").read_text() == "its errors\n"
    assert os.stat(out).st_nlink == 1


def test_a_series_file_is_created_new_beside_a_planted_hard_link(tmp_path: Path) -> None:
    run = run_folder(tmp_path)
    path = series.series_file(run, "paced", "rep1-c4")
    assert path.name == "series-rep1-c4.csv"
    kept = planted(tmp_path, path)
    series.write(path, [10.0, 20.0], [(5.0, 100)], run)
    assert kept.read_text() == SECRET
    assert [r[1] for r in series.read(path)] == [10.0, 20.0]


def swapped(tmp: Path, run: Path) -> Path:
    """The run folder moved away and a link to another folder put in its place."""
    target = tmp / "elsewhere"
    target.mkdir()
    (target / "paced").mkdir()
    os.rename(run, tmp / "moved")
    run.symlink_to(target)
    return target


def test_a_run_folder_swapped_for_a_link_mid_run_gets_no_row(tmp_path: Path) -> None:
    """Held from its first write: a swap stops the writers, nothing lands in
    the link's target, and the error says what happened."""
    run = run_folder(tmp_path)
    files.hold(run)
    try:
        append_row(run, a_row())
        target = swapped(tmp_path, run)
        with pytest.raises(files.UnsafePath, match="no longer the run folder"):
            append_row(run, a_row())
        with pytest.raises(files.UnsafePath, match="no longer the run folder"):
            series.write(series.series_file(run, "paced", "rep1-c2"), [1.0], [], run)
        with pytest.raises(files.UnsafePath, match="no longer the run folder"):
            files.open_binary(run / "paced" / "wrk-rep1-c2.out").close()
        with pytest.raises(files.UnsafePath, match="no longer the run folder"):
            files.write_atomic(run / "manifest.json", "{}\n")
        (target / "paced" / "wrk-rep1-c1.out").write_text(SECRET)
        with pytest.raises(files.UnsafePath, match="no longer the run folder"):
            files.rename(run / "paced" / "wrk-rep1-c1.out", "wrk-rep1-c1.stopped.out")
        (target / "paced" / "wrk-rep1-c1.out").unlink()
        assert sorted(p.name for p in target.rglob("*")) == ["paced"]
        assert len(read_rows(tmp_path / "moved")) == 1
    finally:
        files.release_hold(run)


def test_a_run_folder_that_is_a_link_is_not_held(tmp_path: Path) -> None:
    """A step given a run folder already swapped for a link refuses it."""
    run = run_folder(tmp_path)
    target = swapped(tmp_path, run)
    with pytest.raises(files.UnsafePath, match="is a link"):
        files.hold(run)
    assert sorted(p.name for p in target.rglob("*")) == ["paced"]


def test_a_linked_build_log_in_the_cache_is_not_written_through(tmp_path: Path) -> None:
    """LAB_CACHE/logs/build-<server>.log as a link: the build's lines go to the
    command's own log, never to the link's target; the step says so."""
    logs = tmp_path / "cache" / "logs"
    logs.mkdir(parents=True)
    target = tmp_path / "outside.log"
    target.write_text(SECRET)
    log = logs / "build-paced.log"
    log.symlink_to(target)
    with pytest.raises(files.UnsafePath, match="is a link"):
        prepare.check_log(log)
    try:
        code, own = prepare.run_own_log(["sh", "-c", "seq 1 5000"], tmp_path,
                                        dict(os.environ), log)
        assert code == 0 and own.splitlines()[-1] == "5000"
    except OSError as e:    # a build whose log is not kept whole is not trusted (LogLost)
        assert "is a link" in str(e), e
    assert target.read_text() == SECRET
    assert log.is_symlink()


def test_a_hard_linked_build_log_is_not_appended_to(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    log = cache / "logs" / "build-paced.log"
    kept = planted(tmp_path, log)
    with pytest.raises(files.UnsafePath, match="2 names"):
        prepare.check_log(log)
    try:
        prepare.run_own_log(["sh", "-c", "echo built"], tmp_path, dict(os.environ), log)
    except OSError as e:    # a build whose log is not kept whole is not trusted (LogLost)
        assert "2 names" in str(e), e
    assert kept.read_text() == SECRET


@pytest.mark.fault
def test_a_bench_whose_run_folder_is_swapped_mid_run_writes_nothing_there(
        tmp_path: Path) -> None:
    """End to end: once the first level's row is in results.csv, the run
    folder is moved away and a link to another folder put in its place. The
    later levels, the finish, the charts and the report write nothing into
    the link's target; the run fails saying why; its own rows stay in the
    moved folder."""
    target = tmp_path / "elsewhere"
    target.mkdir()
    results = tmp_path / "results"
    swapped_at: list[Path] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for run in results.glob("*-paced-*") if results.is_dir() else []:
                if (run / CSV).is_file() and not run.is_symlink():
                    os.rename(run, tmp_path / "moved")
                    run.symlink_to(target)
                    swapped_at.append(run)
                    return
            time.sleep(0.01)
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        env = lab_env(tmp_path, SERVER="paced", CONCURRENCY="1 2 3 4", DURATION="1s",
                      WARMUP="0", PORT=str(free_port()))
        done = bench(env, timeout=300)
    finally:
        stop.set()
        watcher.join()
    assert swapped_at, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode != 0
    assert list(target.iterdir()) == []
    assert "no longer the run folder" in done.stderr, done.stderr[-3000:]
    rows = read_rows(tmp_path / "moved")
    assert 1 <= len(rows) < 4
    assert leftovers(tmp_path / "moved") == []


@pytest.mark.fault
def test_a_link_at_the_runs_lock_is_not_written_through_by_the_script(tmp_path: Path) -> None:
    """run-benchmark.sh appends "held by run-benchmark.sh" to <run>/lock:
    a link put there right after `lab new-run` made it is refused (exit 2),
    the file it points to unchanged, the run marked not complete."""
    out = tmp_path / "outside.txt"
    out.write_text(SECRET)
    results = tmp_path / "results"
    planted_at: list[Path] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for run in results.glob("*-paced-*") if results.is_dir() else []:
                if (run / "lock").is_file():
                    (run / "lock").unlink()
                    (run / "lock").symlink_to(out)
                    planted_at.append(run)
                    return
            time.sleep(0.001)
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        env = lab_env(tmp_path, SERVER="paced", CONCURRENCY="1", DURATION="1s", WARMUP="0",
                      PORT=str(free_port()))
        done = bench(env, timeout=300)
    finally:
        stop.set()
        watcher.join()
    if not planted_at or "held by" in done.stderr and "is a link" not in done.stderr:
        pytest.skip("the script took the lock before the watcher could link it")
    assert out.read_text() == SECRET
    assert done.returncode == 2, done.stderr[-2000:]
    assert "lock is a link or has another name" in done.stderr
    m = json.loads((planted_at[0] / "manifest.json").read_text())
    assert m["status"] != "complete" and m["status"] != "running", m["status"]


def test_a_link_at_the_downloads_part_name_in_the_cache_is_not_written_through(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LAB_CACHE/sources/<archive>.part (the download's name) and the
    keeper's copy name as links: the archive is fetched and kept under
    private names, the files outside unchanged."""
    from lab.setup import sources
    from test_ada_sources import FILES, make_archive, source
    upstream = make_archive(tmp_path / "up.tar.gz", "lib-0", FILES)
    monkeypatch.setenv("LAB_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "sources"
    folder.mkdir(parents=True)
    outside = [tmp_path / "outside-1", tmp_path / "outside-2"]
    for out in outside:
        out.write_text(SECRET)
    (folder / "lib-0.tar.gz.part").symlink_to(outside[0])
    (folder / f"lib-0.tar.gz.{os.getpid()}.part").symlink_to(outside[1])
    src = source("lib-0.tar.gz", sources.content_digest(upstream, source("x")),
                 url=upstream.as_uri())
    got = sources.check(src, env={})
    assert got == folder / "lib-0.tar.gz" and got.read_bytes() == upstream.read_bytes()
    assert [p.read_text() for p in outside] == [SECRET, SECRET]
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    shutil.copy(upstream, mirror / "lib-0.tar.gz")
    got.unlink()
    assert sources.check(src, env={"ADA_SOURCES": str(mirror)}) == mirror / "lib-0.tar.gz"
    assert got.read_bytes() == upstream.read_bytes()
    assert [p.read_text() for p in outside] == [SECRET, SECRET]


def test_a_cache_whose_logs_folder_is_a_link_still_keeps_build_logs(tmp_path: Path) -> None:
    """LAB_CACHE, or its logs folder, may be a link (a cache whose entries are
    another's, as test_noise borrows one): only the log file itself must not be."""
    shared = tmp_path / "shared-logs"
    shared.mkdir()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "logs").symlink_to(shared)
    log = cache / "logs" / "build-paced.log"
    prepare.check_log(log)
    code, own = prepare.run_own_log(["sh", "-c", "echo built"], tmp_path, dict(os.environ), log)
    assert code == 0 and own.splitlines()[-1] == "built"
    assert "built" in (shared / "build-paced.log").read_text()
