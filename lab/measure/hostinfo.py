"""Facts about the machine and tools that every figure carries."""
from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from pathlib import Path


SYSCTLS = ("net.ipv4.tcp_tw_reuse", "net.ipv4.ip_local_port_range",
           "net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog")

# tool: (command, regex picking the version out of its output); each load
# client probes its own version (lab/measure/clients/), and lab.measure.clients.host_tools() adds those
TOOLS: dict[str, tuple[list[str], str]] = {
    "gnuplot": (["gnuplot", "--version"], r"gnuplot\s+(\S+\s+patchlevel\s+\S+)"),
    "nginx": (["nginx", "-v"], r"nginx/(\S+)"),
    "java": (["java", "-version"], r'version "([^"]+)"'),
    "mvn": (["mvn", "-v"], r"Apache Maven\s+([0-9.]+)"),
    "python": (["python3", "--version"], r"Python\s+(\S+)"),
    "taskset": (["taskset", "--version"], r"(\d+\.\d+(?:\.\d+)?)"),
}


def probe_version(argv: list[str], pattern: str) -> str | None:
    """The version `pattern`'s first group picks out of argv's output; None
    when argv[0] is not there, "unknown" when it says no version."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    m = re.search(pattern, out.stdout + out.stderr)
    return m.group(1) if m else "unknown"


def tool_version(name: str) -> str | None:
    """The version of one of TOOLS."""
    return probe_version(*TOOLS[name])


def cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown"
    m = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    return m.group(1).strip() if m else "unknown"


def sysctl(name: str) -> str | None:
    try:
        return Path("/proc/sys", *name.split(".")).read_text().split("\n")[0].replace("\t", " ")
    except OSError:
        return None


def os_release() -> str:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return platform.platform()
    m = re.search(r'^PRETTY_NAME="?([^"\n]+)"?$', text, re.M)
    return m.group(1) if m else platform.platform()


def host() -> dict[str, object]:
    mem_kb = 0
    try:
        m = re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text())
        mem_kb = int(m.group(1)) if m else 0
    except OSError:
        pass
    return {
        "hostname": platform.node(),
        "os": os_release(),
        "kernel": platform.release(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cpus": sorted(os.sched_getaffinity(0)),
        "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "load_average_at_start": list(os.getloadavg()),
        "sysctl": {name: sysctl(name) for name in SYSCTLS},
    }




def lab_revision(root: Path) -> dict[str, object]:
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "lab",
                                "servers", "client", "plots", "run-benchmark.sh"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": None, "dirty": None}
    return {"commit": rev or None, "dirty": bool(dirty)}
