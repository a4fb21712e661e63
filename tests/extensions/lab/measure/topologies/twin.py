"""twin: a test-only topology in one file. Server and client on this host,
as local, with every step of its own: check refuses shared CPUs, up and down
append to a log in the lab cache, place names it in the manifest."""
from __future__ import annotations

from pathlib import Path

from lab.setup import paths
from lab.host import procs
from lab.setup.params import ConfigError, Params
from lab.measure.topologies import Placement, Topology
from lab.measure.topologies.local import LocalClientHost, LocalServerHost


def log() -> Path:
    return paths.cache_dir() / "twin" / "steps.log"


def note(step: str, params: Params) -> None:
    log().parent.mkdir(parents=True, exist_ok=True)
    with log().open("a") as f:
        f.write(f"{step} {params.port}\n")


class Twin(Topology):
    name = "twin"
    chosen_by = "TOPOLOGY"
    summary = "test-only: loopback, its steps logged in the lab cache"

    def check(self, params: Params) -> None:
        if set(params.server_cpus) & set(params.client_cpus):
            raise ConfigError("TOPOLOGY=twin: server and client must not share a CPU")

    def up(self, params: Params) -> None:
        note("up", params)

    def down(self, params: Params) -> None:
        note("down", params)

    def place(self, params: Params) -> Placement:
        return Placement(name="twin", server=LocalServerHost(), clients=(LocalClientHost(),),
                         bind=params.bind, connect=procs.connect_host(params.bind),
                         summary="twin (test topology on loopback)",
                         details={"steps_log": str(log())})


TOPOLOGY = Twin()
