"""Wrong answers under load are no level (issue 44, section 1).

The contract is checked before each start and after each level; these are
the checks during the load:
- the size: every level's bytes per response, as its client counted them,
  against the size of the verified answer to that client's own request;
- the client's request: the verification sends the load client's exact
  request (its headers too), so a server right only for the lab's own
  request is refused before any load.

The live tests run the lab against tests/servers/overloaded (right until it
is loaded: more than 20 requests in the last 100 ms, the previous one less
than 20 ms ago; then wrong in the way of its variant) and tests/servers/picky
(right only to a request that says `Accept-Encoding: identity`).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import bench, free_port, lab_env, leftovers, run_folders
from test_integrity import assert_legend


def show(out: object) -> str:
    return f"{getattr(out, 'stdout', '')}\n{getattr(out, 'stderr', '')}"


def flagged_live(tmp_path: Path, server: str, **settings: str) -> tuple[dict, str]:
    """Run the lab on `server`: its results.json, and what it printed and
    summarised; the report marks the flag with its legend."""
    env = lab_env(tmp_path, SERVER=server, WARMUP="0", PORT=str(free_port()), **settings)
    out = bench(env, timeout=300)
    [run] = run_folders(tmp_path)
    assert leftovers(run) == []
    data = json.loads((run / "results.json").read_text())
    levels = data["levels"][server]
    assert levels, show(out)
    summary = (run / "summary.md").read_text()
    if "wrong-answers" in levels[0]["flags"]:
        assert_legend(run, "wrong-answers")
    return data, out.stderr + "\n" + summary


def assert_wrong_and_not_ranked(data: dict, server: str, said: str) -> None:
    levels = data["levels"][server]
    assert all("wrong-answers" in lv["flags"] for lv in levels), levels
    assert all(any("wrong answers" in why for why in lv["unranked"]) for lv in levels), levels
    kinds = {f["kind"]: f for f in data["findings"]}
    assert "wrong-answers" in kinds, sorted(kinds)
    assert "not ranked" in kinds["wrong-answers"]["text"]
    assert "wrong answers" in said


@pytest.mark.parametrize("server", ["overloaded", "overloaded.error"])
def test_wrong_only_under_load_is_flagged_under_wrk(tmp_path: Path, server: str) -> None:
    """A 28-byte body, or {"error":"overloaded"} with 200: wrk's bytes per
    response are not the verified answer's."""
    data, said = flagged_live(tmp_path, server, CLIENT="wrk", CONCURRENCY="2",
                              DURATION="2s")
    assert_wrong_and_not_ranked(data, server, said)
    assert "bytes per response" in said


@pytest.mark.usefixtures("siege_installed")
def test_wrong_only_under_load_is_flagged_under_siege(tmp_path: Path) -> None:
    """{"error":"overloaded"}: 5 bytes fewer a response than the verified
    body, beyond what siege's 0.01 MB rounding can hide."""
    data, said = flagged_live(tmp_path, "overloaded.error", CLIENT="siege", CONCURRENCY="2",
                              DURATION="3s")
    assert_wrong_and_not_ranked(data, "overloaded.error", said)


@pytest.mark.usefixtures("vegeta_installed")
@pytest.mark.parametrize("server", ["overloaded", "overloaded.error"])
def test_wrong_only_under_load_is_flagged_under_vegeta(tmp_path: Path, server: str) -> None:
    data, said = flagged_live(tmp_path, server, CLIENT="vegeta", RATE="1000",
                              DURATION="2s")
    assert_wrong_and_not_ranked(data, server, said)


@pytest.mark.parametrize("client", ["wrk", "siege"])
def test_a_server_right_only_for_the_labs_own_request_is_not_loaded(
        tmp_path: Path, client: str) -> None:
    """picky answers gzip to any request without Accept-Encoding: identity
    (wrk sends none, siege `*`): the verification sends the client's request
    and refuses it before any load."""
    if shutil.which(client) is None:
        pytest.skip(f"{client} is not installed")
    env = lab_env(tmp_path, SERVER="picky", CLIENT=client, CONCURRENCY="2", DURATION="1s",
                  WARMUP="0", PORT=str(free_port()))
    out = bench(env, timeout=300)
    assert out.returncode != 0, show(out)
    assert f"as {client} sends it" in out.stderr and "exactly" in out.stderr, show(out)
    [run] = run_folders(tmp_path)
    assert leftovers(run) == []
    assert not (run / "results.csv").exists()       # not loaded: no level measured


# --------------------------------------------------------------------------- the client's request

def captured(argv: list[str], port: int, stdin: str = "") -> bytes:
    """The first request head a client sends to a listener that answers the contract."""
    import socket
    import subprocess
    import threading
    from lab.analyse.contract import BODY
    seen: list[bytes] = []
    answer = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 27\r\n\r\n"
              + BODY)
    srv = socket.create_server(("127.0.0.1", port))
    srv.settimeout(0.2)
    done = threading.Event()

    def serve(conn: socket.socket) -> None:
        buf = b""
        with conn:
            while not done.is_set():
                try:
                    data = conn.recv(4096)
                except OSError:
                    return
                if not data:
                    return
                buf += data
                while b"\r\n\r\n" in buf:
                    head, _, buf = buf.partition(b"\r\n\r\n")
                    seen.append(head + b"\r\n\r\n")
                    conn.sendall(answer)

    def accept() -> None:
        while not done.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()
    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=30)
    finally:
        done.set()
        t.join()
        srv.close()
    assert seen, f"{argv[0]} sent nothing"
    return seen[0]


@pytest.mark.parametrize("keepalive", [True, False])
@pytest.mark.parametrize("name", ["wrk", "siege", "vegeta"])
def test_each_clients_request_is_the_one_it_sends(tmp_path: Path, name: str,
                                                  keepalive: bool) -> None:
    """What the verification sends as the client (clients.Asks.request) is,
    byte for byte, the first request the installed client sends (1 s runs)."""
    from lab.measure.clients import Asks, Load, Options, clients
    client = clients()[name]()
    if client.version() == "not installed":
        pytest.skip(f"{name} is not installed")
    client.prepare(tmp_path, Options(keepalive=keepalive, threads=1))
    assert isinstance(client, Asks)
    port = free_port()
    url = f"http://127.0.0.1:{port}/api"
    load = Load(rate=5) if client.axis == "rate" else Load(concurrency=1)
    assert captured(client.command(url, load, 1), port) == client.request(url)
