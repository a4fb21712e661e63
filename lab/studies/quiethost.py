"""Whether this host is quiet enough for the workshop's lessons to show
(`make workshop-check` first, `make workshop-prepare` last).

The figure is the lab's own host-busy one (lab.analyse.metrics): the CPU
other processes took on the lab's CPUs, and the hypervisor's steal, each
against its limit (HOST_BUSY_PCT, STEAL_PCT), read twice: from the
calibration on record (`make workshop-prepare` saves it marked host_busy
when every try found the host busy), and now, over a few seconds with
nothing of the lab running (the same /proc/stat times a level reads). A
host over either limit measures its other processes, not the servers:
every level there would be flagged host-busy or steal, and no lesson's
difference would stand out of the spread."""
from __future__ import annotations

import os
import platform
import sys
import time
from dataclasses import dataclass

from lab.analyse.metrics import HOST_BUSY_PCT, STEAL_PCT
from lab.host import procfs
from lab.record import calibration
from lab.record.calibration import Calibration
from lab.setup.exits import Exit
from lab.setup.params import ConfigError, cpu_ranges, parse_cpus
from lab.setup.paths import cache_dir

SAMPLE_S = 3.0                  # the look now: short, as the check is
PREPARE = "run `make workshop-prepare` on this machine (it calibrates it)"


@dataclass(frozen=True)
class Now:
    """What other processes and the hypervisor took of the lab's CPUs over
    `seconds`, in % of those CPUs' time (a level's other_cpu_pct and steal_pct)."""
    cpus: str
    seconds: float
    busy_pct: float
    steal_pct: float


def busy_said(cal: Calibration) -> str:
    """'other processes took up to 43% of the lab's CPUs (the lab allows 10%),
    the hypervisor up to 0% (10%)': the busiest of the calibration's saved
    levels; "" where the calibration was saved on a quiet host."""
    if not cal.extra.get("host_busy"):
        return ""
    levels = [x for c in cal.clients.values() for at in c.modes.values() for x in at.values()]
    busy = max((x.host_busy_pct or 0.0 for x in levels), default=0.0)
    steal = max((x.steal_pct or 0.0 for x in levels), default=0.0)
    return (f"other processes took up to {busy:.0f}% of the lab's CPUs (the lab allows "
            f"{HOST_BUSY_PCT:.0f}%), the hypervisor up to {steal:.0f}% "
            f"({STEAL_PCT:.0f}%)")


def on_record(cal: Calibration | None, hostname: str) -> tuple[str, str]:
    """(why, what to do) where the calibration on record says the lessons
    will not show here, or cannot tell; ("", "") where it is this host's, quiet."""
    if cal is None:
        return "there is no calibration on record", PREPARE
    if cal.host.hostname and cal.host.hostname != hostname:
        return (f"the calibration on record was made on {cal.host.hostname}, not on this "
                f"host ({hostname})", PREPARE)
    said = busy_said(cal)
    return ((f"the calibration on record ({cal.made}) found the host busy at every level: "
             f"{said}", quiet_moment()) if said else ("", ""))


def quiet_moment() -> str:
    from lab.studies.calibrate import QUIET_MOMENT
    return QUIET_MOMENT


def decide(cal: Calibration | None, hostname: str, now: Now | None) -> tuple[str, str]:
    """(why the lessons will not show here, what to do), or ("", "") where
    they can: the calibration on record, then the look `now` (None: not taken)."""
    why, todo = on_record(cal, hostname)
    if why:
        return why, todo
    if now is None:
        return "the host was not looked at", PREPARE
    said = now_said(now)
    return (said, quiet_moment()) if said else ("", "")


def now_said(now: Now) -> str:
    """Why the host is too busy now; "" where it is within both limits."""
    over = [f"{what} {pct:.0f}% of CPU {now.cpus} (the lab allows {limit:.0f}%)"
            for what, pct, limit in (("other processes took", now.busy_pct, HOST_BUSY_PCT),
                                     ("the hypervisor took", now.steal_pct, STEAL_PCT))
            if pct > limit]
    return (f"{' and '.join(over)} over the last {now.seconds:.0f} s, with nothing of the "
            "lab running" if over else "")


def look(cpus: tuple[int, ...], label: str, seconds: float = SAMPLE_S) -> Now:
    """The lab's CPUs' busy and steal time over `seconds`, nothing of the lab running."""
    busy0, steal0 = procfs.cpu_times(cpus)
    t0 = time.monotonic()
    time.sleep(seconds)
    busy1, steal1 = procfs.cpu_times(cpus)
    took = max(time.monotonic() - t0, 1e-9) * len(cpus)
    return Now(label, seconds, 100 * (busy1 - busy0) / took, 100 * (steal1 - steal0) / took)


def lab_cpus(cal: Calibration) -> tuple[tuple[int, ...], str]:
    """The CPUs the calibration pinned the server and the client to (the
    lab's), or, where it pinned none, those this process may run on."""
    cpus: set[int] = set()
    for name, text in (("SERVER_CPUS", cal.pinning.server_cpus),
                       ("CLIENT_CPUS", cal.pinning.client_cpus)):
        if text:
            cpus |= set(parse_cpus(name, text, None))
    if not cpus:
        cpus = set(os.sched_getaffinity(0))
    return tuple(sorted(cpus)), cpu_ranges(cpus)


def main() -> int:
    """The verdict: exit 0 where the lessons can show, else 2 (a missing
    prerequisite: a quiet host, calibrated) with the figure and what to do."""
    cal = calibration.last(cache_dir())
    now = None
    if cal is not None and not on_record(cal, platform.node())[0]:
        try:
            now = look(*lab_cpus(cal))
        except ConfigError as e:
            print(f"warning: the calibration's CPUs: {e}", file=sys.stderr)
    why, todo = decide(cal, platform.node(), now)
    if why or now is None or cal is None:
        lead = (f"cannot tell whether the workshop's lessons will show on this host: {why}"
                if todo == PREPARE else
                f"the workshop's lessons will not show on this host: {why}; every level "
                "there would be flagged host-busy or steal, a figure of the other "
                "processes rather than of the servers")
        print(f"error: {lead}. To do: {todo}; then `make workshop-check` again",
              file=sys.stderr)
        return Exit.BAD_INPUT
    print(f"host quiet enough for the workshop: other processes took {now.busy_pct:.0f}% "
          f"of CPU {now.cpus} over {now.seconds:.0f} s, the hypervisor {now.steal_pct:.0f}% "
          f"(the lab allows {HOST_BUSY_PCT:.0f}% and {STEAL_PCT:.0f}%); the calibration on "
          f"record ({cal.made}) was made on this host, quiet", file=sys.stderr)
    return 0
