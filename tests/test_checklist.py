"""The servers' checklist (lab/setup/checklist.py, `make check-servers`): every
server in the tree passes it. In a copy of the checkout, a server added
the wrong way gets exactly one line that names the mistake and its fix, with
exit 2, and `lab build` and `lab check` (make bench's first step) refuse it
before Maven, gprbuild or a toolchain setup is called."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from conftest import FAKES, ROOT, free_port, lab_env
from lab.measure.topologies.docker import compose
from lab.setup import checklist
from lab.setup.servers import ManifestError, load, manifests

pytestmark = pytest.mark.fault

DASH = "\u2014"
JAVA_SERVICE = """
  {name}:
    <<: *server
    profiles: [{name}]
    image: restlab/{name}
    build:
      <<: *java-build
      args:
        SERVER: {name}
    environment:
      <<: *knobs
      WORKERS: "${{WORKERS:-}}"
      JAVA_OPTS: "${{JAVA_OPTS:-}}"
"""
ADA_SERVICE = """
  {name}:
    <<: *server
    profiles: [{name}]
    image: restlab/{name}
    build:
      <<: *ada-build
      args:
        SERVER: {name}
    environment:
      <<: *knobs
      WORKERS: "${{WORKERS:-1}}"
"""
OUTSIDE = """name = "{name}"
language = "Python"
framework = "none"
version = "1"
{extra}
[build]
command = ["true"]
artifact = "out.bin"
inputs = {inputs}

[run]
command = ["python3", "-c", "pass"]

[workers]
meaning = "none"
"""


# ---------------------------------------------------------------- the tree

@pytest.mark.unit
def test_every_server_in_the_tree_passes() -> None:
    paths = manifests(ROOT)
    count, found = checklist.check(paths, checklist.Tree(ROOT, compose.services()))
    assert [f.line() for f in found] == []
    assert count >= len(paths) >= 11                  # variants are servers of their own
    env = {k: v for k, v in os.environ.items() if k != "LAB_SERVER_PATH"}
    out = subprocess.run(["make", "--no-print-directory", "check-servers"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout == ""
    assert f"{len(paths)} server folders, {count} servers: every check passes" in out.stderr


@pytest.mark.unit
def test_a_finding_is_one_line_owned_by_line() -> None:
    f = checklist.Problem("x", "what is wrong", "the one thing to do")
    assert f.line() == f"x: what is wrong {DASH} fix: the one thing to do"
    with pytest.raises(FrozenInstanceError):
        f.fix = "other"                               # type: ignore[misc]


@pytest.mark.unit
def test_the_manifest_says_docker_false_or_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "srv"
    folder.mkdir()
    (folder / "server.toml").write_text(OUTSIDE.format(name="srv", extra="docker = false",
                                                       inputs='["."]'))
    assert load(folder / "server.toml").docker is False
    (folder / "server.toml").write_text(OUTSIDE.format(name="srv", extra="", inputs='["."]'))
    assert load(folder / "server.toml").docker is True
    (folder / "server.toml").write_text(OUTSIDE.format(name="srv", extra='docker = "no"',
                                                       inputs='["."]'))
    with pytest.raises(ManifestError, match="'docker' must be true or false"):
        load(folder / "server.toml")


# ---------------------------------------------------------------- a copy, servers added wrong

@pytest.fixture
def checkout(tmp_path: Path) -> Iterator[Path]:
    """The lab, its Makefile, compose.yaml and servers/ (without build
    outputs) copied; mvn, gprbuild, docker and debootstrap on PATH are fakes
    that leave a mark when called."""
    top = tmp_path / "checkout"
    shutil.copytree(ROOT / "lab", top / "lab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "servers", top / "servers",
                    ignore=shutil.ignore_patterns("target", "obj", "bin", "lab-sources"))
    shutil.copy(ROOT / "compose.yaml", top)
    shutil.copy(ROOT / "Makefile", top)
    fakes = tmp_path / "bin"
    fakes.mkdir()
    for tool in ("mvn", "gprbuild", "gnatmake", "docker", "docker-compose", "debootstrap"):
        (fakes / tool).write_text(f'#!/bin/sh\necho {tool} "$@" >> "{tmp_path}/called"\n')
        (fakes / tool).chmod(0o755)
    yield top


def called(checkout: Path) -> str:
    mark = checkout.parent / "called"
    return mark.read_text() if mark.exists() else ""


def env_for(checkout: Path, **settings: str) -> dict[str, str]:
    """The user's environment; servers: the copy's own (LAB_SERVER_PATH unless
    given); a cache of its own, so that a build the check failed to stop
    would touch nothing shared (and meet the fakes)."""
    cache = checkout.parent / "cache"
    cache.mkdir(exist_ok=True)
    env = lab_env(checkout.parent, **{"LAB_SERVER_PATH": "", "LAB_CACHE": str(cache),
                                      **settings})
    env["PATH"] = f"{checkout.parent / 'bin'}:{env['PATH']}"
    if env.get("ADA_SOURCES"):          # relative to this checkout, not to the copy
        env["ADA_SOURCES"] = str((ROOT / env["ADA_SOURCES"]).resolve())
    return env


def run(checkout: Path, *args: str, **settings: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lab", *args], cwd=checkout,
                          env=env_for(checkout, **settings), capture_output=True, text=True,
                          timeout=120)


def lines(out: subprocess.CompletedProcess[str]) -> list[str]:
    return out.stdout.splitlines()


def add_java(top: Path, name: str, module: bool = True, labenv: bool = True,
             service: bool = True) -> Path:
    """A Java module made as grizzly is, each step done unless told otherwise."""
    folder = top / "servers" / "java" / name
    shutil.copytree(top / "servers" / "java" / "grizzly", folder)
    toml = folder / "server.toml"
    toml.write_text(toml.read_text().replace("grizzly", name))
    pom = folder / "pom.xml"
    text = pom.read_text().replace("<artifactId>grizzly</artifactId>",
                                   f"<artifactId>{name}</artifactId>")
    if not labenv:
        start = text.index("    <dependency>\n      <groupId>lab.setup.servers</groupId>")
        text = text[:start] + text[text.index("</dependency>", start) + 14:]
    pom.write_text(text)
    if module:
        parent = top / "servers" / "java" / "pom.xml"
        parent.write_text(parent.read_text().replace(
            "<module>tomcat</module>", f"<module>tomcat</module>\n    <module>{name}</module>"))
    if service:
        with (top / "compose.yaml").open("a") as f:
            f.write(JAVA_SERVICE.format(name=name))
        with (top / "servers" / "java" / ".dockerignore").open("a") as f:
            f.write(f"!{name}/target/{name}.jar\n")
    return folder


def add_ada(top: Path, name: str, with_labenv: bool = True, own_settings: bool = False,
            service: bool = True) -> Path:
    """An Ada server made as ada-mini is, each step done unless told otherwise."""
    folder = top / "servers" / "ada" / name
    shutil.copytree(top / "servers" / "ada" / "ada-mini", folder)
    toml = folder / "server.toml"
    toml.write_text(toml.read_text().replace("ada-mini", name))
    gpr = folder / "ada_mini.gpr"
    if not with_labenv:
        gpr.write_text(gpr.read_text().replace('with "../labenv/labenv.gpr";', ""))
    if own_settings:
        shutil.copy(top / "servers" / "ada" / "labenv" / "src" / "lab_settings.ads",
                    folder / "src")
    if service:
        with (top / "compose.yaml").open("a") as f:
            f.write(ADA_SERVICE.format(name=name))
    return folder


def add_outside(top: Path, name: str, inputs: str = '["."]', docker_false: bool = True) -> Path:
    """A server outside servers/, found through LAB_SERVER_PATH (folder `elsewhere`)."""
    folder = top.parent / "elsewhere" / name
    folder.mkdir(parents=True)
    (folder / "server.toml").write_text(OUTSIDE.format(
        name=name, inputs=inputs, extra="docker = false" if docker_false else ""))
    return folder


def test_a_copy_with_servers_added_right_passes(checkout: Path) -> None:
    add_java(checkout, "hello")
    add_ada(checkout, "mini2")
    add_outside(checkout, "outside")
    out = run(checkout, "check-servers", LAB_SERVER_PATH=str(checkout.parent / "elsewhere"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert lines(out) == []
    assert called(checkout) == ""


def test_java_module_missing_from_the_parent_pom(checkout: Path) -> None:
    add_java(checkout, "hello", module=False)
    out = run(checkout, "check-servers")
    assert out.returncode == 2, out.stderr
    assert lines(out) == [
        'hello: not a <module> of servers/java/pom.xml (Maven: "Could not find the selected '
        f'project in the reactor") {DASH} fix: add <module>hello</module> to '
        "servers/java/pom.xml"]
    assert "1 problem in 1 of 12 server folders" in out.stderr
    # make build and make bench's first step refuse it, before Maven is called
    for step in (["build", "hello"], ["check"]):
        out = run(checkout, *step, SERVER="hello")
        assert out.returncode == 2, out.stderr
        assert "add <module>hello</module> to servers/java/pom.xml" in out.stderr
        assert "[hello] build:" not in out.stderr
    out = subprocess.run(["make", "--no-print-directory", "build", "SERVER=hello"], cwd=checkout,
                         env=env_for(checkout), capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "add <module>hello</module>" in out.stderr
    assert called(checkout) == ""


def test_java_module_without_the_labenv_dependency(checkout: Path) -> None:
    add_java(checkout, "hello", labenv=False)
    out = run(checkout, "check-servers", "servers/java/hello")
    assert out.returncode == 2, out.stderr
    assert lines(out) == [
        "hello: its pom does not depend on the shared labenv module (lab.env.LabEnv reads PORT, "
        f"BIND, BACKLOG, WORKERS) {DASH} fix: add <dependency><groupId>lab.setup.servers"
        "</groupId><artifactId>labenv</artifactId><version>${project.version}</version>"
        "</dependency> to servers/java/hello/pom.xml"]


def test_ada_project_without_labenv_or_with_its_own_settings(checkout: Path) -> None:
    add_ada(checkout, "mini2", with_labenv=False)
    add_ada(checkout, "mini3", own_settings=True)
    out = run(checkout, "check-servers")
    assert out.returncode == 2, out.stderr
    assert lines(out) == [
        "mini2: ada_mini.gpr does not with the shared settings project (Lab_Settings in "
        f'servers/ada/labenv) {DASH} fix: add the line with "../labenv/labenv.gpr"; to '
        "servers/ada/mini2/ada_mini.gpr",
        f"mini3: its own copy of Lab_Settings (src/lab_settings.ads) {DASH} fix: delete "
        "servers/ada/mini3/src/lab_settings.ads: servers/ada/labenv has the one"]
    out = run(checkout, "build", "mini2", SERVER="mini2")
    assert out.returncode == 2, out.stderr
    assert 'add the line with "../labenv/labenv.gpr"; to servers/ada/mini2' in out.stderr
    # neither the toolchain's setup nor the build started
    assert "[mini2] setup:" not in out.stderr and "[mini2] build:" not in out.stderr
    assert called(checkout) == ""


def test_an_input_that_does_not_exist(checkout: Path) -> None:
    folder = add_outside(checkout, "outside", inputs='[".", "../nowhere"]')
    out = run(checkout, "check-servers", LAB_SERVER_PATH=str(folder.parent))
    assert out.returncode == 2, out.stderr
    assert lines(out) == [
        f'outside: [build] inputs names "../nowhere", which does not exist {DASH} fix: '
        f'correct or remove "../nowhere" in [build] inputs of {folder / "server.toml"}']
    out = run(checkout, "build", "outside", SERVER="outside",
              LAB_SERVER_PATH=str(folder.parent))
    assert out.returncode == 2 and '"../nowhere"' in out.stderr
    assert "[outside] build:" not in out.stderr


def test_no_dockerfile_nor_service_and_no_docker_false(checkout: Path) -> None:
    folder = add_outside(checkout, "outside", docker_false=False)
    add_java(checkout, "hello", service=False)
    out = run(checkout, "check-servers", LAB_SERVER_PATH=str(folder.parent))
    assert out.returncode == 2, out.stderr
    assert lines(out) == [
        f"hello: no compose.yaml service (RUNTIME=docker cannot run it) {DASH} fix: add a "
        "service hello to compose.yaml with <<: *java-build and args SERVER: hello "
        "(docs/extending.md)",
        f"outside: no compose.yaml service (RUNTIME=docker cannot run it) {DASH} fix: add "
        f"docker = false to {folder / 'server.toml'} (or a Dockerfile and a compose.yaml "
        "service: docs/extending.md)"]
    # the process runtime builds it: only RUNTIME=docker needs the image
    out = run(checkout, "check", SERVER="hello", PORT=str(free_port()))
    assert out.returncode == 0, out.stderr


def test_docker_mistakes_that_build_the_wrong_thing(checkout: Path) -> None:
    (checkout / "servers" / "ada" / "aws" / "Dockerfile").write_text("FROM debian:bullseye\n")
    add_java(checkout, "hello")
    text = (checkout / "compose.yaml").read_text()
    (checkout / "compose.yaml").write_text(text.replace("SERVER: hello", "SERVER: grizzly"))
    (checkout / "servers" / "java" / ".dockerignore").write_text(
        (checkout / "servers" / "java" / ".dockerignore").read_text()
        .replace("!hello/target/hello.jar\n", ""))
    nginx = checkout / "servers" / "nginx" / "server.toml"
    nginx.write_text("docker = false\n" + nginx.read_text())
    out = run(checkout, "check-servers")
    assert out.returncode == 2, out.stderr
    assert lines(out) == [
        "aws: servers/ada/aws/Dockerfile is not what its compose.yaml service builds "
        f"(servers/ada/Dockerfile), so it goes stale unseen {DASH} fix: delete "
        "servers/ada/aws/Dockerfile",
        f"hello: compose.yaml's service hello builds servers/java/grizzly, not this folder "
        f"{DASH} fix: set the service's build args SERVER: hello",
        "hello: servers/java/.dockerignore keeps hello/target/hello.jar out of the image's "
        f"build context (docker build: COPY failed) {DASH} fix: add !hello/target/hello.jar "
        "to servers/java/.dockerignore",
        "nginx: servers/nginx/server.toml says docker = false, yet compose.yaml has a service "
        f"nginx {DASH} fix: remove docker = false from servers/nginx/server.toml"]
    assert "4 problems in 3 of 12 server folders" in out.stderr
    # RUNTIME=docker: make bench's first step says so before any image is built
    out = run(checkout, "check", SERVER="hello", RUNTIME="docker")
    assert out.returncode == 2 and "SERVER: hello" in out.stderr
    assert called(checkout) == ""


@pytest.mark.parametrize("text, why", [
    ('name = "broken"\nlanguage = "C"\n', "missing [run] table"),
    ('name = "broken"\nlanguage = \n', "not valid TOML"),
    (OUTSIDE.format(name="other", extra="", inputs='["."]'),
     "name 'other' must equal its folder name 'broken'"),
])
def test_a_broken_manifest(checkout: Path, text: str, why: str) -> None:
    folder = checkout / "servers" / "broken"
    folder.mkdir()
    (folder / "server.toml").write_text(text)
    out = run(checkout, "check-servers")
    assert out.returncode == 2, out.stderr
    [line] = lines(out)
    assert line.startswith(f"broken: server.toml refused: {why}")
    assert line.endswith(f"{DASH} fix: correct servers/broken/server.toml (servers/README.md "
                         "gives the format)")
    # the others are still checked: one line, for the broken one only
    assert "1 problem in 1 of 12 server folders" in out.stderr


def test_a_folder_without_a_manifest(checkout: Path) -> None:
    (checkout / "servers" / "java" / "hello").mkdir()
    out = run(checkout, "check-servers", "servers/java/hello")
    assert out.returncode == 2
    assert lines(out) == [f"hello: no server.toml in servers/java/hello {DASH} fix: write "
                          "servers/java/hello/server.toml (servers/README.md gives the format)"]


@pytest.mark.unit
def test_the_test_doubles_say_what_they_lack() -> None:
    """tests/servers: no image, said as `docker = false` would fix it, and
    nothing else: their build checks pass (lab check runs those on them)."""
    tree = checklist.Tree(ROOT, compose.services())
    count, found = checklist.check(manifests(ROOT / "nowhere", str(FAKES)), tree)
    declared = [tomllib.loads(p.read_text()) for p in FAKES.glob("*/server.toml")]
    assert count == sum(1 + len(d.get("variants", {})) for d in declared)   # variants: servers
    assert {f.problem for f in found} == {"no compose.yaml service (RUNTIME=docker cannot "
                                          "run it)"}


@pytest.mark.unit
def test_the_servers_a_step_is_asked_for(checkout: Path) -> None:
    """NAME@N, NAME#K and a variant (with its base) are checked as the server
    they name; the image checks only where a service exists (RUNTIME=docker)."""
    from lab.setup.servers import discover
    tree = checklist.Tree(ROOT, compose.services())
    assert checklist.asked(discover(ROOT), ["jersey.jetty@8", "aws#2", "nginx"], tree) == []
    add_java(checkout, "hello", module=False)
    (checkout / "servers" / "ada" / "aws" / "Dockerfile").write_text("FROM debian:bullseye\n")
    found = discover(checkout)
    copy = checklist.Tree(checkout, compose.services(checkout / "compose.yaml"))
    assert [f.fix for f in checklist.asked(found, ["hello@4", "aws#2"], copy)] == [
        "delete servers/ada/aws/Dockerfile",
        "add <module>hello</module> to servers/java/pom.xml"]
    assert [f.fix for f in checklist.asked(found, ["aws"], checklist.Tree(checkout, {}))] == []


def test_check_servers_of_a_folder_of_servers_checks_each_and_advises_the_layout(
        checkout: Path) -> None:
    """`check-servers lab-server` (the folder LAB_SERVER_PATH names, issue
    30): its servers are checked; an empty one is told the documented
    lab-server/<name>/server.toml layout, not lab-server/server.toml alone."""
    folder = add_outside(checkout, "outside", inputs='[".", "../nowhere"]')
    out = run(checkout, "check-servers", str(folder.parent))
    assert out.returncode == 2 and '"../nowhere"' in out.stdout, out.stdout + out.stderr
    empty = checkout.parent / "lab-server"
    empty.mkdir()
    out = run(checkout, "check-servers", str(empty))
    assert out.returncode == 2, out.stderr
    assert f"{empty}/<name>/server.toml" in out.stdout and "LAB_SERVER_PATH" in out.stdout


@pytest.mark.unit
def test_lab_list_writes_a_manifest_s_newline_as_its_escape(tmp_path: Path) -> None:
    """A framework with a newline in it broke `lab list`'s table (issue 54):
    each cell is one line, a control character written as its escape."""
    folder = tmp_path / "srv"
    folder.mkdir()
    (folder / "server.toml").write_text(
        OUTSIDE.format(name="srv", extra="", inputs='["."]').replace(
            'framework = "none"', 'framework = "two\\nlines\\tand a tab"'))
    env = lab_env(tmp_path, LAB_SERVER_PATH=str(tmp_path))
    out = subprocess.run([sys.executable, "-m", "lab", "list"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if line.startswith("srv "))
    assert "two\\nlines\\tand a tab" in row
    assert not any(line.startswith("lines") for line in out.stdout.splitlines())
