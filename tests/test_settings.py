"""One registry of settings (lab/setup/params.py): each case of issue 15 refused (exit 2,
nothing built) or warned with the right reason; make help and docs/settings.md
generated from the registry."""
from __future__ import annotations

import re
import socket
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, bench, lab, lab_env, run_folders
from lab.measure.topologies import selectable
from lab.measure.clients import axes, described
from lab.setup.makeflags import command_line_variables, misspelt
from lab.setup.fromenv import Traits, from_env
from lab.setup.params import (FOREIGN, PLUMBING, REGISTRY, SETTINGS, ConfigError,
                        cpu_ranges)
from lab.setup.settings_doc import Found, markdown_table

pytestmark = pytest.mark.unit

KNOWN = ["aws", "ada-mini", "grizzly", "nginx"]
CLIENTS = {"siege": "concurrency", "wrk": "concurrency", "vegeta": "rate"}
TRAITS = {"aws": Traits("Ada"), "ada-mini": Traits("Ada", has_workers=False),
          "grizzly": Traits("Java"), "nginx": Traits("C")}


def params(**env: str):  # type: ignore[no-untyped-def]
    return from_env(env, KNOWN, CLIENTS, {0, 1}, traits=TRAITS)


def refused(fragment: str, **env: str) -> str:
    with pytest.raises(ConfigError) as e:
        params(**env)
    assert fragment in str(e.value), str(e.value)
    return str(e.value)


# ---------------------------------------------------------------- settings that do not apply

@pytest.mark.parametrize("client", ["siege", "wrk"])
def test_rate_with_a_closed_loop_client_is_refused(client: str) -> None:
    refused("RATE is the offered rate of open-loop clients", CLIENT=client, RATE="5000")
    refused("drop RATE", CLIENT=client, RATE="abc")          # not ignored, even when bad


def test_concurrency_with_vegeta_is_refused() -> None:
    refused("CONCURRENCY is the load of closed-loop clients", CLIENT="vegeta",
            CONCURRENCY="1 8")


def test_axis_workers_on_a_server_without_workers_is_refused() -> None:
    message = refused("ada-mini has no worker setting", SERVER="ada-mini aws",
                      AXIS="workers", VALUES="1 2", CONCURRENCY="8")
    assert "drop it from SERVER" in message
    assert params(SERVER="aws", AXIS="workers", VALUES="1 2", CONCURRENCY="8").values == (1, 2)


def test_workers_on_part_of_the_servers_is_warned_on_all_refused() -> None:
    p = params(SERVER="ada-mini aws", WORKERS="4")
    assert any("WORKERS has no effect on ada-mini" in w for w in p.warnings)
    refused("ada-mini has no worker setting", SERVER="ada-mini", WORKERS="4")


def test_java_opts_without_a_java_server_is_refused() -> None:
    refused("JAVA_OPTS is for Java servers", SERVER="nginx", JAVA_OPTS="-Xmx1g")
    assert params(SERVER="nginx grizzly", JAVA_OPTS="-Xmx1g").java_opts == "-Xmx1g"


def test_client_threads_with_siege_is_refused() -> None:
    refused("siege has no threads setting", CLIENT_THREADS="2")
    assert params(CLIENT="wrk", CLIENT_THREADS="2").client_threads == 2


# ---------------------------------------------------------------- servers, CPUs

def test_servers_are_identified_after_normalising_the_count() -> None:
    refused("SERVER lists a server twice: ada-mini@1", SERVER="ada-mini@1 ada-mini@01")
    refused("twice: aws@16", SERVER="aws@016 aws@16")
    assert params(SERVER="aws@016").servers == ("aws@16",)


def test_a_huge_cpu_list_is_said_in_a_few_words() -> None:
    message = refused("does not exist here", SERVER_CPUS="0-4095")
    assert "CPU 2-4095 does not exist" in message and len(message) < 200
    assert cpu_ranges({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"
    refused("beyond any machine's", SERVER_CPUS="0-99999999999")


# ---------------------------------------------------------------- make's command line

def test_makeflags_variables_are_read() -> None:
    assert command_line_variables(" -- CONCURENCY=1 SERVER=a\\ b") == ["CONCURENCY", "SERVER"]
    assert command_line_variables("s -- DURATION=1s") == ["DURATION"]
    assert command_line_variables("s") == []


def test_a_name_close_to_a_setting_gets_did_you_mean() -> None:
    assert misspelt(["CONCURENCY"]) == ["CONCURENCY is not a setting of the lab: did you mean "
                                        "CONCURRENCY?"]
    assert misspelt(["SERVERS"]) == ["SERVERS is not a setting of the lab: did you mean SERVER?"]
    assert misspelt(["SERVER", "RUN", "PATH", "V"]) == []       # known, or close to nothing


@pytest.mark.fault
def test_make_bench_with_a_misspelt_setting_exits_2(tmp_path: Path) -> None:
    out = subprocess.run(["make", "-s", "bench", "SERVER=nginx", "CONCURENCY=1"], cwd=ROOT,
                         env=lab_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert "CONCURENCY is not a setting of the lab: did you mean CONCURRENCY?" in out.stderr
    assert run_folders(tmp_path) == []


@pytest.mark.fault
def test_make_build_says_a_bad_server_once(tmp_path: Path) -> None:
    out = subprocess.run(["make", "-s", "build", "SERVER=bad"], cwd=ROOT, env=lab_env(tmp_path),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert out.stderr.count("unknown server bad") == 1, out.stderr


# ---------------------------------------------------------------- lab check, before the plan

@pytest.mark.fault
@pytest.mark.parametrize("settings, message", [
    ({"LAB_CACHE": "/dev/null"}, "LAB_CACHE='/dev/null': /dev/null is not a folder"),
    ({"ADA_TOOLCHAIN": "foo"}, "ADA_TOOLCHAIN='foo': expected native or rootfs or auto"),
    ({"BIND": "1.2.3.4"}, "BIND=1.2.3.4 is not an address of this host"),
    ({"CLIENT": "wrk", "RATE": "abc"}, "drop RATE"),
    ({"LAB_SERVER_PATH": str(ROOT / "Makefile")}, "Makefile is not a folder"),
])
def test_bench_refuses_before_anything_is_built(tmp_path: Path, settings: dict[str, str],
                                               message: str) -> None:
    env = lab_env(tmp_path, SERVER="nginx", **settings)
    out = bench(env, timeout=120)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr
    assert "Traceback" not in out.stderr and "port" not in out.stderr.split(message)[0]
    assert run_folders(tmp_path) == []


@pytest.mark.fault
def test_quick_must_be_0_or_1(tmp_path: Path) -> None:
    out = lab(lab_env(tmp_path, STUDY="ada-vs-java", QUICK="x"), "reproduce", "ada-vs-java",
              timeout=120)
    assert out.returncode == 2 and "QUICK='x': expected 0 or 1" in out.stderr, out.stderr


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback here")
def test_the_plan_brackets_an_ipv6_address(tmp_path: Path, port: int) -> None:
    out = lab(lab_env(tmp_path, SERVER="nginx", BIND="::1", PORT=str(port)), "check")
    assert out.returncode == 0, out.stderr
    assert f"[::1]:{port}" in out.stderr


# ---------------------------------------------------------------- the registry is the docs

def test_docs_settings_table_is_the_registry() -> None:
    text = (ROOT / "docs" / "settings.md").read_text()
    m = re.search(r"<!-- settings:begin -->\n(.*?)\n<!-- settings:end -->", text, re.S)
    assert m, "docs/settings.md lacks its settings:begin/end markers"
    found = Found(described(), axes(), selectable())
    assert m.group(1) == markdown_table(found), \
        "docs/settings.md is stale: python3 -m lab settings --markdown gives the table"


@pytest.mark.fault
def test_make_help_lists_every_setting(tmp_path: Path) -> None:
    out = subprocess.run(["make", "-s", "help"], cwd=ROOT, env=lab_env(tmp_path),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    for st in REGISTRY:
        assert re.search(rf"^  {st.name} +\S", out.stdout, re.M), st.name


def test_every_variable_the_lab_reads_is_declared() -> None:
    """Environment reads in lab/ name only registered settings, the lab's own
    plumbing (params.PLUMBING) or other tools' variables (params.FOREIGN)."""
    plumbing = set(PLUMBING) | set(FOREIGN)
    read = set()
    for path in (ROOT / "lab").rglob("*.py"):
        text = path.read_text()
        read |= set(re.findall(r"environ(?:\.get)?\(\s*[\"']([A-Z_]+)[\"']", text))
        read |= set(re.findall(r"environ\[[\"']([A-Z_]+)[\"']\]", text))
        read |= set(re.findall(r"\benv\.get\(\s*[\"']([A-Z_]+)[\"']", text))
    undeclared = sorted(read - set(SETTINGS) - plumbing)
    assert undeclared == [], f"read but not in lab/setup/params.py's REGISTRY: {undeclared}"


def test_a_range_is_declared_once_and_both_its_check_and_its_text_come_from_it() -> None:
    """REPEAT, PORT, WORKERS, ...: the kind's text ("1..100") and the check
    (ConfigError outside it) are the declared bounds; WORKERS' are NAME@N's."""
    from lab.setup.servers import WORKER_COUNTS
    bounded = [s for s in REGISTRY if s.bounds is not None]
    assert {s.name for s in bounded} >= {"REPEAT", "REPEAT_MIN", "REPEAT_MAX", "CLIENT_THREADS",
                                         "WORKERS", "BACKLOG", "PORT", "HEADERS"}
    for s in bounded:
        assert s.bounds is not None
        lo, hi = s.bounds
        assert s.kind.startswith(f"{lo}..{hi}"), s.name
        assert s.number(str(lo)) == lo and s.number(f" {hi} ") == hi
        for bad in (str(lo - 1), str(hi + 1), "x", "²"):
            with pytest.raises(ConfigError, match=f"from {lo} to {hi}"):
                s.number(bad)
    assert SETTINGS["WORKERS"].bounds == (WORKER_COUNTS[0], WORKER_COUNTS[-1])
    assert SETTINGS["REPEAT"].kind == "1..100 or auto"


def test_every_scope_used_is_described_in_one_place() -> None:
    from lab.setup.params import SCOPES, Setting
    assert {s.scope for s in REGISTRY} == set(SCOPES)
    assert "one of SCOPES" in (Setting.__doc__ or "")


@pytest.mark.parametrize(("sig", "words"), [
    ("SIGHUP", "interrupted (SIGHUP: its terminal or session closed)"),
    ("SIGTERM", "interrupted (SIGTERM)"),
    ("SIGINT", "interrupted (SIGINT: Ctrl-C)"),
])
def test_a_run_s_last_words_name_the_signal_that_stopped_it(sig: str, words: str) -> None:
    """A SIGHUP was recorded as "Ctrl-C or SIGTERM" (issue 54): the step's
    handler (lab.cli.on_stop) raises Stopped with the signal's name, and the
    run's last words say it."""
    import signal

    import lab.cli
    from lab.cli import common
    before = {s: signal.getsignal(s) for s in common.STOP_SIGNALS}
    try:
        with pytest.raises(common.Stopped) as got:
            lab.cli.on_stop(signal.Signals[sig], None)
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    assert common.interrupted_text(got.value) == words
    assert common.interrupted_text(KeyboardInterrupt()) == "interrupted (SIGINT: Ctrl-C)"
