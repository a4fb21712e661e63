"""Names given on make's command line (MAKEFLAGS), and the "did you mean"
hint for a name that is not a setting but close to one (`make bench
CONCURENCY=8`). The settings themselves are lab/setup/params.py's REGISTRY.
"""
from __future__ import annotations

import re
from collections.abc import Collection

from lab.setup.params import FOREIGN, MAKE_VARIABLES, PLUMBING, SETTINGS


def command_line_variables(makeflags: str) -> list[str]:
    """The names of the variables given on make's command line: GNU make puts
    them in MAKEFLAGS after ' -- ', spaces in values escaped with a backslash."""
    _, sep, tail = makeflags.partition(" -- ")
    if not sep:
        _, sep, tail = makeflags.partition("-- ")
        if not sep or not makeflags.startswith("-- "):
            return []
    words = re.split(r"(?<!\\) ", tail)
    return [w.split("=", 1)[0] for w in words if "=" in w and not w.startswith("=")]


def misspelt(names: Collection[str]) -> list[str]:
    """For each name not a setting but close to one: "X: did you mean Y?"."""
    import difflib                  # here: every step imports this module, few misspell
    known = list(SETTINGS) + list(MAKE_VARIABLES)
    found = []
    for name in names:
        if name in known or name in PLUMBING or name in FOREIGN or not re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        if close:
            found.append(f"{name} is not a setting of the lab: did you mean {close[0]}?")
    return found
