"""The kernel's TCP counters of one network namespace, read from /proc.

The figures `nstat -a` prints, under its names (a /proc/net/snmp or
/proc/net/netstat section's name joined to the field's: TcpOutRsts,
TcpExtListenDrops), read from the files themselves: nstat keeps a history
file between calls, this keeps nothing. A namespace's files are
/proc/<pid>/net of a process in it, or /proc/thread-self/net of a thread
that entered it (setns: /proc/self/net is the process's first thread's).
Also run on a remote host by the ssh agent: Python 3.9, standard library.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional

# the counters the lab keeps (lab/record/tcpkinds.py turns them into kinds)
COUNTERS = ("TcpExtListenOverflows", "TcpExtListenDrops", "TcpOutRsts",
            "TcpExtTCPAbortOnClose", "TcpExtTCPAbortOnData", "TcpAttemptFails",
            "TcpEstabResets", "TcpRetransSegs", "TcpExtTCPTimeouts")
HERE = "/proc/thread-self/net"     # the calling thread's namespace


def parse(text: str) -> Dict[str, int]:
    """Every counter of a /proc/net/snmp or /proc/net/netstat text: each
    section is a line of names and a line of values, both led by 'Name:'."""
    out: Dict[str, int] = {}
    lines = [x for x in text.splitlines() if x.strip()]
    for names, values in zip(lines[::2], lines[1::2]):
        section, _, keys = names.partition(":")
        again, _, figures = values.partition(":")
        if section != again or len(keys.split()) != len(figures.split()):
            raise ValueError(f"not a /proc/net counter table: {names[:40]!r}")
        out.update((section + k, int(v)) for k, v in zip(keys.split(), figures.split()))
    return out


def read(net: str = HERE) -> Dict[str, int]:
    """COUNTERS in the namespace whose /proc net folder is `net`; OSError when
    it cannot be read, ValueError when it lacks one of them."""
    found = {**parse(Path(net, "snmp").read_text()), **parse(Path(net, "netstat").read_text())}
    missing = [c for c in COUNTERS if c not in found]
    if missing:
        raise ValueError(f"{net} has no {', '.join(missing)}")
    return {c: found[c] for c in COUNTERS}


def read_or_none(net: str = HERE) -> Optional[Dict[str, int]]:
    """read(), or None where the namespace's counters cannot be read."""
    try:
        return read(net)
    except (OSError, ValueError):
        return None
