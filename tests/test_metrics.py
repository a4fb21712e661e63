"""lab.analyse.metrics, levelrow and verdicts on constructed inputs: flags and
their thresholds, steadiness, spread, verdicts (overlapping and separate
ranges, client-bound, too few repetitions, open loop), verdict levels,
calibration lookup."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lab.analyse import analysis, levelrow, metrics, policy, verdicts
from lab.record.level import Level
from lab.record.rows import Row
from lab.record import checked
from lab.record.calibration import Calibration

pytestmark = pytest.mark.unit


def level(rate: float = 1000.0, failed: int = 0, in_flight: float = 8.0,
          offered: float | None = None, p99: float | None = None) -> Level:
    return Level(transactions=int(rate * 10), successful=int(rate * 10) - failed, failed=failed,
                 availability_pct=100.0, elapsed_s=10.0, rate_rps=rate, resp_ms=8.0,
                 in_flight=in_flight, longest_ms=20.0, data_mb=0.3, p99_ms=p99,
                 offered_rps=offered)


WHERE = levelrow.Where(server="a", rep=1, axis="concurrency", value=8, concurrency=8,
                       offered_rps=None, workers=8, backlog=512, duration_s=10,
                       server_cpus=1, client_cpus=1, lab_cpus=2)


def measured(client_cpu_s: float = 5.0, busy_s: float = 12.0, steal_s: float = 0.0,
             server_cpu_s: float = 7.0) -> levelrow.Measured:
    return levelrow.Measured(server_cpu_s=server_cpu_s, rss_end_kb=2048, rss_peak_kb=4096,
                             threads_end=3, threads_peak=4, client_cpu_s=client_cpu_s,
                             wall_s=10.0, host_busy_s=busy_s, host_steal_s=steal_s,
                             sampler_cpu_s=0.05, time_wait=3)


def test_a_quiet_level_has_no_flags_and_its_figures() -> None:
    row = levelrow.make_row(WHERE, level(), measured())
    assert row.flags == "" and not row.client_bound
    assert row.client_cpu_pct == 50.0 and row.server_cpu_pct == 70.0
    assert row.littles_ratio == 1.0 and row.other_cpu_pct == 0.0
    assert row.server_cpu_us_per_req == 700.0 and row.sampler_cpu_pct == 0.5


@pytest.mark.parametrize("lvl, m, where, flag", [
    (level(), measured(client_cpu_s=9.0, busy_s=16.0), WHERE, "client-bound"),
    (level(failed=3), measured(), WHERE, "failures"),
    (level(), measured(busy_s=15.0), WHERE, "host-busy"),        # 3 s of 20 = 15% other
    (level(), measured(steal_s=2.5), WHERE, "steal"),
    (level(in_flight=5.0), measured(), WHERE, "littles-law"),   # 5/8 = 0.625
    (level(in_flight=10.0), measured(), WHERE, "littles-law"),  # 1.25
    (level(rate=900, offered=1000.0), measured(),
     dataclasses.replace(WHERE, concurrency=0, offered_rps=1000.0), "saturated"),
    (level(), measured(), dataclasses.replace(WHERE, not_steady=True), "not-steady"),
])
def test_each_flag_is_raised_past_its_threshold(lvl: Level, m: levelrow.Measured,
                                                where: levelrow.Where, flag: str) -> None:
    assert levelrow.make_row(where, lvl, m).flags.split() == [flag]


@pytest.mark.parametrize("lvl, m, where", [
    (level(), measured(client_cpu_s=8.9, busy_s=15.9), WHERE),   # 89% client CPU
    (level(), measured(busy_s=14.0), WHERE),                     # 10% other: not above
    (level(in_flight=6.4), measured(), WHERE),                   # 0.8 exactly
    (level(rate=951, offered=1000.0), measured(),
     dataclasses.replace(WHERE, concurrency=0, offered_rps=1000.0)),
])
def test_just_inside_a_threshold_is_not_flagged(lvl: Level, m: levelrow.Measured,
                                                where: levelrow.Where) -> None:
    assert levelrow.make_row(where, lvl, m).flags == ""


def test_open_loop_rows_have_no_littles_ratio() -> None:
    where = dataclasses.replace(WHERE, concurrency=0, offered_rps=1000.0, axis="rate")
    row = levelrow.make_row(where, level(in_flight=0.5, offered=1000.0), measured())
    assert row.littles_ratio is None and "littles-law" not in row.flags


def test_spread_and_overlap() -> None:
    a, b = metrics.spread([10, 12, 11]), metrics.spread([12, 14, 13])
    assert (a.median, a.lo, a.hi, a.n) == (11, 10, 12, 3)
    assert a.overlaps(b) and b.overlaps(a)                    # they touch at 12
    assert not a.overlaps(metrics.spread([13, 15]))
    assert metrics.spread([5]).ratio == 1.0 and a.ratio == pytest.approx(1.2)
    with pytest.raises(ValueError):
        metrics.spread([])


def rows(server: str, value: int, rates: list[float], flags: str = "",
         p99: list[float] | None = None, offered: float | None = None) -> list[Row]:
    base = levelrow.make_row(dataclasses.replace(WHERE, server=server, value=value),
                             level(), measured())
    return [dataclasses.replace(base, rep=i + 1, rate_rps=r, flags=flags,
                                client_bound="client-bound" in flags, offered_rps=offered,
                                p99_ms=(p99[i] if p99 else None))
            for i, r in enumerate(rates)]


def stats(*groups: list[Row]) -> list[metrics.LevelStats]:
    return metrics.level_stats([r for g in groups for r in g])


def test_level_stats_group_by_value_and_flag_noise() -> None:
    [one, two] = stats(rows("a", 8, [100, 130, 120]), rows("a", 1, [50, 51, 52], "steal"))
    assert (one.value, two.value) == (1, 8)
    assert one.rate.median == 51 and one.flags == {"steal": 3} and not one.noisy
    assert two.noisy and "noisy" in two.all_flags()           # 130/100 > 1.10


def test_verdict_five_starts_apart_name_the_faster_with_alpha_delta_and_starts() -> None:
    [a] = stats(rows("aws", 8, [1000, 1050, 1100, 1020, 1080]))
    [b] = stats(rows("jersey", 8, [1200, 1260, 1300, 1250, 1280]))
    v = verdicts.verdict(a, b)
    assert v.kind == "faster" and (v.a, v.b) == ("jersey", "aws")
    assert v.percent == pytest.approx(100 * (1260 / 1050 - 1), abs=3)   # Hodges-Lehmann
    assert v.text.startswith("jersey is faster than aws by 2")
    assert "α=1%, δ=5%, 5+5 starts" in v.text
    assert (v.alpha, v.delta_pct, v.starts) == (0.01, 5.0, (5, 5))


def test_three_starts_a_side_never_decide_at_one_percent() -> None:
    # 2/C(6,3) = 10%: an exact test of 3 against 3 cannot reach 1%, however far apart
    [a] = stats(rows("aws", 8, [1000, 1050, 1100]))
    [b] = stats(rows("jersey", 8, [5000, 5260, 5300]))
    v = verdicts.verdict(a, b)
    assert v.kind == "undecided" and "too few starts: 3 against 3" in v.text


def test_overlapping_starts_are_undecided_with_the_interval() -> None:
    [a] = stats(rows("aws", 8, [1000, 1100, 1250, 1150, 1300]))
    [b] = stats(rows("jersey", 8, [1200, 1260, 1300, 1050, 1320]))
    v = verdicts.verdict(a, b)
    assert v.kind == "undecided" and "spans ±5%" in v.text


def test_tight_equal_starts_are_equivalent_within_delta() -> None:
    [a] = stats(rows("aws", 8, [1000, 1005, 1010, 998, 1003]))
    [b] = stats(rows("jersey", 8, [1002, 1004, 1008, 999, 1001]))
    v = verdicts.verdict(a, b)
    assert v.kind == "equivalent" and v.text.startswith("equivalent within ±5%")


def test_verdict_with_the_slower_side_client_bound_is_not_comparable() -> None:
    [a] = stats(rows("aws", 8, [1000, 1010, 1020, 1005, 1015], "client-bound"))
    [b] = stats(rows("jersey", 8, [2000, 2010, 2020, 2005, 2015]))
    v = verdicts.verdict(a, b)
    assert v.kind == "not-comparable" and v.text.startswith("not comparable (client-bound: aws")


def test_verdict_with_only_the_faster_side_client_bound_is_a_lower_bound() -> None:
    # the client held the faster server back: it is at least this much faster
    [a] = stats(rows("aws", 8, [1000, 1010, 1020, 1005, 1015]))
    [b] = stats(rows("undertow", 8, [2000, 2020, 2100, 2010, 2050], "client-bound"))
    v = verdicts.verdict(a, b)
    assert v.kind == "faster-at-least" and (v.a, v.b) == ("undertow", "aws")
    assert v.text.startswith("undertow is faster than aws by at least 10")
    assert "lower bound" in v.text


def test_verdict_client_bound_and_overlapping_is_not_comparable() -> None:
    [a] = stats(rows("aws", 8, [1000, 1500, 1900, 1700, 2050]))
    [b] = stats(rows("undertow", 8, [1800, 2000, 2100, 1900, 1950], "client-bound"))
    v = verdicts.verdict(a, b)
    assert v.kind == "not-comparable" and "undertow" in v.text


def test_open_loop_verdict_compares_p99_latency() -> None:
    [a] = stats(rows("aws", 5000, [5000] * 5, p99=[9.0, 10.0, 11.0, 9.5, 10.5], offered=5000.0))
    [b] = stats(rows("undertow", 5000, [5000] * 5, p99=[2.0, 2.5, 3.0, 2.2, 2.7],
                     offered=5000.0))
    v = verdicts.verdict(a, b)
    assert v.kind == "faster" and v.a == "undertow"
    assert v.text.startswith("undertow has lower p99 latency than aws by 3")


def test_verdict_levels_are_every_level_never_each_peak() -> None:
    # no winner's curse: the levels judged are not picked from the figures judged
    by = {"a": stats(rows("a", 1, [10] * 5), rows("a", 8, [30] * 5), rows("a", 64, [20] * 5)),
          "b": stats(rows("b", 1, [40] * 5), rows("b", 8, [30] * 5), rows("b", 64, [20] * 5))}
    assert verdicts.verdict_values(by, ()) == [1, 8, 64]
    assert verdicts.verdict_values(by, (8,)) == [8]
    found = verdicts.verdicts(by, [1, 64])
    # per level, each at 1% over 2 x 1 pair x 2 levels = 0.25%: 5 against 5 cannot
    assert [(v.value, v.kind) for v in found] == [(1, "undecided"), (64, "undecided")]
    assert found[0].alpha == pytest.approx(0.0025) and "too few starts" in found[1].text
    # the primary verdict, one start's mean over the levels: 5 against 5 decide at 1%
    [p] = verdicts.primaries(by, [1, 64])
    assert p.kind == "faster" and p.a == "b" and p.levels == (1, 64)


def test_primary_verdict_takes_each_start_across_the_levels() -> None:
    import random
    r = random.Random(3)
    def noisy(base: float) -> list[float]:
        return [base * (1 + r.uniform(-0.02, 0.02)) for _ in range(5)]
    by = {"a": stats(rows("a", 1, noisy(100)), rows("a", 8, noisy(300))),
          "b": stats(rows("b", 1, noisy(130)), rows("b", 8, noisy(390)))}
    [v] = verdicts.primaries(by, [1, 8])
    assert v.kind == "faster" and (v.a, v.b) == ("b", "a") and v.levels == (1, 8)
    assert v.starts == (5, 5) and v.alpha == 0.01
    assert v.percent == pytest.approx(30, abs=3)


def test_verdicts_say_when_a_server_lacks_the_level() -> None:
    by = {"a": stats(rows("a", 8, [10] * 3)), "b": stats(rows("b", 1, [10] * 3))}
    [v] = verdicts.verdicts(by, [8])
    assert v.kind == "missing" and "(b)" in v.text


def calibration(**modes: dict[str, float]) -> Calibration:
    """A calibration of siege with these req/s per level, per mode."""
    def level(rate: float) -> dict[str, object]:
        return {"rate_rps": rate, "client_cpu_pct": 95.0, "client_bound": True, "failed": 0}
    data = {"made": "now", "ceiling": "nginx", "duration_s": 5, "levels": [1, 8, 64],
            "pinning": {"server_cpus": "0", "client_cpus": "1"}, "host": {},
            "topology": "loopback (one host)",
            "clients": {"siege": {"version": "4", **{
                m.replace("_", "-"): {k: level(v) for k, v in levels.items()}
                for m, levels in modes.items()}}}}
    return Calibration.parse(checked.obj(data, Path("calibration.json"), ""))


def test_capacity_uses_the_nearest_calibrated_level_of_the_same_mode() -> None:
    cal = calibration(close={"1": 3000.0, "8": 6000.0, "64": 6500.0},
                      keep_alive={"8": 15000.0})
    assert analysis.capacity(cal, "siege", False, 8) == (6000.0, 8)
    assert analysis.capacity(cal, "siege", False, 10) == (6000.0, 8)
    assert analysis.capacity(cal, "siege", False, 50) == (6500.0, 64)
    assert analysis.capacity(cal, "siege", True, 50) == (15000.0, 8)
    assert analysis.capacity(cal, "wrk", False, 8) is None


def test_open_loop_verdicts_are_at_every_offered_rate() -> None:
    by = {"a": stats(rows("a", 1000, [1000] * 3, p99=[1, 1, 1], offered=1000.0),
                     rows("a", 4000, [3000] * 3, p99=[9, 9, 9], offered=4000.0)),
          "b": stats(rows("b", 1000, [1000] * 3, p99=[2, 2, 2], offered=1000.0),
                     rows("b", 4000, [4000] * 3, p99=[3, 3, 3], offered=4000.0))}
    assert verdicts.verdict_values(by, ()) == [1000, 4000]


@pytest.mark.parametrize("servers, looks", [
    (2, policy.LookSchedule()), (3, policy.LookSchedule()), (4, policy.LookSchedule()),
    (3, policy.LookSchedule(5, 10)), (3, policy.LookSchedule(6, 10))])
def test_starts_needed_is_where_the_familys_rule_starts_deciding(
        servers: int, looks: policy.LookSchedule) -> None:
    """The minimum the plan line prints is the rule's own: with that many
    starts a side, servers 30% apart are ranked in every pair of the family;
    with one fewer, none is (exercise 3: three servers at REPEAT=5 split α to
    0.33% a pair, and 5 against 5 cannot reach it)."""
    need = verdicts.starts_needed(servers, 0.01, looks)
    assert need is not None

    def family(k: int) -> list[verdicts.Verdict]:
        by = {f"s{i}": stats(rows(f"s{i}", 8, [1000 * 1.3 ** i + j for j in range(k)]))
              for i in range(servers)}
        return verdicts.primaries(by, [8], 0.01, looks=looks)
    assert all(v.kind == "faster" for v in family(need)), [v.text for v in family(need)]
    assert not any(v.kind == "faster" for v in family(need - 1))
    if looks.first is None:
        assert all("too few starts" in v.text for v in family(need - 1))


def test_starts_needed_says_none_when_no_look_can_decide() -> None:
    assert verdicts.starts_needed(6, 0.01, policy.LookSchedule(5, 6)) is None


@pytest.mark.parametrize("words", [
    # vegeta (Go's net package), Siege: the errno EADDRNOTAVAIL, no local port left
    'Get "http://127.0.0.1:8080/api": dial tcp 127.0.0.1:0->127.0.0.1:8080: connect: '
    'cannot assign requested address',
    "[error] socket: unable to connect sock.c:282: Cannot assign requested address"])
def test_a_client_out_of_local_ports_flags_its_level(words: str) -> None:
    """Exercise 6's collapse: connections opened faster than TIME_WAIT frees
    their ports; the level measures the client's host, and says so."""
    from lab.record import failures
    from lab.analyse import policy
    assert failures.kind_of(words) == "ports"
    lvl = dataclasses.replace(level(failed=40), failures=(failures.Failure("ports", 40, words),))
    row = levelrow.make_row(WHERE, lvl, measured())
    assert "out-of-ports" in row.flags.split() and "out-of-ports" in metrics.FLAGS
    assert "out-of-ports" in policy.UNCLEAN["sequential"]            # its req/s ranks nothing


def test_the_plan_line_says_when_each_levels_verdicts_need_more_starts() -> None:
    """Exercise 3 (three servers, REPEAT=6, one level): the plan line said "6
    starts a side can decide" while the per-level table under the primary
    verdicts said "6 against 6 cannot reach α=0.17%; 7 against 7 can" (issue
    54). It says both, each family at the α its table is split to
    (policy.family_alpha), and that REPEAT=6 cannot decide the per-level one."""
    import re
    from lab.cli.prepare import family_need
    from lab.setup.fromenv import from_env

    def said(repeat: int) -> str:
        p = from_env({"SERVER": "s0 s1 s2", "CLIENT": "wrk", "CONCURRENCY": "8",
                      "REPEAT": str(repeat)}, ["s0", "s1", "s2"], {"wrk": "concurrency"},
                     available_cpus={0, 1})
        return family_need(p, 3)

    def per_level(k: int) -> list[verdicts.Verdict]:
        by = {f"s{i}": stats(rows(f"s{i}", 8, [1000 * 1.3 ** i + j for j in range(k)]))
              for i in range(3)}
        return verdicts.verdicts(by, [8], 0.01)
    need = verdicts.starts_needed(3)
    assert need is not None
    table = per_level(need)[0].text                # the table's own α and starts
    m = re.search(r"cannot reach α=([\d.]+)%.*; (\d+) against \2 can", table)
    assert m, table
    alpha, more = m.group(1), int(m.group(2))
    line = said(need)
    assert f"{need} starts a side can decide" in line, line
    assert f"each level's own verdicts (split to {alpha}%) from {more}, REPEAT={need} " \
        "cannot decide them" in line, line
    assert "cannot decide them" not in said(more), said(more)
    assert all(v.kind == "faster" for v in per_level(more))
    assert all("too few starts" in v.text for v in per_level(more - 1))
