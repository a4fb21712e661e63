"""Every setting the lab reads, declared once (REGISTRY) with its default and
its check of a value alone; the run's parameters (Params) and the parsers of
a value. lab.setup.fromenv reads the settings together into Params. Bad
input raises ConfigError (exit 2) before anything is built or started.
"""
from __future__ import annotations

import ipaddress
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lab.setup import paths
from lab.setup.servers import WORKER_COUNTS

WARMUP_SLICE_S = 1                           # WARMUP=auto's slice: a per-second series (lab.analyse.warmup)
WARMUP_TAIL_SLICES = 5                       # its steady state: a last segment of this many slices
WARMUP_LEAST_SLICES = 8                      # and before it room for a change (3 slices) to be seen
PUBLISHED_LEVELS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 35, 40, 45, 50)
LOAD_AXES = ("concurrency", "rate")          # what a client varies itself
KNOBS = ("workers", "backlog")               # what a server start is given


# Who reads a setting (Setting.scope).
SCOPES: dict[str, str] = {
    "run": "a benchmark run's setting, recorded in its manifest and its reproduce line",
    "lab": "where the lab keeps and finds things; checked by `lab check`, not recorded",
    "cost": "`make cost` and `make profile`",
    "profile": "`make profile` only",
    "compare": "`make compare` (and `make noise`'s floors)",
    "calibrate": "`make calibrate` only",
    "reproduce": "`make reproduce` only",
}


@dataclass(frozen=True)
class Setting:
    """One variable the lab reads: declared here once.

    `kind` and `applies` are what `make help` and docs/settings.md show;
    `scope` says who reads it, one of SCOPES. `bounds`: a whole number's
    range, which both its check (`number`) and its kind's text ("1..100")
    come from. `check` validates the value alone (ConfigError); what depends
    on other settings is checked by lab.setup.fromenv."""
    name: str
    default: str
    meaning: str
    kind: str
    applies: str = "every run"
    scope: str = "run"
    check: Callable[[str], object] | None = None
    bounds: tuple[int, int] | None = None

    def number(self, text: str) -> int:
        """The value as a whole number within `bounds` (ConfigError when not)."""
        assert self.bounds is not None, f"{self.name} declares no bounds"
        return positive_int(self.name, text, *self.bounds)


def declare(name: str, default: str, kind: str, meaning: str, applies: str = "every run",
            scope: str = "run", check: Callable[[str], object] | None = None,
            bounds: tuple[int, int] | None = None) -> Setting:
    """One REGISTRY entry, in the order a reader of the table wants them. With
    `bounds`, the kind's text starts with the range ("1..100", then `kind`)."""
    assert scope in SCOPES, f"{name}: scope {scope!r} is not one of {', '.join(SCOPES)}"
    if bounds is not None:
        kind = f"{bounds[0]}..{bounds[1]}" + (f" {kind}" if kind else "")
    return Setting(name, default, meaning, kind, applies, scope, check, bounds)


def check_choice(name: str, choices: tuple[str, ...]) -> Callable[[str], object]:
    def check(value: str) -> object:
        if value.strip() not in choices:
            raise ConfigError(f"{name}={value!r}: expected {' or '.join(choices)}")
        return value.strip()
    return check


def results_folder(env: Mapping[str, str]) -> str:
    """RESULTS as given (unset: its default); an empty RESULTS= is an error, as
    an empty CONCURRENCY= is, not a silent `results`."""
    value = env.get("RESULTS")
    if value is None:
        return SETTINGS["RESULTS"].default
    if not value.strip():
        raise ConfigError("RESULTS is empty: give a folder (unset, it is "
                          f"{SETTINGS['RESULTS'].default!r})")
    return value.strip()


def check_cache(value: str) -> object:
    """LAB_CACHE: a folder the lab can make and write (empty: .cache here)."""
    if not value.strip():
        return None
    path = Path(value).expanduser()
    existing = path
    while not os.path.lexists(existing):
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"LAB_CACHE={value!r}: {existing} is not a folder; give a folder "
                          "the lab may write its toolchains and build logs to")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"LAB_CACHE={value!r}: {existing} is not writable")
    return path


def check_server_path(value: str) -> object:
    """Colon-separated folders; one that does not exist (yet) adds nothing, as
    in PATH, but a file there is a mistake."""
    files = [p for p in value.split(":") if p and os.path.exists(p) and not Path(p).is_dir()]
    if files:
        raise ConfigError(f"LAB_SERVER_PATH: {', '.join(files)} is not a folder "
                          "(colon-separated folders holding server.toml manifests)")
    return value


def check_ada_sources(value: str) -> object:
    """ADA_SOURCES: a folder (relative: to the repository root) holding at
    least one archive servers/ada/sources.toml pins, or empty."""
    folder = paths.ROOT / value.strip()
    if value.strip() and not folder.is_dir():
        raise ConfigError(f"ADA_SOURCES={value!r}: no such folder (relative paths are "
                          "relative to the repository root)")
    if value.strip():
        import tomllib
        with (paths.ROOT / "servers" / "ada" / "sources.toml").open("rb") as f:
            pinned = [str(t["archive"]) for t in tomllib.load(f).values()
                      if isinstance(t, dict) and "archive" in t]
        if pinned and not any((folder / a).is_file() for a in pinned):
            raise ConfigError(f"ADA_SOURCES={value!r}: holds none of the archives "
                              f"servers/ada/sources.toml pins ({', '.join(pinned)}); give the "
                              "folder that holds them, or leave ADA_SOURCES empty to download "
                              "them once into LAB_CACHE")
    return value.strip()


def check_url(name: str) -> Callable[[str], object]:
    def check(value: str) -> object:
        if not re.fullmatch(r"https?://[^\s]+", value.strip()):
            raise ConfigError(f"{name}={value!r}: expected an http:// or https:// URL")
        return value.strip()
    return check


def check_flag(name: str) -> Callable[[str], object]:
    return lambda value: flag(name, value)


def check_prefix(name: str, longest: int) -> Callable[[str], object]:
    def check(value: str) -> object:
        if value.strip() and not re.fullmatch(rf"[a-z][a-z0-9]{{0,{longest - 1}}}", value.strip()):
            raise ConfigError(f"{name}={value!r}: expected 1 to {longest} lower-case letters "
                              "or digits, starting with a letter")
        return value.strip()
    return check


GATE_METRICS = ("rate", "p99", "cpu", "rss", "instructions")   # lab.analyse.gate


def check_gate(value: str) -> object:
    """GATE: one or more of GATE_METRICS, space-separated."""
    words = value.split()
    wrong = [w for w in words if w not in GATE_METRICS]
    if not words or wrong:
        raise ConfigError(f"GATE={value!r}: expected one or more of {' '.join(GATE_METRICS)}"
                          + (f" ({' '.join(wrong)} is not one)" if wrong else ""))
    return tuple(dict.fromkeys(words))


def check_min_effect(value: str) -> object:
    """MIN_EFFECT: a percentage from 0 to 100, '5%' or '5'."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*%?\s*", value)
    if m is None or not 0 <= float(m.group(1)) <= 100:
        raise ConfigError(f"MIN_EFFECT={value!r}: expected a percentage from 0 to 100, "
                          "e.g. 5%")
    return float(m.group(1))


def check_alpha(value: str) -> object:
    """ALPHA: a false-alarm rate above 0 and at most 20%, '1%' or '1' (percent)."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*%?\s*", value)
    if m is None or not 0 < float(m.group(1)) <= 20:
        raise ConfigError(f"ALPHA={value!r}: expected a false-alarm rate in percent, above 0 "
                          "and at most 20, e.g. 1%")
    return float(m.group(1)) / 100


CLOSED_LOOP = "closed-loop clients"      # shown with their names (shown(), loop())
OPEN_LOOP = "open-loop clients"


def loop(axis: str, axes: Mapping[str, str]) -> str:
    """'closed-loop clients (CLIENT=siege, wrk)': the clients that vary `axis`."""
    names = ", ".join(sorted(c for c, a in axes.items() if a == axis))
    return f"{CLOSED_LOOP if axis == 'concurrency' else OPEN_LOOP} (CLIENT={names})"
SSH = "SERVER_HOST (ssh)"

REGISTRY: tuple[Setting, ...] = (
    declare("SERVER", "aws", "server names",
            "server names (NAME@N: that server with N workers), or 'all' (see `make list`)"),
    declare("CONCURRENCY", " ".join(map(str, PUBLISHED_LEVELS)), "whole numbers",
            "concurrency levels swept", CLOSED_LOOP),
    declare("RATE", "1000 2000 5000 10000 20000", "whole numbers",
            "offered rates swept, req/s", OPEN_LOOP),
    declare("DURATION", "10s", "duration", "time per level (10s, 1m)"),
    declare("REPEAT", "1", "or auto",
            "repetitions: each a fresh server start with its own warm-up; servers interleaved, "
            "alternating which starts first (ABBA); auto: REPEAT_MIN each, then one more start "
            "at a time only for servers in pairs still undecided, up to REPEAT_MAX",
            bounds=(1, 100)),
    declare("REPEAT_MIN", "5", "",
            "REPEAT=auto: the starts every server gets first (5: the fewest on which the exact "
            "test can decide at 1%; under PAIRED 10 start pairs, the first look)", "REPEAT=auto",
            bounds=(2, 100)),
    declare("REPEAT_MAX", "10", "",
            "REPEAT=auto: the most starts a server gets (under PAIRED 40 start pairs: the "
            "budget, the last look)", "REPEAT=auto", bounds=(2, 100)),
    declare("PAIRED", "", "duet or rmit",
            "empty: one server at a time (repetitions interleaved); duet: the two servers "
            "started together as a start pair, each loaded by its own client at the same moment "
            "(PORT and PORT+1, sides swapped every other pair); rmit: both up, each level in "
            "short alternating slices in a random order; REPEAT counts the pairs",
            "two servers, TOPOLOGY=local, RUNTIME=process"),
    declare("WARMUP", "auto", "auto or duration",
            "auto: load at the top level in 1s slices until the start's own series show a "
            "steady state by their change points (and a JVM's JIT is quiet; classed flat, "
            "warm-up, slowdown or no steady state); or a fixed time (30s); 0 = none"),
    declare("WARMUP_MAX", "60s", "duration",
            "cap of WARMUP=auto; reaching it with no steady state flags the start's levels "
            "not-steady", "WARMUP=auto"),
    declare("KEEPALIVE", "0", "0 or 1",
            "0: a new connection per request (as published); 1: keep-alive"),
    declare("CLIENT", "siege", "client name",
            "load client: siege, wrk (closed loop) or vegeta (fixed rate)"),
    declare("CLIENT_THREADS", "", "",
            "client threads where the client has them (empty: one per client CPU)",
            "CLIENT=wrk, vegeta", bounds=(1, 1024)),
    declare("CONNECTIONS", "", "",
            "the most connections vegeta keeps open (-max-connections); past them a request "
            "waits in vegeta, the wait counted in its latency (empty: no cap, one connection "
            "per request waiting: a server with fixed connection slots, as AWS, closes the "
            "others, and every request pays for a new one)",
            "CLIENT=vegeta", bounds=(1, 100000)),
    declare("CLIENT_GRACE", "45s", "duration",
            "time a client may run past DURATION before it counts as hung (stopped, retried once)"),
    declare("AXIS", "", "axis",
            "what is swept: concurrency or rate (the client's own, by default), or a server knob: "
            "workers, backlog (one server start per value)"),
    declare("VALUES", "", "whole numbers",
            "the knob's values when AXIS is a knob, e.g. '1 2 4 8 16 32'", "AXIS=workers, backlog"),
    declare("VERDICT_AT", "", "whole numbers",
            "levels the verdict table compares servers at (empty: each server's peak level and "
            "the highest level)"),
    declare("WORKERS", "", "",
            "server worker threads/tasks for every server alike (empty: each library's own "
            "default, as shipped; NAME@N sets one server)", "servers with a worker setting",
            bounds=(WORKER_COUNTS[0], WORKER_COUNTS[-1])),
    declare("BACKLOG", "512", "",
            "accept backlog every server is given (the published AWS setup)",
            bounds=(1, 65535)),
    declare("BIND", "127.0.0.1", "IP address",
            "address every server listens on, one of this host's (a topology other than local "
            "sets it to the server host's address on the lab's link)", "TOPOLOGY=local"),
    declare("PORT", "8080", "", "port the server listens on", bounds=(1024, 65535)),
    declare("SERVER_CPUS", "", "CPU list",
            "CPUs for the server (empty: first half of this machine's)"),
    declare("CLIENT_CPUS", "", "CPU list", "CPUs for the client (empty: the other half)"),
    declare("SERVER_LOG_MAX", "64M", "size",
            "the most each server start's log keeps (its stdout and stderr; 100k, 64M, 1G): "
            "past it, the rest is read and discarded, and the report says so",
            "RUNTIME=process, TOPOLOGY=local or netns"),
    declare("PROBE", "1", "0 or 1",
            "1: run the robustness probe on a separate start of each server first; 0: skip it"),
    declare("FORCE", "0", "0 or 1",
            "1: load a server even when the probe left it unanswering (make compare: compare "
            "runs made under different conditions)"),
    declare("JAVA_OPTS", "", "JVM options",
            "JVM options for Java servers (empty: JVM defaults, as published)", "Java servers"),
    declare("RESULTS", "results", "folder", "where run folders are made"),
    declare("TOPOLOGY", "local", "local or netns",
            "where server and client run: local (one host, loopback) or netns (two emulated hosts: "
            "a network namespace each, joined by a veth pair; root); SERVER_HOST makes it ssh"),
    declare("LINK", "", "tc rate",
            "shape the link with tc to this rate, e.g. 1gbit (the published Gigabit Ethernet); "
            "empty: unshaped", "TOPOLOGY=netns"),
    declare("LINK_DELAY", "", "tc delay",
            "one-way delay added by tc netem, e.g. 0.1ms", "TOPOLOGY=netns with LINK"),
    declare("SERVER_HOST", "", "user@host",
            "run the server there over OpenSSH (your ssh config and keys); empty: this host"),
    declare("CLIENT_HOST", "", "user@host list",
            "user@host of each client host, space-separated; several drive the server together "
            "(empty: the client runs here)", SSH),
    declare("SSH_CONFIG", "", "file",
            "an ssh config file for every ssh the lab runs (ssh -F); empty: ssh's own "
            "(~/.ssh/config)", SSH),
    declare("REMOTE_DIR", "", "folder",
            "the folder on each remote host the lab copies what it runs into (relative: to the "
            "remote home; empty: ~/.cache/polyglot-lab/<this checkout>)", SSH),
    # RUNTIME=docker chooses the docker topology; the setting keeps its name (not
    # TOPOLOGY=docker) because users' commands and saved runs' manifests name it
    declare("RUNTIME", "process", "process or docker",
            "how the server runs: process (directly) or docker (its compose.yaml service, built "
            "from the server's Dockerfile)"),
    declare("MEM_LIMIT", "", "size",
            "the container's memory limit, e.g. 512m (empty: none)", "RUNTIME=docker"),
    declare("NEIGHBOUR", "0", "per CPU",
            "a noisy neighbour the lab makes (make bench, make noise), to see this host's "
            "realized noise: that many "
            "processes on each CPU of the run (SERVER_CPUS and CLIENT_CPUS), each busy and "
            "idle by turns of 20 to 200 ms, beside each start from its verification to its "
            "stop; its levels are flagged neighbour; 0: none",
            "TOPOLOGY=local or netns, RUNTIME=docker", bounds=(0, 8)),
    # where the lab keeps and finds things: checked by `lab check`, not recorded in a run
    declare("LAB_CACHE", "", "folder",
            "toolchains, client builds and build logs (empty: .cache in the checkout)",
            scope="lab", check=check_cache),
    declare("LAB_SERVER_PATH", "", "folders",
            "more folders with server.toml manifests, colon-separated (test doubles, your own "
            "servers)", scope="lab", check=check_server_path),
    declare("ADA_TOOLCHAIN", "auto", "native, rootfs or auto",
            "how the Ada servers are built: native (this host's gprbuild), rootfs (a Debian 11 "
            "root in LAB_CACHE) or auto", "Ada servers", scope="lab",
            check=check_choice("ADA_TOOLCHAIN", ("native", "rootfs", "auto"))),
    declare("ADA_SOURCES", "", "folder",
            "folder holding the pinned archives of servers/ada/sources.toml (relative: to the "
            "repository root); empty: download them once into LAB_CACHE", "asf, ews, "
            "simple-components", scope="lab", check=check_ada_sources),
    declare("DEBIAN_MIRROR", "http://deb.debian.org/debian", "URL",
            "the Debian mirror debootstrap uses for RUNTIME=docker's base images", "RUNTIME=docker",
            scope="lab", check=check_url("DEBIAN_MIRROR")),
    declare("DEBIAN_SECURITY_MIRROR", "http://deb.debian.org/debian-security", "URL",
            "the Debian security mirror of those images", "RUNTIME=docker", scope="lab",
            check=check_url("DEBIAN_SECURITY_MIRROR")),
    declare("LAB_NETNS_PREFIX", "lab", "1-5 letters/digits",
            "first part of the network namespaces' names (tests use their own)", "TOPOLOGY=netns",
            scope="lab", check=check_prefix("LAB_NETNS_PREFIX", 5)),
    declare("LAB_DOCKER_PREFIX", "lab", "letters/digits",
            "first part of the compose projects' names (tests use their own)", "RUNTIME=docker",
            scope="lab"),
    # make cost, make profile (lab/studies/cost.py, lab/studies/profile.py)
    declare("COST_LEVELS", "1 8", "whole numbers",
            "the concurrencies at which instructions per request are counted (cachegrind, "
            "h2load keep-alive)", "make cost", scope="cost"),
    declare("COST_REQUESTS", "2000 6000", "two whole numbers",
            "two exact request counts, one start each; (Ir at the larger - Ir at the smaller) / "
            "their difference = instructions per request", "make cost", scope="cost"),
    declare("HEADERS", "0", "",
            "extra request headers (X-Lab-Pad-N, 32 bytes each) on every request, to see what "
            "header handling costs", "make cost, make profile", scope="cost", bounds=(0, 10_000)),
    declare("PROFILE_AT", "", "one of RUN's levels",
            "the level of RUN at which each server is profiled (perf or async-profiler, a "
            "separate start, for DURATION)", "make profile", scope="profile"),
    # make compare (lab/analyse/gate.py; lab/analyse/floors.py: make noise)
    declare("GATE", "rate p99", "metric names",
            "what make compare gates on, space-separated: rate (req/s), p99 (at a fixed offered "
            "rate), cpu (server CPU per request), rss (RSS at the end), instructions (per request, "
            "make cost runs)", "make compare", scope="compare", check=check_gate),
    declare("MIN_EFFECT", "5%", "percent",
            "δ of the decision rule (docs/methodology.md): the smallest difference a run's "
            "verdicts call faster and the half-width of their \"equivalent\"; the smallest "
            "worsening make compare calls a regression (a larger A/A floor of `make noise` wins)",
            "every run, make compare", check=check_min_effect),
    declare("ALPHA", "1%", "percent",
            "the false-alarm rate of a run's verdicts (each family of them) and of one make "
            "compare over all its checks (each at ALPHA over their number)",
            "every run, make compare", check=check_alpha),
    # make calibrate
    declare("CLIENTS", "", "client names",
            "the clients to calibrate, space-separated (empty: every installed one)",
            "make calibrate", scope="calibrate"),
    # make reproduce
    declare("STUDY", "", "study id",
            "a study id of docs/claims.toml (ada-vs-java, java-containers)", "make reproduce",
            scope="reproduce"),
    declare("QUICK", "0", "0 or 1",
            "1: a smoke version (3 levels, 1s, 1 rep; verdicts mean nothing)", "make reproduce",
            scope="reproduce", check=check_flag("QUICK")),
)
SETTINGS: dict[str, Setting] = {s.name: s for s in REGISTRY}
# Variables the lab sets for its own processes and reads back: not settings.
PLUMBING: dict[str, str] = {
    "LAB_RUN": "the run id, in every server's and client's environment (leftovers are found by it)",
    "LAB_KEEPER": "the step's token, in what it starts (lab/host/keeper.py kills what carries it)",
    "LAB_ROOT": "the checkout, for a server's commands",
    "LAB_SCRATCH": "a start's private folder, removed when it stops",
    "LAB_GIVEN": "make rerun: the settings given on make's command line",
    "LAB_RERUN": "make rerun: the run a new run repeats",
}
# Other tools' variables the lab reads as they are.
FOREIGN = ("MAKEFLAGS", "DOCKER_HOST", "HOME", "PATH", "SSH_AUTH_SOCK", "USER", "TMPDIR")
# The Makefile's own variables (RUN=, A=, B= name a run folder, RUNS= several;
# PYTHON the interpreter).
MAKE_VARIABLES = ("RUN", "A", "B", "PYTHON", "RUNS")


def run_settings() -> list[str]:
    """The settings a run records (its manifest, its reproduce line)."""
    return [s.name for s in REGISTRY if s.scope == "run"]


def default(name: str) -> str:
    return SETTINGS[name].default


# what TOPOLOGY accepts when no list found is given: the topologies chosen by
# TOPOLOGY in the checkout (lab.measure.topologies.selectable() adds any other)
TOPOLOGIES = ("local", "netns")
RUNTIMES = ("process", "docker")


class ConfigError(ValueError):
    """Bad input: the message says which setting and why."""


@dataclass(frozen=True)
class Repeat:
    """REPEAT as checked (lab.setup.fromenv.check_repeat), the one type from the
    settings to a run's reader (lab.record.manifest.RunParams): REPEAT=N starts
    each server N times (least = most = N); REPEAT=auto starts it REPEAT_MIN
    times (`least`), then one more at a time while a pair is undecided, up to
    REPEAT_MAX (`most`). In manifest.json (to_json): `"repeat": N`, or under
    REPEAT=auto `"repeat": REPEAT_MIN, "repeat_auto": true, "repeat_max": REPEAT_MAX`."""
    least: int = 1
    most: int = 1
    auto: bool = False

    def text(self) -> str:
        return f"auto ({self.least} to {self.most})" if self.auto else str(self.least)

    def to_json(self) -> dict[str, object]:
        if not self.auto:
            return {"repeat": self.least}
        return {"repeat": self.least, "repeat_auto": True, "repeat_max": self.most}


@dataclass(frozen=True)
class Params:
    servers: tuple[str, ...]
    client: str
    axis: str                       # concurrency, rate, or a knob (KNOBS)
    load_axis: str                  # what the client varies: concurrency or rate
    values: tuple[int, ...]         # the swept values, ascending
    concurrencies: tuple[int, ...]  # CONCURRENCY ("levels" in the manifest; a Level is
                                    # any swept point, lab.record.level)
    rates: tuple[int, ...]          # RATE
    duration_s: int
    repeat: Repeat
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
    topology: str = "local"         # what runs: local | netns | ssh (SERVER_HOST given) |
                                    # docker (RUNTIME=docker)
    link: str = ""                  # netns: tc rate (1gbit), empty: unshaped
    link_delay: str = ""            # netns: tc netem delay (0.1ms)
    server_host: str = ""           # ssh: user@host
    client_hosts: tuple[str, ...] = ()   # ssh: user@host each; empty: here
    ssh_config: str = ""            # ssh: -F file (absolute), empty: ssh's own
    remote_dir: str = ""            # ssh: folder on the remote hosts, empty: the default
    runtime: str = "process"        # process | docker
    mem_limit: str = ""             # docker: memory limit (512m)
    server_log_max: int = 64 << 20  # SERVER_LOG_MAX, bytes (lab.host.logcap)
    paired: str = ""                # PAIRED: "" (one server at a time), duet or rmit
    # ALPHA (the verdicts' false-alarm rate) and MIN_EFFECT (δ, %): always given by
    # check_settings, from the settings' declared defaults (lab.analyse.policy reads them)
    alpha: float = math.nan
    min_effect_pct: float = math.nan
    connections: int = 0            # CONNECTIONS (vegeta): the most kept open; 0: no cap
    neighbour: int = 0              # NEIGHBOUR: the lab's bursty processes per CPU; 0: none
    warnings: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        """As the manifest records it: the concurrencies under their on-disk key "levels",
        REPEAT as Repeat.to_json keys."""
        out = {("levels" if k == "concurrencies" else k): v for k, v in asdict(self).items()
               if k != "repeat"}
        return {**out, **self.repeat.to_json()}

    @property
    def load(self) -> tuple[int, ...]:
        """The client's levels: concurrencies, or offered rates."""
        return self.concurrencies if self.load_axis == "concurrency" else self.rates


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


SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_size(name: str, text: str) -> int:
    """'100k', '64M', '1G' or a bare number of bytes, in ASCII digits; at least 1k."""
    m = re.fullmatch(r"\s*([0-9]+)\s*([kKmMgG]?)\s*", text)
    if not m:
        raise ConfigError(f"{name}={text!r}: expected a size like 100k, 64M or 1G")
    size = int(m.group(1)) * SIZE_UNITS[m.group(2).lower()]
    if not 1 << 10 <= size <= 1 << 40:
        raise ConfigError(f"{name}={text!r}: must be from 1k to 1024G")
    return size


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
        if hi >= 4096:
            raise ConfigError(f"{name}: CPU {hi} is beyond any machine's")
        cpus.update(range(lo, hi + 1))
    missing = sorted(cpus - available) if available is not None else []
    if missing and available is not None:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise ConfigError(f"{name}={shown!r}: CPU {cpu_ranges(missing)} does not exist "
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


def check_lab_settings(env: Mapping[str, str]) -> None:
    """Every "lab" and "reproduce" setting given, checked alone (`lab check`)."""
    for setting in REGISTRY:
        value = env.get(setting.name)
        if setting.scope != "run" and setting.check is not None and value is not None:
            setting.check(value)


def cpu_ranges(cpus: set[int] | tuple[int, ...] | list[int]) -> str:
    """'0-3,8,10-11': a CPU list as taskset and the kernel write it."""
    out: list[str] = []
    ordered = sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)
