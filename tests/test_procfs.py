"""The sampler against a real process tree: a parent that allocates and
spins a thread, and a child of its own."""
from __future__ import annotations

import subprocess
import sys
import time

from lab import procfs

TREE = r"""
import subprocess, sys, threading, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
block = bytearray(80 * 1024 * 1024)          # 80 MB, touched below
for i in range(0, len(block), 4096):
    block[i] = 1
def spin():
    end = time.time() + 60
    while time.time() < end:
        pass
threading.Thread(target=spin, daemon=True).start()
print("ready", flush=True)
time.sleep(60)
"""


def test_sampler_follows_memory_threads_cpu_and_children() -> None:
    proc = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        assert len(procfs.tree(proc.pid)) == 2           # parent and its child
        with procfs.Sampler(proc.pid, interval=0.05) as s:
            time.sleep(0.6)
        assert s.count >= 5
        assert s.last is not None and s.last.processes == 2
        assert s.last.rss_kb > 80 * 1024                 # the 80 MB block and more
        assert s.rss_peak_kb >= s.last.rss_kb
        assert s.threads_peak >= 3                       # main + spinner + child's main
        assert 0.2 < s.cpu_s < 1.5                       # one spinning thread for ~0.6 s
    finally:
        proc.kill()
        proc.wait()
    time.sleep(0.1)
    assert procfs.sample(proc.pid) is None


def test_stat_of_a_missing_process_is_none() -> None:
    assert procfs.read_stat(2**22 + 12345) is None


def test_time_wait_count_is_a_number() -> None:
    assert procfs.time_wait_sockets() >= 0
