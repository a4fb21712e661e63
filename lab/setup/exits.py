"""The lab's exit codes: the one table every step, `make help` and the docs use.

A step returns one of these; scripts tell them apart. `compare` gives 1 its
gate's meaning (B is worse than A); every other step gives 1 its usual one.
"""
from __future__ import annotations

from enum import IntEnum

from lab.setup.markdown import Table


class Exit(IntEnum):
    OK = 0
    FAILED = 1          # compare: REGRESSION
    BAD_INPUT = 2
    NOT_COMPARABLE = 3  # compare, noise and bmf only
    INTERRUPTED = 130


REGRESSION = Exit.FAILED

# (code, meaning), in the order `make help` and docs/ list them
TABLE: tuple[tuple[int, str], ...] = (
    (Exit.OK, "done (compare: B is no worse than A)"),
    (Exit.FAILED, "a failure while running: results kept and marked incomplete "
                  "(compare: B is worse than A beyond the noise, by req/s or, where the "
                  "host or the client set req/s, by server CPU per request)"),
    (Exit.BAD_INPUT, "bad input or a missing prerequisite: nothing was built or started"),
    (Exit.NOT_COMPARABLE, "compare: nothing could be compared cleanly or decided at α; noise: "
                          "no level was measured cleanly, no floor recorded; bmf: no level "
                          "measured cleanly, nothing exported (the reason is printed)"),
    (Exit.INTERRUPTED, "interrupted (SIGINT, SIGTERM or SIGHUP): the run is marked interrupted"),
)


def meaning(code: int) -> str:
    for c, text in TABLE:
        if c == code:
            return text
    return f"exit code {code}"


# What make gives back: GNU make ends with 2 when a recipe fails, whatever
# the recipe's status (0, 1 only for make -q, 2); only a signal ends it
# otherwise. Its recipes pass 130 on by interrupting make itself (SIGINT), so
# make ends by that signal and its caller sees 130; 1 and 3 cannot pass.
THROUGH_MAKE = (Exit.OK, Exit.BAD_INPUT, Exit.INTERRUPTED)
DIRECT = "python3 -m lab STEP"


def through_make(code: int) -> int:
    """The status `make STEP` ends with when the lab's step ends with `code`."""
    return code if code in THROUGH_MAKE else Exit.BAD_INPUT


def help_text() -> str:
    """The exit-code part of `make help`."""
    lines = ["Exit codes (lab/setup/exits.py; `python3 -m lab STEP` gives each one):"]
    for code, text in TABLE:
        how = "" if code in THROUGH_MAKE else \
            f" [make: 2, with `Error {int(code)}` in its last line]"
        lines.append(f"  {int(code):>3}  {text}{how}")
    lines.append("  make passes 0, 2 and 130 on; GNU make ends every other failed step with 2 "
                 "(its rule), so scripts that need 1 or 3 run the step directly, e.g. "
                 "`python3 -m lab compare A B` (make compare's command).")
    return "\n".join(lines)


def markdown_table() -> str:
    """docs/settings.md's exit-code table, between its marker comments."""
    rows = [[str(int(code)), text, str(int(code)) if code in THROUGH_MAKE else
             f"2 (make's rule; `Error {int(code)}` in make's last line)"] for code, text in TABLE]
    return Table(["Code", "Meaning", "Through `make`"], rows).text()
