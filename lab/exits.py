"""The lab's exit codes: the one table every step, `make help` and the docs use.

A step returns one of these; scripts tell them apart. `compare` gives 1 its
gate's meaning (B is worse than A); every other step gives 1 its usual one.
"""
from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    FAILED = 1          # compare: REGRESSION
    BAD_INPUT = 2
    NOT_COMPARABLE = 3  # compare only
    INTERRUPTED = 130


REGRESSION = Exit.FAILED

# (code, meaning), in the order `make help` and docs/ list them
TABLE: tuple[tuple[int, str], ...] = (
    (Exit.OK, "done (compare: B is no worse than A)"),
    (Exit.FAILED, "a failure while running: results kept and marked incomplete "
                  "(compare: B is worse than A beyond the noise at a cleanly measured level)"),
    (Exit.BAD_INPUT, "bad input or a missing prerequisite: nothing was built or started"),
    (Exit.NOT_COMPARABLE, "compare: nothing could be compared cleanly (the reason is printed)"),
    (Exit.INTERRUPTED, "interrupted (SIGINT, SIGTERM or SIGHUP): the run is marked interrupted"),
)


def meaning(code: int) -> str:
    for c, text in TABLE:
        if c == code:
            return text
    return f"exit code {code}"
