"""One settings package for every Ada server: servers/ada/labenv (Lab_Settings),
imported by each server's project, with no copy of it (or of its readers) in
a server folder, and a build input of each, so that a change to it rebuilds
them. The servers' behaviour with it (defaults, messages, exit code) is
checked where they run: test_settings.py, test_ada_pinned.py, test_ada_mini.py."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from lab.setup.servers import discover, newest_input

pytestmark = pytest.mark.unit

ADA = ROOT / "servers" / "ada"
LABENV = ADA / "labenv"
WITH = 'with "../labenv/labenv.gpr";'
SKIP = {"obj", "bin", "lab-sources"}           # what a build leaves, git-ignored


def ada_servers() -> list[Path]:
    """Every Ada server folder: a server.toml beside its .gpr."""
    return sorted(p.parent for p in ADA.glob("*/server.toml"))


def sources(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()
            and not SKIP & set(p.relative_to(folder).parts)]


def test_the_labenv_package_exists_with_the_settings_api() -> None:
    gpr = (LABENV / "labenv.gpr").read_text()
    assert re.search(r"^project Labenv is", gpr, re.M)
    assert 'for Source_Dirs use ("src");' in gpr
    spec = (LABENV / "src" / "lab_settings.ads").read_text()
    assert (LABENV / "src" / "lab_settings.adb").is_file()
    assert (LABENV / "README.md").is_file()
    for decl in ("Invalid_Setting : exception;", "function Env (Name : String)",
                 "function Env_Positive", "function Env_Address", "function Image",
                 "function Bind return String;", "function Port return Positive;",
                 "function Backlog return Positive;", "function Workers (Default : Positive)",
                 "function Workers_Given return Boolean;", "function Endpoint"):
        assert decl in spec, decl
    body = (LABENV / "src" / "lab_settings.adb").read_text()
    # the defaults and ranges every Ada server documents (servers/ada/README.md)
    for default in ('Env_Address ("BIND", "127.0.0.1")', 'Env_Positive ("PORT", 8080, 65_535)',
                    'Env_Positive ("BACKLOG", 512, 65_535)',
                    'Env_Positive ("WORKERS", Default, 10_000)'):
        assert default in body, default


def test_the_five_ada_servers_are_found() -> None:
    assert {p.name for p in ada_servers()} == {"aws", "asf", "ews", "simple-components",
                                               "ada-mini"}


def test_no_ada_server_has_its_own_settings_code() -> None:
    for folder in ada_servers():
        for path in sources(folder):
            assert not path.name.lower().startswith("lab_settings."), \
                f"{path}: a copy of servers/ada/labenv's Lab_Settings"
            if path.suffix in (".adb", ".ads"):
                text = path.read_text()
                # the readers written inline (as aws and ada-mini once had them)
                for inline in ("Invalid_Setting : exception", "function Env_Positive",
                               "function Env_Address"):
                    assert inline not in text, f"{path}: {inline} (use Lab_Settings)"


def test_every_ada_server_project_withs_labenv_and_uses_it() -> None:
    for folder in ada_servers():
        [gpr] = folder.glob("*.gpr")
        assert WITH in gpr.read_text(), f"{gpr}: no {WITH}"
        mains = [p for p in (folder / "src").glob("*.adb")
                 if "with Lab_Settings;" in p.read_text()]
        assert mains, f"{folder.name}: no source withs Lab_Settings"


def test_labenv_is_a_build_input_of_every_ada_server(tmp_path: Path) -> None:
    """A copy of servers/ada where labenv's body is the newest file: each
    server's newest build input is that file, so the lab rebuilds them."""
    copy = tmp_path / "servers" / "ada"
    shutil.copytree(ADA, copy, ignore=shutil.ignore_patterns(*SKIP))
    old = 1_000_000_000.0
    for path in copy.rglob("*"):
        os.utime(path, (old, old))
    changed = copy / "labenv" / "src" / "lab_settings.adb"
    os.utime(changed, (old + 100, old + 100))
    found = {s.name: s for s in discover(tmp_path).values()
             if s.folder.parent == copy and s.variant is None}
    assert set(found) == {p.name for p in ada_servers()}
    for name, server in found.items():
        assert "../labenv" in server.inputs, name
        assert newest_input(server) == old + 100, name


def test_the_rootfs_build_and_the_image_take_labenv() -> None:
    """The relative with-path resolves in the root (/lab/labenv beside
    /lab/NAME) and in the image's build stage (/lab/labenv beside /lab/SERVER)."""
    toolchain = (ADA / "toolchain.sh").read_text()
    assert 'copy_fresh "$HERE/labenv" "$ROOT/lab/labenv"' in toolchain
    dockerfile = (ADA / "Dockerfile").read_text()
    assert "COPY labenv/ /lab/labenv/" in dockerfile
    assert "COPY ${SERVER}/ /lab/${SERVER}/" in dockerfile
    ignored = (ADA / ".dockerignore").read_text().split()
    assert "labenv" not in ignored and "*/obj" in ignored and "*/bin" in ignored
