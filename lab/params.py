"""The run's parameters, read from the environment and validated.

Everything a user can set is here, with its default; bad input raises
ConfigError (exit 2) before anything is built or started.
"""
from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import asdict, dataclass, field

WARMUP_SLICE_S = 2                           # WARMUP=auto's slice (lab.metrics)
PUBLISHED_LEVELS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 35, 40, 45, 50)
LOAD_AXES = ("concurrency", "rate")          # what a client varies itself
KNOBS = ("workers", "backlog")               # what a server start is given

# name: (default, meaning), shown by `make help` and recorded in the manifest
SETTINGS: dict[str, tuple[str, str]] = {
    "SERVER": ("aws", "server names (NAME@N: that server with N workers), or 'all' "
                      "(see `make list`)"),
    "CONCURRENCY": (" ".join(map(str, PUBLISHED_LEVELS)), "concurrency levels swept "
                    "(closed-loop clients: siege, wrk)"),
    "RATE": ("1000 2000 5000 10000 20000", "offered rates swept, req/s "
             "(open-loop clients: vegeta)"),
    "DURATION": ("10s", "time per level (10s, 1m)"),
    "REPEAT": ("1", "repetitions: each a fresh server start with its own warm-up; "
                    "servers interleaved"),
    "WARMUP": ("auto", "auto: load at the top level until 3 slices of 2s agree within 5%; "
                       "or a fixed time (30s); 0 = none"),
    "WARMUP_MAX": ("60s", "cap of WARMUP=auto; hitting it flags the server not-steady"),
    "KEEPALIVE": ("0", "0: a new connection per request (as published); 1: keep-alive"),
    "CLIENT": ("siege", "load client: siege, wrk (closed loop) or vegeta (fixed rate)"),
    "CLIENT_THREADS": ("", "client threads where the client has them (empty: one per "
                           "client CPU)"),
    "CLIENT_GRACE": ("45s", "time a client may run past DURATION before it counts as hung "
                            "(stopped, retried once)"),
    "AXIS": ("", "what is swept: concurrency or rate (the client's own, by default), or a "
                 "server knob: workers, backlog (one server start per value)"),
    "VALUES": ("", "the knob's values when AXIS is a knob, e.g. '1 2 4 8 16 32'"),
    "VERDICT_AT": ("", "levels the verdict table compares servers at (empty: each "
                       "server's peak level and the highest level)"),
    "WORKERS": ("", "server worker threads/tasks (empty: each server's default)"),
    "BACKLOG": ("512", "accept backlog every server is given (the published AWS setup)"),
    "BIND": ("127.0.0.1", "address every server listens on (a topology other than local "
                          "sets it to the server host's address on the lab's link)"),
    "PORT": ("8080", "port the server listens on"),
    "SERVER_CPUS": ("", "CPUs for the server (empty: first half of this machine's)"),
    "CLIENT_CPUS": ("", "CPUs for the client (empty: the other half)"),
    "PROBE": ("1", "1: run the robustness probe on a separate start of each server first; "
                   "0: skip it"),
    "FORCE": ("0", "1: load a server even when the probe left it unanswering"),
    "JAVA_OPTS": ("", "JVM options for Java servers (empty: JVM defaults, as published)"),
    "RESULTS": ("results", "where run folders are made"),
    "TOPOLOGY": ("local", "where server and client run: local (one host, loopback) or netns "
                          "(two emulated hosts: a network namespace each, joined by a veth "
                          "pair; root); SERVER_HOST makes it ssh"),
    "LINK": ("", "TOPOLOGY=netns: shape the link with tc to this rate, e.g. 1gbit "
                 "(the published Gigabit Ethernet); empty: unshaped"),
    "LINK_DELAY": ("", "TOPOLOGY=netns with LINK: one-way delay added by tc netem, "
                       "e.g. 0.1ms"),
    "SERVER_HOST": ("", "user@host: run the server there over OpenSSH (your ssh config and "
                        "keys); empty: this host"),
    "CLIENT_HOST": ("", "with SERVER_HOST: user@host of each client host, space-separated; "
                        "several drive the server together (empty: the client runs here)"),
    "SSH_CONFIG": ("", "with SERVER_HOST: an ssh config file for every ssh the lab runs "
                       "(ssh -F); empty: ssh's own (~/.ssh/config)"),
    "REMOTE_DIR": ("", "with SERVER_HOST: the folder on each remote host the lab copies what "
                       "it runs into (relative: to the remote home; empty: "
                       "~/.cache/polyglot-lab/<this checkout>)"),
    "RUNTIME": ("process", "how the server runs: process (directly) or docker (its "
                           "compose.yaml service, built from the server's Dockerfile)"),
    "COST_LEVELS": ("1 8", "make cost: the concurrencies at which instructions per request "
                           "are counted (cachegrind, h2load keep-alive)"),
    "COST_REQUESTS": ("2000 6000", "make cost: two exact request counts, one start each; "
                                   "(Ir at the larger - Ir at the smaller) / their difference "
                                   "= instructions per request"),
    "HEADERS": ("0", "make cost and make profile: extra request headers (X-Lab-Pad-N, 32 "
                     "bytes each) on every request, to see what header handling costs"),
    "PROFILE_AT": ("", "make profile: the level of RUN at which each server is profiled "
                        "(perf or async-profiler, a separate start, for DURATION)"),
    "MEM_LIMIT": ("", "RUNTIME=docker: the container's memory limit, e.g. 512m (empty: none)"),
}
TOPOLOGIES = ("local", "netns", "ssh")
RUNTIMES = ("process", "docker")


class ConfigError(ValueError):
    """Bad input: the message says which setting and why."""


@dataclass(frozen=True)
class Params:
    servers: tuple[str, ...]
    client: str
    axis: str                       # concurrency, rate, or a knob (KNOBS)
    load_axis: str                  # what the client varies: concurrency or rate
    values: tuple[int, ...]         # the swept values, ascending
    levels: tuple[int, ...]         # CONCURRENCY
    rates: tuple[int, ...]          # RATE
    duration_s: int
    repeat: int
    warmup_auto: bool
    warmup_s: int                   # fixed warm-up (when not auto)
    warmup_max_s: int
    keepalive: bool
    client_threads: int
    client_grace_s: int
    workers: int | None
    backlog: int
    bind: str
    port: int
    server_cpus: tuple[int, ...]
    client_cpus: tuple[int, ...]
    verdict_at: tuple[int, ...]
    probe: bool
    force: bool
    java_opts: str
    results: str
    topology: str = "local"         # local | netns | ssh (SERVER_HOST given)
    link: str = ""                  # netns: tc rate (1gbit), empty: unshaped
    link_delay: str = ""            # netns: tc netem delay (0.1ms)
    server_host: str = ""           # ssh: user@host
    client_hosts: tuple[str, ...] = ()   # ssh: user@host each; empty: here
    ssh_config: str = ""            # ssh: -F file (absolute), empty: ssh's own
    remote_dir: str = ""            # ssh: folder on the remote hosts, empty: the default
    runtime: str = "process"        # process | docker
    mem_limit: str = ""             # docker: memory limit (512m)
    warnings: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @property
    def load(self) -> tuple[int, ...]:
        """The client's levels: concurrencies, or offered rates."""
        return self.levels if self.load_axis == "concurrency" else self.rates


def whole(text: str) -> int | None:
    """A whole number written in ASCII digits only ('²' and Arabic digits are not)."""
    t = text.strip()
    return int(t) if re.fullmatch(r"[0-9]+", t) else None


def parse_duration(name: str, text: str, allow_zero: bool = False) -> int:
    """'10s', '2m' or a bare number of seconds, in ASCII digits."""
    m = re.fullmatch(r"\s*([0-9]+)\s*([sm]?)\s*", text)
    if not m:
        raise ConfigError(f"{name}={text!r}: expected a duration like 10s or 1m")
    seconds = int(m.group(1)) * (60 if m.group(2) == "m" else 1)
    if seconds == 0 and not allow_zero:
        raise ConfigError(f"{name}={text!r}: must be longer than 0s")
    if seconds > 24 * 3600:
        raise ConfigError(f"{name}={text!r}: longer than a day")
    return seconds


def parse_list(name: str, text: str, limit: int) -> tuple[int, ...]:
    """Positive whole numbers separated by spaces or commas, sorted, unique."""
    words = text.replace(",", " ").split()
    if not words:
        raise ConfigError(f"{name} is empty: give values like '1 8 32'")
    bad = [w for w in words if whole(w) is None or int(w) < 1]
    if bad:
        raise ConfigError(f"{name}: {' '.join(bad)} is not a positive whole number")
    values = sorted({int(w) for w in words})
    if values[-1] > limit:
        raise ConfigError(f"{name}: {values[-1]} is above the lab's limit of {limit}")
    return tuple(values)


def parse_levels(text: str) -> tuple[int, ...]:
    return parse_list("CONCURRENCY", text, 1000)


def parse_cpus(name: str, text: str, available: set[int] | None) -> tuple[int, ...]:
    """A CPU list like '0', '0-1' or '0,2-3', checked against this machine's
    CPUs (`available`; None: another host's, checked there)."""
    cpus: set[int] = set()
    for part in text.replace(" ", "").split(","):
        m = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", part)
        if not m:
            raise ConfigError(f"{name}={text!r}: expected a CPU list like 0 or 0-1 or 0,2")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise ConfigError(f"{name}={text!r}: range {part} runs backwards")
        cpus.update(range(lo, hi + 1))
    if cpus and max(cpus) >= 4096:
        raise ConfigError(f"{name}={text!r}: CPU {max(cpus)} is beyond any machine's")
    missing = sorted(cpus - available) if available is not None else []
    if missing and available is not None:
        raise ConfigError(f"{name}={text!r}: CPU {','.join(map(str, missing))} does not exist "
                          f"here (usable: {format_cpus(available)})")
    return tuple(sorted(cpus))


def format_cpus(cpus: set[int] | tuple[int, ...]) -> str:
    return ",".join(map(str, sorted(cpus)))


def default_split(available: set[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Server on the first half of the CPUs, client on the rest."""
    cpus = sorted(available)
    if len(cpus) == 1:
        return (cpus[0],), (cpus[0],)
    half = len(cpus) // 2
    return tuple(cpus[:half]), tuple(cpus[half:])


def positive_int(name: str, text: str, lo: int = 1, hi: int = 1_000_000) -> int:
    n = whole(text)
    if n is None or not lo <= n <= hi:
        raise ConfigError(f"{name}={text!r}: expected a whole number from {lo} to {hi}")
    return n


def flag(name: str, text: str) -> bool:
    value = text.strip()
    if value not in ("0", "1"):
        raise ConfigError(f"{name}={text!r}: expected 0 or 1")
    return value == "1"


def parse_bind(text: str) -> tuple[str, list[str]]:
    value = text.strip()
    try:
        addr = ipaddress.ip_address(value)
    except ValueError:
        raise ConfigError(f"BIND={text!r}: expected an IP address such as 127.0.0.1 "
                          "or ::1") from None
    notes = []
    if addr.is_unspecified:
        notes.append(f"BIND={value} makes every server listen on every interface of this "
                     "host, as you asked; the lab's default is 127.0.0.1.")
    return str(addr), notes


RATE_TEXT = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps)")
DELAY_TEXT = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:us|ms|s)")
MEMORY_TEXT = re.compile(r"[0-9]+[kmg]?")
HOST_TEXT = re.compile(r"(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9._:-]+|(?:[A-Za-z0-9._-]+@)?\[[0-9A-Fa-f:.]+\]")


@dataclass(frozen=True)
class Where:
    topology: str
    link: str
    link_delay: str
    server_host: str
    client_hosts: tuple[str, ...]
    runtime: str
    mem_limit: str
    ssh_config: str = ""
    remote_dir: str = ""


def parse_where(get: Callable[[str], str]) -> Where:
    """TOPOLOGY, LINK, LINK_DELAY, SERVER_HOST, CLIENT_HOST, RUNTIME, MEM_LIMIT, checked together."""
    topology = get("TOPOLOGY").strip()
    server_host = get("SERVER_HOST").strip()
    client_hosts = tuple(get("CLIENT_HOST").split())
    runtime = get("RUNTIME").strip()
    link, delay, mem = get("LINK").strip(), get("LINK_DELAY").strip(), get("MEM_LIMIT").strip()
    ssh_config, remote_dir = get("SSH_CONFIG").strip(), get("REMOTE_DIR").strip()
    if topology not in ("local", "netns"):
        raise ConfigError(f"TOPOLOGY={topology!r}: expected local or netns "
                          "(for real hosts give SERVER_HOST=user@host)")
    for name, host in [("SERVER_HOST", server_host)] * bool(server_host) + \
            [("CLIENT_HOST", h) for h in client_hosts]:
        if not HOST_TEXT.fullmatch(host) or host.startswith("-"):
            raise ConfigError(f"{name}={host!r}: expected user@host or host (an ssh destination)")
    if len(set(client_hosts)) != len(client_hosts):
        raise ConfigError(f"CLIENT_HOST lists a host twice: {' '.join(client_hosts)}")
    if client_hosts and not server_host:
        raise ConfigError("CLIENT_HOST needs SERVER_HOST: client hosts drive a server host")
    if server_host:
        if topology == "netns":
            raise ConfigError("TOPOLOGY=netns and SERVER_HOST both say where the server runs: "
                              "give one")
        topology = "ssh"
    if (ssh_config or remote_dir) and not server_host:
        raise ConfigError(f"{'SSH_CONFIG' if ssh_config else 'REMOTE_DIR'} is for real hosts "
                          "over ssh: add SERVER_HOST=user@host or drop it")
    if ssh_config:
        config = os.path.abspath(os.path.expanduser(ssh_config))
        if not os.path.isfile(config) or not os.access(config, os.R_OK):
            raise ConfigError(f"SSH_CONFIG={ssh_config!r}: no readable file there "
                              "(give the path of an ssh config file, or leave it empty)")
        ssh_config = config
    if remote_dir and (not re.fullmatch(r"[A-Za-z0-9._/~+-]+", remote_dir)
                       or ".." in remote_dir.split("/") or remote_dir.strip("/~") == ""):
        raise ConfigError(f"REMOTE_DIR={remote_dir!r}: expected a folder path of letters, "
                          "digits and ._-+/ (relative paths are under the remote home), "
                          "not the home or / itself")
    if (link or delay) and topology != "netns":
        raise ConfigError("LINK and LINK_DELAY shape the emulated link of TOPOLOGY=netns: "
                          "add TOPOLOGY=netns or drop them")
    if link and not RATE_TEXT.fullmatch(link):
        raise ConfigError(f"LINK={link!r}: expected a tc rate such as 1gbit or 100mbit")
    if delay and not DELAY_TEXT.fullmatch(delay):
        raise ConfigError(f"LINK_DELAY={delay!r}: expected a delay such as 0.1ms or 50us")
    if delay and not link:
        raise ConfigError("LINK_DELAY needs LINK (the rate of the shaped link), e.g. LINK=1gbit")
    if runtime not in RUNTIMES:
        raise ConfigError(f"RUNTIME={runtime!r}: expected {' or '.join(RUNTIMES)}")
    if runtime == "docker" and topology != "local":
        raise ConfigError(f"RUNTIME=docker runs on this host's Docker engine (or DOCKER_HOST's); "
                          f"it does not combine with TOPOLOGY={topology}")
    if mem and runtime != "docker":
        raise ConfigError("MEM_LIMIT is a container's memory limit: add RUNTIME=docker or drop it")
    if mem and not MEMORY_TEXT.fullmatch(mem.lower()):
        raise ConfigError(f"MEM_LIMIT={mem!r}: expected a size such as 512m or 2g")
    return Where(topology=topology, link=link, link_delay=delay, server_host=server_host,
                 client_hosts=client_hosts, runtime=runtime, mem_limit=mem.lower(),
                 ssh_config=ssh_config, remote_dir=remote_dir)


def from_env(env: Mapping[str, str], known_servers: list[str],
             clients: Mapping[str, str] | Collection[str],
             available_cpus: set[int] | None = None) -> Params:
    """`clients` maps each client's name to the axis it varies (concurrency or
    rate); a plain list means closed-loop clients."""
    def get(name: str) -> str:
        value = env.get(name)
        return SETTINGS[name][0] if value is None else value

    axes = dict(clients) if isinstance(clients, Mapping) else {c: "concurrency" for c in clients}
    available = available_cpus if available_cpus is not None else os.sched_getaffinity(0)
    warnings: list[str] = []

    names = get("SERVER").split()
    if not names:
        raise ConfigError(f"SERVER is empty: choose from {', '.join(known_servers)} or 'all'")
    if names == ["all"]:
        names = list(known_servers)
    for n in names:
        count = n.partition("@")[2]
        if "@" in n and not (re.fullmatch(r"[0-9]+", count) and 1 <= int(count) <= 10_000):
            raise ConfigError(f"SERVER: {n}: after @ comes a worker count from 1 to 10000 "
                              "(e.g. aws@16)")
    unknown = [n for n in names if n.partition("@")[0] not in known_servers]
    if unknown:
        raise ConfigError(f"unknown server {', '.join(unknown)}; known: {', '.join(known_servers)}")
    if len(set(names)) != len(names):
        raise ConfigError(f"SERVER lists a server twice: {' '.join(names)}")

    client = get("CLIENT").strip()
    if client not in axes:
        raise ConfigError(f"CLIENT={client!r}: known clients are {', '.join(axes)}")
    client_axis = axes[client]

    axis = get("AXIS").strip() or client_axis
    if axis not in LOAD_AXES + KNOBS:
        raise ConfigError(f"AXIS={axis!r}: expected one of {', '.join(LOAD_AXES + KNOBS)}")
    if axis in LOAD_AXES and axis != client_axis:
        raise ConfigError(f"AXIS={axis}: {client} varies {client_axis}, not {axis} "
                          f"(use {'RATE with CLIENT=vegeta' if axis == 'rate' else 'CLIENT=wrk or siege'})")
    levels = parse_levels(get("CONCURRENCY")) if client_axis == "concurrency" else ()
    rates = parse_list("RATE", get("RATE"), 10_000_000) if client_axis == "rate" else ()
    if axis in KNOBS:
        if not get("VALUES").strip():
            raise ConfigError(f"AXIS={axis} needs VALUES, e.g. VALUES='1 2 4 8 16 32'")
        values = parse_list("VALUES", get("VALUES"), 100_000)
        load = levels or rates
        if len(load) != 1:
            what = "CONCURRENCY" if levels else "RATE"
            raise ConfigError(f"AXIS={axis} sweeps {axis} at one load: give one {what} level "
                              f"(got {len(load)}), e.g. {what}=32")
        if axis == "workers" and any("@" in n for n in names):
            raise ConfigError("AXIS=workers sets every server's workers from VALUES; "
                              "drop the @N from SERVER")
        if env.get(axis.upper(), "").strip():
            raise ConfigError(f"AXIS={axis} sets {axis.upper()} itself from VALUES; "
                              f"unset {axis.upper()}")
    else:
        if get("VALUES").strip():
            raise ConfigError(f"VALUES is for a knob axis (AXIS=workers or backlog); "
                              f"the {axis} levels come from "
                              f"{'CONCURRENCY' if axis == 'concurrency' else 'RATE'}")
        values = levels or rates

    warmup_text = get("WARMUP").strip()
    warmup_auto = warmup_text == "auto"
    warmup_s = 0 if warmup_auto else parse_duration("WARMUP", warmup_text, allow_zero=True)
    warmup_max_s = parse_duration("WARMUP_MAX", get("WARMUP_MAX"))
    if warmup_auto and warmup_max_s < WARMUP_SLICE_S:
        raise ConfigError(f"WARMUP_MAX={get('WARMUP_MAX')!r}: WARMUP=auto loads in slices of "
                          f"{WARMUP_SLICE_S}s; give it at least that")
    workers_text = get("WORKERS").strip()
    workers = positive_int("WORKERS", workers_text, 1, 10_000) if workers_text else None
    threads_text = get("CLIENT_THREADS").strip()

    where = parse_where(get)
    server_default, client_default = default_split(available)
    scpus_text, ccpus_text = get("SERVER_CPUS").strip(), get("CLIENT_CPUS").strip()
    # Over ssh the CPUs are another host's: `lab check` asks each host for its own.
    checked = None if where.topology == "ssh" else available
    server_cpus = parse_cpus("SERVER_CPUS", scpus_text, checked) if scpus_text else server_default
    client_cpus = parse_cpus("CLIENT_CPUS", ccpus_text, checked) if ccpus_text else client_default
    shared = set(server_cpus) & set(client_cpus)
    if shared:
        warnings.append(f"server and client share CPU {format_cpus(shared)}: they compete, "
                        "and the client's share of it is not the server's. "
                        "Give them disjoint SERVER_CPUS and CLIENT_CPUS if you can.")
    bind, notes = parse_bind(get("BIND"))
    warnings += notes
    verdict_text = get("VERDICT_AT").strip()
    verdict_at = parse_list("VERDICT_AT", verdict_text, 10_000_000) if verdict_text else ()
    missing = sorted(set(verdict_at) - set(values))
    if missing:
        raise ConfigError(f"VERDICT_AT: {' '.join(map(str, missing))} is not a swept value "
                          f"({' '.join(map(str, values))})")
    results = get("RESULTS").strip() or "results"

    return Params(
        servers=tuple(names),
        client=client,
        axis=axis,
        load_axis=client_axis,
        values=values,
        levels=levels,
        rates=rates,
        duration_s=parse_duration("DURATION", get("DURATION")),
        repeat=positive_int("REPEAT", get("REPEAT"), 1, 100),
        warmup_auto=warmup_auto,
        warmup_s=warmup_s,
        warmup_max_s=warmup_max_s,
        keepalive=flag("KEEPALIVE", get("KEEPALIVE")),
        client_threads=(positive_int("CLIENT_THREADS", threads_text, 1, 1024) if threads_text
                        else len(client_cpus)),
        client_grace_s=parse_duration("CLIENT_GRACE", get("CLIENT_GRACE")),
        workers=workers,
        backlog=positive_int("BACKLOG", get("BACKLOG"), 1, 65535),
        bind=bind,
        port=positive_int("PORT", get("PORT"), 1024, 65535),
        server_cpus=server_cpus,
        client_cpus=client_cpus,
        verdict_at=verdict_at,
        probe=flag("PROBE", get("PROBE")),
        force=flag("FORCE", get("FORCE")),
        java_opts=get("JAVA_OPTS").strip(),
        results=results,
        topology=where.topology,
        link=where.link,
        link_delay=where.link_delay,
        server_host=where.server_host,
        client_hosts=where.client_hosts,
        runtime=where.runtime,
        mem_limit=where.mem_limit,
        ssh_config=where.ssh_config,
        remote_dir=where.remote_dir,
        warnings=tuple(warnings),
    )
