"""RUNTIME=docker: compose.yaml and the Dockerfiles kept in step with the
servers, the lab's reading of compose.yaml and of a cgroup, the checks that
exit 2 before anything starts, and, where a Docker engine can run (root, or
one already answering), aws and undertow through Compose end to end: built,
verified, swept, both memory figures recorded, and no container left after a
success, a failure mid-sweep or Ctrl-C."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

import pytest

from conftest import ROOT, bench, free_port, lab, lab_env, leftovers, repository_env, run_folders
from lab.setup.fromenv import from_env
from lab.measure.topologies import docker
from lab.measure.topologies.docker import cgroups, compose, engine as docker_engine
from lab.setup.servers import discover
from lab.record.rows import CSV, Row, append_row, read_rows, rows_by_server

pytestmark = [pytest.mark.unit, pytest.mark.docker]

PREFIX = "dockertest"                     # compose projects of these tests: dockertest-<port>


def servers_by_folder() -> dict[Path, list]:
    out: dict[Path, list] = {}
    for s in discover(ROOT).values():
        out.setdefault(s.folder, []).append(s)
    return out


# ---------------------------------------------------------------- compose.yaml, read

def test_compose_reader_reads_the_subset_and_refuses_the_rest(tmp_path: Path) -> None:
    doc = compose.parse("""
x-base: &base            # a comment
  cpuset: "0"
  labels:
    a.b: "x # not a comment"
services:
  one:
    <<: *base
    cpuset: "1"          # written out: wins over the merged value
    profiles: [one, two]
    ports:
      - "127.0.0.1:80:80"
""")
    one = doc["services"]["one"]
    assert one == {"cpuset": "1", "labels": {"a.b": "x # not a comment"},
                   "profiles": ["one", "two"], "ports": ["127.0.0.1:80:80"]}
    for bad, where in (("a: {b: c}\n", "line 1"), ("a:\n  - b: c\n", "line 2"),
                       ("a: |\n  text\n", "line 1"), ("a: *nowhere\n", "line 1"),
                       ("a: 1\na: 2\n", "line 2")):
        with pytest.raises(compose.ComposeFileError, match=where):
            compose.parse(bad)


def test_every_dockerfile_has_a_service_and_every_service_a_dockerfile() -> None:
    services = compose.services()
    assert "client" in services                       # Siege and wrk
    built = {s.folder for s in services.values()}
    # a Dockerfile of its own in a server's folder, or a shared one (servers/java,
    # servers/ada) that builds the folder its SERVER argument names: each server
    # folder beside it
    own, shared = set(), set()
    for p in ROOT.glob("servers/**/Dockerfile"):
        if "target" in p.parts:
            continue
        if "ARG SERVER" in p.read_text():
            shared |= {t.parent.resolve() for t in p.parent.glob("*/server.toml")}
        else:
            own.add(p.parent.resolve())
    assert shared >= {(ROOT / "servers/java" / m).resolve()
                      for m in ("grizzly", "jersey", "undertow", "jetty", "tomcat")}
    assert shared >= {(ROOT / "servers/ada" / m).resolve()
                      for m in ("aws", "asf", "ews", "simple-components", "ada-mini")}
    assert own | shared == built - {(ROOT / "client").resolve()}
    by_folder = servers_by_folder()
    for name, svc in services.items():
        assert svc.dockerfile is not None and svc.dockerfile.exists(), name
        if "ARG SERVER" in svc.dockerfile.read_text():
            assert svc.args.get("SERVER") == name, name
        assert svc.image == f"restlab/{name}"
        assert svc.profiles == (name,), f"{name}: `--profile {name}` must start it alone"
        if name == "client":
            assert svc.network_mode == "host" and not svc.ports
            continue
        [base] = [s for s in by_folder[svc.folder] if s.variant is None]  # type: ignore[index]
        assert base.name == name                      # the service is the server's folder
    for must in ("aws", "ada-mini", "jersey", "undertow", "grizzly", "jetty", "tomcat", "nginx"):
        assert must in services


def test_services_publish_on_loopback_and_take_the_knobs() -> None:
    by_folder = servers_by_folder()
    for name, svc in compose.services().items():
        if name == "client":
            continue
        # published on BIND (127.0.0.1 unless asked) only, the same port inside
        assert svc.ports == ("${BIND:-127.0.0.1}:${PORT:-8080}:${PORT:-8080}",), name
        assert svc.cpuset == "${SERVER_CPUS:-}" and svc.mem_limit == "${MEM_LIMIT:-0}"
        env = svc.environment
        assert env["BIND"] == "0.0.0.0"              # inside its own network namespace
        assert env["PORT"] == "${PORT:-8080}" and env["BACKLOG"] == "${BACKLOG:-512}"
        servers = by_folder[svc.folder]               # type: ignore[index]
        [base] = [s for s in servers if s.variant is None]
        shipped = "" if base.workers_default is None else base.workers_default   # as shipped
        assert env["WORKERS"] == f"${{WORKERS:-{shipped}}}", name
        # every variable a manifest or a variant sets reaches the container
        for s in servers:
            for key in s.env:
                assert env.get(key) == f"${{{key}:-}}", (s.name, key)
        if base.language == "Java":
            assert env["JAVA_OPTS"] == "${JAVA_OPTS:-}"


def test_dockerfiles_start_from_the_issue_bases_and_ship_their_facts() -> None:
    for name, svc in compose.services().items():
        assert svc.dockerfile is not None
        text = svc.dockerfile_text()                  # its build arguments put in
        bases = compose.base_images(svc.dockerfile)
        lang = next((s.language for s in discover(ROOT).values()
                     if s.name == name), "client")
        assert bases == (["debian:bullseye"] if lang == "Ada" else ["debian:bookworm"]), name
        if lang == "Ada":
            # one Dockerfile for the five (servers/ada), its build stage reading
            # the server's .gpr as toolchain.sh does (image-build.sh)
            assert svc.dockerfile == (ROOT / "servers/ada/Dockerfile").resolve(), name
            assert svc.folder is not None
            [gpr] = svc.folder.glob("*.gpr")
            assert "libaws20-dev" in text
            # AWS's runtime where the server is linked against it, GNAT's else
            on_aws = any(f'with "{p}";' in gpr.read_text() for p in ("aws", "servletada_aws"))
            assert (svc.args.get("RUNTIME_PACKAGES") == "libaws6") == on_aws, name
            # sources from the lab's checked archives only, no download
            assert f"COPY {name}/*.gpr {name}/*.patch {name}/lab-source[s] " in text, name
            assert "COPY labenv/ " in text                       # Lab_Settings
            assert not any(w in text for w in ("curl ", "wget ", "git clone", "ADD http"))
            assert "image-build.sh" in text and "AS build" in text  # multi-stage: small image
        if lang == "Java":
            assert "openjdk-17-jre-headless" in text
            # the build context (servers/java) sends this server's Dockerfile and jar
            allowed = (ROOT / "servers/java/.dockerignore").read_text().splitlines()
            assert "!Dockerfile" in allowed and f"!{name}/target/{name}.jar" in allowed
            assert f"COPY {name}/target/{name}.jar " in text
        if name != "client":
            assert "/lab/facts" in text and "USER nobody" in text, name
    assert compose.base_images(ROOT / "servers/ada/Dockerfile") == ["debian:bullseye"]


def test_only_the_java_images_need_the_labs_own_build() -> None:
    params = from_env({"SERVER": "aws", "RUNTIME": "docker"}, list(discover(ROOT)), ["siege"])
    found = discover(ROOT)
    assert docker.needs_build(params, found["undertow"])           # the image copies the jar
    assert docker.needs_build(params, found["jersey.tomcat"])
    assert not docker.needs_build(params, found["aws"])            # gprbuild in the image
    assert not docker.needs_build(params, found["ada-mini"])


def test_runtime_docker_is_the_topology_the_settings_and_the_manifest_record(
        tmp_path: Path) -> None:
    """RUNTIME=docker picks the docker topology: the settings say so (not "local"),
    and so does a manifest's params, of this lab or of one that recorded "local"."""
    from lab.measure import topologies
    from lab.record import checked, manifest
    params = from_env({"SERVER": "aws", "RUNTIME": "docker"}, list(discover(ROOT)), ["siege"])
    assert params.topology == "docker" == topologies.chosen(params).name
    local = from_env({"SERVER": "aws"}, list(discover(ROOT)), ["siege"])
    assert local.topology == "local" == topologies.chosen(local).name
    rec = manifest.RunParams.parse(checked.obj(params.to_json(), tmp_path, "params"))
    assert rec.topology == "docker"
    old = {**params.to_json(), "topology": "local"}          # as a lab before this recorded it
    assert manifest.RunParams.parse(checked.obj(old, tmp_path, "params")).topology == "docker"


# ---------------------------------------------------------------- cgroups and rows

def test_cgroup_memory_reads_v1_and_v2(tmp_path: Path) -> None:
    v1 = tmp_path / "v1"
    v1.mkdir()
    (v1 / "memory.usage_in_bytes").write_text(f"{300 << 20}\n")
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    (v1 / "memory.kmem.usage_in_bytes").write_text(f"{10 << 20}\n")
    (v1 / "memory.stat").write_text(f"cache 1\nrss 2\ntotal_cache {120 << 20}\n"
                                    f"total_rss {170 << 20}\ntotal_inactive_file {100 << 20}\n")
    cg = cgroups.CgroupMemory(1, v1)
    assert cg.working_set_kb() == 200 << 10 and cg.limit() is None
    f = cg.figures()
    assert f is not None and f["usage_kb"] == 300 << 10 and f["anon_kb"] == 170 << 10
    assert f["file_kb"] == 120 << 10 and f["kernel_kb"] == 10 << 10
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "memory.current").write_text(f"{50 << 20}\n")
    (v2 / "memory.max").write_text(f"{256 << 20}\n")
    (v2 / "memory.stat").write_text(f"anon {30 << 20}\nfile {15 << 20}\n"
                                    f"inactive_file {5 << 20}\nkernel {4 << 20}\n")
    cg2 = cgroups.CgroupMemory(2, v2)
    assert cg2.working_set_kb() == 45 << 10 and cg2.limit() == 256 << 20
    (v2 / "memory.current").unlink()                   # the container is gone
    assert cg2.working_set_kb() is None and cg2.figures() is None


def test_this_process_has_a_memory_cgroup_the_lab_can_read() -> None:
    cg = cgroups.cgroup_memory(os.getpid())
    assert cg is not None, "no memory cgroup found from /proc/self/cgroup and the mounts"
    assert cg.version == (1 if cgroups.cgroup_version() == "v1" else 2)
    usage = cg.usage()
    assert usage is not None and usage > 0


def a_row(server: str, c: int, cgroup: int | None) -> Row:
    values = {f.name: 1 for f in fields(Row)}
    values.update(server=server, rep=1, axis="concurrency", value=c, concurrency=c,
                  offered_rps=None, p50_ms=None, p90_ms=None, p99_ms=1.5, rss_end_kb=10240,
                  littles_ratio=1.0, client_bound=False, flags="", rate_rps=1000.0,
                  cgroup_mem_kb=cgroup, cgroup_mem_peak_kb=cgroup, failure_kinds="",
                  tcp_counters=None)
    return Row(**values)


def test_old_results_without_the_cgroup_columns_still_read(tmp_path: Path) -> None:
    append_row(tmp_path, a_row("aws", 1, None))
    csv = tmp_path / CSV
    head, body = csv.read_text().splitlines()
    keep = [i for i, c in enumerate(head.split(",")) if not c.startswith("cgroup_")]
    csv.write_text("\n".join(",".join(line.split(",")[i] for i in keep)
                             for line in (head, body)) + "\n")
    assert "cgroup" not in csv.read_text()                     # as an older lab wrote it
    [row] = read_rows(tmp_path)
    assert row.cgroup_mem_kb is None and row.rss_end_kb == 10240


def test_the_summary_names_both_memory_figures_only_when_there_is_a_cgroup(
        tmp_path: Path) -> None:
    from lab.analyse import analysis
    from lab.record import manifest
    from lab.present import report
    for run, cgroup in ((tmp_path / "process", None), (tmp_path / "docker", 20480)):
        run.mkdir()
        append_row(run, a_row("aws", 1, cgroup))
        [row] = read_rows(run)
        assert row.cgroup_mem_kb == cgroup                     # typed back, None when empty
        m = manifest.Manifest("r", manifest.RunParams(["aws"], "concurrency", 1),
                              manifest.ClientInfo("wrk"),
                              servers={"aws": manifest.ServerRecord("aws", framework="AWS",
                                                                    version="20.2")})
        manifest.write_manifest(run, m)
        table = "\n".join(report.server_table(m, analysis.of(run)[1].stats))
        if cgroup is None:
            assert "cgroup" not in table
        else:
            assert "| RSS end MB | cgroup memory end MB |" in table
            assert "| 10.0 | 20.0 |" in table
            assert "docker stats" in table and "MEM_LIMIT" in table


# ---------------------------------------------------------------- exit 2, nothing started

@pytest.mark.fault
@pytest.mark.parametrize("settings, message", [
    ({"SERVER": "aws paced"}, "no compose.yaml service for paced"),
    ({"SERVER": "aws", "MEM_LIMIT": "1m"}, "Docker's smallest memory limit is 6m"),
    ({"SERVER": "aws", "MEM_LIMIT": "lots"}, "expected a size such as 512m"),
    ({"SERVER": "aws", "DOCKER_HOST": "ssh://lab@server.example"}, "DOCKER_HOST=ssh://"),
])
def test_bad_docker_settings_exit_2_before_anything_runs(tmp_path: Path, settings: dict[str, str],
                                                         message: str) -> None:
    out = bench(lab_env(tmp_path, RUNTIME="docker", PORT=str(free_port()), **settings),
                timeout=120)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr
    assert run_folders(tmp_path) == []
    assert "compose build" not in out.stderr and "debootstrap" not in out.stderr


@pytest.fixture
def readable_repo() -> Iterator[Path]:
    """The lab, compose.yaml and the servers' manifests and Dockerfiles, copied
    where `nobody` can read them."""
    top = Path(tempfile.mkdtemp(prefix="lab-docker-", dir="/tmp"))
    try:
        shutil.copytree(ROOT / "lab", top / "lab", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(ROOT / "servers", top / "servers",
                        ignore=shutil.ignore_patterns("target", "obj", "bin", "src"))
        shutil.copy(ROOT / "compose.yaml", top)
        for path in [top, *top.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        for writable in ("results", "cache"):        # LAB_CACHE too: lab check refuses else
            (top / writable).mkdir(mode=0o777)
            (top / writable).chmod(0o777)
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.fault
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to run as another user")
def test_a_normal_user_gets_the_steps_and_exit_2(readable_repo: Path) -> None:
    out = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                          "/usr/bin/python3", "-m", "lab", "check"],
                         cwd=readable_repo, capture_output=True, text=True, timeout=120,
                         env={"PATH": os.environ.get("PATH", ""), "SERVER": "aws",
                              "RUNTIME": "docker", "PORT": str(free_port()),
                              "LAB_CACHE": str(readable_repo / "cache"),
                              "RESULTS": str(readable_repo / "results")})
    assert out.returncode == 2, out.stderr
    assert "needs root" in out.stderr
    assert "apt-get install -y --no-install-recommends docker.io docker-compose" in out.stderr
    assert "make images" in out.stderr


# ---------------------------------------------------------------- through Compose, for real

def engine_usable() -> bool:
    return os.geteuid() == 0 or docker_engine.engine_version() is not None


NEEDS_DOCKER = pytest.mark.skipif(not engine_usable(),
                                  reason="RUNTIME=docker needs root here (it installs and "
                                         "starts the engine as root)")


def project_leftovers(port: int) -> list[str]:
    """Containers and networks of this port's compose project (none may remain)."""
    if shutil.which("docker") is None or docker_engine.engine_version() is None:
        return []
    label = f"label=com.docker.compose.project={PREFIX}-{port}"
    containers = docker_engine.run(["docker", "ps", "-a", "--filter", label, "--format",
                                    "{{.Names}} {{.Status}}"]).stdout.splitlines()
    networks = docker_engine.run(["docker", "network", "ls", "--filter", label, "--format",
                                  "{{.Name}}"]).stdout.splitlines()
    return containers + networks


def docker_env(tmp_path: Path, port: int, **settings: str) -> dict[str, str]:
    return repository_env(tmp_path, RUNTIME="docker", PORT=str(port), LAB_DOCKER_PREFIX=PREFIX,
                          **settings)


@pytest.mark.real_server
@NEEDS_DOCKER
def test_aws_and_undertow_through_compose(tmp_path: Path) -> None:
    port = free_port()
    env = docker_env(tmp_path, port, SERVER="aws undertow", CONCURRENCY="1 4", DURATION="2s",
                     WARMUP="1s", PROBE="1", MEM_LIMIT="512m")
    out = bench(env, timeout=3600)
    assert out.returncode == 0, out.stderr[-4000:]
    [run] = run_folders(tmp_path)
    m = json.loads((run / "manifest.json").read_text())
    assert m["status"] == "complete", m["problems"]
    assert m["topology"].split()[0] == "docker"
    details = m["topology_details"]
    assert details["runtime"] == "docker" and details["memory_limit"] == "512m"
    assert details["published_on"] == f"127.0.0.1:{port}"
    found = docker_engine.find_compose()             # v2 where the plugin is, else v1
    assert found is not None and details["compose"] == found.describe()
    assert details["engine"] and details["project"] == f"{PREFIX}-{port}"
    assert set(details["memory_figures"]) == {"rss_end_kb", "cgroup_mem_kb"}
    server_cpus = m["pinning"]["server_cpus"]
    for name in ("aws", "undertow"):
        rec = m["servers"][name]
        assert rec["status"] == "complete", rec
        [start] = rec["starts"]
        assert start["runtime"] == "docker" and start["image"] == f"restlab/{name}"
        assert "up" in start["command"] and name in start["command"]
        # inside its own namespace on 0.0.0.0, with the backlog asked for (from ss there)
        assert start["listening"] == {"address": "0.0.0.0", "backlog": 512}
        assert start["published_on"] == f"127.0.0.1:{port}"
        assert start["cpuset"] == server_cpus and start["memory_limit_kb"] == 512 * 1024
        assert start["cgroup_mem_idle_kb"] > 0 and start["rss_idle_kb"] > 0
        assert rec["facts"].get("image") == f"restlab/{name}", rec["facts"]
        probed = json.loads((run / name / "probe.json").read_text())
        assert len(probed["results"]) == 11 and probed["final_ok"], name
        memory = [json.loads(line) for line in
                  (run / name / "server-rep1.memory.jsonl").read_text().splitlines()]
        assert memory and all(x["usage_kb"] >= x["working_set_kb"] > 0 and x["rss_kb"] > 0
                              for x in memory)
    assert "java_version" in m["servers"]["undertow"]["facts"]
    assert "gnat_version" in m["servers"]["aws"]["facts"]
    grouped = dict(rows_by_server(run))
    for name, rows in grouped.items():
        assert [r.concurrency for r in rows] == [1, 4]
        for r in rows:
            assert r.rate_rps > 0 and r.failed == 0, r
            assert r.rss_end_kb > 0 and r.cgroup_mem_kb and r.cgroup_mem_kb > 0, r
            assert r.server_cpu_s > 0 and r.threads_end >= 1, r
    summary = (run / "summary.md").read_text()
    assert "cgroup memory end MB" in summary
    assert project_leftovers(port) == [] and leftovers(run) == []


def start_docker_bench(tmp_path: Path, port: int) -> tuple[subprocess.Popen[str], Path]:
    env = docker_env(tmp_path, port, SERVER="aws", CONCURRENCY="1 2 3 4 5 6", DURATION="2s",
                     WARMUP="0", PROBE="0")
    proc = subprocess.Popen([str(ROOT / "run-benchmark.sh")], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 2400                 # a cold image build included
    while time.monotonic() < deadline:
        runs = run_folders(tmp_path)
        if runs and read_rows(runs[0]):
            return proc, runs[0]
        if proc.poll() is not None:
            raise AssertionError(proc.communicate()[1][-4000:])
        time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError("no level finished in time")


def live_container(run: Path) -> str:
    start = json.loads((run / "manifest.json").read_text())["servers"]["aws"]["starts"][-1]
    return str(start["container"])


@pytest.mark.real_server
@NEEDS_DOCKER
def test_a_container_that_dies_mid_sweep_leaves_nothing(tmp_path: Path) -> None:
    port = free_port()
    proc, run = start_docker_bench(tmp_path, port)
    container = live_container(run)
    published = docker_engine.run(["docker", "port", container]).stdout.split()
    assert published == [f"{port}/tcp", "->", f"127.0.0.1:{port}"]   # loopback only
    assert docker_engine.run(["docker", "kill", container]).returncode == 0
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert "the server exited" in err and "finished levels are kept" in err
    m = json.loads((run / "manifest.json").read_text())
    assert m["status"] == "incomplete" and m["servers"]["aws"]["status"] == "failed"
    assert 1 <= len(read_rows(run)) < 6
    assert project_leftovers(port) == [] and leftovers(run) == []


@pytest.mark.real_server
@NEEDS_DOCKER
def test_ctrl_c_mid_sweep_removes_the_container(tmp_path: Path) -> None:
    port = free_port()
    proc, run = start_docker_bench(tmp_path, port)
    assert project_leftovers(port)                    # the container and its network run
    os.killpg(proc.pid, signal.SIGINT)                # what a terminal's Ctrl-C does
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    m = json.loads((run / "manifest.json").read_text())
    assert m["status"] == "interrupted" and m["servers"]["aws"]["status"] == "interrupted"
    assert project_leftovers(port) == [] and leftovers(run) == []


@pytest.mark.real_server
@NEEDS_DOCKER
def test_compose_reads_compose_yaml_as_the_lab_does(tmp_path: Path) -> None:
    port = free_port()
    assert lab(docker_env(tmp_path, port, SERVER="aws"), "deps").returncode == 0
    found = docker_engine.find_compose()
    assert found is not None
    profiles = ",".join(compose.services())
    env = {**os.environ, "COMPOSE_PROFILES": profiles, "PORT": "18080", "BIND": "127.0.0.1",
           "SERVER_CPUS": "0", "MEM_LIMIT": "0"}
    listed = docker_engine.run([*found.argv, "-f", str(compose.FILE), "config", "--services"],
                               env=env)
    assert listed.returncode == 0, listed.stderr
    assert sorted(listed.stdout.split()) == sorted(compose.services())
    config = docker_engine.run([*found.argv, "-f", str(compose.FILE), "config"], env=env)
    assert config.returncode == 0, config.stderr
    assert "127.0.0.1" in config.stdout and "18080" in config.stdout


@pytest.mark.real_server
@NEEDS_DOCKER
def test_the_client_service_runs_siege_and_wrk(tmp_path: Path) -> None:
    port = free_port()
    env = docker_env(tmp_path, port, SERVER="aws")
    assert lab(env, "deps").returncode == 0
    up = lab(env, "up", timeout=2400)              # the engine and the bases, as a run has them
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        found = docker_engine.find_compose()
        assert found is not None
        base = [*found.argv, "-f", str(compose.FILE), "-p", f"{PREFIX}-{port}",
                "--profile", "client"]
        built = docker_engine.run([*base, "build", "client"], timeout=1800)
        assert built.returncode == 0, built.stderr[-3000:]
        for tool, expect in (("wrk", "wrk"), ("siege", "SIEGE")):
            out = docker_engine.run([*base, "run", "--rm", "-T", "client", tool,
                                     "--version"], timeout=300)
            assert expect in out.stdout + out.stderr, out
    finally:
        lab(env, "down")
    assert project_leftovers(port) == []
