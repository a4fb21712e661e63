"""A host's facts as a run records them (lab.record.hostfacts): typed on the
way in, written back as they were read, wrong values named."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.measure import hostinfo
from lab.record import manifest
from lab.record.checked import dump
from lab.record.files import RecordError
from lab.record.hostfacts import HostFacts

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent / "fixtures" / "runs"


def test_this_hosts_facts_round_trip_in_their_order() -> None:
    read = json.loads(json.dumps(hostinfo.host()))
    facts = HostFacts.of(read)
    assert facts.cores is not None and facts.cores >= 1 and facts.kernel
    assert list(dump(facts).items()) == list(read.items())


def test_facts_a_lab_did_not_record_stay_absent_and_its_added_keys_stay() -> None:
    ssh = {"hostname": "b", "cores": 4, "ssh": "root@b", "tools": {"wrk": "4.1.0"}}
    facts = HostFacts.of(ssh, "client_hosts")
    assert facts.sysctl is None and facts.usable_cpus is None and facts.model() == "?, 4 cores"
    assert dump(facts) == ssh


@pytest.mark.parametrize(("fact", "value", "said"), [
    ("cores", "two", "`host.cores` should be a whole number"),
    ("load_average_at_start", ["high"], "`host.load_average_at_start` should be a list of numbers"),
    ("sysctl", {"net.core.somaxconn": 4096}, "`host.sysctl.net.core.somaxconn` should be text"),
])
def test_a_wrong_fact_is_named(fact: str, value: object, said: str) -> None:
    with pytest.raises(RecordError, match=said.replace(".", r"\.")):
        HostFacts.of({fact: value})


def test_every_saved_runs_host_reads_and_writes_back_unchanged() -> None:
    runs = [p.parent for p in FIXTURES.glob("*/manifest.json")]
    assert runs
    for run in runs:
        raw = json.loads((run / "manifest.json").read_text())
        m = manifest.read_manifest(run)
        assert m.to_json().get("host", {}) == raw.get("host", {}), run.name
        assert [dump(h) for h in m.client_hosts] == raw.get("client_hosts", []), run.name
