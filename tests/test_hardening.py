"""Hardening: input that used to slip past `lab check` (an unwritable
RESULTS, a port held over IPv6 only, arguments to run-benchmark.sh) is
refused with exit 2 before anything is built or started, and the suite
passes from a clone nobody else can read."""
from __future__ import annotations

import errno
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT, free_port, lab, lab_env, run_folders
from lab.host import procs
from lab.record import folder

pytestmark = [pytest.mark.fault, pytest.mark.root]


def tree(top: Path) -> list[str]:
    """Everything under top, to show a check left nothing behind."""
    return sorted(str(p.relative_to(top)) for p in top.rglob("*"))


def script(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "run-benchmark.sh"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def env_without_server(tmp: Path, **settings: str) -> dict[str, str]:
    """lab_env, minus a SERVER the caller's own environment may carry
    (`make test SERVER=...` exports it). A bad DURATION (checked after
    SERVER) stops a script that ignores its arguments at `lab check`, rather
    than letting it build and sweep the default server."""
    env = lab_env(tmp, DURATION="guard", **settings)
    if "SERVER" not in settings:
        env.pop("SERVER", None)
    return env


# 1. RESULTS must be a place where run folders can be made

@pytest.fixture
def not_a_folder(tmp_path: Path) -> Path:
    (tmp_path / "a-file").write_text("in the way\n")
    return tmp_path / "a-file" / "results"


# /proc: os.access says root may write there, yet nothing can be made in it
@pytest.mark.parametrize("where", ["/proc/nope", "/proc/self/nope/deeper", "file"])
def test_check_refuses_an_unwritable_results(tmp_path: Path, not_a_folder: Path,
                                             where: str) -> None:
    target = str(not_a_folder) if where == "file" else where
    before = tree(tmp_path)
    out = lab(lab_env(tmp_path, SERVER="nginx", RESULTS=target, PORT=str(free_port())),
              "check", timeout=60)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith(f"error: RESULTS={target}: ")
    assert "Traceback" not in out.stderr
    assert tree(tmp_path) == before                       # no folder made on the way
    assert not Path(target).exists()


def test_benchmark_stops_at_an_unwritable_results(tmp_path: Path) -> None:
    out = script(lab_env(tmp_path, SERVER="nginx", RESULTS="/proc/nope"))
    assert out.returncode == 2, out.stderr
    assert "error: RESULTS=/proc/nope: cannot make a folder in /proc" in out.stderr
    assert "[" not in out.stderr and "installing" not in out.stderr   # no deps, no build


@pytest.fixture
def read_only_mount(tmp_path: Path) -> Iterator[Path]:
    """A read-only tmpfs: a place even root cannot write to."""
    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m",
                                            "tmpfs", str(ro)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a read-only tmpfs here")
    try:
        yield ro
    finally:
        subprocess.run(["umount", str(ro)], check=True)


def test_read_only_results_is_refused(read_only_mount: Path) -> None:
    problem = folder.why_not_writable(read_only_mount / "results")
    assert problem is not None and f"cannot make a folder in {read_only_mount}" in problem


@pytest.mark.parametrize("exists", [False, True])
def test_writable_results_passes_and_leaves_nothing(tmp_path: Path, exists: bool) -> None:
    target = tmp_path / "new" / "results"
    if exists:
        target.mkdir(parents=True)
    before = tree(tmp_path)
    assert folder.why_not_writable(target) is None
    assert tree(tmp_path) == before


def test_a_dangling_link_in_the_way_is_refused(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    problem = folder.why_not_writable(tmp_path / "link" / "results")
    assert problem is not None and "is not a folder" in problem


# 3. a port held over IPv6 only is busy too

def ipv6_only_listener(host: str) -> socket.socket:
    """A listener on a port below the ephemeral range (conftest.free_port): on
    one that bind(0) hands out, a client connection of a test beside it could
    hold 127.0.0.1 at the same port, and the IPv4 bind would fail for that."""
    for _ in range(20):
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        try:
            s.bind((host, free_port()))
        except OSError as e:
            s.close()
            if e.errno == errno.EADDRINUSE:
                continue
            pytest.skip("no IPv6 loopback on this host")
        s.listen()
        return s
    raise RuntimeError("no port free over IPv6 below the ephemeral range")


def ipv4_binds(port: int) -> bool:
    """What the old check tried: would 127.0.0.1:port bind?"""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss")
@pytest.mark.parametrize("host", ["::1", "::"])
def test_ipv6_only_listener_makes_the_port_busy(host: str) -> None:
    with ipv6_only_listener(host) as listener:
        port = int(listener.getsockname()[1])
        assert ipv4_binds(port)                           # the bind alone misses it
        with pytest.raises(procs.PortBusy) as err:
            procs.check_port_free(port, "127.0.0.1")
    message = str(err.value)
    assert f"port {port} is already in use, held by" in message and "python" in message
    assert f"listening on [{host}]:{port}" in message


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss")
def test_check_refuses_a_port_held_over_ipv6(tmp_path: Path) -> None:
    with ipv6_only_listener("::1") as listener:
        port = str(listener.getsockname()[1])
        out = lab(lab_env(tmp_path, SERVER="nginx", PORT=port, BIND="127.0.0.1"), "check",
                  timeout=60)
    assert out.returncode == 2, out.stderr
    assert f"listening on [::1]:{port}" in out.stderr


def test_a_free_port_passes_and_ipv4_listeners_still_count() -> None:
    port = free_port()
    procs.check_port_free(port, "127.0.0.1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        with pytest.raises(procs.PortBusy, match=f"listening on 127.0.0.1:{port}"):
            procs.check_port_free(port, "127.0.0.1")


# 5. run-benchmark.sh takes servers as arguments, and only servers

def test_an_argument_is_the_server_list(tmp_path: Path) -> None:
    out = script(env_without_server(tmp_path), "nosuchserver")
    assert out.returncode == 2, out.stderr
    assert "unknown server nosuchserver" in out.stderr
    assert "[" not in out.stderr.split("unknown server")[0]   # nothing ran before
    assert run_folders(tmp_path) == []


def test_help_prints_usage(tmp_path: Path) -> None:
    for flag in ("--help", "-h"):
        out = script(env_without_server(tmp_path), flag)
        assert out.returncode == 0 and out.stdout.startswith("usage: "), out.stderr
    assert run_folders(tmp_path) == []


@pytest.mark.parametrize("args, settings, message", [
    (["SERVER=x"], {}, "SERVER=x is a setting, not a server: put settings before the command"),
    (["nginx", "DURATION=5s"], {}, "DURATION=5s is a setting"),
    (["--servers=nginx"], {}, "unknown option --servers=nginx"),
    (["grizzly"], {"SERVER": "aws"}, 'SERVER="aws" and the arguments (grizzly) disagree'),
    (["nope"], {"SERVER": ""}, 'SERVER="" and the arguments (nope) disagree'),
    (["nope", "x"], {"SERVER": " nope  x "}, "unknown server nope, x"),   # agree: checked
])
def test_bad_arguments_exit_2_before_anything_runs(tmp_path: Path, args: list[str],
                                                   settings: dict[str, str],
                                                   message: str) -> None:
    out = script(env_without_server(tmp_path, **settings), *args)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr
    assert run_folders(tmp_path) == []


# 6. the suite passes from a clone only its owner can read

@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None
                    or shutil.which("git") is None,
                    reason="needs root, setpriv and git (the clone's test runs as nobody)")
def test_suite_passes_from_a_private_clone(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir()
    private.chmod(0o700)                                  # as /root is
    repo = private / "repo"
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(ROOT), str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", head], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/test_deps.py", "tests/test_params.py"],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "skipped" not in out.stdout                    # the nobody tests did run
