"""WARMUP=auto waits for a JVM's JIT to go quiet (lab.measure.jit): the count is read
from the JVM itself with jcmd and recorded per start; other servers are
unaffected."""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, bench, free_port, leftovers, repository_env, run_folders
from lab.measure import jit
from lab.analyse import levelrow, metrics
from lab.present import report
from lab.measure.topologies.local import LocalServerHost
from lab.record import manifest

pytestmark = pytest.mark.unit

FIXTURE = ROOT / "tests" / "fixtures" / "jcmd-perfcounter.txt"


def test_parse_reads_the_total_from_real_jcmd_output() -> None:
    # captured from `jcmd PID PerfCounter.print` of a JDK 17 JVM (its lines
    # holding this machine's paths, the java.property.* ones, left out)
    text = FIXTURE.read_text()
    assert jit.parse(text) == 858
    assert jit.parse(text.replace("sun.ci.totalCompiles=", "sun.ci.other=")) is None


def test_a_process_that_is_no_jvm_reads_as_unavailable_with_the_reason() -> None:
    if shutil.which("jcmd") is None:
        pytest.skip("no jcmd on PATH")
    got = jit.read(LocalServerHost(), os.getpid(), ROOT, dict(os.environ), ())
    assert got.compiles is None
    assert "jcmd" in got.error and str(os.getpid()) in got.error


def test_watch_gives_the_rate_between_readings_and_stops_after_an_error() -> None:
    counts = iter([jit.Reading(100), jit.Reading(160), jit.Reading(None, "gone"),
                   jit.Reading(999)])
    watch = jit.Watch(lambda: next(counts))
    watch.take()
    assert watch.compiles == 100 and watch.per_s is None
    assert not levelrow.jit_quiet(watch.per_s)          # not read yet: not quiet
    watch.take()
    assert watch.compiles == 160 and watch.per_s is not None and watch.per_s > 0
    watch.take()
    assert watch.unavailable and watch.record(False) == {"jit_error": "gone"}
    watch.take()                                       # no more readings asked
    assert watch.compiles == 160
    assert levelrow.jit_quiet(metrics.JIT_QUIET_PER_S)
    assert not levelrow.jit_quiet(metrics.JIT_QUIET_PER_S + 0.5)


def test_old_warmups_without_jit_fields_still_open() -> None:
    w = manifest.Start.of({"id": "rep1", "warmup": {"mode": "auto", "steady": True,
                                                    "seconds": 6.1}}).warmup
    assert w is not None
    assert w.jit_compiles is None and w.jit_error == ""
    assert report.jit_part([w]) == ""


@pytest.mark.real_server
@pytest.mark.quiet
def test_auto_warmup_of_a_jvm_records_its_jit_and_nginx_is_unaffected(tmp_path: Path) -> None:
    """A real JVM server (undertow) and a native one (nginx), short settings."""
    if shutil.which("jcmd") is None:
        pytest.skip("no jcmd on PATH")
    env = repository_env(tmp_path, SERVER="undertow nginx", CONCURRENCY="4", DURATION="1s",
                         WARMUP="auto", WARMUP_MAX="8s", PORT=str(free_port()))
    out = bench(env)
    assert out.returncode == 0, out.stderr[-3000:]
    [run] = run_folders(tmp_path)
    m = json.loads((run / "manifest.json").read_text())
    [java] = m["servers"]["undertow"]["starts"]
    warm = java["warmup"]
    assert warm["mode"] == "auto" and not warm.get("jit_error"), warm
    assert warm["jit_compiles"] > 0 and warm["jit_per_s"] is not None
    # the class by change points; steady needs the JIT's last segment quiet
    assert warm["warm_class"] in manifest.Warmup.KINDS
    assert warm["steady"] == (warm["warm_class"] in ("flat", "warm-up"))
    assert not warm["steady"] or warm["jit_quiet"]
    assert len(warm["slice_jit_pct"]) == warm["slices"] and max(warm["slice_jit_pct"]) > 0
    [native] = m["servers"]["nginx"]["starts"]
    assert native["warmup"]["mode"] == "auto"
    assert not any(k.startswith("jit") and native["warmup"][k] not in (None, "")
                   for k in native["warmup"])
    assert re.search(r"\[undertow\] .*warm-up.*; JIT [\d,]+ compilations", out.stderr)
    summary = (run / "summary.md").read_text()
    undertow_line = next(x for x in summary.splitlines() if x.startswith("- undertow:"))
    assert f"JIT compilations at the end: {warm['jit_compiles']:,}" in undertow_line
    assert "its JIT compiler threads took" in undertow_line
    nginx_line = next(x for x in summary.splitlines() if x.startswith("- nginx:"))
    assert "JIT" not in nginx_line
    assert "JIT compilations" in (run / "report.html").read_text()
    assert leftovers(run) == []
