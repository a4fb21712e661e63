"""make cost (instructions per request under cachegrind) and make profile
(CPU profiles on separate starts): bad input exits 2 before anything starts,
a JVM gets "not applicable", two runs count the same instructions, and
profiles name the servers' own code."""
from __future__ import annotations

import json
import os
import shutil
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

import nativeserver
from conftest import ROOT, bench, free_port, lab, lab_env, leftovers, run_folders
from lab.analyse import costview, profileview
from lab.measure.launch import Knobs, ServerProcess, wrapped_by
from lab.setup.servers import Command, ManifestError, discover, load_all
from lab.record import costs, profiles
from lab.record.manifest import read_manifest
from lab.analyse.metrics import spread

pytestmark = pytest.mark.unit

# Small counts: the test stays short, and the figure is a difference of two
# exact counts, so it does not need many requests to be exact.
SMALL = {"COST_LEVELS": "1", "COST_REQUESTS": "1000 3000", "REPEAT": "1"}


def cost_of(run: Path) -> dict[str, float]:
    """Each server's median over its repetitions (the figure the report ranks on)."""
    data = json.loads((run / costs.COST).read_text())
    return {name: statistics.median(r["per_request"] for r in entry["reps"])
            for name, entry in data["servers"].items() if entry.get("applicable")}


@pytest.mark.fault
@pytest.mark.parametrize("settings, message", [
    ({"SERVER": "no-such-server"}, "unknown server"),
    ({"SERVER": "nginx", "COST_REQUESTS": "1000"}, "two request counts"),
    ({"SERVER": "nginx", "COST_LEVELS": "1 x"}, "not a positive whole number"),
    ({"SERVER": "nginx", "COST_LEVELS": "64", "COST_REQUESTS": "10 100"}, "fewer than"),
    ({"SERVER": "nginx", "TOPOLOGY": "netns"}, "TOPOLOGY=local"),
])
def test_cost_bad_input_exits_2_before_anything_starts(tmp_path: Path, settings: dict[str, str],
                                                       message: str) -> None:
    env = lab_env(tmp_path, PORT=str(free_port()), **settings)
    out = lab(env, "cost")
    assert out.returncode == 2, out.stderr
    assert message in out.stderr
    assert run_folders(tmp_path) == []


def path_without(tmp: Path, *missing: str) -> str:
    """A PATH holding every program of this one but `missing`: a fresh
    machine where the tool was never installed, whatever other tests
    installed here before."""
    bin_dir = tmp / "fresh-bin"
    bin_dir.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or not Path(folder).is_dir():
            continue
        for prog in Path(folder).iterdir():
            link = bin_dir / prog.name
            if prog.name in missing or link.exists() or link.is_symlink():
                continue
            if prog.is_file() and os.access(prog, os.X_OK):
                link.symlink_to(prog)
    return str(bin_dir)


@pytest.mark.real_server
def test_a_jvm_gets_not_applicable_with_the_reason(tmp_path: Path) -> None:
    """On a machine without h2load (make cost installs it only for native
    servers): the manifest records it as not installed, no traceback."""
    env = lab_env(tmp_path, PORT=str(free_port()), SERVER="undertow", **SMALL)
    env["PATH"] = path_without(tmp_path, "h2load")
    assert shutil.which("h2load", path=env["PATH"]) is None
    out = lab(env, "cost")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    [run] = run_folders(tmp_path)
    entry = json.loads((run / costs.COST).read_text())["servers"]["undertow"]
    assert entry["applicable"] is False and "JIT" in entry["reason"]
    assert not (run / "undertow").exists()          # nothing was started
    assert "not applicable (JIT)" in (run / "summary.md").read_text()
    page = (run / "report.html").read_text()
    assert "not applicable (JIT)" in page
    # the page's first line: what make cost measures, and its verdict in words
    assert "How: instructions per request under cachegrind" in page
    assert "Verdict: undertow: not applicable (JIT)" in page
    manifest = read_manifest(run)
    assert manifest.client.version == "not installed"


@pytest.mark.real_server
def test_two_cost_runs_agree_within_half_a_percent(tmp_path: Path) -> None:
    # three repetitions: ada-mini's select loop takes a few more instructions
    # in some starts (4,724 or ~4,750 a request); the median is what is compared
    env = lab_env(tmp_path, PORT=str(free_port()), SERVER="nginx ada-mini",
                  **{**SMALL, "REPEAT": "3"})
    built = lab(env, "build", "ada-mini", timeout=3000)
    assert built.returncode == 0, built.stderr[-2000:]
    for _ in range(2):
        out = lab(env, "cost", timeout=900)
        assert out.returncode == 0, out.stderr[-3000:]
    first, second = (cost_of(r) for r in run_folders(tmp_path))
    for name in ("nginx", "ada-mini"):
        assert first[name] > 1000, first          # a request is thousands of instructions
        assert abs(first[name] / second[name] - 1) < 0.005, (name, first, second)
    for run in run_folders(tmp_path):
        assert leftovers(run) == []
        # cachegrind's function view of the extra requests names each server's own code
        functions = {name: [f for f, _ in entry["functions"]["1"]] for name, entry in
                     json.loads((run / costs.COST).read_text())["servers"].items()}
        assert any(f.startswith("ngx_") for f in functions["nginx"]), functions
        assert any(f.startswith("mini_") for f in functions["ada-mini"]), functions
        assert "kernel work" in (run / "summary.md").read_text() or \
            "kernel's work" in (run / "summary.md").read_text()
        # a fresh cost run is not "a run before the lab recorded answers", and the
        # load verdicts' section does not contradict the cost ranking above it
        page = (run / "report.html").read_text()
        assert "a run before the lab recorded answers" not in page
        assert "fewer than two measured servers" not in page
        assert "does not verify its answer" in page and "No requests/s verdicts" in page


@pytest.mark.real_server
def test_profile_names_native_functions_and_the_jvm_handler_class(tmp_path: Path) -> None:
    env = lab_env(tmp_path, PORT=str(free_port()), SERVER="ada-mini undertow",
                  CONCURRENCY="2", DURATION="1s", WARMUP="0", CLIENT="wrk", KEEPALIVE="1")
    made = bench(env)
    assert made.returncode == 0, made.stderr[-3000:]
    [run] = run_folders(tmp_path)
    bad = lab(dict(env, PROFILE_AT="3"), "profile", str(run))
    assert bad.returncode == 2 and "no such level" in bad.stderr
    out = lab(dict(env, PROFILE_AT="2", DURATION="2s"), "profile", str(run), timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    native = (run / "ada-mini" / "profile" / "c2" / profiles.FOLDED).read_text()
    assert "mini_server__" in native                 # ada-mini's own Ada package
    jvm = (run / "undertow" / "profile" / "c2" / profiles.FOLDED).read_text()
    assert "lab/undertow/UndertowServer" in jvm      # the handler's class
    html = (run / "report.html").read_text()
    for server in ("ada-mini", "undertow"):
        assert f'href="{server}/profile/c2/flamegraph.svg"' in html
        assert (run / server / "profile" / "c2" / "flamegraph.svg").read_text().startswith(
            "<svg")
    assert "<script" not in html
    assert leftovers(run) == []


@pytest.mark.fault
def test_profile_of_something_not_a_run_exits_2(tmp_path: Path) -> None:
    env = lab_env(tmp_path, PROFILE_AT="8")
    out = lab(env, "profile", str(tmp_path))
    assert out.returncode == 2 and "not a run folder" in out.stderr


def test_summary_splits_user_and_kernel_and_counts_self_and_total() -> None:
    stacks = [(["t", "main", "serve", "send", "tcp_sendmsg_[k]"], 6),
              (["t", "main", "serve", "parse"], 3), (["t", "main", "idle_[k]"], 1)]
    s = profileview.summarize(stacks, thread_root=True)
    assert s.samples == 10 and s.kernel == 7
    assert s.top_self[0] == ("tcp_sendmsg_[k]", 6)
    assert dict(s.top_total)["serve"] == 9 and dict(s.top_total)["main"] == 10
    assert "t" not in dict(s.top_total)
    svg = profileview.svg(stacks, "x <y>")
    assert svg.count("<rect") == 1 + 8 and "x &lt;y&gt;" in svg and "<script" not in svg


def level(name: str, values: list[float]) -> costview.LevelCost:
    return costview.LevelCost(name, 1, spread(values), None, None, None)


def test_cost_verdict_lower_is_better_and_goes_through_the_rule() -> None:
    v = costview.verdict(level("aws", [200.0, 201.0, 202.0, 200.5, 201.5]),
                         level("ews", [100.0, 100.5, 101.0, 100.2, 100.7]))
    assert (v.kind, v.a, v.b) == ("better", "ews", "aws")
    assert "ews needs 50.0% fewer instructions per request than aws (spread 1.00%" in v.text
    assert "α=1%, δ=5%, 5+5 starts" in v.text
    assert costview.verdict(level("a", [100.0, 110.0, 120.0, 105.0, 115.0]),
                            level("b", [115.0, 125.0, 130.0, 100.0, 120.0])).kind == "undecided"
    few = costview.verdict(level("a", [1.0, 1.0, 1.0]), level("b", [2.0, 2.0, 2.0]))
    assert few.kind == "undecided" and "too few starts: 3 against 3" in few.text


def test_reproduce_counts_instructions_only_for_claims_between_ada_servers() -> None:
    from lab.studies import reproduce
    from lab.setup.servers import discover
    plan = reproduce.prepare("ada-vs-java", {})
    picked = reproduce.ada_claims(plan, discover(reproduce.ROOT))
    assert picked and all(c.metric == "peak_rps" for c in picked)
    ids = {c.id for c in picked}
    assert "asf-over-aws-rps" in ids and "aws-over-grizzly-rps" not in ids


def test_profile_checks_the_jvm_profiler_before_starting_anything(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """async-profiler cannot be fetched: exit 2 before any server starts (a JVM
    would otherwise warm for 15 s first)."""
    from lab.measure import deps, launch
    from lab.studies import profile
    from lab.setup.paths import ROOT
    from lab.setup.servers import discover, lookup
    jvm = lookup(discover(ROOT, ""), "undertow")
    m = {"params": {"port": free_port(), "load_axis": "concurrency"}}
    monkeypatch.setattr(profile, "check", lambda env, run: (m, [jvm], 2, 2))
    monkeypatch.setattr(deps, "ensure", lambda want: 0)

    def unfetchable(cache: Path) -> Path:
        raise profile.ProfileError("mvn could not fetch tools.profiler:async-profiler:4.0")

    def started(self: object) -> None:
        raise AssertionError("a server was started")
    monkeypatch.setattr(profile, "asprof_library", unfetchable)
    monkeypatch.setattr(launch.ServerProcess, "start", started)
    assert profile.main([str(tmp_path)]) == 2
    assert "the JVM profiler is not available: mvn could not fetch" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []                  # nothing written, no lock taken


# A user's native server (tests/nativeserver.py) and three ways to run it:
# the binary itself, and a script that ignores LAB_WRAPPER, run as it is
# and with wrap = "lab", and one that honours it.
NATIVE_TOML = """\
name = "native"
language = "C"
framework = "poll()"
version = "1.0"
summary = "a user's native server, built by the test (tests/nativeserver.py)"

[run]
command = ["build/native"]
ready_timeout = 30

[workers]
fixed = true

[variants.ignoring]
summary = "a script that runs it and ignores LAB_WRAPPER"
[variants.ignoring.run]
command = ["./ignoring.sh"]

[variants.forced]
summary = "the same script, which the lab wraps"
[variants.forced.run]
command = ["./ignoring.sh"]
wrap = "lab"

[variants.honouring]
summary = "a script that puts LAB_WRAPPER before it"
[variants.honouring.run]
command = ["./honouring.sh"]
"""
SCRIPTS = {
    "ignoring.sh": "#!/bin/sh\nexec build/native\n",
    "honouring.sh": '#!/bin/bash\nwrap=()\nread -r -a wrap <<< "${LAB_WRAPPER:-}"\n'
                    'exec "${wrap[@]}" build/native\n',
}


def native_server(top: Path, binary: Path | None = None) -> Path:
    """The manifest above in top/native, its scripts, and its executable:
    `binary` copied (any ELF file), or the C server compiled."""
    folder = top / "native"
    (folder / "build").mkdir(parents=True)
    (folder / "server.toml").write_text(NATIVE_TOML)
    for name, text in SCRIPTS.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
    if binary is None:
        nativeserver.build(folder / "build" / "native")
    else:
        shutil.copy(binary, folder / "build" / "native")
    return folder


WORDS = ["valgrind", "--tool=cachegrind"]


def test_the_lab_wraps_a_native_binary_and_a_script_wraps_itself(tmp_path: Path) -> None:
    """Who puts valgrind before the server's executable (issue 54): the lab,
    before the whole command, where its executable is an ELF binary (LAB_WRAPPER
    then empty: nothing wraps twice); the script where it is a script
    (LAB_WRAPPER); the manifest's [run] wrap where it says."""
    elf = Path(os.path.realpath(shutil.which("true") or "/bin/true"))
    folder = native_server(tmp_path, elf)
    servers = {s.name: s for s in load_all(folder / "server.toml")}
    out = tmp_path / "out"

    def wrapped(name: str) -> ServerProcess:
        sp = ServerProcess(servers[name], ROOT, tmp_path, "run", Knobs(8080, None, 512,
                                                                      "127.0.0.1"),
                           (0,), tmp_path / "log")
        sp.wrap(WORDS, out)
        return sp
    native = wrapped("native")
    assert native.command == WORDS + ["build/native"]
    assert native.argv.index("valgrind") < native.argv.index("build/native")   # pinned too
    assert native.env["LAB_WRAPPER"] == "" and native.env["LAB_WRAP_OUT"] == str(out)
    for name in ("native.ignoring", "native.honouring"):
        script = wrapped(name)
        assert script.command == list(servers[name].run.argv)
        assert script.env["LAB_WRAPPER"] == "valgrind --tool=cachegrind"
    assert wrapped("native.forced").command == WORDS + ["./ignoring.sh"]
    # a word found on PATH is judged by the file found; none found: the command's
    plain = servers["native"]
    on_path = replace(plain, run=Command(("true",), folder))
    assert wrapped_by(on_path, ["true"], {"PATH": str(elf.parent)}) == "lab"
    assert wrapped_by(on_path, ["true"], {"PATH": str(tmp_path / "nowhere")}) == "command"
    assert wrapped_by(replace(plain, wrap="command"), ["build/native"], {}) == "command"


def test_the_labs_own_native_servers_still_wrap_themselves() -> None:
    """nginx's run.sh and the Ada servers' toolchain.sh put LAB_WRAPPER before
    the executable themselves (the Ada root's own valgrind, in the root)."""
    native = [s for s in discover(ROOT).values() if s.language not in costview.JIT_LANGUAGES]
    assert {s.name for s in native} >= {"nginx", "aws", "ada-mini"}
    for s in native:
        sp = ServerProcess(s, ROOT, ROOT / ".cache", "run", Knobs(8080, None, 512, "127.0.0.1"),
                           (0,), Path("/dev/null"))
        assert wrapped_by(s, sp.command, sp.env) == "command", s.name


@pytest.mark.parametrize("value", ['"valgrind"', "true", '["lab"]'])
def test_a_wrap_other_than_lab_or_command_is_refused(tmp_path: Path, value: str) -> None:
    path = tmp_path / "native" / "server.toml"
    path.parent.mkdir()
    path.write_text(NATIVE_TOML.replace('wrap = "lab"', f"wrap = {value}"))
    with pytest.raises(ManifestError, match=r'\[run\] wrap must be "lab" .* or "command"'):
        load_all(path)


@pytest.mark.fault
def test_make_cost_counts_a_native_binary_without_a_wrapper_script(tmp_path: Path) -> None:
    """A user's server whose run command is its binary is counted as it is;
    a script that ignores LAB_WRAPPER still gets the error that says so (and
    what to do), and is counted once its manifest says wrap = "lab"; a
    script that honours LAB_WRAPPER is counted as before. The same code,
    counted three ways, counts the same instructions a request."""
    native_server(tmp_path / "mine")
    env = lab_env(tmp_path, PORT=str(free_port()), LAB_SERVER_PATH=str(tmp_path / "mine"),
                  SERVER="native native.ignoring native.forced native.honouring", **SMALL)
    out = lab(env, "cost", timeout=900)
    assert out.returncode == 1, out.stderr[-3000:]          # one server failed
    assert "Traceback" not in out.stderr
    [run] = run_folders(tmp_path)
    found = json.loads((run / costs.COST).read_text())["servers"]
    error = found["native.ignoring"]["error"]
    assert "does not put LAB_WRAPPER before its executable" in error, error
    assert 'wrap = "lab"' in error
    counted = {}
    for name, how in (("native", "lab"), ("native.forced", "lab"),
                      ("native.honouring", "command")):
        entry = found[name]
        assert not entry.get("error") and entry["wrapped"] == how, (name, entry)
        [rep] = entry["reps"]
        counted[name] = rep["per_request"]
    assert "[native] valgrind put before its executable by the lab" in out.stderr
    assert all(100 < x < 100_000 for x in counted.values()), counted
    # the scripts' own start-up is in both starts of a level: it cancels
    assert max(counted.values()) / min(counted.values()) < 1.02, counted
    assert leftovers(run) == []
