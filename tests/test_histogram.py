"""A client's whole latency distribution, in the lab's mergeable form
(lab.record.histogram): merged across client hosts by adding counts, its
percentiles by wrk's own rank rule, read back from the file it is kept in."""
from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from lab.analyse import levelrow
from lab.measure import clienthosts
from lab.measure.topologies import ClientRun
from lab.measure.clients import Load, Options, vegeta, wrk
from lab.record import histogram
from lab.record.files import RecordError
from lab.record.histogram import Histogram
from lab.record.level import Level

pytestmark = pytest.mark.unit


def pooled_percentile(values: list[int], p: float) -> int:
    """The same rank rule over a sorted list of every sample (no histogram)."""
    ordered = sorted(values)
    rank = min(max(histogram.rank(p, len(ordered)), 1), len(ordered))
    return ordered[rank - 1]


def test_merging_adds_the_counts_of_each_value() -> None:
    a = Histogram.of({100: 3, 250: 1, 900: 2})
    b = Histogram.of({100: 1, 300: 4})
    both = histogram.merge([a, b])
    assert both.pairs == ((100, 4), (250, 1), (300, 4), (900, 2))
    assert both.count == a.count + b.count == 11
    assert histogram.merge([a]) == a
    assert histogram.merge([]).count == 0


def test_percentiles_follow_wrks_rank_rule() -> None:
    # wrk: rank = round(p/100 * n + 0.5); the value where the running count reaches it
    h = Histogram.of({v: 1 for v in range(1, 101)})          # 1..100 us, one each
    assert histogram.rank(99, 100) == 100 and h.percentile(99) == 100
    assert histogram.rank(50, 100) == 51 and h.percentile(50) == 51
    assert Histogram.of({10: 98, 20: 1, 5000: 1}).percentile(99) == 5000
    assert Histogram.of({10: 97, 20: 2, 5000: 1}).percentile(90) == 10
    assert Histogram.of({}).percentile(99) is None


def test_the_merged_p99_is_the_pooled_samples_p99_and_not_the_worst_hosts() -> None:
    """One host fast, one slow in its last 2%: the worst host's p99 (the bound
    the lab gave before) is the slow one's; the merged p99 is the pooled one."""
    rng = random.Random(45)
    fast = [rng.randint(200, 400) for _ in range(9000)]
    slow = [rng.randint(200, 400) for _ in range(980)] + [rng.randint(40000, 50000)
                                                           for _ in range(20)]
    hosts = [Histogram.of_samples(fast), Histogram.of_samples(slow)]
    merged = histogram.merge(hosts)
    for p in (50, 90, 99, 99.9):
        assert merged.percentile(p) == pooled_percentile(fast + slow, p), p
    worst = max(h.percentile(99) or 0 for h in hosts)
    assert worst >= 40000 and merged.percentile(99) <= 400


def test_the_file_keeps_the_distribution_exactly(tmp_path: Path) -> None:
    h = Histogram.of({7: 2, 1234567: 1, 80: 5})
    path = tmp_path / "wrk-rep1-c4.h0.hist"
    histogram.write(path, tmp_path, h, "wrk", "root@b")
    assert histogram.read(path) == h
    text = path.read_text()
    assert text.startswith("# lab latency histogram") and "root@b" in text
    path.write_text(text + "12 x\n")
    with pytest.raises(RecordError, match="line"):
        histogram.read(path)


@pytest.mark.parametrize("text", ["", "wrk-histogram {", 'wrk-histogram {"complete":true}',
                                  'wrk-histogram {"complete":true,"values":[1,2],"counts":[1]}',
                                  'wrk-histogram {"complete":true,"values":[2,1],"counts":[1,1]}',
                                  'wrk-histogram {"complete":true,"values":[-1],"counts":[1]}'])
def test_a_broken_histogram_line_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        histogram.from_line(text, "wrk-histogram ")


def test_a_partial_histogram_says_so() -> None:
    line = 'wrk-histogram {"complete":false,"values":[1],"counts":[1],"why":"2.0 s"}'
    with pytest.raises(ValueError, match="2.0 s"):
        histogram.from_line(line, "wrk-histogram ")
    good = 'x\nwrk-histogram {"complete":true,"values":[5,9],"counts":[3,1]}\n'
    assert histogram.from_line(good, "wrk-histogram ") == Histogram.of({5: 3, 9: 1})


def level(p99_ms: float, n: int) -> Level:
    return Level(transactions=n, successful=n, failed=0, availability_pct=100.0, elapsed_s=2.0,
                 rate_rps=n / 2, resp_ms=1.0, in_flight=1.0, longest_ms=p99_ms * 2,
                 data_mb=0.0, p50_ms=1.0, p90_ms=1.0, p99_ms=p99_ms)


def test_a_level_of_several_hosts_takes_the_merged_percentiles() -> None:
    fast = Histogram.of({300: 990, 900: 10})                 # 1000 responses
    slow = Histogram.of({300: 95, 40000: 5})                 # 100, 5% slow
    a, b = level(fast.percentile_ms(99) or 0.0, 1000), level(slow.percentile_ms(99) or 0.0, 100)
    merged = levelrow.combine([a, b], histogram.merge([fast, slow]))
    assert merged.percentiles == "exact"
    assert (merged.p50_ms, merged.p90_ms, merged.p99_ms) == (0.3, 0.3, 0.9)
    bound = levelrow.combine([a, b])
    assert bound.percentiles == "bound" and bound.p99_ms == 40.0      # the slow host's
    assert levelrow.combine([a]).percentiles == ""                    # one host: its own
    assert levelrow.combine([a], fast).percentiles == "exact"


def test_vegetas_counts_read_back_and_a_level_without_its_file() -> None:
    v = vegeta.Vegeta()
    assert v.distribution("12 3\n40 1\n") == Histogram.of({12: 3, 40: 1})
    with pytest.raises(ValueError, match="no result kept"):
        v.distribution("")
    with pytest.raises(ValueError, match="no latency histogram"):
        v.distribution("12 x\n")
    assert v.distribution_after("{}", "offered_rps=100\n") is None
    argv = v.distribution_after("{}", "offered_rps=100\nresults=/r/x/vegeta-results.Ab12Cd\n")
    assert argv is not None and argv[-1] == "/r/x/vegeta-results.Ab12Cd"
    assert 'rm -f "$1"' in argv[2] and "encode -to=csv" in argv[2]


def test_wrks_histogram_script_adds_no_hook_per_request(tmp_path: Path) -> None:
    """done() alone: wrk calls Lua per request only for request(), response()
    and delay(), so the level with the histogram runs as the level without."""
    w = wrk.Wrk()
    w.prepare(tmp_path, Options(keepalive=True, threads=2))
    argv = w.distribution_command("http://127.0.0.1:1/api", Load(concurrency=4), 2)
    assert argv == [str(tmp_path / wrk.HISTOGRAM_SCRIPT) if a == str(tmp_path / wrk.SCRIPT.name)
                    else a for a in w.command("http://127.0.0.1:1/api", Load(concurrency=4), 2)]
    script = (tmp_path / wrk.HISTOGRAM_SCRIPT).read_text()
    defined = set(re.findall(r"^\s*function\s+(\w+)|^\s*(\w+)\s*=\s*function", script, re.M))
    assert {name for pair in defined for name in pair if name} == {"done"}


def test_a_host_without_its_whole_histogram_leaves_the_bound(tmp_path: Path) -> None:
    """wrk past its budget in done() says so; the level then keeps the worst
    host's percentiles (a bound), and says which host and why."""
    good = 'wrk-histogram {"complete":true,"values":[300,900],"counts":[9,1]}\n'
    cut = 'wrk-histogram {"complete":false,"why":"reading its 9000 latencies took over 0.5 s"}\n'
    outs = [tmp_path / f"wrk-rep1-c4.h{i}.out" for i in range(2)]
    runs = [ClientRun(good, "", 0, 0.1, 2.0, "root@b"), ClientRun(good, "", 0, 0.1, 2.0, "root@c")]
    merged, why = clienthosts.merged(wrk.Wrk(), [object(), object()], runs, outs, tmp_path, (1,), {})
    assert why == "" and merged == Histogram.of({300: 18, 900: 2})
    assert histogram.read(tmp_path / "wrk-rep1-c4.h1.hist") == Histogram.of({300: 9, 900: 1})
    runs[1] = ClientRun(cut, "", 0, 0.1, 2.0, "root@c")
    outs = [tmp_path / f"wrk-rep1-c8.h{i}.out" for i in range(2)]
    merged, why = clienthosts.merged(wrk.Wrk(), [object(), object()], runs, outs, tmp_path, (1,), {})
    assert merged is None and why.startswith("root@c: it wrote only part") and "bound" in why
