from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from conftest import FAKES, ROOT
from lab.setup.servers import (SERVER_TOML, SKIP_DIRS, Command, ManifestError, discover, is_built,
                         load)

GOOD = """
name = "demo"
language = "C"
framework = "demo"
version = "1.0"

[build]
command = ["make"]
artifact = "out/demo"
inputs = ["src"]

[run]
command = ["out/demo", "--port", "{port}"]

[workers]
default = 4
"""


def write(tmp: Path, text: str, folder: str = "demo") -> Path:
    d = tmp / folder
    d.mkdir(parents=True, exist_ok=True)
    (d / "server.toml").write_text(text)
    return d / "server.toml"


def manifests_under(top: Path) -> list[Path]:
    """Every server.toml under top, found by walking (not by discover's own
    search), build outputs left out as discover leaves them out."""
    found = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        found += [Path(dirpath, f).resolve() for f in filenames if f == SERVER_TOML]
    return found


def runnable(command: Command) -> bool:
    """The run command's program exists: a path from the command's folder,
    executable, or a name on PATH."""
    program = command.argv[0]
    if "/" not in program:
        return shutil.which(program) is not None
    return os.access(command.dir / program, os.X_OK) and (command.dir / program).is_file()


@pytest.mark.parametrize("extra", ["", str(FAKES)])
def test_every_manifest_in_the_repository_loads(extra: str) -> None:
    servers = discover(ROOT, extra)
    assert "nginx" in servers and servers["nginx"].role == "ceiling"
    manifests = manifests_under(ROOT / "servers") + (manifests_under(FAKES) if extra else [])
    assert sorted({s.folder / SERVER_TOML for s in servers.values()}) == sorted(manifests)
    bases = [s for s in servers.values() if s.variant is None]
    names = [s.folder.name for s in bases]
    assert len(names) == len(set(names)) == len(manifests)
    for s in servers.values():
        own = s.name if s.variant is None else f"{s.base}.{s.variant}"
        assert s.name == own and s.folder.name == (s.base or s.name)
        assert s.workers_default is None or s.workers_default >= 1     # None: as shipped
        assert runnable(s.run), f"{s.name}: cannot run {s.run.argv[0]} from {s.run.dir}"


def test_extra_folders_add_servers() -> None:
    servers = discover(ROOT, str(FAKES))
    assert {"mute", "liar", "nginx"} <= set(servers)


def test_a_good_manifest(tmp_path: Path) -> None:
    s = load(write(tmp_path, GOOD))
    assert s.name == "demo" and s.role == "server" and s.workers_default == 4
    assert s.build is not None and s.build.dir == tmp_path / "demo"
    assert s.run.argv == ("out/demo", "--port", "{port}")


@pytest.mark.parametrize("change, message", [
    (('name = "demo"', 'name = "other"'), "must equal its folder name"),
    (('[run]\ncommand = ["out/demo", "--port", "{port}"]', ""), "missing [run] table"),
    (("default = 4", "default = 0"), "default must be a positive integer"),
    (('version = "1.0"', 'version = "1.0"\nrole = "boss"'), "role 'boss'"),
    (('artifact = "out/demo"', ""), "needs an 'artifact'"),
    (('command = ["make"]', 'command = "make"'), "non-empty list of strings"),
    (('language = "C"', 'language = "C'), "not valid TOML"),
])
def test_bad_manifests_are_refused(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    assert change[0] in GOOD
    with pytest.raises(ManifestError, match=message.replace("[", r"\[").replace("(", r"\(")):
        load(write(tmp_path, GOOD.replace(*change)))


def test_duplicate_names_are_refused(tmp_path: Path) -> None:
    write(tmp_path / "a", GOOD)
    write(tmp_path / "b", GOOD)
    found = discover(tmp_path / "nowhere", f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    assert found["demo"].folder == (tmp_path / "a" / "demo").resolve()  # the first stands
    assert "also used by" in found.broken["demo"]          # the second is not used


def test_build_is_needed_only_when_an_input_is_newer(tmp_path: Path) -> None:
    s = load(write(tmp_path, GOOD))
    src, out = tmp_path / "demo" / "src", tmp_path / "demo" / "out"
    src.mkdir()
    (src / "main.c").write_text("int main(){}")
    assert not is_built(s, {})                      # no artifact yet
    out.mkdir()
    (out / "demo").write_text("binary")
    assert is_built(s, {})
    later = time.time() + 5
    os.utime(src / "main.c", (later, later))
    assert not is_built(s, {})                      # a source changed


def test_name_at_n_is_that_server_with_n_workers() -> None:
    from lab.setup.servers import ServerSpec, ServerSpecError, lookup
    found = discover(ROOT)
    plain, more = lookup(found, "nginx"), lookup(found, "nginx@3")
    assert plain is found["nginx"] and plain.workers(None) == plain.workers_default
    assert plain.workers(5) == 5                       # WORKERS= applies to a plain name
    assert more.name == "nginx@3" and more.folder == plain.folder
    assert more.workers(None) == 3 and more.workers(5) == 3   # NAME@N wins over WORKERS=
    assert ServerSpec.parse("aws@16") == ServerSpec("aws", 16)
    assert ServerSpec.parse("aws") == ServerSpec("aws")
    with pytest.raises(ServerSpecError, match="worker count"):
        ServerSpec.parse("aws@0")


def test_a_server_spec_has_a_base_workers_and_an_alias() -> None:
    """NAME@N#K is one typed value: parsed once, its ranges checked once,
    written back plainly; an alias of an alias is refused."""
    from lab.setup.servers import ServerSpec, ServerSpecError, lookup
    spec = ServerSpec.parse("demo.a@016#2")
    assert (spec.base, spec.workers, spec.alias) == ("demo.a", 16, 2)
    assert str(spec) == "demo.a@16#2" and spec.unaliased == "demo.a@16"
    assert ServerSpec.parse("aws#9") == ServerSpec("aws", None, 9)
    for bad, part in (("aws@0", "@"), ("aws@10001", "@"), ("aws@x", "@"), ("aws#1", "#"),
                      ("aws#10", "#"), ("aws#2#3", "#"), ("aws#2@4", "#")):
        with pytest.raises(ServerSpecError) as caught:
            ServerSpec.parse(bad)
        assert caught.value.part == part, bad
    assert ServerSpec.base_of("aws@x#y") == "aws"
    from lab.analyse import claimsfile
    assert claimsfile.base("aws#2") == claimsfile.base("aws@16#2") == claimsfile.base("aws@16") == "aws"
    found = discover(ROOT)
    again = lookup(found, "nginx@3#2")
    assert again.name == "nginx@3#2" and again.alias_of == "nginx@3"
    assert again.workers(None) == 3 and again.folder == found["nginx"].folder
