"""wrk: real captured outputs (tests/capture_client_fixtures.py), its command, a live run.

Expected numbers come from the fixture's own JSON line and are cross-checked
against wrk's text report printed above it, so a wrong field or unit fails.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

import httpfakes
from conftest import ROOT, free_port
from lab.measure.clients import host_tools
from lab.measure.clients import ClientError, Load, Options, clients
from lab.measure.clients.wrk import SCRIPT, Wrk, parse, threads_for

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent / "fixtures"
URL = "http://127.0.0.1:8080/api"


def fixture(name: str) -> tuple[str, str]:
    return ((FIXTURES / f"{name}.out").read_text(), (FIXTURES / f"{name}.err").read_text())


def raw(out: str) -> dict[str, Any]:
    line = next(x for x in out.splitlines() if x.startswith("wrk-report "))
    data: dict[str, Any] = json.loads(line.split(" ", 1)[1])
    return data


def text(out: str, pattern: str) -> str:
    m = re.search(pattern, out)
    assert m, pattern
    return m.group(1)


def text_ms(value: str) -> float:
    """wrk's rounded text times (410.00us, 3.54ms) in ms."""
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", value).groups()  # type: ignore[union-attr]
    return float(number) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


@pytest.mark.parametrize("name", ["wrk-ok", "wrk-close"])
def test_a_real_run(name: str) -> None:
    out, err = fixture(name)
    data, level = raw(out), parse(out, err)
    assert level.transactions == data["requests"] == int(text(out, r"(\d+) requests in"))
    assert level.transactions > 1000
    assert level.successful == level.transactions and level.failed == 0
    assert level.availability_pct == 100.0
    assert level.elapsed_s == data["duration_us"] / 1e6
    assert level.rate_rps == data["requests"] / level.elapsed_s
    assert level.rate_rps == pytest.approx(float(text(out, r"Requests/sec:\s+([\d.]+)")), abs=0.01)
    assert level.resp_ms == data["mean_us"] / 1000
    assert level.resp_ms == pytest.approx(text_ms(text(out, r"Latency\s+(\S+)")), abs=0.01)
    assert level.in_flight == pytest.approx(level.rate_rps * level.resp_ms / 1000)
    assert level.longest_ms == data["max_us"] / 1000
    for p in (50, 90, 99):
        got = getattr(level, f"p{p}_ms")
        assert got == data[f"p{p}_us"] / 1000
        assert got == pytest.approx(text_ms(text(out, rf"\s{p}%\s+(\S+)")), abs=0.01)
    assert level.data_mb == data["bytes"] / 1024 / 1024
    assert level.offered_rps is None


def test_keepalive_keeps_more_requests_than_close() -> None:
    # the same server and connections: a new connection per request costs
    assert parse(*fixture("wrk-ok")).rate_rps > parse(*fixture("wrk-close")).rate_rps


def test_not_found_responses_are_failures() -> None:
    out, err = fixture("wrk-404")
    data, level = raw(out), parse(out, err)
    non2xx = int(text(out, r"Non-2xx or 3xx responses: (\d+)"))
    assert level.transactions == data["requests"] == non2xx == data["status"] > 0
    assert level.successful == 0 and level.failed == non2xx
    assert level.availability_pct == 0.0
    assert level.rate_rps == data["requests"] / (data["duration_us"] / 1e6)


def test_reset_connections_are_socket_errors() -> None:
    out, err = fixture("wrk-reset")
    data, level = raw(out), parse(out, err)
    reads = int(text(out, r"Socket errors: connect \d+, read (\d+)"))
    assert data["requests"] == 0 and data["read"] == reads > 0
    assert level.transactions == level.successful == 0 and level.failed == reads
    assert level.rate_rps == 0 and level.resp_ms == 0 and level.in_flight == 0
    assert level.availability_pct == 0.0


def test_a_server_that_closes_without_saying_so_costs_a_read_error_each() -> None:
    # Connection: close asked, the response does not say close: wrk reuses the
    # connection, finds it closed, and counts a read error (after a good response)
    out, err = fixture("wrk-close-quiet")
    data, level = raw(out), parse(out, err)
    assert data["read"] > 0.9 * data["requests"]
    assert level.successful == level.transactions == data["requests"]
    assert level.failed == data["read"]
    assert level.availability_pct == pytest.approx(
        100 * data["requests"] / (data["requests"] + data["read"]))


def test_refused_connection_is_an_error_with_wrks_message() -> None:
    out, err = fixture("wrk-refused")
    assert out == ""                             # wrk gives up before any statistics
    with pytest.raises(ClientError, match="wrk printed no statistics: unable to connect"):
        parse(out, err)


def test_killed_wrk_has_no_statistics() -> None:
    with pytest.raises(ClientError, match="wrk printed no statistics: no output"):
        parse(*fixture("wrk-killed"))


def test_text_without_the_scripts_line_is_not_read() -> None:
    out, err = fixture("wrk-ok")
    without = "\n".join(x for x in out.splitlines() if not x.startswith("wrk-report "))
    with pytest.raises(ClientError, match="Requests/sec"):
        parse(without, err)


def test_the_script_hooks_only_the_end_of_the_run() -> None:
    # request(), response() or delay() would make wrk call Lua for every request
    hooks = re.findall(r"^\s*function\s+(\w+)", SCRIPT.read_text(), re.M)
    assert hooks == ["done"]


@pytest.mark.parametrize("concurrency, wanted, threads", [
    (1, 2, 1), (2, 2, 2), (4, 8, 4), (32, 2, 2), (3, 2, 1), (6, 4, 3), (512, 3, 2)])
def test_threads_never_exceed_and_always_divide_the_connections(
        concurrency: int, wanted: int, threads: int) -> None:
    assert threads_for(concurrency, wanted) == threads


def prepared(tmp_path: Path, keepalive: bool, threads: int = 2) -> Wrk:
    w = Wrk()
    w.prepare(tmp_path, Options(keepalive=keepalive, threads=threads))
    return w


def test_command_shape(tmp_path: Path) -> None:
    argv = prepared(tmp_path, keepalive=True, threads=8).command(URL, Load(concurrency=4), 10)
    assert argv == ["wrk", "-t", "4", "-c", "4", "-d", "10s", "--latency",
                    "-s", str(tmp_path / "wrk-report.lua"), URL]


def test_connection_close_header_only_without_keepalive(tmp_path: Path) -> None:
    close = prepared(tmp_path, keepalive=False).command(URL, Load(concurrency=8), 5)
    keep = prepared(tmp_path, keepalive=True).command(URL, Load(concurrency=8), 5)
    assert close[-3:] == ["-H", "Connection: close", URL]
    assert "-H" not in keep and not any("Connection" in a for a in keep)


def test_command_needs_prepare_and_a_concurrency(tmp_path: Path) -> None:
    with pytest.raises(ClientError, match="prepare"):
        Wrk().command(URL, Load(concurrency=4), 5)
    w = prepared(tmp_path, keepalive=True)
    for load in (Load(rate=100), Load(concurrency=0), Load(concurrency=4, rate=100)):
        with pytest.raises(ClientError, match="concurrency"):
            w.command(URL, load, 5)


def test_prepare_copies_the_script_once(tmp_path: Path) -> None:
    conditions = prepared(tmp_path, keepalive=False, threads=3).prepare(
        tmp_path, Options(keepalive=False, threads=3))
    assert (tmp_path / "wrk-report.lua").read_text() == SCRIPT.read_text()
    assert {k: conditions[k] for k in ("tool", "connection", "threads", "script")} == {
        "tool": "wrk", "connection": "close", "threads": "3", "script": "wrk-report.lua"}
    (tmp_path / "wrk-report.lua").write_text(SCRIPT.read_text() + "-- as recorded\n")
    prepared(tmp_path, keepalive=True)                 # a later step of the same run
    assert "-- as recorded" in (tmp_path / "wrk-report.lua").read_text()


def test_registered() -> None:
    assert clients()["wrk"] is Wrk and Wrk.axis == "concurrency"


# fault tests: wrk installed through the lab (conftest); a unit test installs nothing
needs_wrk = pytest.mark.usefixtures("wrk_installed")


@pytest.mark.fault
@needs_wrk
def test_version_in_the_hosts_tools() -> None:
    version = Wrk().version()
    assert version == host_tools()["wrk"]
    assert re.search(r"\d+\.\d+\.\d+", version), version


@pytest.mark.fault
@needs_wrk
def test_live_run_against_a_local_server(tmp_path: Path) -> None:
    port = free_port()
    server = httpfakes.start("ok", port)
    try:
        w = prepared(tmp_path, keepalive=True)
        argv = w.command(f"http://127.0.0.1:{port}/api", Load(concurrency=2), 1)
        ran = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd=ROOT)
    finally:
        server.terminate()
        server.wait(timeout=10)
    level = w.parse(ran.stdout, ran.stderr)
    assert level.transactions > 0 and level.failed == 0, ran.stdout
    assert level.successful == level.transactions
    assert 0.9 < level.elapsed_s < 3
    assert level.p50_ms is not None and 0 < level.p50_ms <= level.longest_ms
