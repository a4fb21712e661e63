"""fn() run inside another network namespace by a thread of its own.

setns(2) moves only the calling thread: a thread made for the call enters the
namespace (a file: /run/netns/NAME, /proc/PID/ns/net), runs fn, and ends; the
caller stays where it was. The sockets fn opens, and what it reads under
/proc/thread-self/net and /proc/sys/net, are that namespace's. Needs root.
Also run on a remote host by the ssh agent (through lab.host.acceptq):
Python 3.9, standard library.
"""
from __future__ import annotations

import ctypes
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

CLONE_NEWNET = 0x40000000
T = TypeVar("T")


def enter(namespace: str) -> None:
    """Move the calling thread (only it) into the network namespace file;
    OSError (FileNotFoundError when there is no such file) when it cannot."""
    fd = os.open(namespace, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"cannot enter the network namespace {namespace}: "
                               f"{os.strerror(err)}")
    finally:
        os.close(fd)


def in_thread(fn: Callable[[], T], name: str = "netns") -> T:
    """fn() run by a thread of its own, which ends with the call (one that
    may setns); what it raises is raised here."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix=name) as one:
        return one.submit(fn).result()


def inside(namespace: str, fn: Callable[[], T]) -> T:
    """fn() run by a thread of its own in `namespace` (a namespace file); what
    it raises, entering included, is raised here."""
    def there() -> T:
        enter(namespace)
        return fn()
    return in_thread(there, f"netns {namespace}")
