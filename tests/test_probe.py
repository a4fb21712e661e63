"""The robustness probe (lab/measure/probe/): its parts, two doubles built to fail
and to pass it, then real servers with short bounds (each built first, once a
session, by conftest's `built`: a server that cannot be built fails)."""
from __future__ import annotations

import dataclasses
import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import FAKES, ROOT, Build, free_port
from lab.measure import probe
from lab.measure.launch import Knobs, placeholders
from lab.present.probetable import table
from lab.setup.fromenv import from_env
from lab.setup.servers import Server, artifact_path, discover, is_built, load
from lab.measure.verify import BODY
from lab.record.probe import read_probe

pytestmark = pytest.mark.unit

# Short bounds: the doubles answer at once, and a real server's findings
# show within a second or two; quiet is judged over short windows (0.1 s
# after each probe, 0.3 s at the end: five seconds less a server).
FAST = probe.Limits(deadline_s=1.5, verify_timeout_s=1.0, settle_s=0.6, recover_s=1.0,
                    quiet_s=5.0, cpus_quiet_s=5.0, idle_connections=300, idle_open_s=1.5,
                    normal_requests=3, settle_window_s=0.1, quiet_window_s=0.3)
# The repository's servers: FAST, but the lab's own bounds for the check after
# each probe and for a server to answer again. A JVM beside another test's
# load took over 2 s to answer after garbage, then recovered.
REAL = dataclasses.replace(FAST, verify_timeout_s=probe.Limits.verify_timeout_s,
                           recover_s=probe.Limits.recover_s)
CPUS = (0,)
CACHE = Path(os.environ.get("LAB_CACHE") or ROOT / ".cache").resolve()


def knobs(port: int, server: Server) -> Knobs:
    return Knobs(port=port, workers=server.workers_default, backlog=512, bind="127.0.0.1")


def by_name(report: probe.ProbeReport) -> dict[str, probe.ProbeResult]:
    return {r.probe: r for r in report.results}


# ---------------------------------------------------------------- parts

def answer(status: int, body: bytes, extra: bytes = b"") -> bytes:
    return (b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n" % (status, len(body)) + extra
            + b"\r\n" + body)


def test_parse_answers_counts_complete_responses_in_order() -> None:
    data = answer(200, BODY) + answer(404, b"no") + answer(200, BODY)[:-3]
    got = probe.parse_answers(data, closed=False)
    assert [a.status for a in got] == [200, 404]
    assert got[0].is_contract and not got[1].is_contract


def test_parse_answers_chunked_interim_and_until_close() -> None:
    chunked = b"HTTP/1.1 400 Bad\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
    interim = b"HTTP/1.1 100 Continue\r\n\r\n"
    assert [a.status for a in probe.parse_answers(interim + chunked, False)] == [400]
    assert probe.parse_answers(chunked[:-2], False) == []
    bare = b"HTTP/1.0 200 OK\r\n\r\n" + BODY
    assert probe.parse_answers(bare, closed=False) == []
    assert probe.parse_answers(bare, closed=True)[0].body == BODY
    assert probe.parse_answers(BODY, closed=True) == []          # HTTP/0.9: no status line


def test_receive_queue_sees_what_the_server_has_not_read() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        server_addr = listener.getsockname()
        client = socket.create_connection(server_addr)
        peer, _ = listener.accept()
        client_addr = client.getsockname()
        client.sendall(b"x" * 1000)
        time.sleep(0.1)
        assert probe.receive_queue(server_addr, client_addr) == 1000
        peer.recv(600)
        assert probe.receive_queue(server_addr, client_addr) == 400
        peer.close()
        client.close()
        # Gone, or in TIME_WAIT: either way nothing is left unread.
        assert probe.receive_queue(server_addr, client_addr) in (None, 0)


def test_refused_connection_is_described(port: int) -> None:
    t = probe.Target("127.0.0.1", port, os.getpid(), 1, FAST)
    conn = probe.exchange(t, b"GET /api HTTP/1.1\r\n\r\n", wait_s=0.5)
    assert probe.describe(conn, 0.5) == "connection refused"


def fake_report(name: str, ok: bool) -> probe.ProbeReport:
    results = tuple(
        probe.ProbeResult(probe=p.name, title=p.title, ran=ok or i == 0,
                          outcome="400 Bad | Request" if ok or i == 0 else "not run",
                          cpu_s=0.01, elapsed_s=0.1, settled_s=0.3 if i else None,
                          answers_after=ok, error_after="" if ok else "timed out")
        for i, p in enumerate(probe.PROBES))
    return probe.ProbeReport(server=name, host="127.0.0.1", port=1, workers=1, limits=FAST,
                             results=results, final_ok=ok, quiet_s=1.0 if ok else None,
                             elapsed_s=3.0)


def test_markdown_table_and_json_round_trip(tmp_path: Path) -> None:
    good, bad = fake_report("good", True), fake_report("bad", False)
    assert good.still_answers and not bad.still_answers
    assert bad.stopped_after == "garbage" and good.stopped_after is None
    md = probe.markdown(bad)
    assert md.count("\n| ") == len(probe.PROBES) and "400 Bad \\| Request" in md
    assert "stopped answering after garbage" in md
    text = table({"good": good, "bad": bad})
    lines = text.splitlines()
    assert lines[0] == "| probe | good | bad |"
    assert all(line.count(" | ") == 2 for line in lines if line.startswith("| "))
    assert "| **still answers** | yes | **no** |" in text
    assert "busy" in lines[2] and "**✗**" in lines[2]             # garbage: unsettled, failed
    probe.save(bad, tmp_path / "probe.json")
    back = read_probe(tmp_path / "probe.json")
    assert back == bad
    data = json.loads((tmp_path / "probe.json").read_text())
    assert data["still_answers"] is False and data["stopped_after"] == "garbage"


def test_exit_code_follows_force() -> None:
    assert probe.exit_code(fake_report("a", True), force=False) == 0
    assert probe.exit_code(fake_report("a", False), force=False) == 1
    assert probe.exit_code(fake_report("a", False), force=True) == 0


def test_probe_0_skips_without_starting_anything(tmp_path: Path) -> None:
    server = load(FAKES / "fragile" / "server.toml")
    params = from_env({"SERVER": "fragile", "PROBE": "0"}, ["fragile"], ["siege"])
    assert probe.main_step(params, server, ROOT, CACHE, tmp_path) == (None, 0)
    assert not (tmp_path / "fragile").exists()


# ---------------------------------------------------------------- the doubles

@pytest.mark.fault
def test_fragile_stops_answering_after_garbage(tmp_path: Path, port: int) -> None:
    server = load(FAKES / "fragile" / "server.toml")
    params = from_env({"SERVER": "fragile", "PORT": str(port), "SERVER_CPUS": "0"},
                      ["fragile"], ["siege"])
    t0 = time.monotonic()
    report, code = probe.main_step(params, server, ROOT, CACHE, tmp_path, FAST)
    assert report is not None and code == 1
    assert time.monotonic() - t0 < 30
    assert not report.still_answers and report.stopped_after == "garbage"
    first, *rest = report.results
    assert first.probe == "garbage" and first.ran and not first.answers_after
    assert "timed out" in first.error_after
    assert [b.name for b in first.breaches_after] == ["reachable"]    # typed, the one breach
    assert report.final_breaches and report.final_error in report.verdict()
    assert first.outcome == "no answer within 1.5s"
    assert rest and all(not r.ran for r in rest)
    assert probe.exit_code(report, force=True) == 0
    saved = json.loads((tmp_path / "fragile" / "probe.json").read_text())
    assert saved["still_answers"] is False and saved["stopped_after"] == "garbage"
    assert (tmp_path / "fragile" / "probe-server.log").exists()


@pytest.mark.fault
def test_sturdy_survives_every_probe(tmp_path: Path, port: int) -> None:
    server = load(FAKES / "sturdy" / "server.toml")
    t0 = time.monotonic()
    report = probe.probe_server(server, ROOT, CACHE, tmp_path, knobs(port, server), CPUS, FAST)
    assert time.monotonic() - t0 < 60
    assert report.error == "" and report.still_answers and report.stopped_after is None
    assert [r.probe for r in report.results] == [p.name for p in probe.PROBES]
    assert all(r.ran and r.answers_after for r in report.results)
    got = by_name(report)
    assert got["pipelined"].outcome == "3 of 3 answered"
    assert got["slow"].outcome.startswith("4 slow: 3 of 3 normal answered")
    assert got["idle"].outcome.startswith("300 idle open: answered in")
    assert got["http10"].outcome == "200 OK"
    assert got["long-path"].outcome.startswith("414")
    assert got["headers-1m"].outcome.startswith("431")
    assert report.quiet_s is not None


# ---------------------------------------------------------------- real servers

def real(name: str, built: Build) -> Server:
    """A repository server, built (with what it needs installed) by the lab."""
    built(name)
    server = discover(ROOT)[name]
    values = placeholders(ROOT, CACHE, knobs(0, server))
    assert is_built(server, values), f"{name}: no up-to-date {artifact_path(server, values)}"
    return server


Probed = Callable[[str], probe.ProbeReport]


@pytest.fixture(scope="module")
def probed(built: Build, tmp_path_factory: pytest.TempPathFactory) -> Probed:
    """probed(name): the report of one probe of a repository server, made once
    a session (every server is probed once: the end-to-end run does not
    probe again) and shared by the tests that read it."""
    reports: dict[str, probe.ProbeReport] = {}

    def get(name: str) -> probe.ProbeReport:
        if name not in reports:
            server = real(name, built)
            folder = tmp_path_factory.mktemp("probed")
            reports[name] = probe.probe_server(server, ROOT, CACHE, folder,
                                               knobs(free_port(), server), CPUS, REAL)
            assert read_probe(folder / name / "probe.json") == reports[name]
        return reports[name]
    return get


@pytest.mark.real_server
@pytest.mark.parametrize("name", sorted(discover(ROOT)))
def test_every_repository_server_is_probed(name: str, probed: Probed) -> None:
    """Each server started apart, every probe run, its report saved, within a
    minute, and still answering after it (make bench loads it: the end-to-end
    run does not probe again)."""
    report = probed(name)
    assert report.error == "", report.error
    assert [r.probe for r in report.results] == [p.name for p in probe.PROBES]
    assert report.elapsed_s < 60
    assert report.still_answers and all(r.ran for r in report.results), probe.markdown(report)


@pytest.mark.real_server
def test_nginx_survives_and_rejects_bad_requests(probed: Probed) -> None:
    report = probed("nginx")
    got = by_name(report)
    assert report.still_answers, probe.markdown(report)
    assert got["garbage"].outcome.startswith("400")
    assert got["long-path"].outcome.startswith("414")
    assert got["pipelined"].outcome == "3 of 3 answered"
    assert "3 of 3 normal answered" in got["slow"].outcome


@pytest.mark.real_server
def test_undertow_survives(probed: Probed) -> None:
    report = probed("undertow")
    assert report.still_answers, probe.markdown(report)
    assert by_name(report)["pipelined"].outcome == "3 of 3 answered"


@pytest.mark.real_server
def test_aws_findings(probed: Probed) -> None:
    """The hand-found AWS 20.2 behaviour, seen by the probe: header cost,
    slow clients holding every task, pipelining answered once."""
    report = probed("aws")
    got = by_name(report)
    assert got["pipelined"].outcome.startswith("1 of 3 answered")
    assert " 0 of 3 normal answered" in got["slow"].outcome
    # Quadratic in the number of headers: ~100 KiB cost it a second of CPU
    # (the pacing and the CPU budget keep it from reading the whole MiB).
    heavy = got["headers-1m"]
    assert heavy.outcome.startswith("no answer within") and "server read" in heavy.outcome
    assert heavy.cpu_s > 0.5 and heavy.cpu_s > 20 * got["header-16k"].cpu_s


@pytest.mark.real_server
def test_ada_mini_probe(probed: Probed) -> None:
    report = probed("ada-mini")
    got = by_name(report)
    assert got["pipelined"].outcome == "3 of 3 answered"
    assert got["garbage"].outcome.startswith("400")
    assert got["idle"].ran


def test_the_probe_table_by_hand_refuses_an_unknown_server_before_starting_any(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`python3 -m lab.studies.probetable` (what regenerates docs/probe-table.md)."""
    from lab.studies import probetable
    assert probetable.main(["no-such-server"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown server no-such-server; known: ") and "nginx" in err
