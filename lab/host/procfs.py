"""Read a process tree's memory, threads and CPU time from /proc.

The lab samples the server's whole tree (nginx forks workers, a chroot
execs its server): RSS and thread counts are summed over the live tree,
CPU time is user+sys of every process in it.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, replace

from lab.host import acceptq, cgroup

TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Stat:
    pid: int
    ppid: int
    cpu_s: float       # utime + stime
    threads: int
    rss_kb: int
    user_s: float = 0.0    # utime: in user space
    sys_s: float = 0.0     # stime: in the kernel on its behalf (syscalls, TCP)


def read_stat(pid: int) -> Stat | None:
    """One process's /proc/PID/stat, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # comm may hold spaces and parentheses: split after the last ')'
    fields = raw[raw.rindex(")") + 2:].split()
    # fields[0] is field 3 (state) of proc(5)
    return Stat(pid=pid, ppid=int(fields[1]),
                cpu_s=(int(fields[11]) + int(fields[12])) / TICKS,
                threads=int(fields[17]),
                rss_kb=int(fields[21]) * PAGE // 1024,
                user_s=int(fields[11]) / TICKS, sys_s=int(fields[12]) / TICKS)


def tree(root: int) -> list[Stat]:
    """root and its live descendants."""
    stats = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            s = read_stat(int(name))
            if s is not None:
                stats.append(s)
    children: dict[int, list[Stat]] = {}
    for s in stats:
        children.setdefault(s.ppid, []).append(s)
    top = next((s for s in stats if s.pid == root), None)
    if top is None:
        return []
    out, todo = [], [top]
    while todo:
        s = todo.pop()
        out.append(s)
        todo.extend(children.get(s.pid, []))
    return out


@dataclass(frozen=True)
class TreeSample:
    processes: int
    cpu_s: float
    threads: int
    rss_kb: int
    # a container's memory as its cgroup counts it (RUNTIME=docker), None elsewhere
    cgroup_mem_kb: int | None = None
    # where the memory goes (smaps_rollup, read at the end of a level only):
    # None when it could not be read (see Sampler.memory_error)
    pss_kb: int | None = None
    private_kb: int | None = None
    shared_kb: int | None = None
    anon_kb: int | None = None
    user_s: float = 0.0            # cpu_s in user space ...
    sys_s: float = 0.0             # ... and in the kernel on its behalf
    # the tree's cgroup's figures (lab.host.cgroup.cpu_usage: to the µs, where
    # cpu_s counts 10 ms ticks), None where the tree is in no cgroup of the lab's
    cg_cpu_s: float | None = None
    cg_sys_s: float | None = None


def summed(procs: list[Stat]) -> TreeSample | None:
    if not procs:
        return None
    return TreeSample(processes=len(procs), cpu_s=sum(p.cpu_s for p in procs),
                      threads=sum(p.threads for p in procs),
                      rss_kb=sum(p.rss_kb for p in procs),
                      user_s=sum(p.user_s for p in procs), sys_s=sum(p.sys_s for p in procs))


def sample(root: int) -> TreeSample | None:
    return summed(tree(root))


@dataclass(frozen=True)
class Memory:
    """Where a process tree's memory goes, from /proc/PID/smaps_rollup summed
    over its processes: RSS counts a shared library's resident pages in full
    in every process that maps them; PSS divides each shared page among the
    processes sharing it; private pages are those no other process maps
    (Private_Clean + Private_Dirty); shared is the rest of RSS
    (Shared_Clean + Shared_Dirty). Anonymous memory (heap, stacks: what the
    server allocated) is part of either; the rest of RSS is file-backed
    (code and libraries, shared or not)."""
    rss_kb: int
    pss_kb: int
    private_kb: int
    shared_kb: int
    anon_kb: int = 0


ROLLUP = ("Rss", "Pss", "Private_Clean", "Private_Dirty", "Shared_Clean", "Shared_Dirty",
          "Anonymous")


def parse_rollup(text: str) -> dict[str, int]:
    """The kB figures of a smaps_rollup: {"Rss": 1732, "Pss": 274, ...}."""
    out = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        words = rest.split()
        if sep and len(words) == 2 and words[1] == "kB" and words[0].isdigit():
            out[key.strip()] = int(words[0])
    return out


def read_memory(pid: int, proc: str = "/proc") -> Memory | None:
    """One process's smaps_rollup; None when it is gone. OSError when it
    cannot be read (another user's process, a kernel before 4.14)."""
    try:
        with open(f"{proc}/{pid}/smaps_rollup") as f:
            got = parse_rollup(f.read())
    except (FileNotFoundError, ProcessLookupError):
        return None
    if not all(k in got for k in ROLLUP):
        if not got:              # a zombie, or a kernel thread: no memory map
            return Memory(0, 0, 0, 0)
        lacks = ", ".join(k for k in ROLLUP if k not in got)
        raise OSError(f"{proc}/{pid}/smaps_rollup lacks {lacks}")
    return Memory(rss_kb=got["Rss"], pss_kb=got["Pss"],
                  private_kb=got["Private_Clean"] + got["Private_Dirty"],
                  shared_kb=got["Shared_Clean"] + got["Shared_Dirty"],
                  anon_kb=got["Anonymous"])


def tree_memory(pids: list[int], proc: str = "/proc") -> Memory | None:
    """The summed Memory of these processes (those gone meanwhile left
    out); None when none is left. OSError when one cannot be read: a part
    of the tree would be a wrong figure, not a smaller one."""
    found = [m for m in (read_memory(p, proc) for p in pids) if m is not None]
    if not found:
        return None
    return Memory(rss_kb=sum(m.rss_kb for m in found), pss_kb=sum(m.pss_kb for m in found),
                  private_kb=sum(m.private_kb for m in found),
                  shared_kb=sum(m.shared_kb for m in found),
                  anon_kb=sum(m.anon_kb for m in found))


def with_memory(s: TreeSample, pids: list[int], proc: str = "/proc") -> tuple[TreeSample, str]:
    """`s` with its tree's PSS, private and shared memory, or as it is with
    why they could not be read."""
    try:
        mem = tree_memory(pids, proc)
    except OSError as e:
        return s, f"smaps_rollup unavailable ({e.strerror or e})"
    if mem is None:
        return s, "smaps_rollup unavailable (the tree was gone)"
    return replace(s, pss_kb=mem.pss_kb, private_kb=mem.private_kb,
                   shared_kb=mem.shared_kb, anon_kb=mem.anon_kb), ""


def user_sys(root: int) -> tuple[float, float] | None:
    """The tree's CPU seconds in user space and in the kernel, or None when it is gone."""
    procs = tree(root)
    if not procs:
        return None
    return sum(p.user_s for p in procs), sum(p.sys_s for p in procs)


class Span:
    """The CPU time a tree took between a sampler's `first` and `last` samples:
    the one owner of that arithmetic, for this Sampler and for the ssh
    topology's RemoteSampler (whose samples its agent takes with this one)."""
    first: TreeSample | None
    last: TreeSample | None

    @property
    def cpu_s(self) -> float:
        """The cgroup's run time where both samples have it (a light server's
        slice of a second is a few ticks: /proc's count would round it by 10
        ms), else /proc's ticks."""
        if self.first is None or self.last is None:
            return 0.0
        if self.first.cg_cpu_s is not None and self.last.cg_cpu_s is not None:
            return self.last.cg_cpu_s - self.first.cg_cpu_s
        return self.last.cpu_s - self.first.cpu_s

    @property
    def sys_s(self) -> float | None:
        """The kernel's part of cpu_s (syscalls, TCP work charged to the server)."""
        if self.first is None or self.last is None:
            return None
        if self.first.cg_sys_s is not None and self.last.cg_sys_s is not None:
            return self.last.cg_sys_s - self.first.cg_sys_s
        return self.last.sys_s - self.first.sys_s


class Sampler(Span):
    """Samples a process tree every `interval` seconds in a thread.

    `first` and `last` bracket the window; peaks cover every sample.
    Finding the tree means reading every process of the host, so it is done
    only every `rescan` samples (or when a member is gone); in between only
    the tree's own members are read: the lab's cost stays well under 1% of a
    core. With a `port`, each sample also reads the accept queue of what
    listens on it, in the root's network namespace (lab.host.acceptq): `queue`.
    """

    def __init__(self, root: int, interval: float = 0.2, rescan: int = 5,
                 port: int | None = None) -> None:
        self.root = root
        self.queue = acceptq.Tally()
        self.reader: acceptq.Reader | None = None
        if port is not None:
            try:
                self.reader = acceptq.Reader(port, f"/proc/{root}/ns/net")
            except OSError as e:
                self.queue.error = f"unavailable ({e.strerror or e})"
        self.interval = interval
        self.rescan = rescan
        self.members: list[int] = []
        self.count = 0
        # a container's cgroup memory peak (its subclass in the docker topology); None here
        self.cgroup_mem_peak_kb: int | None = None
        self.cpu_stat = cgroup.cpu_stat(root)       # the CPU to the µs, where there is one
        self.first: TreeSample | None = self._sample()
        self._read_queue()
        self.count = 1 if self.first else 0
        self.last: TreeSample | None = self.first
        self.rss_peak_kb = self.first.rss_kb if self.first else 0
        self.threads_peak = self.first.threads if self.first else 0
        self.own_cpu_s = 0.0          # the sampler thread's own CPU time: the lab's cost
        self.memory_error = ""        # why `last` has no PSS/private/shared memory
        # (monotonic s, CPU s, RSS kB) of every sample: the per-second series (lab.record.series)
        self.points: list[tuple[float, float, int]] = \
            [(time.monotonic(), self.first.cpu_s, self.first.rss_kb)] if self.first else []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _sample(self) -> TreeSample | None:
        stats = [] if self.count % self.rescan == 0 else [read_stat(p) for p in self.members]
        known = [x for x in stats if x is not None]
        if not known or len(known) < len(stats):
            known = tree(self.root)
            self.members = [x.pid for x in known]
        s = summed(known)
        usage = cgroup.cpu_usage(self.cpu_stat) if s and self.cpu_stat else None
        return replace(s, cg_cpu_s=usage[0], cg_sys_s=usage[1]) if s and usage else s

    def _read_queue(self) -> None:
        if self.reader is None:
            return
        try:
            self.queue.add(time.monotonic(), self.reader.read())
        except OSError as e:
            self.queue.error = f"unavailable ({e.strerror or e})"
            self.reader.close()
            self.reader = None

    def _take(self) -> None:
        s = self._sample()
        self._read_queue()
        if s is None:
            return
        self.last = s
        self.points.append((time.monotonic(), s.cpu_s, s.rss_kb))
        self.count += 1
        self.rss_peak_kb = max(self.rss_peak_kb, s.rss_kb)
        self.threads_peak = max(self.threads_peak, s.threads)

    def _loop(self) -> None:
        t0 = time.thread_time()
        while not self._stop.wait(self.interval):
            self._take()
        self.own_cpu_s = time.thread_time() - t0

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._take()
        if self.reader is not None:
            self.reader.close()
            self.reader = None
        # once, at the end (after the client's run, like the RSS at the end):
        # the kernel walks every mapping for it, too costly for every sample
        if self.last is not None:
            self.last, self.memory_error = with_memory(
                self.last, [x.pid for x in tree(self.root)] or self.members)


def state(pid: int) -> str:
    """A process's state letter (proc(5): R, S, D, T stopped by a signal, t
    stopped by a tracer, Z ...), "" when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode()
    except (FileNotFoundError, ProcessLookupError):
        return ""
    return raw[raw.rindex(")") + 2:].split(maxsplit=1)[0]


class StopClock:
    """How long a process tree (a client) was stopped (SIGSTOP, a tracer):
    `tick()` at each poll adds the time since the previous tick when a member
    is seen stopped. The tree is found again every `rescan` ticks; in between
    only its members' states are read."""
    STOPPED = ("T", "t")

    def __init__(self, root: int, rescan: int = 10) -> None:
        self.root, self.rescan = root, rescan
        self.members: list[int] = [root]
        self.count = 0
        self.stopped_s = 0.0
        self.at = time.monotonic()

    def tick(self) -> None:
        if self.count % self.rescan == 0:
            self.members = [x.pid for x in tree(self.root)] or [self.root]
        self.count += 1
        now = time.monotonic()
        if any(state(pid) in self.STOPPED for pid in self.members):
            self.stopped_s += now - self.at
        self.at = now


def tcp_sockets(state: str = "06", net: str = "/proc/net", port: int | None = None) -> int:
    """TCP sockets (IPv4 and IPv6) in `state` (hex, as /proc/net/tcp shows it:
    06 is TIME_WAIT) in the network namespace whose /proc net folder is `net`
    (/proc/PID/net: PID's namespace), optionally only those on local `port`."""
    count = 0
    for name in ("tcp", "tcp6"):
        try:
            with open(f"{net}/{name}") as f:
                next(f)
                for line in f:
                    parts = line.split()
                    if parts[3] == state and (port is None or
                                              int(parts[1].rsplit(":", 1)[1], 16) == port):
                        count += 1
        except (OSError, StopIteration):
            pass
    return count


def time_wait_sockets(net: str = "/proc/net") -> int:
    """TCP sockets in TIME_WAIT (IPv4 and IPv6) in the network namespace whose
    /proc net folder is `net`: the kernel's own count (sockstat's `tw`, what
    `ss -s` says; it also counts the few sockets closed in FIN-WAIT-2 that
    the kernel keeps the same way), one line to read however many there are.
    Listing them from /proc/net/tcp reads a line for every socket (94,853 of
    them once on a CI host, each second of `lab live`) for a figure the kernel
    already keeps."""
    try:
        with open(f"{net}/sockstat") as f:
            for line in f:
                if line.startswith("TCP:"):
                    words = line.split()
                    return int(words[words.index("tw") + 1])
    except (OSError, ValueError):
        pass
    return tcp_sockets(net=net)


def cpu_times(cpus: tuple[int, ...]) -> tuple[float, float]:
    """(busy, steal) seconds so far on these CPUs, from /proc/stat.

    busy is user+nice+system: what processes ran there. Interrupt and
    softirq time is left out: loopback networking lands there on behalf of
    the client and the server alike.
    """
    wanted = {f"cpu{c}" for c in cpus}
    busy = steal = 0
    with open("/proc/stat") as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] in wanted:
                user, nice, system = (int(v) for v in parts[1:4])
                busy += user + nice + system
                steal += int(parts[8]) if len(parts) > 8 else 0
    return busy / TICKS, steal / TICKS


# HotSpot names its JIT compiler threads "C1 CompilerThread0", "C2 CompilerThread1"
# (comm keeps 15 characters: "C2 CompilerThre"); Graal's are "JVMCI-native Com…"
# or "JVMCI CompilerT…": every one holds "Compiler" or "JVMCI"
COMPILER_MARKS = ("CompilerThre", "JVMCI")


def thread_cpu_ns(pid: int, tid: str) -> int | None:
    """A thread's CPU time in ns: schedstat's run time (the scheduler's, to the
    ns), else stat's utime+stime ticks; None when it is gone."""
    base = f"/proc/{pid}/task/{tid}"
    try:
        with open(f"{base}/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"{base}/stat", "rb") as f:
            raw = f.read().decode()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // TICKS


def compiler_threads(root: int) -> dict[tuple[int, str], int] | None:
    """The JIT compiler threads of root's tree on this host: (pid, tid) to CPU
    ns so far; None when root is not here (another host, gone)."""
    procs = tree(root)
    if not procs:
        return None
    out: dict[tuple[int, str], int] = {}
    for p in procs:
        try:
            tids = os.listdir(f"/proc/{p.pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{p.pid}/task/{tid}/comm") as f:
                    comm = f.read().strip()
            except OSError:
                continue
            if any(mark in comm for mark in COMPILER_MARKS):
                ns = thread_cpu_ns(p.pid, tid)
                if ns is not None:
                    out[(p.pid, tid)] = ns
    return out


def compiler_cpu_s(before: dict[tuple[int, str], int] | None,
                   after: dict[tuple[int, str], int] | None) -> float | None:
    """The compiler threads' CPU seconds between two readings: each thread's
    growth, a thread started in between counted whole (one that ended in
    between is lost: HotSpot stops idle compiler threads, after they idled)."""
    if before is None or after is None:
        return None
    return sum(ns - before.get(key, 0) for key, ns in after.items()
               if ns >= before.get(key, 0)) / 1e9
