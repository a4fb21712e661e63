"""Server logs are bounded (issue 29 #13): a server writing 100 KB a request
made a 1 GB log in 4 s. SERVER_LOG_MAX caps what reaches the disk; the server
never blocks on its log, and the report says when the cap was hit."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from conftest import bench, free_port, lab_env, leftovers, run_folders
from lab.host import logcap
from lab.record import files

pytestmark = pytest.mark.unit


def test_copy_keeps_the_cap_and_drains_the_rest(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"started\n")                 # what was there stays, and counts
    read, write = os.pipe()

    def server() -> None:
        with os.fdopen(write, "wb") as f:
            for _ in range(100):
                f.write(b"y" * 10_000)             # 1 MB in all, through a 64 KB pipe

    t = threading.Thread(target=server)
    t.start()
    try:
        dropped = logcap.copy(read, files.open_fd(log, append=True), 50_000)
    finally:
        os.close(read)
        t.join(timeout=30)
    data = log.read_bytes()
    assert not t.is_alive()                       # never blocked: everything was read
    assert dropped == 1_000_000 + 8 - 50_000
    kept, _, notes = data.partition(b"\n" + logcap.MARK)
    assert len(kept) == 50_000 and kept.startswith(b"started\n")
    assert f"{dropped:,} bytes discarded past the cap".encode() in notes
    assert len(data) < 50_000 + 300 and logcap.capped(log)


def test_a_log_under_the_cap_is_kept_whole(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    read, write = os.pipe()
    os.write(write, b"hello\n")
    os.close(write)
    assert logcap.copy(read, files.open_fd(log, append=True), 1000) == 0
    os.close(read)
    assert log.read_bytes() == b"hello\n" and not logcap.capped(log)


@pytest.mark.fault
def test_a_server_that_logs_100k_a_request_is_capped_live(tmp_path: Path) -> None:
    env = lab_env(tmp_path, SERVER="chatty", CONCURRENCY="2", DURATION="1s", WARMUP="0",
                  SERVER_LOG_MAX="300k", PORT=str(free_port()))
    out = bench(env, timeout=300)
    assert out.returncode == 0, out.stderr
    [run] = run_folders(tmp_path)
    assert leftovers(run) == []
    rows = (run / "results.csv").read_text().splitlines()
    assert len(rows) == 2                       # measured, at well over 3 requests
    log = run / "chatty" / "server-rep1.log"
    assert 300 * 1024 <= log.stat().st_size < 300 * 1024 + 1000
    assert logcap.capped(log)
    data = json.loads((run / "results.json").read_text())
    notes = [f["text"] for f in data["findings"] if f["kind"] == "server-note"]
    assert any("reached SERVER_LOG_MAX" in n for n in notes), notes
    assert "reached SERVER_LOG_MAX" in (run / "summary.md").read_text()
    assert data["params"]["server_log_max"] == 300 * 1024
