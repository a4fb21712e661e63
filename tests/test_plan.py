"""A run's rule and plan, one typed record (lab.setup.plan.RunPlan; issue 53):
made once in setup from the checked settings, written into manifest.json
(`run_plan`) and read back typed (Manifest.planned), the run's Reproduce line
built from it. For every kind of run (sequential, REPEAT=auto, paired duet
and rmit, a knob axis, an open-loop rate, make cost, a profiled run, a
rerun) the line, read back through the lab's own settings parser, gives
the plan the manifest records. No load: each run's manifest is made through
the setup code path the step takes."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from lab.analyse import analysis, policy
from lab.cli.common import recorded_settings
from lab.cli.run import rerun_settings
from lab.record import checked, files, manifest
from lab.setup import stepcheck
from lab.setup.fromenv import from_env
from lab.setup.params import SETTINGS, ConfigError, Params, Repeat
from lab.setup.plan import RunPlan
from lab.studies import cost
from replan import line_settings, plan_of_line

pytestmark = pytest.mark.unit

FIXTURES = ROOT / "tests" / "fixtures"

CLIENTS = {"wrk": "concurrency", "siege": "concurrency", "vegeta": "rate"}
KNOWN = ["a", "b"]
CPUS = {0, 1}

KINDS: dict[str, dict[str, str]] = {
    "sequential": dict(SERVER="a b", CLIENT="siege", CONCURRENCY="1 4", REPEAT="3",
                       DURATION="2s", WARMUP="1s"),
    "repeat-auto": dict(SERVER="a b", CLIENT="wrk", REPEAT="auto", REPEAT_MIN="4",
                        REPEAT_MAX="7", WARMUP="auto", WARMUP_MAX="6s"),
    # the paired defaults of REPEAT=auto (10 to 40 pairs), not the registry's
    "duet-auto": dict(SERVER="a b", CLIENT="wrk", PAIRED="duet", REPEAT="auto",
                      CONCURRENCY="1 4", DURATION="3s"),
    "rmit": dict(SERVER="a b", CLIENT="wrk", PAIRED=" rmit ", REPEAT="4", ALPHA="5%",
                 MIN_EFFECT="2.5"),
    "knob": dict(SERVER="a", CLIENT="wrk", AXIS="workers", VALUES="1 2 4", CONCURRENCY="8"),
    "rate": dict(SERVER="a b", CLIENT="vegeta", RATE="100 200", ALPHA="0.5"),
}


def given(monkeypatch: pytest.MonkeyPatch, settings: dict[str, str]) -> dict[str, str]:
    """This process's environment with exactly `settings` of the lab's."""
    for name in [*SETTINGS, "LAB_SERVER_PATH", "MAKEFLAGS"]:
        monkeypatch.delenv(name, raising=False)
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    return dict(settings)


def bench_run(tmp: Path, params: Params, name: str = "run") -> Path:
    """A bench run's manifest as lab new-run writes it (lab.cli.run.start_run):
    its settings, its Reproduce line and its plan, from the checked Params."""
    run = tmp / name
    run.mkdir()
    settings = recorded_settings(params)
    manifest.write_manifest(run, manifest.Manifest(
        run_id=run.name, reproduce=stepcheck.reproduce_line("bench", settings),
        settings=settings, run_plan=RunPlan.of(params),
        params=manifest.RunParams.parse(checked.obj(params.to_json(), run / manifest.MANIFEST,
                                                    "params")),
        client=manifest.ClientInfo(tool=params.client)))
    return run


@pytest.mark.parametrize("kind", KINDS)
def test_the_reproduce_line_gives_the_plan_the_manifest_records(
        kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = given(monkeypatch, KINDS[kind])
    params = from_env(env, KNOWN, CLIENTS, available_cpus=CPUS)
    run = bench_run(tmp_path, params)
    raw = json.loads((run / manifest.MANIFEST).read_text())
    assert raw["run_plan"]["paired"] == params.paired
    m = manifest.read_manifest(run)
    assert m.planned == RunPlan.of(params)
    assert plan_of_line(m.reproduce, KNOWN, CLIENTS, CPUS) == m.planned
    # what reads the run takes the rule and plan from the record
    assert analysis.rule_of(m) == (params.alpha, params.min_effect_pct)
    assert analysis.paired_mode(m) == params.paired
    assert analysis.looks_of(m) == policy.looks(
        params.repeat.auto, params.repeat.least, params.repeat.most, bool(params.paired),
        levels=len(params.verdict_at or params.values), alpha=params.alpha)


def test_each_kind_plans_what_its_settings_say(monkeypatch: pytest.MonkeyPatch) -> None:
    def plan(kind: str) -> RunPlan:
        return RunPlan.of(from_env(given(monkeypatch, KINDS[kind]), KNOWN, CLIENTS,
                                   available_cpus=CPUS))
    assert plan("sequential").repeat == Repeat(3, 3) and plan("sequential").duration_s == 2
    assert plan("repeat-auto").repeat == Repeat(4, 7, True) and plan("repeat-auto").warmup_auto
    duet = plan("duet-auto")
    assert (duet.design, duet.repeat, duet.load) == ("duet", Repeat(10, 40, True), (1, 4))
    rmit = plan("rmit")
    assert (rmit.design, rmit.alpha, rmit.min_effect_pct) == ("rmit", 0.05, 2.5)
    knob = plan("knob")
    assert (knob.axis, knob.values, knob.load) == ("workers", (1, 2, 4), (8,))
    rate = plan("rate")
    assert (rate.load_axis, rate.values, rate.alpha) == ("rate", (100, 200), 0.005)
    assert plan("sequential").alpha == policy.ALPHA      # not given: the registry's default


def test_a_paired_auto_line_says_its_own_defaults(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    """The bug of issue 53: the line must not leave REPEAT_MIN and REPEAT_MAX
    to the registry's defaults (5 to 10), which would run another experiment."""
    env = given(monkeypatch, KINDS["duet-auto"])
    m = manifest.read_manifest(bench_run(tmp_path, from_env(env, KNOWN, CLIENTS,
                                                               available_cpus=CPUS)))
    _, said = line_settings(m.reproduce)
    assert (said["REPEAT_MIN"], said["REPEAT_MAX"], said["PAIRED"]) == ("10", "40", "duet")
    assert from_env({k: v for k, v in said.items() if k != "REPEAT_MAX"}, KNOWN, CLIENTS,
                    available_cpus=CPUS).repeat == Repeat(10, 40, True)


def test_a_fixed_repeat_line_leaves_out_the_bounds_of_auto(monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    """REPEAT=3 runs three starts whatever REPEAT_MIN and REPEAT_MAX say: the
    line does not carry them (they read as a setting that mattered)."""
    env = given(monkeypatch, {**KINDS["sequential"], "REPEAT_MAX": "9"})
    m = manifest.read_manifest(bench_run(tmp_path, from_env(env, KNOWN, CLIENTS,
                                                               available_cpus=CPUS)))
    _, said = line_settings(m.reproduce)
    assert said["REPEAT"] == "3" and not {"REPEAT_MIN", "REPEAT_MAX"} & set(said), said


def test_a_cost_run_s_line_gives_its_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    env = given(monkeypatch, dict(SERVER="a b", COST_LEVELS="1 4", COST_REQUESTS="100 300",
                                  REPEAT="2"))
    params = from_env(env, KNOWN, CLIENTS, available_cpus=CPUS)
    plan = cost.planned(env, params)
    assert plan == RunPlan(repeat=Repeat(2, 2), values=(1, 4), load=(1, 4), kind="cost")
    line = stepcheck.reproduce_line("cost", cost.recorded_settings(env, plan))
    assert plan_of_line(line, KNOWN, CLIENTS, CPUS) == plan
    # REPEAT not given: make cost's own count, said on the line
    alone = given(monkeypatch, dict(SERVER="a"))
    own = cost.planned(alone, from_env(alone, KNOWN, CLIENTS, available_cpus=CPUS))
    assert own.repeat.least == cost.DEFAULT_REPEAT
    again = stepcheck.reproduce_line("cost", cost.recorded_settings(alone, own))
    assert plan_of_line(again, KNOWN, CLIENTS, CPUS) == own


@pytest.mark.parametrize("kind", ["repeat-auto", "duet-auto", "knob"])
def test_a_rerun_runs_the_recorded_plan(kind: str, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """make rerun gives the recorded settings to a new bench run: its plan is
    the run's; a setting given now changes that one thing, and the new run's
    line says it."""
    first = manifest.read_manifest(bench_run(tmp_path, from_env(
        given(monkeypatch, KINDS[kind]), KNOWN, CLIENTS, available_cpus=CPUS)))
    settings, overridden = rerun_settings(first.settings, {}, [])
    assert overridden == {}
    again = from_env(given(monkeypatch, settings), KNOWN, CLIENTS, available_cpus=CPUS)
    assert RunPlan.of(again) == first.planned
    settings, overridden = rerun_settings(first.settings, {"DURATION": "9s"}, ["DURATION"])
    changed = from_env(given(monkeypatch, settings), KNOWN, CLIENTS, available_cpus=CPUS)
    second = manifest.read_manifest(bench_run(tmp_path, changed, "rerun"))
    assert second.planned.duration_s == 9 and second.planned.repeat == first.planned.repeat
    assert plan_of_line(second.reproduce, KNOWN, CLIENTS, CPUS) == second.planned


def test_a_profiled_run_keeps_its_plan_and_make_profile_takes_its_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """make profile repeats its run's settings: those of the Reproduce line
    are the run's own (not refused); the problem it adds leaves the plan."""
    run = bench_run(tmp_path, from_env(given(monkeypatch, KINDS["duet-auto"]), KNOWN,
                                       CLIENTS, available_cpus=CPUS))
    before = manifest.read_manifest(run)
    _, line = line_settings(before.reproduce)
    assert stepcheck.check_step("profile", line, recorded=before.settings) == []
    with pytest.raises(ConfigError, match="PAIRED=rmit"):
        stepcheck.check_step("profile", {**line, "PAIRED": "rmit"}, recorded=before.settings)
    manifest.add_problem(run, "profile: perf is not installed")
    after = manifest.read_manifest(run)
    assert after.planned == before.planned and after.reproduce == before.reproduce


@pytest.mark.parametrize("fixture", sorted(p.name for p in (FIXTURES / "runs").iterdir()
                                           if (p / "manifest.json").exists()))
def test_an_older_manifest_reads_as_the_plan_its_params_say(fixture: str,
                                                            tmp_path: Path) -> None:
    """A run made before run_plan was recorded: its plan built once, in
    record, from params (the rule's defaults where it has none); written
    back (a later step's update), the record is kept as read."""
    run = tmp_path / fixture
    shutil.copytree(FIXTURES / "runs" / fixture, run)
    assert "run_plan" not in json.loads((run / manifest.MANIFEST).read_text())
    m = manifest.read_manifest(run)
    p = m.params
    assert (m.planned.repeat, m.planned.design, m.planned.axis, m.planned.duration_s) == \
        (p.repeat, p.paired or "", p.axis, p.duration_s)
    recorded = p.extra.get("alpha")
    assert m.planned.alpha == (recorded if isinstance(recorded, float) else policy.ALPHA)
    manifest.add_problem(run, "a later step's problem")
    assert manifest.read_manifest(run).planned == m.planned
    assert "run_plan" in json.loads((run / manifest.MANIFEST).read_text())


@pytest.mark.parametrize("key,value,said", [("paired", "trio", "paired"), ("alpha", 5, "alpha"),
                                            ("load_axis", "workers", "load_axis"),
                                            ("repeat", "auto", "repeat")])
def test_a_run_plan_that_is_not_one_is_named_not_a_traceback(
        key: str, value: object, said: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    run = bench_run(tmp_path, from_env(given(monkeypatch, KINDS["rmit"]), KNOWN, CLIENTS,
                                       available_cpus=CPUS))
    data = json.loads((run / manifest.MANIFEST).read_text())
    data["run_plan"][key] = value
    (run / manifest.MANIFEST).write_text(json.dumps(data))
    with pytest.raises(files.RecordError, match=said):
        manifest.read_manifest(run)


def test_a_duet_over_two_levels_looks_first_where_each_level_can_decide(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.analyse import nextstarts
    from lab.cli import prepare
    params = from_env(given(monkeypatch, KINDS["duet-auto"]), KNOWN, CLIENTS, available_cpus=CPUS)
    line = prepare.plan(params, servers=2)
    assert "REPEAT=auto: 11 start pairs" in line, line
    assert "looked at after 11, 16, 23, 33, 40 pairs" in line, line
    m = manifest.read_manifest(bench_run(tmp_path, params))
    assert analysis.looks_of(m).points() == [11, 16, 23, 33, 40]
    assert nextstarts.minimum(m) == 11            # no pair count before it is looked at


def test_the_budget_of_an_auto_warm_up_gives_both_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.cli import prepare
    duet = {**KINDS["duet-auto"], "MIN_EFFECT": "3%"}
    auto = from_env(given(monkeypatch, {**duet, "WARMUP": "auto", "WARMUP_MAX": "60s"}),
                    KNOWN, CLIENTS, available_cpus=CPUS)
    said = prepare.budget(auto)
    # two levels of 3 s and their 1 s checks, 4 s a pair, and 8 s (8 slices of 1 s) or 60 s
    assert said.startswith("about 13 min at 20 s a pair"), said
    assert "up to 48 min (72 s a pair) where every warm-up runs to its WARMUP_MAX cap" in said
    fixed = from_env(given(monkeypatch, {**duet, "WARMUP": "5s"}), KNOWN, CLIENTS,
                     available_cpus=CPUS)
    assert prepare.budget(fixed) == "about 11 min at 17 s a pair"
