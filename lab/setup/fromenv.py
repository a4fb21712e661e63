"""A run's settings read together: Params from the environment.

Each setting is declared once, with its default and its check of a value
alone, in lab.setup.params (REGISTRY); here they are checked together (what
one setting means for another: the client's axis and its load, the topology
and its hosts, the servers and what they have) and become the run's Params.
Bad input raises ConfigError (exit 2) before anything is built or started.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from lab.setup.params import (KNOBS, LOAD_AXES, RUNTIMES, SETTINGS, TOPOLOGIES, WARMUP_SLICE_S,
                              WARMUP_LEAST_SLICES,
                              check_alpha, check_min_effect,
                              ConfigError, Params, Repeat, cpu_ranges, default_split, flag, loop,
                              parse_bind, parse_cpus, parse_duration, parse_levels, parse_list,
                              parse_size, results_folder)
from lab.setup.servers import ServerSpec, ServerSpecError

RATE_TEXT = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps)")
DELAY_TEXT = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:us|ms|s)")
MEMORY_TEXT = re.compile(r"[0-9]+[kmg]?")
HOST_TEXT = re.compile(r"(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9._:-]+|(?:[A-Za-z0-9._-]+@)?\[[0-9A-Fa-f:.]+\]")


@dataclass(frozen=True)
class TopologySettings:
    """Where the run's processes run, as the settings say (parse_where): the
    topology that runs (docker under RUNTIME=docker), its link, its hosts, RUNTIME and its memory limit."""
    topology: str
    link: str
    link_delay: str
    server_host: str
    client_hosts: tuple[str, ...]
    runtime: str
    mem_limit: str
    ssh_config: str = ""
    remote_dir: str = ""


def parse_where(get: Callable[[str], str],
                topologies: Collection[str] = TOPOLOGIES) -> TopologySettings:
    """TOPOLOGY, LINK, LINK_DELAY, SERVER_HOST, CLIENT_HOST, RUNTIME, MEM_LIMIT, checked together."""
    topology = get("TOPOLOGY").strip()
    server_host = get("SERVER_HOST").strip()
    client_hosts = tuple(get("CLIENT_HOST").split())
    runtime = get("RUNTIME").strip()
    link, delay, mem = get("LINK").strip(), get("LINK_DELAY").strip(), get("MEM_LIMIT").strip()
    ssh_config, remote_dir = get("SSH_CONFIG").strip(), get("REMOTE_DIR").strip()
    if topology not in topologies:
        raise ConfigError(f"TOPOLOGY={topology!r}: expected {' or '.join(topologies)} "
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
    if runtime == "docker":
        topology = "docker"            # what runs: RUNTIME=docker picks the topology
    return TopologySettings(topology=topology, link=link, link_delay=delay,
                            server_host=server_host, client_hosts=client_hosts,
                            runtime=runtime, mem_limit=mem.lower(),
                            ssh_config=ssh_config, remote_dir=remote_dir)


@dataclass(frozen=True)
class Traits:
    """What the settings' checks need to know of a server (from its manifest)."""
    language: str = ""
    has_workers: bool = True        # False: it has no worker setting (WORKERS has no effect)


def normalise_server(word: str) -> str:
    """A SERVER word written plainly (ServerSpec: aws@016 is aws@16); bad
    counts are ConfigError."""
    try:
        return str(ServerSpec.parse(word))
    except ServerSpecError as e:
        raise ConfigError(f"SERVER: {e} ({e.hint})") from None


# what "unknown server" adds: where a server of one's own is found
UNKNOWN_HINT = ("a server outside the lab's servers/ folder is found through "
                "LAB_SERVER_PATH: the folder that holds <name>/server.toml")


def check_servers(text: str, known: list[str]) -> tuple[str, ...]:
    names = text.split()
    if not names:
        raise ConfigError(f"SERVER is empty: choose from {', '.join(known)} or 'all'")
    if names == ["all"]:
        names = list(known)
    names = [normalise_server(n) for n in names]
    unknown = [n for n in names if ServerSpec.parse(n).name not in known]
    if unknown:
        raise ConfigError(f"unknown server {', '.join(unknown)}; known: {', '.join(known)}"
                          f" ({UNKNOWN_HINT})")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"SERVER lists a server twice: {' '.join(twice)} "
                          f"(as given: {text.strip()})")
    return tuple(names)


def check_client(text: str, axes: Mapping[str, str]) -> tuple[str, str]:
    client = text.strip()
    if client not in axes:
        raise ConfigError(f"CLIENT={client!r}: known clients are {', '.join(axes)}")
    return client, axes[client]


@dataclass(frozen=True)
class Sweep:
    axis: str
    values: tuple[int, ...]
    concurrencies: tuple[int, ...]
    rates: tuple[int, ...]


def check_sweep(get: Callable[[str], str], given: Callable[[str], bool], client: str,
                client_axis: str, servers: tuple[str, ...],
                traits: Mapping[str, Traits]) -> Sweep:
    """AXIS, VALUES, CONCURRENCY, RATE: what is swept, at which load."""
    axis = get("AXIS").strip() or client_axis
    if axis not in LOAD_AXES + KNOBS:
        raise ConfigError(f"AXIS={axis!r}: expected one of {', '.join(LOAD_AXES + KNOBS)}")
    if axis in LOAD_AXES and axis != client_axis:
        raise ConfigError(f"AXIS={axis}: {client} varies {client_axis}, not {axis} "
                          f"(use {'RATE with CLIENT=vegeta' if axis == 'rate' else 'CLIENT=wrk or siege'})")
    concurrencies = parse_levels(get("CONCURRENCY")) if client_axis == "concurrency" else ()
    rates = parse_list("RATE", get("RATE"), 10_000_000) if client_axis == "rate" else ()
    if axis not in KNOBS:
        if get("VALUES").strip():
            raise ConfigError(f"VALUES is for a knob axis (AXIS=workers or backlog); "
                              f"the {axis} concurrencies come from "
                              f"{'CONCURRENCY' if axis == 'concurrency' else 'RATE'}")
        return Sweep(axis, concurrencies or rates, concurrencies, rates)
    if not get("VALUES").strip():
        raise ConfigError(f"AXIS={axis} needs VALUES, e.g. VALUES='1 2 4 8 16 32'")
    values = parse_list("VALUES", get("VALUES"), 100_000)
    load = concurrencies or rates
    if len(load) != 1:
        what = "CONCURRENCY" if concurrencies else "RATE"
        raise ConfigError(f"AXIS={axis} sweeps {axis} at one load: give one {what} level "
                          f"(got {len(load)}), e.g. {what}=32")
    if axis == "workers":
        if any(ServerSpec.parse(n).workers is not None for n in servers):
            raise ConfigError("AXIS=workers sets every server's workers from VALUES; "
                              "drop the @N from SERVER")
        fixed = [n for n in servers
                 if not traits.get(ServerSpec.parse(n).name, Traits()).has_workers]
        if fixed:
            raise ConfigError(f"AXIS=workers: {', '.join(fixed)} "
                              f"{'has' if len(fixed) == 1 else 'have'} no worker setting "
                              "(its manifest says WORKERS has no effect): sweeping it would "
                              "measure one server under several names; drop it from SERVER")
    if given(axis.upper()):
        raise ConfigError(f"AXIS={axis} sets {axis.upper()} itself from VALUES; "
                          f"unset {axis.upper()}")
    return Sweep(axis, values, concurrencies, rates)


@dataclass(frozen=True)
class WarmupSettings:
    """WARMUP and WARMUP_MAX, checked together (check_warmup)."""
    auto: bool
    seconds: int
    max_s: int


def check_warmup(get: Callable[[str], str]) -> WarmupSettings:
    text = get("WARMUP").strip()
    auto = text == "auto"
    seconds = 0 if auto else parse_duration("WARMUP", text, allow_zero=True)
    max_s = parse_duration("WARMUP_MAX", get("WARMUP_MAX"))
    if auto and max_s < WARMUP_SLICE_S:
        raise ConfigError(f"WARMUP_MAX={get('WARMUP_MAX')!r}: WARMUP=auto loads in slices of "
                          f"{WARMUP_SLICE_S}s; give it at least that (and "
                          f"{WARMUP_LEAST_SLICES}s to see a steady state)")
    return WarmupSettings(auto, seconds, max_s)


def check_repeat(get: Callable[[str], str]) -> Repeat:
    """REPEAT, REPEAT_MIN and REPEAT_MAX, checked together."""
    text = get("REPEAT").strip()
    if text != "auto":
        n = SETTINGS["REPEAT"].number(text)
        return Repeat(n, n)
    low = SETTINGS["REPEAT_MIN"].number(get("REPEAT_MIN"))
    high = SETTINGS["REPEAT_MAX"].number(get("REPEAT_MAX"))
    if high < low:
        raise ConfigError(f"REPEAT_MAX={get('REPEAT_MAX')!r} is below REPEAT_MIN="
                          f"{get('REPEAT_MIN')!r}: REPEAT=auto starts each server REPEAT_MIN "
                          "times, then at most up to REPEAT_MAX")
    return Repeat(low, high, auto=True)


PAIRED_MODES = ("duet", "rmit")


# PAIRED with REPEAT=auto, REPEAT_MIN and REPEAT_MAX not given: no look before
# 10 start pairs (one level at α=1%: the fewest on which the exact test can
# decide with the share of α the first look spends; with more levels the first
# look moves to where each level's share can decide), the last at 40 (looks at
# 10, 14, 20, 28 and 40 pairs at one level, 11, 16, 23, 33 and 40 at docs/ci.md's
# two, α spent over them: lab.analyse.policy.LookSchedule); about 9 minutes of
# pairs at docs/ci.md's levels (c=1 and 4, 3 s each, WARMUP=5s)
PAIRED_AUTO = {"REPEAT_MIN": "10", "REPEAT_MAX": "40"}


def paired_repeat(env: Mapping[str, str], name: str) -> str:
    """A paired run's own default of REPEAT_MIN or REPEAT_MAX, or ""."""
    if not env.get("PAIRED", "").strip() or env.get(name, "").strip():
        return ""
    return PAIRED_AUTO.get(name, "")


def check_rule(get: Callable[[str], str]) -> tuple[float, float]:
    """ALPHA (a fraction) and MIN_EFFECT (%): the decision rule of a run's verdicts."""
    alpha, effect = check_alpha(get("ALPHA")), check_min_effect(get("MIN_EFFECT"))
    assert isinstance(alpha, float) and isinstance(effect, float)
    return alpha, effect


def check_paired(text: str, servers: tuple[str, ...], axis: str, topology: str, runtime: str,
                 port: int) -> str:
    """PAIRED: empty, duet or rmit; a paired run is two servers at load levels,
    started here (lab.measure.pair), the second on PORT+1."""
    mode = text.strip()
    if not mode:
        return ""
    if mode not in PAIRED_MODES:
        raise ConfigError(f"PAIRED={text!r}: expected duet or rmit (or empty: one server at a "
                          "time)")
    if len(servers) != 2:
        raise ConfigError(f"PAIRED={mode} starts two servers together: SERVER names "
                          f"{len(servers)} ({' '.join(servers)}); give two, e.g. "
                          f"SERVER=\"{servers[0]} {servers[0]}#2\" for an A/A pair")
    if axis in KNOBS:
        raise ConfigError(f"PAIRED={mode} loads both servers at each load level; AXIS={axis} "
                          "starts a server per value: drop AXIS or PAIRED")
    if axis != "concurrency":
        raise ConfigError(f"PAIRED={mode} pairs closed-loop levels (CLIENT=siege or wrk); "
                          f"AXIS={axis} offers a rate: drop PAIRED or use a closed-loop client")
    if topology != "local" or runtime != "process":
        raise ConfigError(f"PAIRED={mode} runs both servers on this host as processes "
                          f"(TOPOLOGY=local, RUNTIME=process); this run's topology is "
                          f"{topology} (RUNTIME={runtime})")
    if port + 1 > 65535:
        raise ConfigError(f"PAIRED={mode} puts the second server on PORT+1: PORT={port} leaves "
                          "no port above it")
    return mode


def check_cpus(get: Callable[[str], str], topology: str, available: set[int]
               ) -> tuple[tuple[int, ...], tuple[int, ...], list[str]]:
    """SERVER_CPUS and CLIENT_CPUS (over ssh another host's: `lab check` asks it)."""
    server_default, client_default = default_split(available)
    checked = None if topology == "ssh" else available
    stext, ctext = get("SERVER_CPUS").strip(), get("CLIENT_CPUS").strip()
    server = parse_cpus("SERVER_CPUS", stext, checked) if stext else server_default
    client = parse_cpus("CLIENT_CPUS", ctext, checked) if ctext else client_default
    shared = set(server) & set(client)
    warnings = [f"server and client share CPU {cpu_ranges(shared)}: they compete, "
                "and the client's share of it is not the server's. "
                "Give them disjoint SERVER_CPUS and CLIENT_CPUS if you can."] if shared else []
    return server, client, warnings


# the topologies whose server and clients run on this host's CPUs, where the
# neighbour runs (lab.measure.neighbour)
NEIGHBOURED = ("local", "netns", "docker")


def check_neighbour(text: str, topology: str) -> int:
    """NEIGHBOUR: the lab's bursty processes per CPU of the run (0: none),
    which run on this host, beside a server and clients that run here."""
    per_cpu = SETTINGS["NEIGHBOUR"].number(text)
    if per_cpu and topology not in NEIGHBOURED:
        raise ConfigError(f"NEIGHBOUR={text.strip()} runs its processes on this host's CPUs, "
                          f"beside a server that runs here; this run's topology is {topology} "
                          "(the server runs on another host): drop NEIGHBOUR")
    return per_cpu


def check_verdict_at(text: str, values: tuple[int, ...]) -> tuple[int, ...]:
    verdict_at = parse_list("VERDICT_AT", text, 10_000_000) if text.strip() else ()
    missing = sorted(set(verdict_at) - set(values))
    if missing:
        raise ConfigError(f"VERDICT_AT: {' '.join(map(str, missing))} is not a swept value "
                          f"({' '.join(map(str, values))})")
    return verdict_at


def inapplicable(given: Callable[[str], bool], client: str, axes: Mapping[str, str],
                 where: TopologySettings, servers: tuple[str, ...], traits: Mapping[str, Traits]
                 ) -> tuple[list[str], list[str]]:
    """Settings given (non-empty) that this run would not use: (refused, warned).

    Refused: a setting of another client, topology or runtime, which would be
    ignored while the run looks as if it used it (and its reproduce line
    would repeat it). Warned: a server setting that some of the chosen
    servers do not have, since the others use it."""
    refused, warned = [], []
    client_axis = axes[client]
    if given("RATE") and client_axis != "rate":
        refused.append(f"RATE is the offered rate of {loop('rate', axes)}; {client} is "
                       "closed-loop and sets its load with CONCURRENCY: drop RATE")
    if given("CONCURRENCY") and client_axis != "concurrency":
        refused.append(f"CONCURRENCY is the load of {loop('concurrency', axes)}; {client} is "
                       "open-loop and sets its load with RATE: drop CONCURRENCY")
    if given("CONNECTIONS") and client != "vegeta":
        refused.append(f"CONNECTIONS caps vegeta's connections; {client} keeps CONCURRENCY "
                       "connections: drop CONNECTIONS")
    if given("CLIENT_THREADS") and client == "siege":
        refused.append("CLIENT_THREADS: siege has no threads setting (one process, a thread "
                       "per user): drop it")
    base = {n: traits.get(ServerSpec.parse(n).name, Traits()) for n in servers}
    if given("JAVA_OPTS") and traits and not any(t.language == "Java" for t in base.values()):
        refused.append(f"JAVA_OPTS is for Java servers; none of {' '.join(servers)} is one: "
                       "drop it")
    if given("ADA_TOOLCHAIN") and traits and not any(t.language == "Ada"
                                                        for t in base.values()):
        warned.append(f"ADA_TOOLCHAIN builds the Ada servers; none of {' '.join(servers)} is "
                      "one, so it has no effect")
    if given("WORKERS") and traits:
        fixed = [n for n, t in base.items() if not t.has_workers]
        if fixed and len(fixed) == len(base):
            refused.append(f"WORKERS: {' '.join(fixed)} has no worker setting (its manifest "
                           "says WORKERS has no effect): drop it")
        elif fixed:
            warned.append(f"WORKERS has no effect on {', '.join(fixed)} (no worker setting); "
                          "the other servers use it")
    with_at = [n for n in servers if ServerSpec.parse(n).workers is not None and traits
               and not base[n].has_workers]
    if with_at:
        warned.append(f"SERVER: {', '.join(with_at)}: this server has no worker setting; "
                      "@N changes its name only")
    if given("MEM_LIMIT") and where.runtime != "docker":
        refused.append("MEM_LIMIT is a container's memory limit: add RUNTIME=docker or drop it")
    return refused, warned


def from_env(env: Mapping[str, str], known_servers: list[str],
             clients: Mapping[str, str] | Collection[str],
             available_cpus: set[int] | None = None,
             traits: Mapping[str, Traits] | None = None,
             topologies: Collection[str] = TOPOLOGIES) -> Params:
    """The run's Params from the environment, each setting checked by a small
    function of its own; then the settings given that this run would not use.
    `clients` maps each client's name to the axis it varies (concurrency or
    rate); a plain list means closed-loop clients. `traits`: each known
    server's language and whether it has workers (None: not checked);
    `topologies`: the names TOPOLOGY accepts (lab.measure.topologies.selectable())."""
    def get(name: str) -> str:
        value = env.get(name)
        return SETTINGS[name].default if value is None else value

    def given(name: str) -> bool:
        return bool(env.get(name, "").strip())

    axes = dict(clients) if isinstance(clients, Mapping) else {c: "concurrency" for c in clients}
    available = available_cpus if available_cpus is not None else os.sched_getaffinity(0)
    known = traits or {}

    servers = check_servers(get("SERVER"), known_servers)
    client, client_axis = check_client(get("CLIENT"), axes)
    where = parse_where(get, topologies)
    refused, warned = inapplicable(given, client, axes, where, servers, known)
    if refused:
        raise ConfigError("; ".join(refused))
    sweep = check_sweep(get, given, client, client_axis, servers, known)
    warm = check_warmup(get)
    reps = check_repeat(lambda name: paired_repeat(env, name) or get(name))
    workers_text = get("WORKERS").strip()
    threads_text = get("CLIENT_THREADS").strip()
    server_cpus, client_cpus, cpu_notes = check_cpus(get, where.topology, available)
    bind, bind_notes = parse_bind(get("BIND"))
    port = SETTINGS["PORT"].number(get("PORT"))
    rule = check_rule(get)
    paired = check_paired(get("PAIRED"), servers, sweep.axis, where.topology, where.runtime,
                          port)

    return Params(
        servers=servers,
        client=client,
        axis=sweep.axis,
        load_axis=client_axis,
        values=sweep.values,
        concurrencies=sweep.concurrencies,
        rates=sweep.rates,
        duration_s=parse_duration("DURATION", get("DURATION")),
        repeat=reps,
        warmup_auto=warm.auto,
        warmup_s=warm.seconds,
        warmup_max_s=warm.max_s,
        keepalive=flag("KEEPALIVE", get("KEEPALIVE")),
        client_threads=(SETTINGS["CLIENT_THREADS"].number(threads_text) if threads_text
                        else len(client_cpus)),
        client_grace_s=parse_duration("CLIENT_GRACE", get("CLIENT_GRACE")),
        neighbour=check_neighbour(get("NEIGHBOUR"), where.topology),
        connections=(SETTINGS["CONNECTIONS"].number(get("CONNECTIONS").strip())
                     if get("CONNECTIONS").strip() else 0),
        workers=SETTINGS["WORKERS"].number(workers_text) if workers_text else None,
        backlog=SETTINGS["BACKLOG"].number(get("BACKLOG")),
        bind=bind,
        port=port,
        server_cpus=server_cpus,
        client_cpus=client_cpus,
        verdict_at=check_verdict_at(get("VERDICT_AT"), sweep.values),
        probe=flag("PROBE", get("PROBE")),
        force=flag("FORCE", get("FORCE")),
        java_opts=get("JAVA_OPTS").strip(),
        results=results_folder(env),
        topology=where.topology,
        link=where.link,
        link_delay=where.link_delay,
        server_host=where.server_host,
        client_hosts=where.client_hosts,
        runtime=where.runtime,
        mem_limit=where.mem_limit,
        server_log_max=parse_size("SERVER_LOG_MAX", get("SERVER_LOG_MAX")),
        ssh_config=where.ssh_config,
        remote_dir=where.remote_dir,
        paired=paired,
        alpha=rule[0],
        min_effect_pct=rule[1],
        warnings=tuple(cpu_notes + bind_notes + warned),
    )
