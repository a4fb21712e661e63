"""vegeta: real captured outputs (tests/capture_client_fixtures.py), its command,
its install (Vegeta.install: a Go build into the lab cache) and a live run.

Expected numbers come from the fixture's own JSON report.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import httpfakes
from conftest import ROOT, free_port
from lab.measure import deps
from lab.setup import paths
from lab.measure.clients import vegeta
from lab.measure.clients import ClientError, Load, Options, clients
from lab.measure.clients.vegeta import Vegeta, parse

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent / "fixtures"
URL = "http://127.0.0.1:8080/api"
MIB = 1024 * 1024


def fixture(name: str) -> tuple[str, str]:
    return ((FIXTURES / f"{name}.out").read_text(), (FIXTURES / f"{name}.err").read_text())


def raw(out: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(out)
    return data


def elapsed_s(data: dict[str, Any]) -> float:
    return float(data["duration"] + data["wait"]) / 1e9


@pytest.mark.parametrize("name, offered", [
    ("vegeta-ok", 500.0), ("vegeta-close", 500.0), ("vegeta-workers", None)])
def test_a_real_run(name: str, offered: float | None) -> None:
    out, err = fixture(name)
    data, level = raw(out), parse(out, err)
    assert data["success"] == 1 and list(data["status_codes"]) == ["200"]
    assert level.transactions == level.successful == data["requests"] > 100
    assert level.failed == 0 and level.availability_pct == 100.0
    assert level.elapsed_s == elapsed_s(data)
    assert level.rate_rps == data["requests"] / elapsed_s(data)
    # every request succeeded, so responses/s is vegeta's own throughput
    assert level.rate_rps == pytest.approx(data["throughput"])
    lat = data["latencies"]
    assert level.resp_ms == lat["mean"] / 1e6
    assert level.longest_ms == lat["max"] / 1e6
    assert (level.p50_ms, level.p90_ms, level.p99_ms) == (
        lat["50th"] / 1e6, lat["90th"] / 1e6, lat["99th"] / 1e6)
    assert level.in_flight == pytest.approx(level.rate_rps * level.resp_ms / 1000)
    assert level.data_mb == data["bytes_in"]["total"] / MIB
    assert level.offered_rps == offered


def test_the_offered_rate_is_the_asked_one_not_the_sent_one() -> None:
    out, err = fixture("vegeta-ok")
    level = parse(out, err)
    assert level.offered_rps == 500.0 != raw(out)["rate"]
    assert level.rate_rps == pytest.approx(500, rel=0.05)


def test_not_found_responses_are_transactions_but_failures() -> None:
    out, err = fixture("vegeta-404")
    data, level = raw(out), parse(out, err)
    assert data["status_codes"] == {"404": data["requests"]} and data["throughput"] == 0
    assert level.transactions == level.failed == data["requests"]
    assert level.successful == 0 and level.availability_pct == 0.0
    # responses did come back: their rate is not vegeta's (successful) throughput
    assert level.rate_rps == data["requests"] / elapsed_s(data) > 0
    assert level.offered_rps == 200.0


@pytest.mark.parametrize("name, error", [
    ("vegeta-reset", "EOF"), ("vegeta-refused", "connection refused")])
def test_requests_without_a_response_are_failures(name: str, error: str) -> None:
    out, err = fixture(name)
    data, level = raw(out), parse(out, err)
    assert data["status_codes"] == {"0": data["requests"]}
    assert any(error in e for e in data["errors"])
    assert level.transactions == level.successful == 0
    assert level.failed == data["requests"] > 0
    assert level.availability_pct == 0.0 and level.rate_rps == 0.0
    # they were in flight for their (short) latency all the same
    assert level.in_flight == pytest.approx(
        data["requests"] / elapsed_s(data) * data["latencies"]["mean"] / 1e9)


def test_killed_vegeta_has_no_results() -> None:
    with pytest.raises(ClientError, match="vegeta printed no results: no output$"):
        parse(*fixture("vegeta-killed"))


def test_a_refused_target_shows_vegetas_message() -> None:
    with pytest.raises(ClientError, match="bad URL: 127.0.0.1:"):
        parse(*fixture("vegeta-badtarget"))


def test_a_report_of_no_requests_is_an_error() -> None:
    out, err = fixture("vegeta-ok")
    data = raw(out)
    data.update(requests=0, status_codes={})
    with pytest.raises(ClientError, match="no results"):
        parse(json.dumps(data), err)


def prepared(keepalive: bool, cache: Path | None = None, threads: int = 1,
             connections: int = 0) -> Vegeta:
    v = Vegeta(cache)
    v.prepare(Path("/nonexistent"), Options(keepalive=keepalive, threads=threads,
                                            connections=connections))
    return v


def script(argv: list[str]) -> str:
    assert argv[:2] == ["sh", "-c"] and len(argv) == 3
    return argv[2]


def test_fixed_rate_command(tmp_path: Path) -> None:
    argv = prepared(True, cache=tmp_path, threads=2).command(URL, Load(rate=2000), 10)
    vegeta = str(tmp_path / "go" / "bin" / "vegeta")
    assert script(argv) == (
        "export GOMAXPROCS=2; echo offered_rps=2000 >&2; "
        f"printf 'GET %s\\n' {URL} | {vegeta} attack -rate=2000/s -duration=10s "
        f"-keepalive=true | {vegeta} report -type=json -every=1s")
    assert "workers" not in script(argv)          # no cap: open loop, no coordinated omission


def test_keepalive_flag() -> None:
    assert "-keepalive=false" in script(prepared(False).command(URL, Load(rate=10), 1))
    assert "-keepalive=true" in script(prepared(True).command(URL, Load(rate=10), 1))


def test_rate_zero_runs_as_fast_as_c_workers() -> None:
    text = script(prepared(True).command(URL, Load(concurrency=8), 3))
    assert " attack -rate=0 -workers=8 -max-workers=8 -duration=3s " in text
    assert "offered_rps" not in text


def test_rate_and_concurrency_cap_the_workers() -> None:
    text = script(prepared(True).command(URL, Load(concurrency=8, rate=100), 3))
    assert " attack -rate=100/s -workers=8 -max-workers=8 " in text


def test_command_needs_prepare_and_a_load() -> None:
    with pytest.raises(ClientError, match="prepare"):
        Vegeta().command(URL, Load(rate=10), 1)
    with pytest.raises(ClientError, match="needs a rate"):
        prepared(True).command(URL, Load(), 1)


def test_the_url_is_quoted_for_the_shell() -> None:
    url = "http://127.0.0.1:8080/api?a=1&b='2'"
    text = script(prepared(True).command(url, Load(rate=10), 1))
    assert f"printf 'GET %s\\n' {shlex.quote(url)} |" in text


def test_default_cache_follows_lab_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAB_CACHE", str(tmp_path))
    assert Vegeta().binary == tmp_path / "go" / "bin" / "vegeta"
    monkeypatch.delenv("LAB_CACHE")
    assert Vegeta().binary == ROOT / ".cache" / "go" / "bin" / "vegeta"


def test_registered() -> None:
    assert clients()["vegeta"] is Vegeta and Vegeta.axis == "rate"


def test_only_vegeta_needs_go() -> None:
    assert deps.needed([], "wrk") == {**deps.LAB, "wrk": "wrk"}
    assert deps.needed([], "vegeta") == deps.LAB        # no Debian package: built with Go
    assert deps.ensure_client("wrk", Path("/nonexistent")) == 0
    assert not Path("/nonexistent").exists()


def fake_go(folder: Path, version: str) -> None:
    go = folder / "go"
    go.write_text(f"#!/bin/sh\necho 'go version {version} linux/amd64'\n")
    go.chmod(0o755)


def test_install_refuses_an_old_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    fake_go(tmp_path, "go1.19.8")
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    assert vegeta.build(tmp_path / "cache") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: vegeta v12.13.0 needs Go >= 1.22;")
    assert f"{tmp_path}/go is go1.19" in err and "PATH" in err
    assert not (tmp_path / "cache").exists()


def test_install_without_go_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert vegeta.build(tmp_path / "cache") == 2
    assert "there is no go on PATH" in capsys.readouterr().err


needs_go = pytest.mark.skipif(
    vegeta.why_not_buildable() is not None,
    reason=f"building vegeta needs Go >= 1.22: {vegeta.why_not_buildable()}")


@needs_go
def test_install_is_idempotent(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    t0 = time.monotonic()
    assert vegeta.build(cache) == 0
    first_s = time.monotonic() - t0
    binary = vegeta.vegeta_binary(cache)
    assert "installing vegeta v12.13.0" in capfd.readouterr().err
    assert Vegeta(cache).version() == "v12.13.0"
    stamp = binary.stat().st_mtime_ns
    t0 = time.monotonic()
    assert vegeta.build(cache) == 0
    assert capfd.readouterr().err == ""
    assert binary.stat().st_mtime_ns == stamp
    assert time.monotonic() - t0 < max(2.0, first_s / 2)


def live_vegeta() -> Vegeta:
    v = Vegeta()
    if v.version() != vegeta.VEGETA_VERSION:
        why = vegeta.why_not_buildable()
        if why is not None:
            pytest.skip(f"vegeta is not in the lab cache and cannot be built: {why}")
        assert vegeta.build(paths.cache_dir()) == 0
    return v


def test_live_run_against_a_local_server() -> None:
    v = live_vegeta()
    v.prepare(Path("/nonexistent"), Options(keepalive=True, threads=1))
    port = free_port()
    server = httpfakes.start("ok", port)
    try:
        argv = v.command(f"http://127.0.0.1:{port}/api", Load(rate=200), 1)
        env = {k: val for k, val in os.environ.items() if k != "GOMAXPROCS"}
        ran = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    finally:
        server.terminate()
        server.wait(timeout=10)
    level = v.parse(ran.stdout, ran.stderr)
    assert level.offered_rps == 200.0
    assert level.transactions == level.successful == pytest.approx(200, abs=2), ran.stdout
    assert level.failed == 0 and 0.9 < level.elapsed_s < 3
    assert level.p99_ms is not None and 0 < level.p99_ms <= level.longest_ms


def test_connections_caps_vegetas_connections() -> None:
    text = script(prepared(True, connections=4).command(URL, Load(rate=1000), 3))
    assert " -max-connections=4 " in f"{text} "
    assert "max-connections" not in script(prepared(True).command(URL, Load(rate=1000), 3))


def count_connections(delay_s: float) -> tuple[Any, list[int]]:
    """A local server that answers after `delay_s` and counts the connections it accepted."""
    import threading
    from http.server import ThreadingHTTPServer
    accepted = [0]

    class Slow(httpfakes.Greeting):
        def do_GET(self) -> None:
            time.sleep(delay_s)
            super().do_GET()

    class Counting(ThreadingHTTPServer):
        daemon_threads = True

        def get_request(self) -> Any:
            accepted[0] += 1
            return super().get_request()
    server = Counting(("127.0.0.1", free_port()), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, accepted


@pytest.mark.parametrize("connections", [0, 2])
def test_an_open_loop_past_the_servers_pace_keeps_to_its_connections(connections: int) -> None:
    """200 requests/s at 20 ms each keep 4 in flight: uncapped, vegeta opens a
    connection for each (a server with a fixed number of connection slots,
    as AWS's 5, closes those past them, and every request then pays for a
    new connection: exercise 6's collapse); with CONNECTIONS=2 it keeps 2,
    reused, and the requests wait in vegeta (counted in their latency)."""
    v = live_vegeta()
    v.prepare(Path("/nonexistent"), Options(keepalive=True, threads=1, connections=connections))
    server, accepted = count_connections(0.02)
    try:
        argv = v.command(f"http://127.0.0.1:{server.server_address[1]}/api", Load(rate=200), 1)
        env = {k: val for k, val in os.environ.items() if k != "GOMAXPROCS"}
        ran = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    finally:
        server.shutdown()
        server.server_close()
    level = v.parse(ran.stdout, ran.stderr)
    assert level.successful == pytest.approx(200, abs=2) and level.failed == 0, ran.stdout
    if connections:
        assert accepted[0] <= connections, accepted
        assert level.p99_ms is not None and level.p99_ms > 100   # the wait in vegeta counts
    else:
        assert accepted[0] > 2, accepted
