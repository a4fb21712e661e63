"""Start, watch and stop the processes the lab runs.

Each one gets a session (process group) of its own, so that stopping it
stops everything it forked, and the environment marker LAB_RUN so that a
test can find anything the lab left behind.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import IO

MARKER = "LAB_RUN"


class PortBusy(RuntimeError):
    pass


class NotReady(RuntimeError):
    pass


def pinned(argv: list[str], cpus: tuple[int, ...]) -> list[str]:
    return ["taskset", "-c", ",".join(map(str, cpus)), *argv]


def start(argv: list[str], cwd: Path, env: dict[str, str], log: IO[bytes] | int,
          stdout: IO[bytes] | int | None = None) -> subprocess.Popen[bytes]:
    """Start argv in a new session; stdout to `stdout` (or the log), stderr to the log."""
    return subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=log if stdout is None else stdout, stderr=log,
                            start_new_session=True)


def stop(proc: subprocess.Popen[bytes], grace: float = 10.0) -> int | None:
    """SIGTERM the process group, SIGKILL it after `grace` seconds; returns the exit code."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            return proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue
    return proc.poll()


def kill_group(pgid: int) -> None:
    """SIGKILL what is left of a process group (children that outlived their leader)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def port_holder(port: int) -> str:
    """Who listens on the port, as `ss` shows it (empty when unknown)."""
    try:
        out = subprocess.run(["ss", "-Hltnp", f"sport = :{port}"], capture_output=True,
                             text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    users = [line.split("users:", 1)[1] for line in out.splitlines() if "users:" in line]
    return " ".join(users)


def listeners(port: int) -> list[str]:
    """Local addresses anything listens on at `port`, IPv4 and IPv6 alike, as
    `ss` prints them ('127.0.0.1:8080', '[::1]:8080'); empty without ss."""
    try:
        out = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True,
                             text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    # columns: state, recv-q, send-q, local address:port, peer address:port
    return [cols[3] for cols in map(str.split, out.splitlines()) if len(cols) >= 4]


def busy_message(port: int, addresses: list[str]) -> str:
    holder = port_holder(port)
    held = f", held by {holder}" if holder else ""
    where = f" (listening on {', '.join(addresses)})" if addresses else ""
    return (f"port {port} is already in use{held}{where}: stop that process or choose "
            "another with PORT=")


def check_port_free(port: int, bind: str = "127.0.0.1") -> None:
    """Refuse a port that anything listens on, on any address of either family.

    Binding BIND alone is not enough: 127.0.0.1:PORT binds fine next to an
    IPv6-only listener on [::1]:PORT, yet a server that binds [::] (as JVMs
    do) then fails, and a client that resolves localhost to ::1 reaches the
    other process. The bind attempt stays for what ss does not list (a
    socket bound but not listening) and for hosts without ss.
    """
    addresses = listeners(port)
    if addresses:
        raise PortBusy(busy_message(port, addresses))
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((bind, port))
        except OSError as e:
            raise PortBusy(busy_message(port, [])) from e


def connect_host(bind: str) -> str:
    """Where a client reaches a server bound to `bind`."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(bind, bind)


def wait_ready(bind: str, port: int, proc: subprocess.Popen[bytes], timeout: float) -> float:
    """Wait until something accepts on bind:port; returns the seconds it took."""
    start_t = time.monotonic()
    while time.monotonic() - start_t < timeout:
        if proc.poll() is not None:
            raise NotReady(f"exited with code {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection((connect_host(bind), port), timeout=0.5):
                return time.monotonic() - start_t
        except OSError:
            time.sleep(0.1)
    raise NotReady(f"did not accept connections on port {port} within {timeout:.0f}s")


def wait_port_released(port: int, bind: str = "127.0.0.1", timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            check_port_free(port, bind)
            return
        except PortBusy:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"
