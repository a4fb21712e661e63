"""One build at a time per cache: `lab build` holds an flock on
LAB_CACHE/build.lock from its first setup to its last build.

Two labs that share a cache (two `make bench` side by side, the test suite's
workers) would otherwise set up or build the same server at once: two Maven
builds writing one target/, two toolchain.sh runs staging one server's
pinned sources. The second waits, saying so, and then finds the server built.
A `lab build` with no setup or build to run (servers without one, or built in
their image) takes no lock.
"""
from __future__ import annotations

import fcntl
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

NAME = "build.lock"


@contextmanager
def held(cache: Path) -> Iterator[None]:
    """The cache's build lock, for the body of the with-statement; waits,
    with one line on stderr, while another build holds it."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / NAME).open("a") as f:            # never truncated: no other file is
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"lab build: another build holds {cache / NAME}; waiting for it to end",
                  file=sys.stderr, flush=True)
            fcntl.flock(f, fcntl.LOCK_EX)
        yield                                       # closing the file releases it
