"""lab.studies.reproduce: the plan each study of the real docs/claims.toml produces
(client, connection, levels, SERVER with @N, repetitions, per run), the
user's overrides and QUICK=1, bad input (exit 2, nothing run, no folder),
and the claims table on constructed statistics. The real smoke run of
`make reproduce STUDY=ada-vs-java QUICK=1` is test_e2e's (the session's
quick_study, read there twice)."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from lab.analyse import claimjudge, claims, claimsfile, levelrow, metrics
from lab.studies import reproduce
from lab.record.level import Level
from lab.setup.servers import discover

pytestmark = pytest.mark.unit

# The jersey variants come from the `variants` branch (a manifest declaring
# `<server>.<variant>`). Until it is merged, lab.setup.servers.discover does not
# find them, so the java-containers plan is built here against the lab's
# servers plus these names; test_claims' real-file test fails for them alone.
JERSEY_VARIANTS = {"jersey.undertow", "jersey.jetty", "jersey.tomcat"}
LAB = set(discover(ROOT)) | JERSEY_VARIANTS
ADA_LEVELS = "1 2 3 4 5 6 7 8 9 10 15 20 25 30 35 40 45 50"


def study(sid: str) -> claimsfile.Study:
    return next(s for s in claimsfile.load(reproduce.CLAIMS, LAB, only=sid) if s.id == sid)


# ---------------------------------------------------------------- plans

def test_ada_vs_java_plan_is_the_published_setup_twice() -> None:
    plan = reproduce.make_plan(study("ada-vs-java"), {})
    assert not plan.quick and plan.overrides == {}
    assert reproduce.specs_json(plan) == {
        "aws": "aws@8", "aws@16": "aws@16", "asf": "asf@8", "ews": "ews@1",
        "simple-components": "simple-components@1", "jersey": "jersey@62",
        "ada-mini": "ada-mini@1", "nginx": "nginx@1"}
    common = {"SERVER": "aws@8 aws@16 asf@8 ews@1 simple-components@1 jersey@62 ada-mini@1 "
                        "nginx@1", "KEEPALIVE": "0",
              "CONCURRENCY": ADA_LEVELS, "DURATION": "10s", "WARMUP": "auto",
              "WARMUP_MAX": "60s", "REPEAT": "3"}
    assert [(r.client, r.role) for r in plan.runs] == [("siege", "published client"),
                                                       ("wrk", "second client"),
                                                       ("wrk", reproduce.COST_ROLE),
                                                       ("wrk", reproduce.COST_ROLE)]
    assert plan.runs[0].settings == common | {"CLIENT": "siege"}
    assert plan.runs[1].settings == common | {"CLIENT": "wrk"}


def test_ada_vs_java_throughput_ratios_get_a_duet_each_at_the_published_length() -> None:
    """The two ratios between different servers get a duet of their two
    starts; the claim between worker counts of AWS gets none (it needs
    cores), and neither do the RSS claims."""
    plan = reproduce.make_plan(study("ada-vs-java"), {})
    pairs = [r for r in plan.runs if r.paired]
    pair = {"PAIRED": "duet", "CLIENT": "wrk", "KEEPALIVE": "0", "CONCURRENCY": "5 15 50",
            "DURATION": "10s", "REPEAT": "8"}
    assert [(r.claims, r.settings) for r in pairs] == [
        (("aws-over-grizzly-rps",), pair | {"SERVER": "aws@8 jersey@62"}),
        (("asf-over-aws-rps",), pair | {"SERVER": "asf@8 aws@8"})]
    assert "WARMUP" not in pairs[0].settings          # the lab's auto warm-up
    quick = [r for r in reproduce.make_plan(study("ada-vs-java"), {"QUICK": "1"}).runs
             if r.paired]
    assert [r.settings["REPEAT"] for r in quick] == ["2", "2"]
    assert all(r.settings["CONCURRENCY"] == "5" and r.settings["DURATION"] == "1s"
               for r in quick)
    assert reproduce.plan_json(plan)["runs"][2]["claims"] == ["aws-over-grizzly-rps"]


def test_java_containers_plan_runs_jersey_on_each_container_with_wrk_then_siege() -> None:
    plan = reproduce.make_plan(study("java-containers"), {})
    common = {"SERVER": "jersey@32 jersey.undertow@32 jersey.jetty@32 jersey.tomcat@32 nginx@1",
              "KEEPALIVE": "1", "CONCURRENCY": "128", "DURATION": "900s", "WARMUP": "60s",
              "REPEAT": "5"}
    assert [r.client for r in plan.runs] == ["wrk", "siege", "wrk", "wrk", "wrk"]
    assert plan.runs[0].role.startswith("study's client (published: Gatling")
    assert plan.runs[0].settings == common | {"CLIENT": "wrk"}
    assert plan.runs[1].settings == common | {"CLIENT": "siege"}
    pairs = [r for r in plan.runs if r.paired]      # each container's ratio to Grizzly, at 128
    assert [r.settings["SERVER"] for r in pairs] == [
        "jersey.undertow@32 jersey@32", "jersey.jetty@32 jersey@32", "jersey.tomcat@32 jersey@32"]
    assert {(r.settings["CONCURRENCY"], r.settings["KEEPALIVE"], r.settings["DURATION"])
            for r in pairs} == {("128", "1", "30s")}
    assert not any(s.stand_in for s in plan.study.stands_for)


def test_every_server_a_claim_names_with_at_n_is_loaded() -> None:
    for sid in ("ada-vs-java", "java-containers"):
        plan = reproduce.make_plan(study(sid), {})
        words = plan.runs[0].settings["SERVER"].split()
        for c in plan.study.claims:
            for s in c.servers:
                if claimsfile.spec_of(s).name in LAB:
                    assert str(plan.specs[s]) in words, (sid, s)


def test_quick_is_three_published_levels_short_and_single() -> None:
    plan = reproduce.make_plan(study("ada-vs-java"), {"QUICK": "1"})
    s = plan.runs[0].settings
    # lowest, highest, and 2: the level single-task-flat is judged at
    assert s["CONCURRENCY"] == "1 2 50"
    assert (s["DURATION"], s["REPEAT"], s["WARMUP"], s["PROBE"]) == ("1s", "1", "0", "0")
    assert "WARMUP_MAX" not in s                      # no auto warm-up to cap
    assert plan.quick and plan.overrides == {}
    assert reproduce.make_plan(study("java-containers"), {"QUICK": "1"}
                               ).runs[0].settings["CONCURRENCY"] == "128"


def test_user_settings_override_the_study_and_quick() -> None:
    env = {"QUICK": "1", "REPEAT": "3", "DURATION": "2s", "CONCURRENCY": "1 8",
           "WARMUP_MAX": "30s", "UNRELATED": "x"}
    plan = reproduce.make_plan(study("ada-vs-java"), env)
    for run in plan.runs:
        assert run.settings["REPEAT"] == "3" and run.settings["DURATION"] == "2s"
        assert run.settings["CONCURRENCY"] == "1 8" and run.settings["WARMUP_MAX"] == "30s"
        assert "UNRELATED" not in run.settings
    assert plan.overrides == {"REPEAT": "3", "DURATION": "2s", "CONCURRENCY": "1 8",
                              "WARMUP_MAX": "30s"}
    plain = reproduce.make_plan(study("ada-vs-java"), {"WARMUP": "30s", "QUICK": "0"})
    assert not plain.quick and plain.runs[0].settings["WARMUP"] == "30s"
    assert "WARMUP_MAX" not in plain.runs[0].settings  # the study's cap of its auto warm-up
    capped = reproduce.make_plan(study("ada-vs-java"), {"WARMUP_MAX": "90s"})
    assert capped.runs[0].settings["WARMUP"] == "auto"
    assert capped.runs[0].settings["WARMUP_MAX"] == "90s"


def test_the_estimate_counts_each_start_with_its_warm_up_at_its_cap() -> None:
    """A sweep: servers x repetitions starts, each levels x (DURATION + the
    check slice) + warm-up + START_OVERHEAD_S; WARMUP=auto from its first 8
    slices (low) to its cap (high). A duet: one start pair a repetition."""
    sweep = reproduce.RunPlan("published client", "siege", {
        "SERVER": "aws@8 jersey@62", "CONCURRENCY": "1 2 3", "DURATION": "10s",
        "REPEAT": "3", "WARMUP": "auto", "WARMUP_MAX": "60s"})
    each = 3 * (10 + 1) + reproduce.START_OVERHEAD_S
    assert reproduce.run_estimate(sweep) == reproduce.Estimate(2 * 3 * (each + 8),
                                                               2 * 3 * (each + 60))
    fixed = dataclasses.replace(sweep, settings=sweep.settings | {"WARMUP": "5s"})
    assert reproduce.run_estimate(fixed) == reproduce.Estimate(6 * (each + 5), 6 * (each + 5))
    duet = reproduce.RunPlan(reproduce.COST_ROLE, "wrk", {
        "SERVER": "aws@8 jersey@62", "PAIRED": "duet", "CONCURRENCY": "5 15 50",
        "DURATION": "10s", "REPEAT": "8"})              # WARMUP: the lab's auto, cap 60 s
    assert reproduce.run_estimate(duet) == reproduce.Estimate(8 * (33 + 8 + 4), 8 * (33 + 60 + 4))
    plan = reproduce.make_plan(study("ada-vs-java"), {})
    total = reproduce.plan_estimate(plan)
    assert total == sum((reproduce.run_estimate(r) for r in plan.runs), reproduce.Estimate(0, 0))
    assert reproduce.plan_json(plan)["estimated_s"] == {"low": total.low_s, "high": total.high_s}
    lines = reproduce.estimate_lines(plan)
    assert lines[0].endswith(f"REPEAT=3, WARMUP=auto (cap 60s): estimated "
                             f"{reproduce.run_estimate(plan.runs[0]).text()}")
    assert f"estimated {total.text()}" in lines[-1]
    assert reproduce.hm(40) == "40 s" and reproduce.hm(3 * 3600 + 5 * 60) == "3 h 05 min"


@pytest.mark.parametrize("key", ["SERVER", "CLIENT", "KEEPALIVE", "WORKERS", "PAIRED"])
def test_settings_the_study_owns_are_refused(key: str) -> None:
    with pytest.raises(reproduce.ReproduceError, match=f"{key} is set by the study"):
        reproduce.make_plan(study("ada-vs-java"), {key: "1"})
    reproduce.make_plan(study("ada-vs-java"), {key: ""})     # empty: not given


# ---------------------------------------------------------------- bad input

def make_reproduce(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")}
    env["RESULTS"] = str(tmp / "results")
    return subprocess.run(["make", "-s", "--no-print-directory", "reproduce", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.fault
@pytest.mark.parametrize("args, message", [
    (("STUDY=nope",), "unknown study 'nope'; known: ada-vs-java, java-containers"),
    ((), "give STUDY=<id>; known studies: ada-vs-java, java-containers"),
    (("STUDY=ada-vs-java", "CLIENT=wrk"), "CLIENT is set by the study"),
])
def test_bad_input_exits_2_before_anything_runs(tmp_path: Path, args: tuple[str, ...],
                                                message: str) -> None:
    r = make_reproduce(tmp_path, *args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert "run folder" not in r.stderr and "plan:" not in r.stderr
    assert not (tmp_path / "results").exists()


def test_a_bad_warm_up_in_the_claims_file_exits_2_with_nothing_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "claims.toml"
    bad.write_text(reproduce.CLAIMS.read_text().replace('warmup_s = "auto"', 'warmup_s = "soon"'))
    monkeypatch.setattr(reproduce, "CLAIMS", bad)
    env = {"RESULTS": str(tmp_path / "results"), "PATH": os.environ.get("PATH", "")}
    assert reproduce.main("ada-vs-java", env) == 2
    err = capsys.readouterr().err
    assert "`warmup_s` must be \"auto\" or a whole number of seconds" in err and "'soon'" in err
    assert not (tmp_path / "results").exists()


def test_lab_cli_names_the_step() -> None:
    r = subprocess.run([sys.executable, "-m", "lab", "reproduce", "nope"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "unknown study 'nope'" in r.stderr


# ---------------------------------------------------------------- the table

WHERE = levelrow.Where(server="x", rep=1, axis="concurrency", value=1, concurrency=1,
                       offered_rps=None, workers=1, backlog=512, duration_s=10,
                       server_cpus=1, client_cpus=1, lab_cpus=2)
LEVEL = Level(transactions=10000, successful=10000, failed=0, availability_pct=100.0,
              elapsed_s=10.0, rate_rps=1000.0, resp_ms=1.0, in_flight=1.0, longest_ms=2.0,
              data_mb=0.3)
MEASURED = levelrow.Measured(server_cpu_s=5.0, rss_end_kb=4096, rss_peak_kb=4096, threads_end=3,
                             threads_peak=3, client_cpu_s=2.0, wall_s=10.0, host_busy_s=7.0,
                             host_steal_s=0.0, sampler_cpu_s=0.0, time_wait=0)


def fake_stats(rates: dict[str, float], bound: bool) -> dict[str, list[metrics.LevelStats]]:
    out = {}
    for name, rate in rates.items():
        rows = []
        for level in (1, 2, 50):
            base = levelrow.make_row(dataclasses.replace(WHERE, server=name, value=level,
                                                         concurrency=level), LEVEL, MEASURED)
            rows += [dataclasses.replace(base, rep=i, rate_rps=rate * (1 + i / 100),
                                         client_bound=bound,
                                         flags="client-bound" if bound else "")
                     for i in range(1, 4)]
        out[name] = metrics.level_stats(rows)
    return out


def test_claims_table_has_a_row_per_claim_and_a_verdict_per_client(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = reproduce.make_plan(study("ada-vs-java"), {})
    rates = {"aws@8": 1070.0, "aws@16": 1000.0, "asf@8": 1030.0, "ews@1": 800.0,
             "simple-components@1": 900.0, "jersey@62": 1000.0, "ada-mini@1": 800.0,
             "nginx@1": 5000.0}
    by_folder = {tmp_path / "siege": fake_stats(rates, bound=True),
                 tmp_path / "wrk": fake_stats(rates, bound=False)}
    for f in by_folder:
        f.mkdir()
        (f / "results.csv").write_text("")
    monkeypatch.setattr(reproduce, "run_stats", lambda run: by_folder[run])
    judged = [reproduce.judge(plan, reproduce.RunDone(run, 0, tmp_path / run.client), LAB)
              for run in plan.runs if not run.paired]
    text = reproduce.render(plan, tmp_path, judged)
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == len(plan.study.claims) == 8
    siege = {r.claim.id: r for r in judged[0].results}
    wrk = {r.claim.id: r for r in judged[1].results}
    assert siege["aws-over-grizzly-rps"].reason.startswith("not comparable (client-bound")
    assert wrk["aws-over-grizzly-rps"].verdict == claims.REPRODUCED
    assert wrk["asf-over-aws-rps"].verdict == claims.REPRODUCED          # 1030 / 1070
    assert wrk["single-task-flat"].verdict == claims.REPRODUCED          # EWS itself, flat
    assert "stand-in" not in wrk["single-task-flat"].reason
    assert wrk["aws-more-tasks-not-faster"].verdict == claims.REPRODUCED
    assert "1.07 [1.05–1.09]" in rows[0] and "1.07 (±15%); Stéphane Carrez" in rows[0]
    # Siege was the limit, wrk decided: wrk speaks
    assert rows[0].endswith("| reproduced (the other client was the limit) |")
    assert "[report.html](wrk/report.html)" in text
    data = reproduce.to_json(plan, judged)
    assert [c["by_client"]["wrk"]["verdict"] for c in data["claims"]][0] == claims.REPRODUCED


def test_overall_says_whether_the_client_decides() -> None:
    c = study("ada-vs-java").claims[0]
    ok, no, maybe = (claims.ClaimResult(c, v, "") for v in
                     (claims.REPRODUCED, claims.NOT_REPRODUCED, claims.INCONCLUSIVE))
    assert claimjudge.overall([ok, ok]).endswith("a property of the servers")
    assert claimjudge.overall([ok, no]) == "depends on the client"
    assert claimjudge.overall([no, no]) == "not reproduced with either client"
    assert claimjudge.overall([maybe, ok]).startswith("open")
    assert claimjudge.overall([no]) == claims.NOT_REPRODUCED
    # a client that was the limit, or did not measure the claim, yields to one that decided
    bound = dataclasses.replace(maybe, client_limited=True)
    gone = claims.ClaimResult(c, claims.INCONCLUSIVE, "not measured: aws@16")
    assert claimjudge.overall([bound, ok]) == "reproduced (the other client was the limit)"
    assert claimjudge.overall([ok, gone]) == "reproduced (not measured with the other client)"
    assert claimjudge.overall([bound, gone]).startswith("open")


# ---------------------------------------------------------------- a real smoke run


def test_a_variant_of_a_java_server_is_a_java_server_in_the_reasons() -> None:
    """jersey.jetty runs a JVM as jersey does: an RSS claim naming it keeps the
    JDK and GC row and is offered the JDK 8 collector, as one naming jersey is
    (the server behind a variant: ServerSpec.family, never a split by hand)."""
    from lab.analyse import claimreasons
    st = study("ada-vs-java")
    rss = next(c for c in st.claims if c.id == "grizzly-over-aws-rss")
    for java, started in (("jersey", "jersey@62"), ("jersey.jetty", "jersey.jetty")):
        c = dataclasses.replace(rss, servers=tuple(java if s == "jersey" else s
                                                   for s in rss.servers))
        said = claimreasons.variants(c, st, reproduce.server_specs(st))
        assert any(f"SERVER={started} JAVA_OPTS='-XX:+UseParallelGC'" in v for v in said), said
