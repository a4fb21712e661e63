"""The settings as `make help` (`lab settings`) and docs/settings.md
(`lab settings --markdown`) show them, read from lab/setup/params.py's
REGISTRY: what the lab found (clients, topologies) filled in by the caller.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from lab.setup.markdown import Table, md_cell
from lab.setup.params import REGISTRY, Setting, loop


@dataclass(frozen=True)
class Found:
    """What the lab found besides the registry, for `make help` and
    docs/settings.md: each client's help line (lab.measure.clients.described()), the
    axis each client varies, the names TOPOLOGY accepts. Given by the caller:
    lab/setup imports neither the clients nor the topologies."""
    clients: str
    axes: Mapping[str, str]
    topologies: tuple[str, ...]


def shown(st: Setting, found: Found | None) -> Setting:
    """A setting as `make help` and docs/settings.md show it: CLIENT's choices
    are the clients found, CONCURRENCY's and RATE's clients those of their
    loop, TOPOLOGY's the topologies found: adding one adds it here."""
    if found is None:
        return st
    if st.name == "CLIENT":
        return replace(st, meaning=f"load client, one of: {found.clients}")
    if st.name in ("CONCURRENCY", "RATE"):
        return replace(st, applies=loop(st.name.lower(), found.axes))
    if st.name == "TOPOLOGY":
        return replace(st, kind=" or ".join(found.topologies))
    return st


def help_text(found: Found | None = None) -> str:
    """The settings part of `make help`."""
    width = max(len(st.name) for st in REGISTRY)
    lines = []
    for scope, title in (("run", "Settings of a run (make VAR=value or environment):"),
                         ("lab", "Where the lab keeps and finds things:"),
                         ("calibrate", "make calibrate:"), ("reproduce", "make reproduce:"),
                         ("compare", "make compare:"),
                         ("cost", "make cost (HEADERS: make profile too):"),
                         ("profile", "make profile:")):
        lines += ["", title]
        for st in (shown(x, found) for x in REGISTRY):
            if st.scope == scope:
                where = "" if st.applies == "every run" else f"for {st.applies}; "
                lines.append(f"  {st.name:<{width}} {st.meaning} [{where}default: "
                             f"{st.default or '-'}]")
    return "\n".join(lines[1:])


def markdown_table(found: Found | None = None) -> str:
    """docs/settings.md's table, between its marker comments."""
    rows = [[f"`{st.name}`", f"`{md_cell(st.default)}`" if st.default else "-", md_cell(st.kind),
             md_cell(st.applies), md_cell(st.meaning)] for st in (shown(x, found) for x in REGISTRY)]
    return Table(["Setting", "Default", "Type", "Applies to", "Meaning"], rows).text()
