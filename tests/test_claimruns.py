"""`make claims` (lab.studies.claimruns) and every claim's reason (lab.analyse.claimreasons), on
run folders made from a real fixture run (tests/claimfakes.py): bad input
exits 2 and writes nothing; a run's conditions against the study's setup
(blocking or noted); parts joined across runs only when their conditions
match; the three reasons and the variants; make reproduce's output carries
them too."""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
from pathlib import Path

import pytest

from claimfakes import FIXTURE, fake_duet, fake_run
from conftest import ROOT
from lab.studies import claimruns, reproduce
from lab.analyse import claimjudge, claims, claimsfile, claimreasons
from lab.present import claimsmd
from lab.setup.servers import discover
from lab.record import manifest

pytestmark = pytest.mark.fault

LAB = set(discover(ROOT))


def study() -> claimsfile.Study:
    return next(s for s in claimsfile.load(reproduce.CLAIMS, LAB, only="ada-vs-java")
                if s.id == "ada-vs-java")


def judge(*folders: Path) -> dict[str, claimjudge.Judged]:
    st = study()
    runs = [claimruns.open_run(f) for f in folders]
    judged, _ = claimruns.judge_all(st, runs, reproduce.server_specs(st), LAB)
    return {j.result.claim.id: j for j in judged}


def make_claims(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("STUDY", "RUNS", "MAKEFLAGS")}
    env["RESULTS"] = str(tmp / "results")
    return subprocess.run(["make", "-s", "--no-print-directory", "claims", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)


# ---------------------------------------------------------------- bad input

def test_bad_input_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "r", {"nginx": "aws@8"})
    cases = [
        ((f"RUNS={run}",), "give STUDY=<id>"),
        (("STUDY=ada-vs-java",), 'give RUNS="results/<run> ..."'),
        (("STUDY=nope", f"RUNS={run}"), "unknown study 'nope'"),
        (("STUDY=ada-vs-java", f"RUNS={ROOT / 'docs'}"), "not a run folder"),
        (("STUDY=ada-vs-java", f"RUNS={tmp_path / 'gone'}"), "no such folder"),
        (("STUDY=ada-vs-java", f"RUNS={run}", "CLIENT=wrk"), "CLIENT=wrk is not used by make claims"),
    ]
    for args, message in cases:
        r = make_claims(tmp_path, *args)
        assert r.returncode == 2, (args, r.stderr)
        assert message in r.stderr, (args, r.stderr)
    assert not (tmp_path / "results").exists()


def test_a_run_still_running_is_refused(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "r", {"nginx": "aws@8"})
    (run / "lock").write_text("held by run-benchmark.sh (pid 1)\n")
    holder = subprocess.Popen(["flock", str(run / "lock"), "-c", "echo held; read x"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        r = make_claims(tmp_path, "STUDY=ada-vs-java", f"RUNS={run}")
        assert r.returncode == 2 and "still running" in r.stderr, r.stderr
        assert not (tmp_path / "results").exists()
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)
    fd = os.open(run / "lock", os.O_RDONLY)     # released: the run can be judged now
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.close(fd)


# ---------------------------------------------------------------- conditions

@pytest.mark.unit
def test_one_run_judges_its_claims_with_the_differences_noted(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "a", {"nginx": "aws@8", "paced": "jersey@62"})
    got = judge(run)
    j = got["aws-over-grizzly-rps"]
    assert j.runs == (run,)
    assert j.result.measured is not None            # judged on the run's figures
    assert any("2 of the study's 18 levels" in n for n in j.notes)
    assert any("1s per level, the study's is 10s" in n for n in j.notes)
    assert "ews" not in {claimsfile.spec_of(s).name for c in got.values() for s in c.result.claim.servers
                         if c.result.verdict == claims.REPRODUCED}
    assert got["aws-over-ews-rss"].result.reason.startswith("not measured: ews")
    assert got["aws-over-ews-rss"].why == ()     # nothing to explain: not measured
    flat = got["single-task-flat"]                  # no run holds ews: listed, not judged
    assert flat.result.verdict == claims.INCONCLUSIVE and flat.runs == ()
    assert flat.result.reason == "not measured: no run holds ews@1"


@pytest.mark.unit
def test_another_connection_mode_is_not_judged(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "a", {"nginx": "aws@8", "paced": "jersey@62"}, keepalive=True)
    j = judge(run)["aws-over-grizzly-rps"]
    assert j.result.verdict == claims.INCONCLUSIVE
    assert "not judged" in j.result.reason and "connection keep-alive" in j.result.reason
    assert j.result.measured is None


@pytest.mark.unit
def test_another_worker_count_is_not_the_study_s_server(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "a", {"nginx": "aws@4", "paced": "jersey@62"})
    j = judge(run)["aws-over-grizzly-rps"]
    assert j.result.verdict == claims.INCONCLUSIVE
    assert "aws@4 started, the study's is aws@8" in j.result.reason


@pytest.mark.unit
def test_a_plain_name_with_the_study_s_workers_counts(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "a", {"nginx": "aws", "paced": "jersey@62"}, workers={"aws": 8})
    assert judge(run)["aws-over-grizzly-rps"].result.measured is not None


@pytest.mark.unit
def test_variants_are_noted_shared_cpu_and_java_opts(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "a", {"nginx": "aws@8", "paced": "jersey@62"},
                   server_cpus="0-1", java_opts="-XX:+UseParallelGC")
    j = judge(run)["grizzly-over-aws-rss"]
    assert any("shares the client's CPU 1" in n for n in j.notes)
    assert any("variant JAVA_OPTS=-XX:+UseParallelGC" in n for n in j.notes)
    table = "\n".join(claimsmd.conditions_table(study(), manifest.read_manifest(run)))
    assert "8 hardware threads" in table and "2 CPUs (0-1) (shares the client's CPU)" in table
    assert "JAVA_OPTS `-XX:+UseParallelGC` (a variant)" in table


# ---------------------------------------------------------------- parts

@pytest.mark.unit
def test_parts_are_joined_when_their_conditions_match(tmp_path: Path) -> None:
    a = fake_run(tmp_path / "a", {"nginx": "aws@8"})
    b = fake_run(tmp_path / "b", {"paced": "jersey@62"})
    j = judge(a, b)["aws-over-grizzly-rps"]
    assert j.result.measured is not None
    assert set(j.runs) == {a, b}
    assert "judged across runs a, b (their conditions match)" in j.result.reason


@pytest.mark.unit
def test_parts_are_not_joined_when_their_conditions_differ(tmp_path: Path) -> None:
    a = fake_run(tmp_path / "a", {"nginx": "aws@8"})
    b = fake_run(tmp_path / "b", {"paced": "jersey@62"}, server_cpus="0-1")
    j = judge(a, b)["aws-over-grizzly-rps"]
    assert j.result.verdict == claims.INCONCLUSIVE and j.result.measured is None
    assert "conditions differ" in j.result.reason and "server CPU 0 against 0-1" in j.result.reason


@pytest.mark.unit
def test_each_client_is_judged_on_its_own_runs(tmp_path: Path) -> None:
    a = fake_run(tmp_path / "a", {"nginx": "aws@8", "paced": "jersey@62"})
    b = fake_run(tmp_path / "b", {"nginx": "aws@8", "paced": "jersey@62"}, tool="wrk")
    st = study()
    judged, checks = claimruns.judge_all(st, [claimruns.open_run(a), claimruns.open_run(b)],
                                         reproduce.server_specs(st), LAB)
    rps = [j for j in judged if j.result.claim.id == "aws-over-grizzly-rps"]
    assert [(j.client, j.runs) for j in rps] == [("siege", (a,)), ("wrk", (b,))]
    assert any("client wrk, the study's is siege" in n for n in checks[b].noted)


# ---------------------------------------------------------------- reasons

@pytest.mark.unit
def test_reasons_are_measured_from_the_record(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "a", {"nginx": "aws@8", "paced": "jersey@62"})
    j = judge(run)["aws-over-grizzly-rps"]
    assert j.result.verdict != claims.REPRODUCED
    client, cond, noise = j.why
    stats = claimruns.open_run(run).stats
    for name, key in (("aws", "aws@8"), ("jersey", "jersey@62")):
        bound = sum(s.client_bound for s in stats[key])
        assert f"{name} {bound} of {len(stats[key])}" in client
    assert ("does not hold" in client) == (not any(s.client_bound for k in ("aws@8", "jersey@62")
                                                   for s in stats[k]))
    assert "8 hardware threads" in cond and "server pinned to 1 CPU (0)" in cond
    aws, jersey = (s.rate.median for k in ("aws@8", "jersey@62")
                   for s in [max(stats[k], key=lambda s: s.rate.median)])
    assert f"{aws:,.0f}" in noise and f"{jersey:,.0f}" in noise
    assert ("are separated" in noise) == ("does not hold" in noise)


@pytest.mark.unit
def test_the_client_reason_reads_the_calibration_when_it_applies(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "a", {"nginx": "aws@8", "paced": "jersey@62"})
    m = json.loads((run / "manifest.json").read_text())
    m["calibration"]["topology"] = m["topology"]          # as a current lab records it
    (run / "manifest.json").write_text(json.dumps(m))
    j = judge(run)["aws-over-grizzly-rps"]
    cal = manifest.read_manifest(run).calibration
    assert cal is not None
    rate = cal.clients["siege"].modes["close"]
    assert "siege drives" in j.why[0]
    assert any(f"{r.rate_rps / 1000:.1f} k req/s" in j.why[0] for r in rate.values())


@pytest.mark.unit
def test_noise_overlap_is_said_when_the_spreads_overlap(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "a", {"nginx": "aws@8", "paced": "aws@16"})
    stats = claimruns.open_run(run).stats
    c = next(c for c in study().claims if c.id == "aws-more-tasks-not-faster")
    same = {"aws@16": stats["aws@8"], "aws": stats["aws@8"]}
    assert "the noise: holds" in claimreasons.noise_reason(c, same)
    apart = {"aws@16": stats["aws@16"], "aws": stats["aws@8"]}
    a, b = (claims.figure(c, apart[x], x) for x in ("aws@16", "aws"))
    assert a is not None and b is not None
    overlap = a.lo <= b.hi and b.lo <= a.hi
    assert ("the noise: holds" in claimreasons.noise_reason(c, apart)) == overlap


@pytest.mark.unit
def test_the_rps_claim_prints_its_two_host_command() -> None:
    st = study()
    c = next(c for c in st.claims if c.id == "aws-over-grizzly-rps")
    said = claimreasons.variants(c, st, reproduce.server_specs(st))
    two = next(v for v in said if v.startswith("two hosts"))
    assert "TOPOLOGY=ssh" in two and "SERVER='aws@8 jersey@62'" in two and "CLIENT=siege" in two
    assert "CONCURRENCY='1 2 3 4 5 6 7 8 9 10 15 20 25 30 35 40 45 50'" in two
    assert any("SERVER_CPUS=0-1" in v for v in said)
    rss = next(c for c in st.claims if c.id == "grizzly-over-aws-rss")
    assert any("JAVA_OPTS='-XX:+UseParallelGC'" in v
               for v in claimreasons.variants(rss, st, reproduce.server_specs(st)))


# ---------------------------------------------------------------- end to end

def test_make_claims_writes_its_folder_and_prints_the_reasons(tmp_path: Path) -> None:
    a = fake_run(tmp_path / "a", {"nginx": "aws@8"})
    b = fake_run(tmp_path / "b", {"paced": "jersey@62"})
    r = make_claims(tmp_path, "STUDY=ada-vs-java", f"RUNS={a} {b}")
    assert r.returncode == 0, r.stderr
    [out] = [p for p in (tmp_path / "results").iterdir() if p.is_dir()]
    assert out.name.startswith("claims-ada-vs-java-")
    text = (out / "claims.md").read_text()
    assert text in r.stdout
    assert "## Why not reproduced" in text and "## Conditions, published against here" in text
    data = json.loads((out / "claims.json").read_text())
    assert {x["folder"] for x in data["runs"]} == {str(a), str(b)}
    assert (FIXTURE / "manifest.json").exists()            # the fixture is untouched
    assert sorted(p.name for p in a.iterdir()) == ["manifest.json", "results.csv"]


@pytest.mark.unit
def test_make_reproduce_output_carries_the_reasons(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "a", {"nginx": "aws@8", "paced": "jersey@62"})
    st = study()
    plan = reproduce.make_plan(st, {})
    done = reproduce.RunDone(plan.runs[0], 0, run)
    judged = [reproduce.judge(plan, done, LAB)]
    text = reproduce.render(plan, tmp_path, judged)
    assert "## Why not reproduced" in text
    assert "the client was the limit" in text and "8 hardware threads" in text
    assert "TOPOLOGY=ssh" in text


@pytest.mark.unit
@pytest.mark.parametrize("word", ["RUNS"])
def test_runs_is_a_make_variable_not_a_misspelt_setting(word: str) -> None:
    from lab.setup.makeflags import misspelt
    from lab.setup.params import MAKE_VARIABLES
    assert word in MAKE_VARIABLES and not misspelt([word])


@pytest.mark.real_server
@pytest.mark.quiet
def test_two_tiny_real_parts_are_judged_together(tmp_path: Path) -> None:
    """aws@8 in one run and ews in another (siege, connection close, 2 levels,
    1 s, one repetition): make claims joins them for aws-over-ews-rss, and no
    process is left behind."""
    from conftest import bench, free_port, lab_env, leftovers, run_folders
    for server in ("aws@8", "ews"):
        env = lab_env(tmp_path, SERVER=server, CLIENT="siege", KEEPALIVE="0",
                      CONCURRENCY="1 2", DURATION="1s", WARMUP="0", REPEAT="1",
                      PORT=str(free_port()))
        done = bench(env, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    a, b = run_folders(tmp_path)
    assert not leftovers(a) and not leftovers(b)
    r = make_claims(tmp_path, "STUDY=ada-vs-java", f"RUNS={a} {b}")
    assert r.returncode == 0, r.stderr
    data = json.loads(next((tmp_path / "results").glob("claims-*/claims.json")).read_text())
    [rss] = next(c for c in data["claims"] if c["id"] == "aws-over-ews-rss")["by_client"].values()
    assert rss["measured"] is not None and set(rss["runs"]) == {str(a), str(b)}
    assert "judged across runs" in rss["reason"]
    assert any("1 repetition(s)" in n for n in rss["noted"])


@pytest.mark.unit
def test_a_reproduce_folder_stands_for_its_runs(tmp_path: Path) -> None:
    a = fake_run(tmp_path / "a", {"nginx": "aws@8", "paced": "jersey@62"})
    b = fake_run(tmp_path / "b", {"nginx": "aws@8", "paced": "jersey@62"}, tool="wrk")
    rep = tmp_path / "reproduce-ada-vs-java-1"
    rep.mkdir()
    (rep / "claims.json").write_text(json.dumps({"runs": [{"folder": str(a)},
                                                          {"folder": str(b)}]}))
    assert claimruns.expand([str(rep)]) == [a, b]
    (rep / "claims.json").write_text(json.dumps({"runs": []}))
    with pytest.raises(claimruns.BadInput, match="without run folders"):
        claimruns.expand([str(rep)])


@pytest.mark.unit
def test_the_jvm_row_reads_the_java_server_s_facts(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "a", {"nginx": "aws@8", "paced": "jersey@62"},
                   java_opts="-XX:+UseParallelGC")
    m = json.loads((run / "manifest.json").read_text())
    m["servers"]["jersey@62"]["facts"] = {"java_version": "17.0.1", "gc": "ParallelGC",
                                          "active_processors": "1",
                                          "max_heap_bytes": str(3 * 2**30)}
    (run / "manifest.json").write_text(json.dumps(m))
    row = claimreasons.run_conditions(manifest.read_manifest(run))["jdk_gc"]
    assert row == ("JDK 17.0.1, GC ParallelGC as the JVM chose it on 1 CPU(s), max heap "
                   "3.0 GiB; JAVA_OPTS `-XX:+UseParallelGC` (a variant)")
    del m["servers"]["jersey@62"]
    (run / "manifest.json").write_text(json.dumps(m))
    row = claimreasons.run_conditions(manifest.read_manifest(run))["jdk_gc"]
    assert "no Java server in this run" in row


@pytest.mark.unit
def test_the_last_run_holding_a_claim_is_judged_and_the_others_named(tmp_path: Path) -> None:
    a = fake_run(tmp_path / "a", {"nginx": "aws@8", "paced": "jersey@62"})
    b = fake_run(tmp_path / "b", {"nginx": "aws@8", "paced": "jersey@62"})
    j = judge(a, b)["aws-over-grizzly-rps"]
    assert j.runs == (b,)
    assert "also measured in a: the last given in RUNS is judged" in j.notes
    assert judge(b, a)["aws-over-grizzly-rps"].runs == (a,)


# ---------------------------------------------------------------- by cost

def test_a_duet_judges_a_client_bound_ratio_by_cost(tmp_path: Path) -> None:
    """A sweep client-bound at every point: AWS ÷ Grizzly is inconclusive by
    req/s, and a duet of aws@8 and jersey@62
    whose CPU per request differ by 10% judges it by cost, reproduced
    (published 1.07 ±15%); the duet's conditions are noted beside it."""
    sweep = fake_run(tmp_path / "sweep", {"nginx": "aws@8", "paced": "jersey@62"},
                     client_bound=True)
    duet = fake_duet(tmp_path / "duet", "aws@8", "jersey@62", 8, 1.10)
    st = study()
    runs = [claimruns.open_run(f) for f in (sweep, duet)]
    specs = reproduce.server_specs(st)
    judged, checks = claimruns.judge_all(st, runs, specs, LAB)
    assert checks[duet].blocking == () and all(j.runs != (duet,) for j in judged)
    rate = next(j for j in judged if j.result.claim.id == "aws-over-grizzly-rps")
    assert rate.result.verdict == claims.INCONCLUSIVE and rate.result.client_limited
    costs = {j.result.claim.id: j for j in claimruns.judge_costs(st, runs, checks, specs)}
    cost = costs["aws-over-grizzly-rps"]
    assert cost.client == claimjudge.COST and cost.runs == (duet,)
    assert cost.result.verdict == claims.REPRODUCED, cost.result.reason
    assert cost.result.measured is not None
    assert 1.09 < cost.result.measured.median < 1.11
    assert "1s per level, the study's cost pairs have 10s" in cost.notes
    assert claimjudge.overall([rate.result, cost.result]).startswith("reproduced by cost")
    # the duet has no asf: that claim is not judged by cost, and says why
    assert "no duet of asf and aws" in costs["asf-over-aws-rps"].result.reason
    assert "more cores" in costs["aws-more-tasks-not-faster"].result.reason


def test_make_claims_prints_the_verdict_by_cost(tmp_path: Path) -> None:
    sweep = fake_run(tmp_path / "sweep", {"nginx": "aws@8", "paced": "jersey@62"},
                     client_bound=True)
    duet = fake_duet(tmp_path / "duet", "aws@8", "jersey@62", 3, 1.10)
    out = make_claims(tmp_path, "STUDY=ada-vs-java", f"RUNS={sweep} {duet}")
    assert out.returncode == 0, out.stderr
    assert "## Each claim, all clients together" in out.stdout
    assert "too few pairs: 3" in out.stdout and "3 start pair(s)" in out.stdout
    [folder] = (tmp_path / "results").glob("claims-ada-vs-java-*")
    data = json.loads((folder / "claims.json").read_text())
    got = {c["id"]: c for c in data["claims"]}["aws-over-grizzly-rps"]
    assert got["by_client"]["cost"]["verdict"] == claims.INCONCLUSIVE
    assert got["overall"].endswith("by cost: inconclusive")


def test_a_duet_of_another_connection_mode_is_not_judged(tmp_path: Path) -> None:
    duet = fake_duet(tmp_path / "duet", "aws@8", "jersey@62", 8, 1.10)
    m = json.loads((duet / "manifest.json").read_text())
    m["params"]["keepalive"] = True
    (duet / "manifest.json").write_text(json.dumps(m))
    st = study()
    runs = [claimruns.open_run(duet)]
    specs = reproduce.server_specs(st)
    _, checks = claimruns.judge_all(st, runs, specs, LAB)
    assert checks[duet].blocking and "keep-alive" in checks[duet].blocking[0]
    assert claimruns.judge_costs(st, runs, checks, specs) == []
