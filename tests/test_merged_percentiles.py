"""Two client hosts share each level (TOPOLOGY=ssh, CLIENT_HOST="b c" on the
emulated hosts of tests/sshhost.py), and the server (tests/lopsided.py) is
slow for one of them: each request from host c waits 400 ms, so that its
few responses are under 1% of the level's. The level's p99 must be that of
every response pooled, not the worst host's.

- wrk keeps its whole latency histogram (client/wrk-histogram.lua's done()):
  each host's is kept in the run folder, the row's p50/p90/p99 are the
  pooled samples' own (wrk's resolution, 1 us, so exactly), marked "exact",
  and the worst host's p99 (what the lab gave before) is another figure;
- siege keeps none: its percentiles stay the worst host's, marked "bound"."""
from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import FAKES, ROOT, bench, run_folders
from lab.measure.clients import vegeta
from lab.record import histogram
from lab.record.rows import read_rows
from sshhost import Lan, lan_for
from test_topology_ssh import nothing_left, ssh_env

pytestmark = [pytest.mark.fault, pytest.mark.root, pytest.mark.ssh]


@pytest.fixture(scope="module")
def lan(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lan]:
    yield from lan_for(tmp_path_factory, "m")


def lopsided(tmp: Path, slow_from: str, every: int, delay_ms: int) -> Path:
    """A server folder (LAB_SERVER_PATH) with `lopsided`, slow for `slow_from`."""
    folder = tmp / "servers" / "lopsided"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "lopsided.py", folder / "lopsided.py")
    (folder / "server.toml").write_text(f'''name = "lopsided"
language = "Python"
framework = "asyncio"
version = "stdlib"
summary = "every {every}th request from {slow_from} waits {delay_ms} ms"

[run]
command = ["python3", "lopsided.py", "--slow-from", "{slow_from}", "--every", "{every}",
           "--delay-ms", "{delay_ms}"]
ready_timeout = 10

[workers]
fixed = true
''')
    return folder.parent


def two_hosts(tmp: Path, lan: Lan, client: str, every: int = 1, delay_ms: int = 400,
              **load: str) -> tuple[Path, dict[str, str]]:
    servers = lopsided(tmp, lan.hosts[2].address, every, delay_ms)
    env = ssh_env(tmp, lan, SERVER="lopsided", CLIENT=client,
                  CLIENT_HOST=f"{lan.dest(1)} {lan.dest(2)}", DURATION="3s", WARMUP="0",
                  PROBE="0", LAB_SERVER_PATH=f"{servers}:{FAKES}",
                  **(load or {"CONCURRENCY": "4"}))
    out = bench(env, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    [run] = run_folders(tmp)
    return run, env


def hosts_line(run: Path) -> dict:
    """The level's line (the last: a level that ran short is measured again)."""
    return [json.loads(x) for x in (run / "lopsided" / "client-hosts.jsonl").read_text()
            .splitlines()][-1]


def pooled_percentile(samples: list[int], p: float) -> int:
    ordered = sorted(samples)
    return ordered[min(max(histogram.rank(p, len(ordered)), 1), len(ordered)) - 1]


def test_wrk_on_two_hosts_gives_the_pooled_percentiles(tmp_path: Path, lan: Lan) -> None:
    run, env = two_hosts(tmp_path, lan, "wrk")
    [row] = read_rows(run)
    assert row.percentiles == "exact"
    each = [histogram.read(run / "lopsided" / f"wrk-rep1-c4.h{i}.hist") for i in range(2)]
    line = hosts_line(run)
    assert line["percentiles"] == "exact"
    for h, host in zip(each, line["hosts"]):          # a host's own figure comes back
        assert h.percentile_ms(99) == pytest.approx(host["p99_ms"], abs=1e-9)
    pooled = [v for h in each for v, n in h.pairs for _ in range(n)]
    for p, got in ((50, row.p50_ms), (90, row.p90_ms), (99, row.p99_ms)):
        assert got == pytest.approx(pooled_percentile(pooled, p) / 1000, abs=0.001), p
    worst = max(h["p99_ms"] for h in line["hosts"])           # the bound the lab gave
    slow = line["hosts"][1]
    assert slow["host"] == lan.dest(2) and slow["p99_ms"] == worst
    assert worst >= 400 and row.p99_ms is not None and row.p99_ms < worst / 2
    levels = json.loads((run / "results.json").read_text())["levels"]["lopsided"]
    assert [x["percentiles"] for x in levels] == ["exact"]
    summary = (run / "summary.md").read_text()
    assert f"| lopsided | 4 | " in summary and " (merged) |" in summary
    assert "merged from every client host's whole latency distribution" in summary
    assert "(merged)" in (run / "report.html").read_text()
    nothing_left(run, lan, {**env, "SERVER": "nginx"})     # its hosts, not its server


def test_vegeta_on_two_hosts_gives_the_pooled_percentiles(tmp_path: Path, lan: Lan) -> None:
    """Open loop: each host offers 200 req/s, and every 70th request from host
    c waits 300 ms: 1.4% of c's, 0.7% of all. c's p99 is the wait; the level's
    is not. Each host's results are counted per microsecond after the level;
    the counts agree with vegeta's own report of that host (requests, min,
    max and mean, to the microsecond)."""
    run, env = two_hosts(tmp_path, lan, "vegeta", every=70, delay_ms=300, RATE="400")
    [row] = read_rows(run)
    assert row.percentiles == "exact"
    folder = run / "lopsided"
    each = [histogram.read(folder / f"vegeta-rep1-r400.h{i}.hist") for i in range(2)]
    for i, h in enumerate(each):
        own = vegeta.report_json((folder / f"vegeta-rep1-r400.h{i}.out").read_text())
        assert own is not None and h.count == own["requests"]
        lat = own["latencies"]
        assert h.pairs[0][0] == lat["min"] // 1000 and h.pairs[-1][0] == lat["max"] // 1000
        mean_us = sum(v * n for v, n in h.pairs) / h.count
        assert lat["mean"] / 1000 - 1 <= mean_us <= lat["mean"] / 1000
    pooled = [v for h in each for v, n in h.pairs for _ in range(n)]
    for p, got in ((50, row.p50_ms), (90, row.p90_ms), (99, row.p99_ms)):
        assert got == pytest.approx(pooled_percentile(pooled, p) / 1000, abs=0.001), p
    line = hosts_line(run)
    worst = max(h["p99_ms"] for h in line["hosts"])
    assert line["hosts"][1]["p99_ms"] == worst and worst >= 290
    assert row.p99_ms is not None and row.p99_ms < worst / 2
    # the per-second series sums the hosts' responses of each second
    series = (folder / "series-rep1-r400.csv").read_text().splitlines()[1:]
    per_host = [vegeta.Vegeta().per_second((folder / f"vegeta-rep1-r400.h{i}.out").read_text())
                for i in range(2)]
    assert [float(x.split(",")[1]) for x in series] == \
        [round(a + b, 1) for a, b in zip(*per_host)]
    nothing_left(run, lan, {**env, "SERVER": "nginx"})     # its hosts, not its server


def test_siege_on_two_hosts_keeps_the_worst_hosts_a_bound(tmp_path: Path, lan: Lan) -> None:
    run, env = two_hosts(tmp_path, lan, "siege")
    [row] = read_rows(run)
    assert row.percentiles == "bound" and hosts_line(run)["percentiles"] == "bound"
    assert not list((run / "lopsided").glob("*.hist"))
    levels = json.loads((run / "results.json").read_text())["levels"]["lopsided"]
    assert [x["percentiles"] for x in levels] == ["bound"]
    assert row.p99_ms is None               # siege gives no percentiles: no word beside them
    assert "(bound)" not in (run / "summary.md").read_text()
    nothing_left(run, lan, {**env, "SERVER": "nginx"})     # its hosts, not its server
