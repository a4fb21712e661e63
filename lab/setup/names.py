"""What a server's name may be: the one rule for a server folder's name, and
for a server name read back from a run folder (results.csv, manifest.json)
before it becomes a path."""
from __future__ import annotations

import re

from lab.setup.whynot import Reason

# A server folder (and its manifest's `name`): letters, digits, - and _, not
# starting with '-' (it would read as an option): so that every name listed
# can also be selected with SERVER=...
BASE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")
# NAME@N: N workers, whatever WORKERS says; NAME#K: the K-th entry of one run
# (lab.setup.servers.ServerSpec, the one parser of the form)
WORKER_COUNTS = range(1, 10_001)
ENTRIES = range(2, 10)
# A server as a run records it: NAME, NAME.VARIANT, then @WORKERS and #K,
# each in its range, so that every recorded name is a ServerSpec.
RECORDED = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}(\.[A-Za-z0-9_-]{1,64})?"
                      r"(@(?P<workers>[0-9]{1,5}))?(#[2-9])?")


def why_not_a_server_name(name: str) -> Reason:
    """Why `name` cannot be a server folder's name, or None when it can."""
    if BASE.fullmatch(name):
        return None
    return (f"server name {name!r} is not allowed: use letters, digits, - and _ "
            "(not first: -), at most 64 characters, so that SERVER=... can select it")


def why_not_a_recorded_name(name: str) -> Reason:
    """Why `name`, read from a run folder, cannot name a server of it (it
    would become a path outside the run, or no server is called so), or None."""
    got = RECORDED.fullmatch(name)
    if got and (got["workers"] is None or int(got["workers"]) in WORKER_COUNTS):
        return None
    return (f"server name {name!r} is not one the lab writes (letters, digits, - and _, "
            "then .VARIANT, @WORKERS, #K): refused before it becomes a path")
