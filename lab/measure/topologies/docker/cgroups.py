"""A container's memory cgroup, read from this host: cgroup v1 (also in the
hybrid layout, /sys/fs/cgroup/memory/...) and v2 (the unified hierarchy).

The figure the lab keeps is the one `docker stats` shows: usage less inactive
page cache (v1: memory.usage_in_bytes - total_inactive_file; v2:
memory.current - inactive_file); `figures()` gives the parts behind it.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path


def cgroup_version() -> str:
    mounts = Path("/proc/self/mountinfo").read_text()
    v1 = any(" - cgroup " in line and re.search(r"[ ,]memory(,|$)", line.split(" - ")[1])
             for line in mounts.splitlines() if " - " in line)
    return "v1" if v1 else "v2"


def _mounts() -> tuple[dict[str, tuple[str, str]], tuple[str, str] | None]:
    """v1 hierarchies by controller: (mount point, root); the v2 mount (point, root)."""
    v1: dict[str, tuple[str, str]] = {}
    v2 = None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, extra = left.split(), right.split()
        if len(fields) < 5 or len(extra) < 3:
            continue
        root, point = fields[3], fields[4]
        if extra[0] == "cgroup2" and v2 is None:
            v2 = (point, root)
        elif extra[0] == "cgroup":
            for opt in extra[2].split(","):
                v1.setdefault(opt, (point, root))
    return v1, v2


@dataclass(frozen=True)
class CgroupMemory:
    """A container's memory cgroup: v1 (memory.usage_in_bytes, memory.stat) or v2
    (memory.current, memory.stat)."""
    version: int
    path: Path

    def _read(self, name: str) -> str | None:
        try:
            return (self.path / name).read_text()
        except OSError:
            return None

    def stat(self) -> dict[str, int]:
        text = self._read("memory.stat") or ""
        return {k: int(v) for k, v in (line.split() for line in text.splitlines()
                                       if len(line.split()) == 2)}

    def usage(self) -> int | None:
        text = self._read("memory.usage_in_bytes" if self.version == 1 else "memory.current")
        return int(text) if text and text.strip().isdigit() else None

    def limit(self) -> int | None:
        text = (self._read("memory.limit_in_bytes" if self.version == 1 else "memory.max")
                or "").strip()
        if not text.isdigit() or int(text) >= 1 << 62:     # "max", or v1's page-rounded huge
            return None
        return int(text)

    def figures(self) -> dict[str, int] | None:
        """usage, and its parts, in kB; None when the cgroup is gone."""
        usage = self.usage()
        if usage is None:
            return None
        st = self.stat()
        if self.version == 1:
            anon, file = st.get("total_rss", st.get("rss", 0)), st.get("total_cache",
                                                                      st.get("cache", 0))
            inactive = st.get("total_inactive_file", st.get("inactive_file", 0))
            kernel = int((self._read("memory.kmem.usage_in_bytes") or "0").strip() or 0)
            sock = int((self._read("memory.kmem.tcp.usage_in_bytes") or "0").strip() or 0)
        else:
            anon, file = st.get("anon", 0), st.get("file", 0)
            inactive, kernel, sock = st.get("inactive_file", 0), st.get("kernel", 0), \
                st.get("sock", 0)
        return {"usage_kb": usage // 1024, "anon_kb": anon // 1024, "file_kb": file // 1024,
                "inactive_file_kb": inactive // 1024, "kernel_kb": kernel // 1024,
                "sock_kb": sock // 1024,
                "working_set_kb": max(0, usage - inactive) // 1024}

    def working_set_kb(self) -> int | None:
        """usage less inactive page cache, in kB: the figure `docker stats` shows."""
        usage = self.usage()
        if usage is None:
            return None
        st = self.stat()
        inactive = st.get("total_inactive_file", st.get("inactive_file", 0)) \
            if self.version == 1 else st.get("inactive_file", 0)
        return max(0, usage - inactive) // 1024


def cgroup_memory(pid: int) -> CgroupMemory | None:
    """The memory cgroup of process `pid`, from this host's /proc and mounts."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    v1, v2 = _mounts()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(",") and "memory" in v1:
            point, root = v1["memory"]
            rel = os.path.relpath(path, root) if root != "/" else path.lstrip("/")
            where = Path(point) / rel
            if (where / "memory.usage_in_bytes").exists():
                return CgroupMemory(1, where)
    for line in lines:
        hid, controllers, path = line.split(":", 2)
        if hid == "0" and controllers == "" and v2 is not None:
            point, root = v2
            rel = os.path.relpath(path, root) if root != "/" else path.lstrip("/")
            where = Path(point) / rel
            if (where / "memory.current").exists():
                return CgroupMemory(2, where)
    return None
