"""A host's facts as a run records them (manifest.json `host`, each of
`client_hosts`, the calibration's `host`): what lab.measure.hostinfo.host()
reads there, typed. A fact a lab did not record stays None and is written
back absent; keys a lab added beside them (an ssh host's `ssh`, `tools`,
`lab_folder`) are kept in `extra`, after the facts."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.record.checked import Obj, names, obj


@dataclass(frozen=True)
class HostFacts:
    """One host: the order of the fields is the order a manifest lists them."""
    hostname: str | None = None
    os: str | None = None
    kernel: str | None = None
    cpu_model: str | None = None
    cores: int | None = None
    usable_cpus: list[int] | None = None
    memory_gb: float | None = None
    load_average_at_start: list[float] | None = None
    sysctl: dict[str, str | None] | None = None      # None inside: unreadable there
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, o: Obj) -> HostFacts:
        def text(key: str) -> str | None:
            return None if o.data.get(key) is None else o.text(key)

        def present(key: str) -> bool:
            return o.data.get(key) is not None

        loads = o.items("load_average_at_start")
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in loads):
            raise o.fail("load_average_at_start", "a list of numbers")
        sysctl = o.obj("sysctl")
        values = {}
        for k in sysctl.data:
            values[k] = None if sysctl.data[k] is None else sysctl.text(k)
        return cls(hostname=text("hostname"), os=text("os"), kernel=text("kernel"),
                   cpu_model=text("cpu_model"), cores=o.opt_int("cores"),
                   usable_cpus=o.ints("usable_cpus") if present("usable_cpus") else None,
                   memory_gb=o.opt_num("memory_gb"),
                   load_average_at_start=[float(x) for x in loads]
                   if present("load_average_at_start") else None,
                   sysctl=values if present("sysctl") else None,
                   extra=o.rest(names(cls)))

    @classmethod
    def of(cls, facts: dict[str, Any], where: str = "host") -> HostFacts:
        """Facts just read on a host (hostinfo.host(), a topology's facts())."""
        return cls.parse(obj(facts, Path("manifest.json"), where))

    def model(self) -> str:
        """'Intel(R) Xeon(R) ..., 2 cores' ('?' for what is not recorded)."""
        return f"{self.cpu_model or '?'}, {self.cores or '?'} cores"
