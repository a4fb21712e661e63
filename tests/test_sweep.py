"""The sweep's client handling with a client that overruns its time limit
(Siege sometimes does): stopped, retried once, then reported, nothing left."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FAKES, ROOT, free_port, leftovers
from lab.record import folder, manifest
from lab.measure.clients import Load, Options
from lab.record.level import Level
from lab.setup.fromenv import from_env
from lab.setup.servers import discover
from lab.measure.sweep import ClientHung, ServerSweep

pytestmark = pytest.mark.fault


class Overrunning:
    """A client whose every run outlives its level by far."""
    name = "overrun"
    axis = "concurrency"

    def version(self) -> str:
        return "0"

    def prepare(self, run_dir: Path, options: Options) -> dict[str, str]:
        return {}

    def command(self, url: str, load: Load, duration_s: int) -> list[str]:
        return ["sleep", "300"]

    def parse(self, stdout: str, stderr: str) -> Level:
        raise AssertionError("an overrunning client has nothing to parse")


def test_overrunning_client_is_stopped_retried_once_then_reported(tmp_path: Path) -> None:
    servers = discover(ROOT, str(FAKES))
    params = from_env({"SERVER": "nginx", "CONCURRENCY": "1", "DURATION": "1s",
                       "WARMUP": "0", "CLIENT_GRACE": "1s", "PORT": str(free_port())},
                      list(servers), ["siege"])
    run = folder.new_run(tmp_path, params.servers)
    manifest.write_manifest(run, manifest.Manifest(run.name, manifest.RunParams(
        ["nginx"], "concurrency", 1), manifest.ClientInfo("overrun")))
    sweep = ServerSweep(ROOT, tmp_path / "cache", run, servers["nginx"], params, Overrunning())
    with pytest.raises(ClientHung, match="did not finish within 2s"):
        sweep.run_all()
    [note] = sweep.record().notes
    assert note.startswith("rep1-c1: overrun hung") and note.endswith("retried once")
    assert (run / "nginx" / "overrun-rep1-c1.hung.out").exists()
    assert (run / "nginx" / "overrun-rep1-c1.out").exists()     # the second attempt
    assert leftovers(run) == []

