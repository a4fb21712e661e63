"""Where the server and the client were pinned (CPU lists), as a run's
manifest and a calibration record it."""
from __future__ import annotations

from dataclasses import dataclass

from lab.record.checked import Obj


@dataclass
class Pinning:
    server_cpus: str = ""
    client_cpus: str = ""

    @classmethod
    def parse(cls, o: Obj) -> Pinning:
        return cls(o.text("server_cpus"), o.text("client_cpus"))
