"""The calibration (`make calibrate`, the cache's calibration.json, and the
copy a run's manifest keeps): what each client drove against the ceiling."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.record.checked import Obj, dump, names
from lab.record.files import RecordError, read_json
from lab.record.pinning import Pinning
from lab.record.hostfacts import HostFacts


@dataclass
class CalLevel:
    """What one client drove against the ceiling at one concurrency."""
    rate_rps: float
    client_cpu_pct: float
    client_bound: bool
    failed: int = 0
    server_cpu_pct: float | None = None    # absent in calibrations of the landed tree
    host_busy_pct: float | None = None
    steal_pct: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, o: Obj) -> CalLevel:
        rate, cpu = o.opt_num("rate_rps"), o.opt_num("client_cpu_pct")
        if rate is None or cpu is None:
            raise RecordError(o.path, f"`{o.where}` lacks rate_rps or client_cpu_pct")
        return cls(rate_rps=rate, client_cpu_pct=cpu, client_bound=o.flag("client_bound"),
                   failed=o.integer("failed", 0), server_cpu_pct=o.opt_num("server_cpu_pct"),
                   host_busy_pct=o.opt_num("host_busy_pct"), steal_pct=o.opt_num("steal_pct"),
                   extra=o.rest(names(cls)))


MODES = ("close", "keep-alive")


@dataclass
class CalClient:
    version: str
    modes: dict[str, dict[int, CalLevel]]  # connection mode: level: figures
    refused: dict[str, dict[int, str]] = field(default_factory=dict)   # levels not saved: why


@dataclass
class Calibration:
    """`make calibrate`: what each client drove against the ceiling here, and
    under which conditions (a run uses it only when they match its own)."""
    made: str
    ceiling: str
    duration_s: int
    levels: list[int]
    pinning: Pinning
    host: HostFacts
    clients: dict[str, CalClient]
    topology: str = ""                 # "" in calibrations of the landed tree
    client_threads: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, o: Obj) -> Calibration:
        clients: dict[str, CalClient] = {}
        for name in o.raw_obj("clients"):
            c = o.obj("clients").obj(name)
            modes: dict[str, dict[int, CalLevel]] = {}
            refused: dict[str, dict[int, str]] = {}
            for mode in MODES:
                levels = c.obj(mode)
                modes[mode] = {_level(levels, k): CalLevel.parse(levels.obj(k))
                               for k in levels.data}
                why = c.obj("refused").obj(mode)
                refused[mode] = {_level(why, k): why.text(k) for k in why.data}
            clients[name] = CalClient(c.text("version"), modes, refused)
        return cls(made=o.text("made"), ceiling=o.text("ceiling"),
                   duration_s=o.integer("duration_s", 0), levels=o.ints("levels"),
                   pinning=Pinning.parse(o.obj("pinning")), host=HostFacts.parse(o.obj("host")),
                   clients=clients, topology=o.text("topology"),
                   client_threads=o.opt_int("client_threads"), extra=o.rest(names(cls)))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = dump(self)
        out["clients"] = {
            name: {"version": c.version,
                   **{mode: dump(levels) for mode, levels in c.modes.items()},
                   **({"refused": dump(c.refused)} if any(c.refused.values()) else {})}
            for name, c in self.clients.items()}
        return out


def _level(o: Obj, key: str) -> int:
    if not key.isdigit():
        raise RecordError(o.path, f"`{o.where}` has {key!r} where a concurrency belongs")
    return int(key)


def read_calibration(path: Path) -> Calibration:
    return Calibration.parse(Obj(read_json(path), path, ""))


FILE = "calibration.json"      # in the lab's cache


def last(cache: Path) -> Calibration | None:
    """The last calibration saved on this machine, or None (an unreadable one
    is named on stderr and not used)."""
    path = cache / FILE
    if not path.exists():
        return None
    try:
        return read_calibration(path)
    except RecordError as e:
        print(f"warning: calibration not used: {e}; run `make calibrate` again",
              file=sys.stderr)
        return None
