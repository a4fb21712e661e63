"""The servers built from pinned sources (asf, ews, simple-components): a bad
setting stops them at start with a message naming it, as every lab server."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import MIRROR, ROOT, Build, free_port
from lab.measure.launch import Knobs, placeholders
from lab.setup.paths import cache_dir
from lab.setup.servers import discover, is_built

pytestmark = pytest.mark.real_server

REPO = discover(ROOT)
TOOLCHAIN = ROOT / "servers" / "ada" / "toolchain.sh"
EXE = {"asf": "asf_server", "ews": "ews_server", "simple-components": "sc_server"}


@pytest.fixture(autouse=True)
def pinned_built(built: Build) -> None:
    """The three servers built through the lab first (once a session, cached per
    LAB_CACHE): on a fresh clone these tests must not skip, and a server that
    cannot be built (no archive mirror, say) fails them."""
    built(*sorted(EXE))


def run(name: str, **settings: str) -> subprocess.CompletedProcess[str]:
    values = placeholders(ROOT, cache_dir(), Knobs(port=free_port(), workers=1, backlog=512,
                                                  bind="127.0.0.1"))
    assert is_built(REPO[name], values), f"{name}: built, yet its artifact is stale"
    env = {**os.environ, "LAB_CACHE": str(cache_dir()), "PORT": str(free_port()), **settings}
    return subprocess.run([str(TOOLCHAIN), "exec", name], env=env, capture_output=True,
                          text=True, timeout=30)


@pytest.mark.parametrize("name", sorted(EXE))
@pytest.mark.parametrize("variable, value", [("BIND", "localhost"), ("PORT", "70000"),
                                             ("BACKLOG", "0"), ("WORKERS", "many")])
def test_a_bad_setting_stops_the_server_naming_it(name: str, variable: str, value: str) -> None:
    done = run(name, **{variable: value})
    assert done.returncode == 1, done
    assert f'{EXE[name]}: {variable}="{value}": expected' in done.stderr


def test_sc_nodelay_takes_0_or_1_only() -> None:
    done = run("simple-components", SC_NODELAY="yes")
    assert done.returncode == 1 and 'SC_NODELAY="yes": expected 0 or 1' in done.stderr


def test_the_nodelay_variant_differs_from_the_base_only_in_its_switch() -> None:
    base, fixed = REPO["simple-components"], REPO["simple-components.nodelay"]
    assert base.env == {"SC_NODELAY": "0"} and fixed.env == {"SC_NODELAY": "1"}
    assert fixed.artifact == base.artifact and fixed.run == base.run


def test_the_ews_patch_applies_to_the_pinned_tree(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """ews-bind.patch against the verified EWS tree (the lab's own patch; the
    build applies it to a copy)."""
    from lab.setup import sources
    if "ADA_SOURCES" not in os.environ and (ROOT / MIRROR).is_dir():
        monkeypatch.setenv("ADA_SOURCES", str(ROOT / MIRROR))
    ews = sources.load()["ews"]
    try:
        archive = sources.check(ews)
    except sources.SourceError as e:
        pytest.skip(f"no EWS archive here: {e}")
    tree = sources.unpack(ews, archive, tmp_path)
    patch = ROOT / "servers" / "ada" / "ews" / "ews-bind.patch"
    done = subprocess.run(["patch", "-s", "-p1", "-d", str(tree), "-i", str(patch)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    text = (tree / "src" / "ews-server.adb").read_text()
    assert "Any_Inet_Addr;" not in text.split("task body Server")[1].split("end Server;")[0]
    assert "Listen_Socket (Server_Socket, Backlog)" in text
