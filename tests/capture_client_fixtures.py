"""Capture real wrk, vegeta and siege outputs into tests/fixtures/ (run by hand, as root or not).

    python3 tests/capture_client_fixtures.py [wrk|vegeta|siege ...]

Each case runs the client's own command() against tests/httpfakes.py servers on
127.0.0.1 (server pinned to CPU 0, client to CPU 1, as the lab pins them), or
against a port where nothing listens; `killed` stops the client's process
group with SIGTERM after 1 s, as the sweep stops a hung client. The commands
are listed in fixtures/client-captures.txt.
"""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lab.measure.clients import Client, Load, Options  # noqa: E402
from lab.measure.clients.siege import Siege  # noqa: E402
from lab.measure.clients.vegeta import Vegeta  # noqa: E402
from lab.measure.clients.wrk import Wrk  # noqa: E402
from conftest import free_port  # noqa: E402
import httpfakes  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"


@dataclass(frozen=True)
class Case:
    name: str
    target: str          # ok, quiet, notfound, reset, refused, bad
    load: Load
    duration_s: int
    keepalive: bool = True
    kill_after_s: float | None = None


CASES = {
    "wrk": [
        Case("ok", "ok", Load(concurrency=4), 2),
        Case("close", "ok", Load(concurrency=4), 2, keepalive=False),
        Case("close-quiet", "quiet", Load(concurrency=4), 1, keepalive=False),
        Case("404", "notfound", Load(concurrency=2), 1),
        Case("reset", "reset", Load(concurrency=2), 1),
        Case("refused", "refused", Load(concurrency=2), 1),
        Case("killed", "ok", Load(concurrency=2), 5, kill_after_s=1),
    ],
    "vegeta": [
        Case("ok", "ok", Load(rate=500), 2),
        Case("close", "ok", Load(rate=500), 2, keepalive=False),
        Case("workers", "ok", Load(concurrency=4), 2),
        Case("404", "notfound", Load(rate=200), 1),
        Case("reset", "reset", Load(rate=200), 1),
        Case("refused", "refused", Load(rate=200), 1),
        Case("killed", "ok", Load(rate=200), 5, kill_after_s=1),
        Case("badtarget", "bad", Load(rate=200), 1),
    ],
    # siege-ok, -refused, -dns, -capped, -killed were captured by hand before this script
    # knew siege; these are its failures (connection close, as the lab runs it by default)
    "siege": [
        Case("404", "notfound", Load(concurrency=2), 1, keepalive=False),
        Case("reset", "reset", Load(concurrency=2), 1, keepalive=False),
    ],
}


def run(argv: list[str], kill_after_s: float | None) -> tuple[str, str]:
    pinned = ["taskset", "-c", "1", *argv]
    proc = subprocess.Popen(pinned, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    if kill_after_s is not None:
        time.sleep(kill_after_s)
        os.killpg(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    return out, err


def capture(client: Client, run_dir: Path, urls: dict[str, str], log: list[str]) -> None:
    for case in CASES[client.name]:
        client.prepare(run_dir, Options(keepalive=case.keepalive, threads=2))
        argv = client.command(urls[case.target], case.load, case.duration_s)
        out, err = run(argv, case.kill_after_s)
        name = f"{client.name}-{case.name}"
        (FIXTURES / f"{name}.out").write_text(out)
        (FIXTURES / f"{name}.err").write_text(err)
        shown = shlex.join(argv).replace(str(run_dir), "RUN").replace(str(ROOT), "REPO")
        log.append(f"{name}: {shown}" + (f"  (SIGTERM after {case.kill_after_s:g} s)"
                                          if case.kill_after_s else ""))
        print(log[-1], flush=True)


def main(names: list[str]) -> None:
    ok_port, quiet_port, reset_port, refused_port = (free_port() for _ in range(4))
    servers = [httpfakes.start(mode, port, pin="0")
               for mode, port in (("ok", ok_port), ("quiet", quiet_port), ("reset", reset_port))]
    urls = {"ok": f"http://127.0.0.1:{ok_port}/api",
            "quiet": f"http://127.0.0.1:{quiet_port}/api",
            "notfound": f"http://127.0.0.1:{ok_port}/nope",
            "reset": f"http://127.0.0.1:{reset_port}/api",
            "refused": f"http://127.0.0.1:{refused_port}/api",
            "bad": f"127.0.0.1:{ok_port}/api"}        # no scheme: vegeta refuses the target
    log_file = FIXTURES / "client-captures.txt"
    kept = [line for line in log_file.read_text().splitlines()
            if line.split("-", 1)[0] not in names] if log_file.exists() else []
    log: list[str] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            chosen: list[Client] = [c for c in (Wrk(), Vegeta(), Siege()) if c.name in names]
            for client in chosen:
                capture(client, Path(tmp), urls, log)
    finally:
        for s in servers:
            s.terminate()
            s.wait(timeout=10)
    log_file.write_text("\n".join(sorted(kept + log)) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:] or ["wrk", "vegeta"])
