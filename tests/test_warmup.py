"""A start's warm-up by change points (lab.analyse.warmup), its words
(lab.present.warmwords), and the JIT compiler threads' part of a slice's CPU
(lab.record.rows.Row.slices, lab.host.procfs.compiler_cpu_s)."""
from __future__ import annotations

import random
from dataclasses import replace

import pytest

from lab.analyse import warmup
from lab.analyse.warmup import WarmClass
from lab.host import procfs
from lab.present import warmwords
from lab.record.files import RecordError
from lab.record.manifest import Warmup

pytestmark = pytest.mark.unit


def noisy(level: float, n: int, rng: random.Random, sd: float = 0.02) -> list[float]:
    return [level * (1 + rng.gauss(0, sd)) for _ in range(n)]


def test_a_clean_step_is_found_where_it_is() -> None:
    xs = [100.0] * 12 + [150.0] * 12
    assert warmup.pelt([x + (i % 2) for i, x in enumerate(xs)]) == [12]


def test_noise_alone_has_no_change_point_and_is_flat() -> None:
    rng = random.Random(7)
    xs = noisy(10_000, 40, rng)
    assert warmup.pelt(xs) == []
    assert warmup.classify_series(xs, True).kind is WarmClass.FLAT


def test_two_modes_drawn_at_random_each_slice_are_noise_not_states() -> None:
    # undertow's slices: each opens new connections, which land on its IO
    # threads at random: about 30k or 60k req/s, independently slice by slice
    rng = random.Random(3)
    xs = [rng.choice((30_000.0, 30_000.0, 30_000.0, 60_000.0)) * (1 + rng.gauss(0, .02))
          for _ in range(40)]
    assert warmup.judge(xs, [1e6 / x for x in xs]).steady


def test_a_ramp_then_a_plateau_is_a_warm_up_steady_from_the_plateau() -> None:
    rng = random.Random(1)
    xs = [2_000.0 * (k + 1) for k in range(8)] + noisy(18_000, 20, rng)
    got = warmup.classify_series(xs, True)
    assert got.kind is WarmClass.WARMUP and got.steady_from is not None
    assert 6 <= got.steady_from <= 9


def test_a_better_then_worse_series_is_a_slowdown() -> None:
    rng = random.Random(2)
    xs = noisy(10_000, 15, rng) + noisy(8_000, 15, rng)
    assert warmup.classify_series(xs, True).kind is WarmClass.SLOWDOWN
    # the same shape in CPU per request (lower is better) is a warm-up
    assert warmup.classify_series(xs, False).kind is WarmClass.WARMUP


def test_a_change_near_the_end_is_no_steady_state() -> None:
    rng = random.Random(4)
    xs = noisy(10_000, 27, rng) + noisy(14_000, 3, rng)
    assert warmup.classify_series(xs, True).kind is WarmClass.NO_STEADY


def test_a_jit_still_compiling_in_the_last_segment_keeps_the_start_unsteady() -> None:
    rng = random.Random(5)
    rates = noisy(20_000, 30, rng)
    cpu = [1e6 / r for r in rates]
    quiet = [0.3] * 10 + [0.005] * 20
    busy = [0.3] * 30
    assert warmup.judge(rates, cpu, quiet).steady
    got = warmup.judge(rates, cpu, busy)
    assert not got.steady and got.jit_busy and got.kind is WarmClass.NO_STEADY
    # the JIT quiet only for its last 3 slices: too short a steady state yet
    late = [0.3] * 27 + [0.0] * 3
    assert not warmup.judge(rates, cpu, late).steady


def test_the_stop_needs_the_tail_and_a_steady_class() -> None:
    rng = random.Random(6)
    xs = noisy(5_000, warmup.LEAST - 1, rng)
    assert not warmup.settled(xs, [1.0] * len(xs), None, warmup.LEAST)
    xs = noisy(5_000, warmup.LEAST, rng)
    assert warmup.settled(xs, [100.0] * len(xs), None, warmup.LEAST)
    # a ramp of 5 slices has no room for a change to be seen: not flat
    ramp = [1_000.0 * (k + 1) for k in range(warmup.TAIL)]
    assert warmup.classify_series(ramp, True).kind is WarmClass.NO_STEADY


def test_a_slice_with_no_request_is_no_steady_state_only_at_the_end() -> None:
    assert warmup.judge([0.0] * 10, [0.0] * 10).kind is WarmClass.NO_STEADY
    # a slow start's first slice with no request (seen in CI): then steady
    rng = random.Random(8)
    rates = [0.0, 12.5, 15.4, 21.3] + noisy(31.5, 20, rng)
    cpu = [0.0, 1857.5, 1378.7, 800.5] + noisy(700, 20, rng, 0.1)
    assert warmup.judge(rates, cpu).steady
    assert not warmup.judge(rates[:-1] + [0.0], cpu[:-1] + [0.0]).steady


def test_a_slow_servers_rate_moving_by_one_request_a_slice_is_steady() -> None:
    # 31 or 32 requests in each 1 s slice (a sleeping server at 31 req/s):
    # its halves 3.2% apart by one request is the slice's resolution, not a
    # drift; read at a finer resolution the same step is a drift
    rates = [8.5, 12.9, 17.6] + [31.0] * 5 + [32.0] * 5
    cpu = [1_000.0] * len(rates)
    assert warmup.drifting(rates[3:], step=0.0)
    assert not warmup.drifting(rates[3:], step=1.0)
    assert not warmup.judge(rates, cpu).steady
    got = warmup.judge(rates, cpu, rate_step=1.0)
    assert got.steady and got.kind is WarmClass.WARMUP and got.steady_from == 3
    # a real step of five requests is still a change at that resolution
    moved = rates[:8] + [37.0] * 5
    assert not warmup.judge(moved, cpu, rate_step=1.0).steady


def test_each_servers_starts_are_counted_by_class() -> None:
    base = Warmup(mode="auto", cap_s=60)
    starts = [replace(base, steady=True, warm_class="warm-up", steady_after_s=12.0),
              replace(base, steady=True, warm_class="warm-up", steady_after_s=31.0),
              replace(base, steady=True, warm_class="flat", steady_after_s=0.0),
              replace(base, steady=False, warm_class="no steady state", slice_jit_pct=[4.0])]
    line = warmwords.server_line("undertow", starts)
    assert line.startswith("- undertow: 4 starts: 1 flat, 2 warm-up (steady after 12–31 s), "
                           "1 no steady state within the 60 s cap")
    assert "4–4% of its CPU" in line
    assert warmwords.start_cell(starts[0]) == "warm-up, steady after 12 s"
    # a run made before the classes: its old rule's yes or no
    assert warmwords.class_of(replace(base, steady=False)) == "not steady"


def test_the_jit_threads_part_is_left_out_of_each_slices_cpu() -> None:
    from lab.record.rows import Row
    fields = {f: 0 for f in Row.__dataclass_fields__ if Row.__dataclass_fields__[f].default
              is not None and not hasattr(Row, f)}
    row = Row(**{**{f: 0 for f in Row.__slots__ if f not in Row.__dataclass_fields__
                    or Row.__dataclass_fields__[f].default is not None}, **fields,
                 "server": "u", "axis": "concurrency", "flags": "", "offered_rps": None,
                 "slice_rps": "100.0 110.0", "slice_cpu_us": "30.00 40.00",
                 "slice_jit_us": "5.00 0.00"})
    assert row.slices() == ((100.0, 25.0), (110.0, 40.0))
    with pytest.raises(RecordError, match="do not fit"):
        replace(row, slice_jit_us="50.00 0.00").slices()
    assert replace(row, slice_jit_us=None).slices() == ((100.0, 30.0), (110.0, 40.0))


def test_compiler_threads_growth_counts_a_new_thread_whole() -> None:
    before = {(1, "11"): 1_000_000_000, (1, "12"): 500_000_000}
    after = {(1, "11"): 1_250_000_000, (1, "12"): 500_000_000, (1, "13"): 100_000_000}
    assert procfs.compiler_cpu_s(before, after) == pytest.approx(0.35)
    assert procfs.compiler_cpu_s(None, after) is None
