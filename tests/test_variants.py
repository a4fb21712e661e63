"""Variants: [variants.<v>] tables of a manifest, each a server named <server>.<v>."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from lab.measure.launch import Knobs, ServerProcess, lab_env
from lab.setup.servers import ManifestError, discover, load, load_all, lookup

pytestmark = pytest.mark.unit

BASE = """
name = "demo"
language = "Python"
framework = "demo"
version = "1.0"
summary = "the base"

[build]
command = ["make"]
artifact = "out/demo"
inputs = ["src"]

[run]
command = ["python3", "demo.py", "{port}"]
ready_timeout = 7

[workers]
default = 4
meaning = "threads"

[facts]
command = ["python3", "facts.py"]
"""

# A fake server's whole run: print the variables the lab and the manifest set.
SHOW_ENV = """\
import os
for k in ("PORT", "WORKERS", "BIND", "BACKLOG", "MODE", "SHARED"):
    print(f"{k}={os.environ.get(k, '-')}", flush=True)
"""


def write(tmp: Path, text: str, folder: str = "demo") -> Path:
    d = tmp / folder
    d.mkdir(parents=True, exist_ok=True)
    (d / "server.toml").write_text(text)
    return d / "server.toml"


def test_a_manifest_without_variants_is_one_server(tmp_path: Path) -> None:
    only = load_all(write(tmp_path, BASE))
    assert [s.name for s in only] == ["demo"]
    assert only[0].variant is None and only[0].base is None and only[0].env == {}
    assert only[0].describe()["variant"] is None


def test_a_variant_inherits_everything_it_does_not_set(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + '\n[variants.fast]\nenv = { MODE = "fast" }\n')
    base, fast = load_all(path)
    assert load(path) == base
    assert fast.name == "demo.fast" and fast.base == "demo" and fast.variant == "fast"
    assert fast.env == {"MODE": "fast"}
    for key in ("folder", "language", "framework", "version", "role", "summary",
                "workers_default", "workers_meaning", "run", "ready_timeout", "build",
                "artifact", "inputs", "facts", "requires", "setup"):
        assert getattr(fast, key) == getattr(base, key), key
    assert fast.describe()["variant"] == {"base": "demo", "name": "fast"}
    assert fast.describe()["env"] == {"MODE": "fast"}


def test_a_variant_overrides_its_keys(tmp_path: Path) -> None:
    _, other = load_all(write(tmp_path, BASE + """
[variants.other]
summary = "another"
framework = "demo on X"
version = "1.0 / X 2"

[variants.other.run]
command = ["python3", "other.py"]

[variants.other.build]
command = ["make", "other"]
artifact = "out/other"

[variants.other.workers]
meaning = "X threads"
"""))
    assert (other.summary, other.framework, other.version) == ("another", "demo on X", "1.0 / X 2")
    assert other.run.argv == ("python3", "other.py")
    assert other.ready_timeout == 7                      # the rest of [run] is inherited
    assert other.build is not None and other.build.argv == ("make", "other")
    assert other.artifact == "out/other" and other.inputs == ("src",)
    assert other.workers_default == 4 and other.workers_meaning == "X threads"


def test_env_of_the_base_is_merged_into_the_variants(tmp_path: Path) -> None:
    base, v = load_all(write(tmp_path, BASE + """
[env]
SHARED = "yes"
MODE = "plain"

[variants.v]
env = { MODE = "v" }
"""))
    assert base.env == {"SHARED": "yes", "MODE": "plain"}
    assert v.env == {"SHARED": "yes", "MODE": "v"}


def test_variants_are_discovered_and_looked_up(tmp_path: Path) -> None:
    write(tmp_path / "servers", BASE + '\n[variants.a]\n[variants.b-2]\n')
    found = discover(tmp_path)
    assert list(found) == ["demo", "demo.a", "demo.b-2"]
    at = lookup(found, "demo.a@32")
    assert at.name == "demo.a@32" and at.variant == "a" and at.workers(None) == 32


def test_the_repository_declares_the_variants() -> None:
    found = discover(ROOT)
    assert {"jersey.jetty", "jersey.undertow", "jersey.tomcat", "undertow.io"} <= set(found)
    assert found["jersey.tomcat"].env == {"JAXRS_CONTAINER": "tomcat"}
    assert found["undertow.io"].env == {"UNDERTOW_ANSWER_ON": "io"}
    assert found["jersey"].env == {} and found["undertow"].env == {}
    # One fat jar serves every jersey container: one build for all of them.
    assert {found[n].artifact for n in ("jersey", "jersey.jetty", "jersey.tomcat")} == \
        {"target/jersey.jar"}


@pytest.mark.parametrize("variants, message", [
    ('[variants."a.b"]\n', "a dot would make the name ambiguous"),
    ('[variants."a@2"]\n', "@ introduces a worker count"),
    ('[variants."a b"]\n', "use letters, digits"),
    ('[variants.x]\nlanguage = "C"\n', r"\[variants.x\]: unknown key\(s\) language"),
    ('[variants.x]\nrole = "ceiling"\n', r"unknown key\(s\) role"),
    ('[variants.x.run]\ncwd = "/"\n', r"\[variants.x\].run: unknown key\(s\) cwd"),
    ('[variants.x.build]\ncommand = ["make"]\n', r"\[variants.x\].build must name its own artifact"),
    ('[variants.x.build]\nartifact = "out/demo"\n', "must name its own artifact"),
    ('[variants.x]\nenv = { PORT = "1" }\n', "PORT is set by the lab"),
    ('[variants.x]\nenv = { "A-B" = "1" }\n', "not an environment variable name"),
    ('[variants.x]\nenv = { N = 1 }\n', "N must be a string"),
    ('[variants.x]\nenv = "MODE=x"\n', r"\[env\] must be a table"),
    ('[variants.x]\nversion = ""\n', r"\[variants.x\]: 'version' must be a non-empty string"),
    ('[variants.x.run]\ncommand = []\n', r"\[variants.x\]: \[run\] command must be"),
    ('[variants.x.workers]\ndefault = 0\n', r"\[variants.x\]: \[workers\] default"),
    ('variants = 3\n', r"\[variants\] must be a table"),
    ('[variants]\nx = 3\n', r"\[variants.x\] must be a table"),
    ('[variants.x]\n[variants.x]\n', "not valid TOML"),
])
def test_bad_variants_are_refused(tmp_path: Path, variants: str, message: str) -> None:
    # Top-level keys (variants = 3) must come before the first table.
    text = variants + BASE if not variants.startswith("[") else BASE + "\n" + variants
    with pytest.raises(ManifestError, match=message):
        load_all(write(tmp_path, text))


def test_a_base_name_with_a_dot_or_at_is_refused(tmp_path: Path) -> None:
    for folder in ("de.mo", "de@mo"):
        with pytest.raises(ManifestError, match="may contain neither"):
            load(write(tmp_path, BASE.replace('"demo"', f'"{folder}"', 1), folder))


def test_a_variant_name_equal_to_another_server_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "a", BASE + "\n[variants.x]\n")
    write(tmp_path / "b", BASE + "\n[variants.x]\n")
    found = discover(tmp_path / "nowhere", f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    assert "'demo' is also used" in found.broken["demo"]     # the second manifest: unusable
    assert found["demo.x"].folder == (tmp_path / "a" / "demo").resolve()


def test_lab_env_passes_the_manifest_env_under_the_knobs(tmp_path: Path) -> None:
    _, v = load_all(write(tmp_path, BASE + '\n[variants.v]\nenv = { MODE = "v" }\n'))
    knobs = Knobs(port=1234, workers=3, backlog=99, bind="127.0.0.1")
    env = lab_env(tmp_path, tmp_path, "run", knobs, v)
    assert env["MODE"] == "v" and env["PORT"] == "1234" and env["WORKERS"] == "3"
    assert lab_env(tmp_path, tmp_path, "run", knobs).get("MODE") != "v"


def test_a_started_variant_sees_its_env(tmp_path: Path) -> None:
    """A tiny fake server that prints its environment and exits: the variant's
    env reaches the run command through ServerProcess, the base's does not."""
    path = write(tmp_path, BASE.replace('["python3", "demo.py", "{port}"]',
                                        f'["{sys.executable}", "show.py"]')
                 + '\n[env]\nSHARED = "s"\n\n[variants.v]\nenv = { MODE = "v" }\n')
    (path.parent / "show.py").write_text(SHOW_ENV)
    seen: dict[str, dict[str, str]] = {}
    for server in load_all(path):
        log = tmp_path / f"{server.name}.log"
        sp = ServerProcess(server, tmp_path, tmp_path, "test", Knobs(4321, 2, 77, "127.0.0.1"),
                           (0,), log)
        proc = sp.start()
        proc.wait(timeout=30)
        sp.stop()                   # already exited: this only removes its scratch folder
        seen[server.name] = dict(line.split("=", 1) for line in log.read_text().split())
    assert seen["demo"] == {"PORT": "4321", "WORKERS": "2", "BIND": "127.0.0.1",
                            "BACKLOG": "77", "MODE": "-", "SHARED": "s"}
    assert seen["demo.v"] == {**seen["demo"], "MODE": "v"}


def test_facts_get_the_variant_env(tmp_path: Path) -> None:
    """lab/measure/sweep.py runs the facts command with the ServerProcess's env."""
    _, v = load_all(write(tmp_path, BASE + '\n[variants.v]\nenv = { MODE = "v" }\n'))
    sp = ServerProcess(v, tmp_path, tmp_path, "t", Knobs(1, 1, 1, "127.0.0.1"), (),
                       tmp_path / "log")
    out = subprocess.run([sys.executable, "-c", "import os; print(os.environ['MODE'])"],
                         env=sp.env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "v"
