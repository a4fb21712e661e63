"""The run's parameters, read from the environment and validated.

Everything a user can set is here, with its default; bad input raises
ConfigError (exit 2) before anything is built or started.
"""
from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field
from typing import Mapping

PUBLISHED_LEVELS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 35, 40, 45, 50)

# name: (default, meaning), shown by `make help` and recorded in the manifest
SETTINGS: dict[str, tuple[str, str]] = {
    "SERVER": ("aws", "server names, or 'all' (see `make list`)"),
    "CONCURRENCY": (" ".join(map(str, PUBLISHED_LEVELS)), "concurrency levels swept"),
    "DURATION": ("10s", "time per level (10s, 1m)"),
    "WARMUP": ("5s", "load at the highest level before the sweep, not recorded (0 = none)"),
    "KEEPALIVE": ("0", "0: a new connection per request (as published); 1: keep-alive"),
    "CLIENT": ("siege", "load client"),
    "CLIENT_GRACE": ("45s", "time a client may run past DURATION before it counts as hung "
                            "(stopped, retried once)"),
    "WORKERS": ("", "server worker threads/tasks (empty: each server's default)"),
    "SERVER_CPUS": ("", "CPUs for the server (empty: first half of this machine's)"),
    "CLIENT_CPUS": ("", "CPUs for the client (empty: the other half)"),
    "PORT": ("8080", "port the server listens on (127.0.0.1)"),
    "JAVA_OPTS": ("", "JVM options for Java servers (empty: JVM defaults, as published)"),
    "RESULTS": ("results", "where run folders are made"),
}


class ConfigError(ValueError):
    """Bad input: the message says which setting and why."""


@dataclass(frozen=True)
class Params:
    servers: tuple[str, ...]
    levels: tuple[int, ...]
    duration_s: int
    warmup_s: int
    keepalive: bool
    client: str
    client_grace_s: int
    workers: int | None
    server_cpus: tuple[int, ...]
    client_cpus: tuple[int, ...]
    port: int
    java_opts: str
    results: str
    warnings: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def parse_duration(name: str, text: str, allow_zero: bool = False) -> int:
    """'10s', '2m' or a bare number of seconds."""
    m = re.fullmatch(r"\s*(\d+)\s*([sm]?)\s*", text)
    if not m:
        raise ConfigError(f"{name}={text!r}: expected a duration like 10s or 1m")
    seconds = int(m.group(1)) * (60 if m.group(2) == "m" else 1)
    if seconds == 0 and not allow_zero:
        raise ConfigError(f"{name}={text!r}: must be longer than 0s")
    return seconds


def parse_levels(text: str) -> tuple[int, ...]:
    words = text.replace(",", " ").split()
    if not words:
        raise ConfigError("CONCURRENCY is empty: give levels like '1 8 32'")
    bad = [w for w in words if not w.isdigit() or int(w) < 1]
    if bad:
        raise ConfigError(f"CONCURRENCY: {' '.join(bad)} is not a positive whole number")
    levels = sorted({int(w) for w in words})
    if levels[-1] > 1000:
        raise ConfigError(f"CONCURRENCY: {levels[-1]} is above the lab's limit of 1000")
    return tuple(levels)


def parse_cpus(name: str, text: str, available: set[int]) -> tuple[int, ...]:
    """A CPU list like '0', '0-1' or '0,2-3', checked against this machine."""
    cpus: set[int] = set()
    for part in text.replace(" ", "").split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ConfigError(f"{name}={text!r}: expected a CPU list like 0 or 0-1 or 0,2")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise ConfigError(f"{name}={text!r}: range {part} runs backwards")
        cpus.update(range(lo, hi + 1))
    missing = sorted(cpus - available)
    if missing:
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
    if not text.strip().isdigit() or not lo <= int(text) <= hi:
        raise ConfigError(f"{name}={text!r}: expected a whole number from {lo} to {hi}")
    return int(text)


def from_env(env: Mapping[str, str], known_servers: list[str], clients: list[str],
             available_cpus: set[int] | None = None) -> Params:
    def get(name: str) -> str:
        value = env.get(name)
        return SETTINGS[name][0] if value is None else value

    available = available_cpus if available_cpus is not None else os.sched_getaffinity(0)
    warnings: list[str] = []

    names = get("SERVER").split()
    if not names:
        raise ConfigError(f"SERVER is empty: choose from {', '.join(known_servers)} or 'all'")
    if names == ["all"]:
        names = list(known_servers)
    unknown = [n for n in names if n not in known_servers]
    if unknown:
        raise ConfigError(f"unknown server {', '.join(unknown)}; known: {', '.join(known_servers)}")
    if len(set(names)) != len(names):
        raise ConfigError(f"SERVER lists a server twice: {' '.join(names)}")

    keepalive = get("KEEPALIVE").strip()
    if keepalive not in ("0", "1"):
        raise ConfigError(f"KEEPALIVE={keepalive!r}: expected 0 or 1")
    client = get("CLIENT").strip()
    if client not in clients:
        raise ConfigError(f"CLIENT={client!r}: known clients are {', '.join(clients)}")
    workers_text = get("WORKERS").strip()
    workers = positive_int("WORKERS", workers_text, 1, 10_000) if workers_text else None

    server_default, client_default = default_split(available)
    scpus_text, ccpus_text = get("SERVER_CPUS").strip(), get("CLIENT_CPUS").strip()
    server_cpus = parse_cpus("SERVER_CPUS", scpus_text, available) if scpus_text else server_default
    client_cpus = parse_cpus("CLIENT_CPUS", ccpus_text, available) if ccpus_text else client_default
    shared = set(server_cpus) & set(client_cpus)
    if shared:
        warnings.append(f"server and client share CPU {format_cpus(shared)}: they compete, "
                        "and the client's share of it is not the server's. "
                        "Give them disjoint SERVER_CPUS and CLIENT_CPUS if you can.")

    return Params(
        servers=tuple(names),
        levels=parse_levels(get("CONCURRENCY")),
        duration_s=parse_duration("DURATION", get("DURATION")),
        warmup_s=parse_duration("WARMUP", get("WARMUP"), allow_zero=True),
        keepalive=keepalive == "1",
        client=client,
        client_grace_s=parse_duration("CLIENT_GRACE", get("CLIENT_GRACE")),
        workers=workers,
        server_cpus=server_cpus,
        client_cpus=client_cpus,
        port=positive_int("PORT", get("PORT"), 1024, 65535),
        java_opts=get("JAVA_OPTS").strip(),
        results=get("RESULTS").strip() or "results",
        warnings=tuple(warnings),
    )
