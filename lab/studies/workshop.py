"""`make workshop-prepare`: a machine readied the day before a workshop.

With the network, it installs and builds everything docs/workshop.md uses,
read from the document itself (every SERVER and CLIENT of its `make` lines):
the packages, every server (the Ada ones in the Debian 11 root, the Java
ones through Maven, which fills ~/.m2), vegeta, valgrind and perf for
exercises 8 and 9; it checks that every server answers (a one-second run
into the cache, not into RESULTS); and it calibrates, retried while the
host is busy (a few tries, a pause between). The last line is `ready`, or
`not ready:` and the one missing piece with the command that fixes it (a
busy host: the figure that says so, lab.studies.quiethost's).
After it every exercise runs offline. Each step is the lab's own
(`python3 -m lab deps/build/calibrate`, run-benchmark.sh), so a step fails
here exactly as it would in the exercise."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from lab.measure import deps
from lab.setup.paths import ROOT, cache_dir
from lab.setup.servers import ServerSpec, ServerSpecError, found_here

DOC = ROOT / "docs" / "workshop.md"
CALIBRATE_TRIES = 3
CALIBRATE_PAUSE_S = 30
EXTRA_TOOLS = {"perf": "linux-perf"}     # make profile (exercise 8); valgrind: lab.studies.cost


WRITTEN = re.compile(r"^```\S+ +servers/([^/\s]+)/", re.M)


def written(text: str) -> set[str]:
    """The server folders the document has the student write (exercise 7's
    ```toml servers/hello/server.toml block): made in the session, never
    prepared, whether or not a student already made them in this clone."""
    return set(WRITTEN.findall(text))


def used(text: str, root: Path = ROOT) -> tuple[list[str], list[str]]:
    """The servers (base names, those the lab at `root` knows, without those
    the document has the student write) and the clients the document's
    `make` lines name, in order of first use; siege is the default client."""
    known = found_here(root)
    mine = written(text)
    servers: list[str] = []
    clients: list[str] = ["siege"]
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("make "):
            continue
        try:
            words = shlex.split(line.split(" #", 1)[0])
        except ValueError:
            continue
        for word in words:
            key, _, value = word.partition("=")
            if key == "SERVER":
                for name in value.split():
                    try:
                        base = ServerSpec.parse(name).name
                    except ServerSpecError:     # a bad count: no server to prepare
                        continue
                    if base in known and base not in servers and \
                            known[base].folder.name not in mine:
                        servers.append(base)
            elif key == "CLIENT" and value and value not in clients:
                clients.append(value)
    return servers, clients


def step(title: str, argv: list[str], env: dict[str, str], quiet: bool = False) -> int:
    """One lab step, its progress (stderr) shown; quiet: its summary (stdout) not."""
    print(f"[prepare] {title}: {shlex.join(argv)}", file=sys.stderr, flush=True)
    return subprocess.run(argv, cwd=ROOT, env=env,
                          stdout=subprocess.DEVNULL if quiet else None).returncode


def calibration_busy(cache: Path) -> bool | None:
    """Whether the calibration on record was saved on a busy host; None: none on record."""
    try:
        data = json.loads((cache / "calibration.json").read_text())
    except (OSError, ValueError):
        return None
    return bool(isinstance(data, dict) and data.get("host_busy"))


def busy_figure(cache: Path) -> str:
    """': other processes took up to 43% of the lab's CPUs (the lab allows
    10%), ...': the last try's figure (lab.studies.quiethost), "" where no
    calibration on record says it."""
    from lab.record import calibration
    from lab.studies.quiethost import busy_said
    cal = calibration.last(cache)
    said = busy_said(cal) if cal is not None else ""
    return f": the last, {said}" if said else ""


def not_ready(piece: str, code: int) -> int:
    print(f"not ready: {piece}")
    return code or 1


def prepare() -> int:
    servers, clients = used(DOC.read_text())
    cache = cache_dir()
    # the steps choose their servers, client and load; calibrate alone takes the
    # user's CONCURRENCY, DURATION and WARMUP (make calibrate's own)
    mine = ("SERVER", "CLIENT", "CLIENTS", "CONCURRENCY", "RATE", "AXIS", "VALUES",
            "DURATION", "REPEAT", "WARMUP", "KEEPALIVE")
    base = {k: v for k, v in os.environ.items() if k not in mine}
    calibrating = {k: v for k, v in os.environ.items()
                   if k not in ("SERVER", "CLIENT", "RATE", "AXIS", "VALUES")}
    print(f"[prepare] the workshop uses servers {' '.join(servers)}; clients "
          f"{' '.join(clients)}; cache {cache}", file=sys.stderr, flush=True)
    lab = [sys.executable, "-m", "lab"]
    for client in clients:              # packages, and what a client builds (vegeta)
        code = step(f"packages and client {client}", [*lab, "deps", *servers],
                    {**base, "SERVER": " ".join(servers), "CLIENT": client})
        if code:
            return not_ready(f"the packages of {client} or of the servers (read the error "
                             f"above; as root: make bench SERVER=\"{' '.join(servers)}\" "
                             f"CLIENT={client})", code)
    from lab.studies.cost import TOOLS
    code = deps.ensure({**TOOLS, **EXTRA_TOOLS})
    if code:
        return not_ready(f"valgrind or perf (as root: apt-get install "
                         f"{' '.join(sorted(set(TOOLS.values()) | set(EXTRA_TOOLS.values())))})",
                         code)
    code = step("every server built", [*lab, "build", *servers],
                {**base, "SERVER": " ".join(servers)})
    if code:
        return not_ready(f"a server's build (its log is under {cache / 'logs'}; again: "
                         f"make build SERVER=\"{' '.join(servers)}\")", code)
    scratch = cache / "workshop-prepare"
    code = step("every server answers (1 s each, into the cache)",
                [str(ROOT / "run-benchmark.sh")],
                {**base, "SERVER": " ".join(servers), "CLIENT": "wrk", "CONCURRENCY": "1",
                 "DURATION": "1s", "REPEAT": "1", "WARMUP": "0", "PROBE": "0",
                 "RESULTS": str(scratch)}, quiet=True)
    if code:
        return not_ready(f"a server did not answer (its report: the newest folder in "
                         f"{scratch})", code)
    for attempt in range(1, CALIBRATE_TRIES + 1):
        code = step(f"calibration, try {attempt} of {CALIBRATE_TRIES}", [*lab, "calibrate"],
                    {**calibrating, "CLIENTS": " ".join(clients)})
        busy = calibration_busy(cache)
        if code == 0 and busy is False:
            break
        if attempt < CALIBRATE_TRIES:
            print(f"[prepare] the host was busy; trying again in {CALIBRATE_PAUSE_S}s",
                  file=sys.stderr, flush=True)
            time.sleep(CALIBRATE_PAUSE_S)
    else:
        from lab.studies.calibrate import QUIET_MOMENT
        return not_ready(f"a calibration on a quiet host ({CALIBRATE_TRIES} tries found the "
                         f"host busy{busy_figure(cache)}): the lessons will not show on this "
                         f"host, every level there would be flagged host-busy or steal; "
                         f"{QUIET_MOMENT})", 1)
    missing = [t for t in ("wrk", "siege", "gnuplot") if shutil.which(t) is None]
    if missing:
        return not_ready(f"{' '.join(missing)} not installed", 2)
    print("ready")
    return 0
