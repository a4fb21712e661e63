"""Wrong answers under load are no level (issue 44, section 1).

The contract is checked before each start and after each level; these are
the checks during the load:
- the size: every level's bytes per response, as its client counted them,
  against the size of the verified answer to that client's own request;
- the client's request: the verification sends the load client's exact
  request (its headers too), so a server right only for the lab's own
  request is refused before any load.

The live tests run the lab against tests/servers/overloaded (right until it
is loaded: more than 20 requests in the last 100 ms, the previous one less
than 20 ms ago; then wrong in the way of its variant) and tests/servers/picky
(right only to a request that says `Accept-Encoding: identity`).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import bench, free_port, lab_env, leftovers, run_folders


def show(out: object) -> str:
    return f"{getattr(out, 'stdout', '')}\n{getattr(out, 'stderr', '')}"


def flagged_live(tmp_path: Path, server: str, **settings: str) -> tuple[dict, str]:
    """Run the lab on `server`; its one server's levels (results.json) and what it printed."""
    env = lab_env(tmp_path, SERVER=server, WARMUP="0", PORT=str(free_port()), **settings)
    out = bench(env, timeout=300)
    [run] = run_folders(tmp_path)
    assert leftovers(run) == []
    data = json.loads((run / "results.json").read_text())
    name = server
    levels = data["levels"][name]
    assert levels, show(out)
    summary = (run / "summary.md").read_text()
    return data, out.stderr + "\n" + summary


def assert_wrong_and_not_ranked(data: dict, server: str, said: str) -> None:
    levels = data["levels"][server]
    assert all("wrong-answers" in lv["flags"] for lv in levels), levels
    assert all(any("wrong answers" in why for why in lv["unranked"]) for lv in levels), levels
    kinds = {f["kind"]: f for f in data["findings"]}
    assert "wrong-answers" in kinds, sorted(kinds)
    assert "not ranked" in kinds["wrong-answers"]["text"]
    assert "wrong answers" in said


@pytest.mark.parametrize("server", ["overloaded", "overloaded.error"])
def test_wrong_only_under_load_is_flagged_under_wrk(tmp_path: Path, server: str) -> None:
    """A 28-byte body, or {"error":"overloaded"} with 200: wrk's bytes per
    response are not the verified answer's."""
    data, said = flagged_live(tmp_path, server, CLIENT="wrk", CONCURRENCY="2",
                              DURATION="2s")
    assert_wrong_and_not_ranked(data, server, said)
    assert "bytes per response" in said


@pytest.mark.usefixtures("siege_installed")
def test_wrong_only_under_load_is_flagged_under_siege(tmp_path: Path) -> None:
    """{"error":"overloaded"}: 5 bytes fewer a response than the verified
    body, beyond what siege's 0.01 MB rounding can hide."""
    data, said = flagged_live(tmp_path, "overloaded.error", CLIENT="siege", CONCURRENCY="2",
                              DURATION="3s")
    assert_wrong_and_not_ranked(data, "overloaded.error", said)


@pytest.mark.usefixtures("vegeta_installed")
@pytest.mark.parametrize("server", ["overloaded", "overloaded.error"])
def test_wrong_only_under_load_is_flagged_under_vegeta(tmp_path: Path, server: str) -> None:
    data, said = flagged_live(tmp_path, server, CLIENT="vegeta", RATE="1000",
                              DURATION="2s")
    assert_wrong_and_not_ranked(data, server, said)


@pytest.mark.parametrize("client", ["wrk", "siege"])
def test_a_server_right_only_for_the_labs_own_request_is_not_loaded(
        tmp_path: Path, client: str) -> None:
    """picky answers gzip to any request without Accept-Encoding: identity
    (wrk sends none, siege `*`): the verification sends the client's request
    and refuses it before any load."""
    if shutil.which(client) is None:
        pytest.skip(f"{client} is not installed")
    env = lab_env(tmp_path, SERVER="picky", CLIENT=client, CONCURRENCY="2", DURATION="1s",
                  WARMUP="0", PORT=str(free_port()))
    out = bench(env, timeout=300)
    assert out.returncode != 0, show(out)
    assert f"as {client} sends it" in out.stderr and "exactly" in out.stderr, show(out)
    [run] = run_folders(tmp_path)
    assert leftovers(run) == []
    assert not (run / "results.csv").exists()       # not loaded: no level measured
