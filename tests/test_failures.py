"""What failed, and how: each client's parser on real outputs that had failures
(tests/fixtures, listed in fixtures/client-captures.txt), a server that resets
every Nth connection through real client runs, the record's cell, and what the
reading side says (the per-level lines, the warning, the judge)."""
from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import httpfakes
from conftest import free_port
from lab.analyse import analysis, levelrow, metrics, verdicts, whatfailed
from lab.present import failedwords
from lab.record import failures, manifest
from lab.record.rows import CSV, append_row, read_rows
from lab.measure.clients import Client, Load, Options
from lab.record.level import Level
from lab.measure.clients import siege, vegeta, wrk
from lab.record.failures import Failure
from lab.record.files import RecordError

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent / "fixtures"
LANDED = FIXTURES / "runs" / "20261124-071349-sturdy+paced-landed"


def fixture(name: str) -> tuple[str, str]:
    return ((FIXTURES / f"{name}.out").read_text(), (FIXTURES / f"{name}.err").read_text())


def wrk_json(out: str) -> dict[str, Any]:
    line = next(x for x in out.splitlines() if x.startswith("wrk-report "))
    data: dict[str, Any] = json.loads(line.split(" ", 1)[1])
    return data


def siege_json(out: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(out[out.index("{"):])
    return data


def kinds(level: Level) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in level.failures:
        out[f.kind] = out.get(f.kind, 0) + f.count
    return out


PARSERS = {"wrk": wrk.parse, "vegeta": vegeta.parse, "siege": siege.parse}
WITH_FAILURES = ["wrk-reset", "wrk-404", "wrk-aws-keepalive-c64", "vegeta-reset",
                 "vegeta-refused", "vegeta-404", "siege-reset", "siege-404", "siege-refused",
                 "siege-aws-c50", "siege-dns"]


@pytest.mark.parametrize("name", WITH_FAILURES)
def test_every_failed_request_has_a_kind(name: str) -> None:
    level = PARSERS[name.split("-")[0]](*fixture(name))
    assert level.failed > 0
    assert sum(f.count for f in level.failures) == level.failed
    assert all(f.kind in failures.KINDS and f.count > 0 and f.said for f in level.failures)


@pytest.mark.parametrize("name", ["wrk-ok", "vegeta-ok", "siege-ok"])
def test_nothing_failed_nothing_listed(name: str) -> None:
    level = PARSERS[name.split("-")[0]](*fixture(name))
    assert level.failed == 0 and level.failures == ()


def test_wrk_read_errors_are_resets_or_closes_in_wrks_words() -> None:
    out, err = fixture("wrk-aws-keepalive-c64")
    read = int(re.search(r"Socket errors: connect 0, read (\d+), write 0, timeout 0",
                         out).group(1))  # type: ignore[union-attr]
    assert read == wrk_json(out)["read"] > 0
    [f] = wrk.parse(out, err).failures
    assert (f.kind, f.count, f.status) == ("reset", read, None)
    assert f.said.startswith("wrk: read errors")


def test_wrk_non_2xx_has_no_status_of_its_own() -> None:
    out, err = fixture("wrk-404")
    shown = int(re.search(r"Non-2xx or 3xx responses: (\d+)", out).group(1))  # type: ignore[union-attr]
    [f] = wrk.parse(out, err).failures
    assert (f.kind, f.count, f.status) == ("status", shown, None)
    assert "does not count them by status" in f.said


@pytest.mark.parametrize("name,kind,words", [
    ("vegeta-reset", "reset", "EOF"),
    ("vegeta-refused", "refused", "connection refused"),
])
def test_vegeta_no_answer_by_its_error_string(name: str, kind: str, words: str) -> None:
    out, err = fixture(name)
    data = json.loads(out)
    [f] = vegeta.parse(out, err).failures
    assert (f.kind, f.count) == (kind, data["status_codes"]["0"])
    assert words in f.said and data["errors"][0][:50] in f.said


def test_vegeta_non_2xx_by_status() -> None:
    out, err = fixture("vegeta-404")
    [f] = vegeta.parse(out, err).failures
    assert (f.kind, f.status, f.count) == ("status", 404, json.loads(out)["status_codes"]["404"])


def test_vegeta_strings_of_several_kinds_are_one_mixed_count() -> None:
    found = vegeta.failures({"0": 10, "200": 5, "503": 2},
                            ['Get "u": EOF', 'Get "u": dial tcp: connect: connection refused',
                             "503 Service Unavailable"])
    assert [(f.kind, f.count, f.status) for f in found] == [("mixed", 10, None),
                                                           ("status", 2, 503)]
    assert "503 Service" not in found[0].said


def test_siege_says_nothing_of_a_reset() -> None:
    out, err = fixture("siege-reset")
    assert not err.strip()                        # Siege 4.0.7 prints no line for it
    [f] = siege.parse(out, err).failures
    assert (f.kind, f.count) == ("unanswered", siege_json(out)["failed_transactions"])


def test_siege_against_aws_at_five_slots() -> None:
    out, err = fixture("siege-aws-c50")
    level = siege.parse(out, err)
    assert kinds(level) == {"unanswered": siege_json(out)["failed_transactions"]}
    assert level.failed > 0 and level.successful == level.transactions


def test_siege_answers_of_400_are_failures_with_their_kind() -> None:
    out, err = fixture("siege-404")
    data = siege_json(out)
    assert data["failed_transactions"] == 0 and data["successful_transactions"] == 0
    level = siege.parse(out, err)
    assert level.failed == data["transactions"] > 0
    assert kinds(level) == {"status": data["transactions"]}


def test_siege_error_lines_keep_its_words() -> None:
    out, err = fixture("siege-refused")
    lines = [x for x in err.splitlines() if x.startswith("[error]")]
    level = siege.parse(out, err)
    refused = [f for f in level.failures if f.kind == "refused"]
    assert [f.count for f in refused] == [len(lines)]
    assert refused[0].said == "siege: " + lines[0].removeprefix("[error] ")
    assert kinds(level)["unanswered"] == level.failed - len(lines)


def test_more_error_lines_than_failures_never_count_more() -> None:
    found = siege.failures(2, 0, "[error] socket: read error Connection reset by peer\n" * 5)
    assert [(f.kind, f.count) for f in found] == [("reset", 2)]


@pytest.mark.parametrize("words,kind", [
    ("siege: socket: unable to connect sock.c:282: Connection refused", "refused"),
    ('Get "http://x/api": read tcp 1->2: read: connection reset by peer', "reset"),
    ('Get "http://x/api": EOF', "reset"),
    ("write: broken pipe", "reset"),
    ('Get "http://x/api": context deadline exceeded (Client.Timeout exceeded)', "timeout"),
    ("socket: read check timed out(30) sock.c:273", "timeout"),
    ("something else", "other"),
])
def test_kind_of_the_clients_words(words: str, kind: str) -> None:
    assert failures.kind_of(words) == kind


# ---- a server that resets every Nth connection, through real client runs ------------------
# fault tests: each needs its client installed, and `wrk_installed` ... install
# it through the lab (conftest); a unit test installs nothing.

EVERY, TIMES = 7, 12


def live(client: Client, keepalive: bool, tmp_path: Path) -> tuple[Level, int]:
    """The client's own command against a server that resets connection 7, 14, ...
    twelve times; returns what the client parsed and what the server did."""
    port, count = free_port(), tmp_path / "resets"
    server = httpfakes.start("reset-every", port, args=(str(EVERY), str(TIMES), str(count)))
    try:
        client.prepare(tmp_path, Options(keepalive=keepalive, threads=2))
        argv = client.command(f"http://127.0.0.1:{port}/api", Load(concurrency=2), 2)
        ran = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
    finally:
        server.terminate()
        server.wait(timeout=10)
    return client.parse(ran.stdout, ran.stderr), int(count.read_text())


@pytest.mark.fault
@pytest.mark.usefixtures("wrk_installed")               # the lab installs it (conftest)
def test_wrk_counts_each_reset_connection_as_one_reset(tmp_path: Path) -> None:
    level, resets = live(wrk.Wrk(), False, tmp_path)      # a connection per request
    assert resets == TIMES
    assert kinds(level) == {"reset": TIMES}
    assert level.successful > EVERY * TIMES


@pytest.mark.fault
@pytest.mark.usefixtures("siege_installed")              # the lab installs it (conftest)
def test_siege_counts_each_reset_connection_once_without_a_word(tmp_path: Path) -> None:
    level, resets = live(siege.Siege(), False, tmp_path)
    assert resets == TIMES
    assert kinds(level) == {"unanswered": TIMES}


@pytest.mark.fault
@pytest.mark.usefixtures("vegeta_installed")             # the lab builds it (conftest)
def test_vegeta_counts_each_reset_connection_as_one_reset(tmp_path: Path) -> None:
    client = vegeta.Vegeta()
    level, resets = live(client, False, tmp_path)
    assert resets == TIMES
    assert kinds(level) == {"reset": TIMES}


def test_the_kinds_reach_the_record_and_the_summary_line(tmp_path: Path) -> None:
    level = wrk.parse(*fixture("wrk-reset"))              # wrk's read errors, captured
    [reset] = level.failures
    where = levelrow.Where(server="flaky", rep=1, axis="concurrency", value=2, concurrency=2,
                           offered_rps=None, workers=1, backlog=512, duration_s=2,
                           server_cpus=1, client_cpus=1, lab_cpus=2)
    measured = levelrow.Measured(server_cpu_s=0.1, rss_end_kb=1, rss_peak_kb=1, threads_end=1,
                                 threads_peak=1, client_cpu_s=0.1, wall_s=2.0,
                                 host_busy_s=0.2, host_steal_s=0.0, sampler_cpu_s=0.0,
                                 time_wait=0)
    append_row(tmp_path, levelrow.make_row(where, level, measured))
    [row] = read_rows(tmp_path)
    assert row.failures() == list(level.failures)
    [s] = metrics.level_stats([row])
    [item] = failedwords.level_items(whatfailed.of_server("flaky", "concurrency", [s]))
    assert reset.kind == "reset" and reset.count == s.failed > 0
    assert item.text.startswith(f"flaky c=2: {s.failed:,} of {s.attempts:,} failed: "
                                f"reset or closed by the server ({s.failed:,}: wrk: read errors")


# ---- the record, the reading side ------------------------------------------------------

def test_the_cell_round_trips_and_a_bad_one_is_named() -> None:
    found = [Failure("reset", 3, 'a "quoted", word'), Failure("status", 2, "x", 503)]
    assert failures.decode_failures(failures.encode_failures(found), Path(CSV)) == found
    assert failures.encode_failures([]) == ""
    with pytest.raises(RecordError, match="failure_kinds"):
        failures.decode_failures('[["reset", "three", "x", null]]', Path(CSV))


def test_a_bad_cell_in_results_csv_names_the_line(tmp_path: Path) -> None:
    rows = read_rows(LANDED)
    for r in rows:                               # written by this lab: the new column
        append_row(tmp_path, r)
    assert read_rows(tmp_path) == rows
    append_row(tmp_path, dataclasses.replace(rows[0], failure_kinds="nonsense"))
    with pytest.raises(RecordError, match=rf"line {len(rows) + 2}: `failure_kinds`"):
        read_rows(tmp_path)


def test_a_run_of_the_landed_writer_reads_and_says_the_kinds_are_not_recorded() -> None:
    rows = read_rows(LANDED)
    assert rows and all(r.failure_kinds is None and r.failures() == [] for r in rows)
    s = dataclasses.replace(metrics.level_stats(rows[:1])[0], failed=3, attempts=10)
    [item] = failedwords.level_items(whatfailed.of_server("x", "concurrency", [s]))
    assert "not recorded" in item.text


def test_said_groups_by_kind_with_the_words_beside() -> None:
    text = failedwords.said([Failure("reset", 5, "wrk: read errors"),
                          Failure("reset", 1, "wrk: write errors"),
                          Failure("status", 2, "vegeta: status 503", 503)])
    assert text == ("reset or closed by the server (6: wrk: read errors 5; wrk: write errors 1)"
                    ", non-2xx answer 503 (2: vegeta: status 503)")


def sample(label: str, rates: list[float], failed_pct: float) -> verdicts.Sample:
    return verdicts.Sample(label, tuple(rates), False, failed_pct)


def test_a_level_where_more_than_a_small_share_failed_is_not_ranked() -> None:
    over = metrics.FAILED_SHARE_PCT + 0.5
    j = verdicts.judge(sample("aws", [100, 101, 102], over), sample("ews", [50, 51, 52], 0.0))
    assert j.kind == "not-comparable" and j.winner is None
    assert f"aws: {over:.1f}% of requests failed" in j.text
    ok = verdicts.judge(sample("aws", [100, 101, 102, 100.5, 101.5], metrics.FAILED_SHARE_PCT),
                        sample("ews", [50, 51, 52, 50.5, 51.5], 0.0))     # 5 starts: α=1% reachable
    assert ok.kind == "better" and ok.winner == "aws"


def test_the_run_verdict_carries_the_worst_repetitions_share() -> None:
    rows = read_rows(LANDED)
    base = next(r for r in rows if r.server == rows[0].server)
    good = [dataclasses.replace(base, rep=i, rate_rps=100.0 + i, failed=0) for i in (1, 2, 3)]
    bad = [dataclasses.replace(base, server="other", rep=i, rate_rps=50.0 + i,
                               successful=1000, failed=50 if i == 2 else 0) for i in (1, 2, 3)]
    [a], [b] = metrics.level_stats(good), metrics.level_stats(bad)
    assert b.failed_pct == pytest.approx(100 * 50 / 1050)
    v = verdicts.verdict(a, b)
    assert v.kind == "not-comparable" and "other: 4.8% of requests failed" in v.text


def test_the_warning_names_the_workers_and_what_the_server_does_past_them(
        tmp_path: Path) -> None:
    shutil.copytree(LANDED, tmp_path / "run")
    run = tmp_path / "run"
    m = manifest.read_manifest(run)
    name = next(iter(m.servers))
    rec = m.servers[name]
    rec.extra["workers_beyond"] = "the rest wait, and past 20 the oldest is closed"
    for s in rec.starts:
        s.extra.pop("workers", None)
        s.extra["ran_with"] = {"workers": 5, "detail": "its default"}
    manifest.write_manifest(run, m)
    rows = [r for r in read_rows(run) if r.server == name]
    top = max(r.value for r in rows)
    at_64 = [dataclasses.replace(r, value=64, concurrency=64, failed=3,
                                 failure_kinds=failures.encode_failures([Failure("reset", 3, "w")]))
             if r.value == top else r for r in rows]
    m = manifest.read_manifest(run)
    note = analysis.workers_note(m, name, metrics.level_stats(at_64))
    assert note == (f"{name} has 5 workers (its default) for up to 64 connections at the "
                    "1 level where requests failed above 5; the rest wait, and past 20 the "
                    f"oldest is closed: use {name}@64 (or WORKERS) to give it one per "
                    "connection")
    # failures only at or below the workers: nothing to say of them
    at_5 = [dataclasses.replace(r, value=5, concurrency=5) if r.value == 64 else r
            for r in at_64]
    assert analysis.workers_note(m, name, metrics.level_stats(at_5)) is None
    text = [w.text() for w in analysis.warnings(m, {name: metrics.level_stats(at_64)}, "", [])]
    assert any(w.startswith(f"{name} has 5 workers") for w in text)
    # the top level: two repetitions of 3 resets each
    assert any("requests failed at" in w and "(kinds: reset)" in w for w in text)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
