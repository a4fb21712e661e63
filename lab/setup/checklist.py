"""A server's checklist: the mistakes that Maven, gprbuild or docker compose
would otherwise report later and in their own words. Each mistake is found
before anything is built, and each is one line with its fix (in the spirit of
TechEmpower's validate_test).

A server is a folder with a `server.toml` (lab.setup.servers). Its kind comes
from where it lives, because that is what decides how it is built:

- servers/java/<name>: a Maven module of servers/java/pom.xml. The parent
  lists it in <modules>, and its pom depends on the shared `labenv` module.
- servers/ada/<name>: built by ../toolchain.sh from its one .gpr. The .gpr
  `with`s "../labenv/labenv.gpr", and the folder has no copy of Lab_Settings.

Every server:

- has a manifest that servers.py accepts;
- has every `[build] inputs` path;
- has a compose.yaml service and a Dockerfile, unless its manifest says
  `docker = false`.

The compose services are read by lab.measure.topologies.docker.compose and given to
check(): lab/setup imports no other role.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:            # imported where a pom is read: every step imports this module
    import xml.etree.ElementTree as ET

from lab.setup.servers import (SERVER_TOML, SKIP_DIRS, ManifestError, Server, ServerSpec,
                               ServerSpecError, add, load_all)

DASH = "\u2014"
LABENV_GPR = "../labenv/labenv.gpr"
WITH_LABENV = re.compile(r'^\s*with\s+"\.\./labenv/labenv\.gpr"\s*;', re.I | re.M)
EXECUTABLE = re.compile(r"^--\s*lab-executable:\s*[A-Za-z0-9_-]+", re.M)
ADA_SKIP = SKIP_DIRS | {"lab-sources"}      # what a build leaves (git-ignored)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one server, and the one thing to do about it."""
    server: str
    problem: str
    fix: str

    def line(self) -> str:
        return f"{self.server}: {self.problem} {DASH} fix: {self.fix}"


class Service(Protocol):
    """What the checklist reads of a compose.yaml service
    (lab.measure.topologies.docker.compose.Service)."""
    @property
    def context(self) -> Path | None: ...
    @property
    def dockerfile(self) -> Path | None: ...
    @property
    def folder(self) -> Path | None: ...


@dataclass(frozen=True)
class Tree:
    """Where the checklist looks: the checkout and its compose.yaml's services."""
    root: Path
    services: Mapping[str, Service]

    def rel(self, path: Path) -> str:
        """A path as a line shows it: from the checkout when inside it."""
        try:
            return str(path.resolve().relative_to(self.root.resolve()))
        except ValueError:
            return str(path)

    @property
    def java(self) -> Path:
        return (self.root / "servers" / "java").resolve()

    @property
    def ada(self) -> Path:
        return (self.root / "servers" / "ada").resolve()


def folder_manifests(folder: Path) -> list[Path]:
    """What `check-servers FOLDER` checks: FOLDER's own server.toml (a server
    folder), else those of its server folders (a folder LAB_SERVER_PATH
    names, e.g. lab-server/<name>/server.toml); FOLDER/server.toml when it
    has neither, for the line that says what to write."""
    own = folder / SERVER_TOML
    if os.path.lexists(own):
        return [own]
    inner = [p for p in sorted(folder.rglob(SERVER_TOML)) if folder.is_dir()
             and not SKIP_DIRS & set(p.relative_to(folder).parts)]
    return inner or [own]


def load(path: Path, tree: Tree) -> tuple[list[Server], list[Problem]]:
    """A manifest's servers (its variants included), or the line saying why
    servers.py refuses it."""
    toml = tree.rel(path)
    # outside the lab: more likely a folder of servers, as LAB_SERVER_PATH names
    or_folder = "" if path.resolve().is_relative_to(tree.root.resolve() / "servers") else (
        f" for one server, or {tree.rel(path.parent)}/<name>/{SERVER_TOML} in a folder of "
        "servers (what LAB_SERVER_PATH names)")
    if not os.path.lexists(path):
        return [], [Problem(path.parent.name, f"no {SERVER_TOML} in {tree.rel(path.parent)}",
                            f"write {toml}{or_folder} (servers/README.md gives the format)")]
    try:
        return load_all(path), []
    except ManifestError as e:
        why = str(e).removeprefix(f"{path}: ")
        return [], [Problem(path.parent.name, f"{SERVER_TOML} refused: {why}",
                            f"correct {toml} (servers/README.md gives the format)")]


def inputs(server: Server, tree: Tree) -> list[Problem]:
    """Every [build] inputs path exists (a missing one never triggers a build)."""
    toml = tree.rel(server.folder / SERVER_TOML)
    return [Problem(server.name, f'[build] inputs names "{rel}", which does not exist',
                    f'correct or remove "{rel}" in [build] inputs of {toml}')
            for rel in server.inputs if not (server.folder / rel).exists()]


def _pom(path: Path, tree: Tree, name: str) -> tuple[ET.Element | None, list[Problem]]:
    import xml.etree.ElementTree as ET
    try:
        return ET.parse(path).getroot(), []
    except (OSError, ET.ParseError) as e:
        return None, [Problem(name, f"{tree.rel(path)} is not readable XML ({e})",
                              f"correct {tree.rel(path)}")]


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _children(element: ET.Element, *path: str) -> list[ET.Element]:
    """The elements at path under element, namespace or not."""
    found = [element]
    for step in path:
        found = [c for e in found for c in e if _local(c.tag) == step]
    return found


def java(server: Server, tree: Tree) -> list[Problem]:
    """servers/java/<name>: a module of the parent pom, depending on labenv."""
    name, folder = server.name, server.folder
    parent_pom, own_pom = tree.java / "pom.xml", folder / "pom.xml"
    shown = tree.rel(parent_pom)
    if not own_pom.is_file():
        return [Problem(name, f"no pom.xml in {tree.rel(folder)}",
                        f"add {tree.rel(own_pom)} with {shown} as its <parent> "
                        "(as servers/java/grizzly/pom.xml)")]
    parent, found = _pom(parent_pom, tree, name)
    own, more = _pom(own_pom, tree, name)
    if parent is None or own is None:
        return found + more
    modules = {(m.text or "").strip() for m in _children(parent, "modules", "module")}
    if folder.name not in modules:
        found.append(Problem(name, f"not a <module> of {shown} (Maven: \"Could not find the "
                             "selected project in the reactor\")",
                             f"add <module>{folder.name}</module> to {shown}"))
    if "labenv" in modules:
        deps = {(d.text or "").strip()
                for d in _children(own, "dependencies", "dependency", "artifactId")}
        if "labenv" not in deps:
            group = next(((g.text or "").strip() for g in _children(parent, "groupId")), "")
            found.append(Problem(name, "its pom does not depend on the shared labenv module "
                                 "(lab.env.LabEnv reads PORT, BIND, BACKLOG, WORKERS)",
                                 f"add <dependency><groupId>{group}</groupId><artifactId>"
                                 "labenv</artifactId><version>${project.version}</version>"
                                 f"</dependency> to {tree.rel(own_pom)}"))
        found += _labenv_input(server, tree)
    return found


def _labenv_input(server: Server, tree: Tree) -> list[Problem]:
    if server.build is None or "../labenv" in server.inputs:
        return []
    return [Problem(server.name, "a change to ../labenv does not rebuild it",
                    f'add "../labenv" to [build] inputs of {tree.rel(server.folder / SERVER_TOML)}')]


def ada(server: Server, tree: Tree) -> list[Problem]:
    """servers/ada/<name>: one .gpr that withs labenv, no copy of Lab_Settings."""
    name, folder = server.name, server.folder
    gprs = sorted(folder.glob("*.gpr"))
    found = []
    if len(gprs) != 1:
        return [Problem(name, f"{len(gprs)} .gpr files in {tree.rel(folder)} "
                        "(toolchain.sh builds the one .gpr of a folder)",
                        f"keep one .gpr in {tree.rel(folder)}" if gprs else
                        f"add {tree.rel(folder)}/{name.replace('-', '_')}.gpr "
                        "(as servers/ada/aws/aws_server.gpr)")]
    gpr = gprs[0]
    text = gpr.read_text()
    if not WITH_LABENV.search(text):
        found.append(Problem(name, f"{gpr.name} does not with the shared settings project "
                             "(Lab_Settings in servers/ada/labenv)",
                             f'add the line with "{LABENV_GPR}"; to {tree.rel(gpr)}'))
    if not EXECUTABLE.search(text):
        found.append(Problem(name, f"{gpr.name} has no \"-- lab-executable: NAME\" line "
                             "(toolchain.sh and the image run NAME)",
                             f"add -- lab-executable: <main's name> to {tree.rel(gpr)}"))
    for path in sorted(folder.rglob("*")):
        if (path.is_file() and path.name.lower() in ("lab_settings.ads", "lab_settings.adb")
                and not ADA_SKIP & set(path.relative_to(folder).parts)):
            found.append(Problem(name, f"its own copy of Lab_Settings ({path.relative_to(folder)})",
                                 f"delete {tree.rel(path)}: servers/ada/labenv has the one"))
    return found + _labenv_input(server, tree)


def docker(server: Server, tree: Tree) -> list[Problem]:
    """A compose.yaml service named after the folder that builds this folder
    from a Dockerfile that exists; or `docker = false` and no service."""
    name, folder = server.name, server.folder
    toml = tree.rel(folder / SERVER_TOML)
    svc = tree.services.get(name)
    if not server.docker:
        return [] if svc is None else [
            Problem(name, f"{toml} says docker = false, yet compose.yaml has a service {name}",
                    f"remove docker = false from {toml}")]
    shared = {tree.java: "*java-build", tree.ada: "*ada-build"}.get(folder.parent)
    if svc is None:
        fix = (f"add a service {name} to compose.yaml with <<: {shared} and args SERVER: "
               f"{name} (docs/extending.md)" if shared else
               f"add a service {name} to compose.yaml with build context "
               f"{tree.rel(folder)} (docs/extending.md)" if (folder / "Dockerfile").is_file()
               else f"add docker = false to {toml} (or a Dockerfile and a compose.yaml "
                    "service: docs/extending.md)")
        return [Problem(name, "no compose.yaml service (RUNTIME=docker cannot run it)", fix)]
    if svc.dockerfile is None or not svc.dockerfile.is_file():
        where = tree.rel(svc.dockerfile) if svc.dockerfile else "none"
        return [Problem(name, f"compose.yaml's service {name} has no Dockerfile ({where})",
                        f"add {tree.rel(folder)}/Dockerfile or build the service from "
                        "its language's shared one")]
    found = []
    if svc.folder is None or svc.folder.resolve() != folder:
        builds = tree.rel(svc.folder) if svc.folder else "nothing"
        found.append(Problem(name, f"compose.yaml's service {name} builds {builds}, "
                             "not this folder",
                             f"set the service's build args SERVER: {name}" if shared else
                             f"set the service's build context to {tree.rel(folder)}"))
    own = folder / "Dockerfile"
    if own.is_file() and own.resolve() != svc.dockerfile.resolve():
        found.append(Problem(name, f"{tree.rel(own)} is not what its compose.yaml service "
                             f"builds ({tree.rel(svc.dockerfile)}), so it goes stale unseen",
                             f"delete {tree.rel(own)}"))
    if folder.parent == tree.java and server.artifact and svc.context is not None:
        found += _context_sends(server, svc.context, tree)
    return found


def _context_sends(server: Server, context: Path, tree: Tree) -> list[Problem]:
    """The Java images copy the jar the lab built: servers/java/.dockerignore
    names each one it lets through (`!grizzly/target/grizzly.jar`)."""
    ignore = context / ".dockerignore"
    if not server.artifact or "{" in server.artifact or not ignore.is_file():
        return []
    jar = (server.folder / server.artifact).resolve()
    if context.resolve() not in jar.parents:
        return []
    rel = str(jar.relative_to(context.resolve()))
    if f"!{rel}" in ignore.read_text().split():
        return []
    return [Problem(server.name, f"{tree.rel(ignore)} keeps {rel} out of the image's "
                    "build context (docker build: COPY failed)",
                    f"add !{rel} to {tree.rel(ignore)}")]


def build_checks(server: Server, tree: Tree) -> list[Problem]:
    """What `make build` would otherwise meet in Maven, gprbuild or the lab's
    build check: cheap, and no landed server fails them. A variant: only
    the inputs of its own (the folder is its base's)."""
    found = inputs(server, tree)
    if server.variant is not None:
        return found
    if server.folder.parent == tree.java:
        found += java(server, tree)
    elif server.folder.parent == tree.ada:
        found += ada(server, tree)
    return found


def server_checks(server: Server, tree: Tree) -> list[Problem]:
    """Every check of one server (a variant: its own inputs only)."""
    found = build_checks(server, tree)
    return found if server.variant is not None else found + docker(server, tree)


def asked(servers: Mapping[str, Server], names: list[str], tree: Tree) -> list[Problem]:
    """The checks of the servers a step was asked for (NAME, NAME@N, NAME#K;
    a variant with its base): the build checks, and the image checks of those
    with a service in tree.services (one without: RUNTIME=docker's own check
    refuses it, lab.measure.topologies.docker)."""
    plain = set()
    for n in names:
        try:
            plain.add(ServerSpec.parse(n).name)
        except ServerSpecError:     # a bad count names no server to check
            continue
    chosen = {s.name: s for s in (servers[n] for n in sorted(plain) if n in servers)}
    chosen |= {s.base: servers[s.base] for s in list(chosen.values())
               if s.base and s.base in servers}
    return [f for s in chosen.values() for f in
            build_checks(s, tree) + (docker(s, tree) if s.name in tree.services else [])]


def counted(n: int, what: str) -> str:
    """'1 problem', '2 problems'."""
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def check(paths: list[Path], tree: Tree) -> tuple[int, list[Problem]]:
    """Every manifest of paths and each of its servers: how many servers
    loaded, and every finding, in the order of paths."""
    known: dict[str, Server] = {}
    found: list[Problem] = []
    for path in paths:
        servers, refused = load(path, tree)
        found += refused
        try:
            add(known, path, servers)
        except ManifestError as e:
            found.append(Problem(path.parent.name, str(e).removeprefix(f"{path}: "),
                                 "rename one of the two folders (a server's name is its "
                                 "folder's)"))
            continue
        for server in servers:
            base = known.get(server.base) if server.base else None
            if base is not None and server.inputs == base.inputs:
                continue                    # its base's inputs, checked with the base
            found += server_checks(server, tree)
    return len(known), found
