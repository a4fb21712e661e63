"""The reading side: the one judge that a run's verdicts,
`make compare` and the claims share, and the calibration's conditions."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from conftest import ROOT
from lab.analyse import analysis, claims, claimsfile, diff, levelrow, metrics, verdicts
from lab.record.level import Level
from lab.record.rows import Row
from lab.record import pinning, runrecord

pytestmark = pytest.mark.unit

# ---- one judge, three callers ------------------------------------------------

WHERE = levelrow.Where(server="A", rep=1, axis="concurrency", value=8, concurrency=8,
                       offered_rps=None, workers=1, backlog=512, duration_s=1, server_cpus=1,
                       client_cpus=1, lab_cpus=2)
LEVEL = Level(transactions=1000, successful=1000, failed=0, availability_pct=100.0,
              elapsed_s=1.0, rate_rps=1000.0, resp_ms=8.0, in_flight=8.0, longest_ms=20.0,
              data_mb=0.1)
MEASURED = levelrow.Measured(server_cpu_s=0.5, rss_end_kb=2048, rss_peak_kb=4096, threads_end=1,
                             threads_peak=1, client_cpu_s=0.2, wall_s=1.0, host_busy_s=0.7,
                             host_steal_s=0.0, sampler_cpu_s=0.01, time_wait=0)


def level(server: str, rates: list[float], bound: bool = False) -> metrics.LevelStats:
    base = levelrow.make_row(dataclasses.replace(WHERE, server=server), LEVEL, MEASURED)
    rows = [dataclasses.replace(base, rep=i + 1, rate_rps=r, client_bound=bound,
                                flags="client-bound" if bound else "")
            for i, r in enumerate(rates)]
    [s] = metrics.level_stats(rows)
    return s


CASES = {      # A's rates, A client-bound, B's rates, B client-bound
    "separated": ([100, 101, 102, 100.5, 101.5], False, [150, 151, 152, 150.5, 151.5], False),
    "separated the other way": ([150, 151, 152, 150.5, 151.5], False,
                                [100, 101, 102, 100.5, 101.5], False),
    "overlapping": ([100, 120, 140, 110, 130], False, [130, 150, 160, 115, 145], False),
    "equal": ([100, 101, 102, 100.5, 101.5], False, [100.2, 101.2, 101.9, 100.7, 101.4], False),
    "the slower side client-bound": ([100, 101, 102, 100.5, 101.5], True,
                                     [150, 151, 152, 150.5, 151.5], False),
    "the faster side client-bound": ([100, 101, 102, 100.5, 101.5], False,
                                     [150, 151, 152, 150.5, 151.5], True),
    "the faster side client-bound, overlapping": ([100, 120, 140, 110, 130], False,
                                                  [130, 150, 160, 115, 145], True),
    "too few starts": ([100, 101, 102], False, [150, 151, 152], False),
}
ORDER = claimsfile.Claim(id="o", study="s", text="A above B", kind="ordering", metric="rps_at",
                     servers=("A", "B"), published=None, accept=None, tolerance="", at=8,
                     requires=("A", "B"), figures="", source="x", date="2026", unavailable={})


@pytest.mark.parametrize("case", CASES)
def test_run_verdicts_compare_and_claims_agree(case: str) -> None:
    ra, ba, rb, bb = CASES[case]
    a, b = level("A", ra, ba), level("B", rb, bb)
    gate = verdicts.judge(verdicts.Sample("A", tuple(ra), ba), verdicts.Sample("B", tuple(rb), bb))
    run = verdicts.verdict(a, b)
    kind, text, _ = diff.judge(a, b)
    ordering = claims.evaluate(ORDER, {"A": [a], "B": [b]}, {"A", "B"})
    # the same words for the same question
    assert run.text == text == gate.text
    assert run.kind == gate.kind.replace("better", "faster")
    if gate.kind in verdicts.RANKED:
        assert kind == ("faster" if gate.winner == "B" else "slower") + \
            ("-at-least" if gate.kind == "better-at-least" else "")
        assert (run.a, run.b) == (gate.winner, gate.loser)
        assert ordering.verdict == (claims.REPRODUCED if gate.winner == "A"
                                    else claims.NOT_REPRODUCED)
    else:
        assert kind == gate.kind
        assert ordering.verdict == claims.INCONCLUSIVE
        if gate.kind in ("equivalent", "undecided"):
            assert ordering.reason == f"not separated: A and B ({gate.text})"
        else:
            assert ordering.reason == gate.text


def test_the_gate_takes_plain_samples_of_a_lower_is_better_figure() -> None:
    cheap = verdicts.Sample("x", (10.0, 11.0, 12.0, 10.5, 11.5))
    dear = verdicts.Sample("y", (20.0, 21.0, 22.0, 20.5, 21.5))
    j = verdicts.judge(dear, cheap, higher_is_better=False, better="costs less than")
    assert (j.kind, j.winner, j.loser) == ("better", "x", "y")
    assert j.percent == pytest.approx(100 * (21 / 11 - 1), abs=1)     # Hodges-Lehmann
    assert j.text.startswith("x costs less than y by 91%")
    # lower is better: a client-bound side is no bound of anything
    bound = dataclasses.replace(cheap, client_bound=True)
    assert verdicts.judge(dear, bound, higher_is_better=False).kind == "not-comparable"
    assert verdicts.judge(verdicts.Sample("x", ()), cheap).kind == "missing"


# ---- the calibration a run uses ------------------------------------------------------

FIXTURE = ROOT / "tests" / "fixtures" / "runs" / "20261123-033407-nginx+paced"


def with_calibration(tmp_path: Path, **changes: object) -> runrecord.RunRecord:
    """The fixture run with a calibration of its own conditions, changed."""
    rec = runrecord.load(FIXTURE)
    m = rec.manifest
    cal = m.calibration
    assert cal is not None
    cal = dataclasses.replace(cal, topology=m.topology, pinning=m.pinning)
    m = dataclasses.replace(m, calibration=dataclasses.replace(cal, **changes))  # type: ignore[arg-type]
    return dataclasses.replace(rec, manifest=m)


def test_a_calibration_is_used_only_where_its_conditions_match(tmp_path: Path) -> None:
    rec = with_calibration(tmp_path)
    a = analysis.analyse(rec)
    assert a.calibration_used and a.capacity
    other = pinning.Pinning(server_cpus="0-1", client_cpus="1")
    for changes, why in ((dict(pinning=other), "calibrated with server CPU 0-1"),
                         (dict(topology="netns (two namespaces)"), "calibrated on topology netns"),
                         (dict(topology=""), "does not record its topology")):
        a = analysis.analyse(with_calibration(tmp_path, **changes))
        assert not a.calibration_used and not a.capacity
        assert why in a.calibration_note
        assert any(a.calibration_note in w.text() for w in a.warnings)


def test_above_the_calibrated_capacity_the_calibration_does_not_hold(tmp_path: Path) -> None:
    rec = with_calibration(tmp_path)
    cal = rec.manifest.calibration
    assert cal is not None
    for lv in cal.clients["siege"].modes["close"].values():
        lv.rate_rps = 10.0                     # far below what the servers did
    a = analysis.analyse(rec)
    assert a.capacity and all(c.kind == "does-not-hold" for c in a.capacity)
    for c in a.capacity:
        assert c.share > 1 and "client-limited" not in c.text
        assert "the calibration does not hold here: run `make calibrate` on a quiet host" \
            in c.text
    assert any("does not hold" in w.text() for w in a.warnings)


def test_above_a_quiet_calibration_the_client_depends_on_the_server(tmp_path: Path) -> None:
    """Measured on a quiet host: siege drove EWS 29% faster than it drove nginx
    at c=8, minutes after calibrating; 'calibrate on a quiet host' was wrong advice."""
    rec = with_calibration(tmp_path)
    cal = rec.manifest.calibration
    assert cal is not None
    for lv in cal.clients["siege"].modes["close"].values():
        lv.rate_rps, lv.host_busy_pct = 10.0, 0.0
    a = analysis.analyse(rec)
    assert a.capacity and all(c.kind == "does-not-hold" for c in a.capacity)
    for c in a.capacity:
        assert analysis.ABOVE_QUIET in c.text and "on a quiet host: run" not in c.text
    assert any(analysis.ABOVE_QUIET in w.text() for w in a.warnings)
    for lv in cal.clients["siege"].modes["close"].values():
        lv.host_busy_pct = metrics.HOST_BUSY_PCT + 1      # a busy calibration: redo it
    assert all(analysis.DOES_NOT_HOLD in c.text for c in analysis.analyse(rec).capacity)


# ---- calibration: a level is saved only where the client was the limit ------------

def cal_row(client_pct: float, other_pct: float = 0.0, steal: float = 0.0,
            failed: int = 0) -> Row:
    host = (client_pct / 100 * 1.0 + 0.5 + other_pct / 100 * 2.0)
    m = dataclasses.replace(MEASURED, client_cpu_s=client_pct / 100, host_busy_s=host,
                            host_steal_s=steal / 100 * 2.0)
    return levelrow.make_row(WHERE, dataclasses.replace(LEVEL, failed=failed), m)


def test_a_calibration_level_is_refused_unless_the_client_was_the_limit() -> None:
    assert metrics.why_not_calibrated(cal_row(95)) is None
    # the case: wrk at 43% CPU on a loaded host measured the host
    busy = metrics.why_not_calibrated(cal_row(43, other_pct=40))
    assert busy is not None and "measured the host" in busy
    idle = metrics.why_not_calibrated(cal_row(43))
    assert idle is not None and "was not the limit" in idle and "43%" in idle
    steal = metrics.why_not_calibrated(cal_row(95, steal=20))
    assert steal is not None and "steal" in steal
    failed = metrics.why_not_calibrated(cal_row(95, failed=3))
    assert failed is not None and "3 requests failed" in failed


def test_a_busy_host_calibration_is_saved_only_as_such() -> None:
    from lab.studies import calibrate
    busy = cal_row(95, other_pct=40)          # client-bound, but the host was busy
    saved, refused = calibrate.levels_of([busy])
    assert not saved and "measured the host" in next(iter(refused.values()))
    saved, refused = calibrate.levels_of([busy], busy_ok=True)
    assert not refused and next(iter(saved.values()))["host_busy_pct"] >= 30
    # busy or not, a level the client did not limit is never the client's capacity
    saved, refused = calibrate.levels_of([cal_row(43, other_pct=40)], busy_ok=True)
    assert not saved and "was not the limit" in next(iter(refused.values()))
