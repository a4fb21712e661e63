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
from test_pair import two_ports

pytestmark = pytest.mark.fault


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


def test_a_body_of_the_same_length_is_caught_by_wrks_own_check(tmp_path: Path) -> None:
    """"Hello World?" for "Hello World!" under load: the same size, so only a
    check of the bodies sees it: wrk's check slice after the level counts
    them, with the first wrong one, and the row keeps the counts."""
    data, said = flagged_live(tmp_path, "overloaded.same", CLIENT="wrk", CONCURRENCY="2",
                              DURATION="2s")
    assert_wrong_and_not_ranked(data, "overloaded.same", said)
    [row] = data["rows"]["overloaded.same"]
    assert row["answers_checked"] > 0 and row["answers_wrong"] > row["answers_checked"] // 2
    assert f"{row['answers_wrong']:,} of {row['answers_checked']:,} answers wrk checked" in said
    assert 'e.g. 200 {"greeting":"Hello World?"}' in said
    failed = said[said.index("## What failed"):]
    assert "overloaded.same c=2: answers during the load were wrong, not ranked: " in failed


def test_a_right_server_passes_the_checks_during_the_load(tmp_path: Path) -> None:
    """nginx, the ceiling: every answer checked is right, the level is ranked."""
    env = lab_env(tmp_path, SERVER="nginx", CLIENT="wrk", CONCURRENCY="2", DURATION="1s",
                  WARMUP="0", PORT=str(free_port()))
    out = bench(env, timeout=300)
    assert out.returncode == 0, show(out)
    [run] = run_folders(tmp_path)
    data = json.loads((run / "results.json").read_text())
    [row] = data["rows"]["nginx"]
    assert row["answers_checked"] > 0 and row["answers_wrong"] == 0
    assert "wrong-answers" not in row["flags"] and not row["unranked"]
    assert "as wrk sends it" in out.stderr


@pytest.mark.usefixtures("siege_installed")
def test_wrong_only_under_load_is_flagged_under_siege(tmp_path: Path) -> None:
    """{"error":"overloaded"}: 5 bytes fewer a response than the verified
    body, beyond what siege's 0.01 MB rounding can hide."""
    # 4 s: the rounding is 0.005 MB over all responses, under 2 bytes a response
    # past some 2,700 of them
    data, said = flagged_live(tmp_path, "overloaded.error", CLIENT="siege", CONCURRENCY="2",
                              DURATION="4s")
    assert_wrong_and_not_ranked(data, "overloaded.error", said)


@pytest.mark.usefixtures("vegeta_installed")
@pytest.mark.parametrize("server", ["overloaded", "overloaded.error", "overloaded.same"])
def test_wrong_only_under_load_is_flagged_under_vegeta(tmp_path: Path, server: str) -> None:
    """vegeta's byte count is of whole bodies; its check slice keeps every
    body and checks them all (the same length too)."""
    data, said = flagged_live(tmp_path, server, CLIENT="vegeta", RATE="1000",
                              DURATION="2s")
    assert_wrong_and_not_ranked(data, server, said)
    [row] = data["rows"][server]
    assert row["answers_checked"] > 0 and row["answers_wrong"] > 0
    assert "answers vegeta checked at the same load" in said


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
        ran = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=30)
    finally:
        done.set()
        t.join()
        srv.close()
    assert seen, f"{argv[0]} sent nothing: {ran.stdout[-500:]} {ran.stderr[-500:]}"
    return seen[0]


@pytest.mark.unit
@pytest.mark.parametrize("keepalive", [True, False])
@pytest.mark.parametrize("name", ["wrk", "siege", "vegeta"])
def test_each_clients_request_is_the_one_it_sends(tmp_path: Path, name: str,
                                                  keepalive: bool) -> None:
    """What the verification sends as the client (clients.Asks.request) is
    the first request the installed client sends (2 s runs), byte for byte
    but for the order of the headers (wrk's varies)."""
    from lab.measure.clients import Asks, Load, Options, clients
    client = clients()[name]()
    if client.version() == "not installed":
        pytest.skip(f"{name} is not installed")
    client.prepare(tmp_path, Options(keepalive=keepalive, threads=1))
    assert isinstance(client, Asks)
    port = free_port()
    url = f"http://127.0.0.1:{port}/api"
    load = Load(rate=5) if client.axis == "rate" else Load(concurrency=1)
    # 2 s: a 1 s Siege run on a busy host has ended before its first request
    got, want = captured(client.command(url, load, 2), port), client.request(url)
    assert lines(got) == lines(want) and len(got) == len(want), (got, want)


def lines(head: bytes) -> tuple[bytes, list[bytes]]:
    """A request head's first line and its header lines, in any order: wrk
    writes its headers from a Lua table, whose order varies from run to run."""
    first, *rest = head.split(b"\r\n")
    return first, sorted(rest)


# --------------------------------------------------------------------------- the arithmetic

def level_of(responses: int, bytes_counted: float, **kw: object) -> "Level":
    from lab.record.level import Level
    return Level(responses, responses, 0, 100.0, 2.0, responses / 2, 1.0, 2.0, 5.0,
                 bytes_counted / (1024 * 1024), **kw)  # type: ignore[arg-type]


@pytest.mark.unit
def test_the_size_check_allows_only_what_the_client_may_count_besides() -> None:
    from dataclasses import replace
    from lab.analyse.answers import Expected, size_check
    right = Expected(head_bytes=90, body_bytes=27, request="GET /api HTTP/1.1 as wrk sends it")
    wrk = dict(counted="wire", counted_partial=True)
    assert size_check(level_of(1000, 117_000, **wrk), right, 4, "wrk") == ""
    # up to one answer a connection read in part at the end: not wrong
    assert size_check(level_of(1000, 117_000 + 4 * 117, **wrk), right, 4, "wrk") == ""
    # beyond it, or one byte short over all: wrong
    said = size_check(level_of(1000, 117_000 + 4 * 117 + 1, **wrk), right, 4, "wrk")
    assert "wrk counted 117.5 bytes per response (heads and bodies)" in said
    assert "469 bytes more over 1,000 responses" in said
    assert "1 bytes fewer" in size_check(level_of(1000, 116_999, **wrk), right, 4, "wrk")
    # siege counts bodies, rounded to 0.01 MB
    siege = dict(counted="body", counted_slack=0.005 * 1024 * 1024)
    assert size_check(level_of(20_000, 27 * 20_000 - 5000, **siege), right, 8, "siege") == ""
    assert "beyond its rounding" in size_check(level_of(20_000, 22 * 20_000, **siege), right,
                                               8, "siege")
    # vegeta: bodies, whole
    vegeta = dict(counted="body")
    assert size_check(level_of(500, 27 * 500, **vegeta), right, 0, "vegeta") == ""
    assert size_check(level_of(500, 27 * 500 + 1, **vegeta), right, 0, "vegeta")
    # what cannot be told: no answer recorded, nothing counted, failed requests
    wrong = level_of(500, 22 * 500, **vegeta)
    assert size_check(wrong, None, 0, "vegeta") == ""
    assert size_check(replace(wrong, counted=""), right, 0, "vegeta") == ""
    assert size_check(replace(wrong, failed=1), right, 0, "vegeta") == ""


@pytest.mark.unit
def test_the_check_slice_line_is_read_with_its_example() -> None:
    from lab.measure.clients import ClientError
    from lab.measure.clients.wrk import check_parse
    line = ('wrk-answers {"checked":44938,"wrong":44918,'
            '"example":"200 {\\u0022greeting\\u0022:\\u0022Hello World?\\u0022}\\u00ff"}')
    got = check_parse("Running 1s test\nwrk-report {}\n" + line + "\n", "")
    assert (got.checked, got.wrong) == (44938, 44918)
    assert got.example == '200 {"greeting":"Hello World?"}\xff'
    with pytest.raises(ClientError, match="wrk printed no answers checked: unable to connect"):
        check_parse("", "unable to connect to 127.0.0.1:1 Connection refused\n")
    from lab.analyse.answers import sampled
    assert sampled(got, "wrk", 1).startswith("44,918 of 44,938 answers wrk checked at the same "
                                             "load for 1 s after the level")
    assert sampled(type(got)(10, 0), "wrk", 1) == "" and sampled(None, "wrk", 1) == ""
    assert sampled(type(got)(10, 1, "200 a\r\nb"), "wrk", 1).endswith(", e.g. 200 a\\x0d\\x0ab")


def test_a_duet_flags_the_side_wrong_under_load_and_not_the_other(tmp_path: Path) -> None:
    """PAIRED=duet: both sides loaded and checked at the same moment; the
    side wrong under load is flagged with its counts, the other is not, and
    the pair has no verdict at that level (not ranked)."""
    env = lab_env(tmp_path, SERVER="overloaded.same twin", PAIRED="duet", CLIENT="wrk",
                  KEEPALIVE="1", CONCURRENCY="2", DURATION="2s", WARMUP="0", PORT=two_ports())
    out = bench(env, timeout=300)
    [run] = run_folders(tmp_path)
    assert leftovers(run) == []
    data = json.loads((run / "results.json").read_text())
    [wrong], [right] = data["rows"]["overloaded.same"], data["rows"]["twin"]
    assert "wrong-answers" in wrong["flags"].split() and wrong["answers_wrong"] > 0, show(out)
    assert "wrong-answers" not in right["flags"].split() and right["answers_wrong"] == 0
    [verdict] = data["verdicts"]          # a start pair's level, not ranked: no verdict there
    assert verdict["kind"] == "missing" and "not ranked" in verdict["text"], verdict
