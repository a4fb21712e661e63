"""A server's log, bounded: what it writes goes through a pipe to this small
reader, which appends to its log file up to a cap (SERVER_LOG_MAX) and then
reads on and discards, so the server never blocks or sees an error, and the
disk never holds more than the cap (a server writing 100 KB a request wrote
about 1 GB in 4 s). At the cap it writes a note into the log; at the end, how
much it discarded. `capped(log)` tells the lab afterwards (the report says it).

    python3 -m lab.host.logcap FD MAX_BYTES      (stdin: the server's output)

FD is the log, opened by the lab to append (lab.record.files: never through
a link, hard or symbolic) and handed to the reader.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lab.host import procs

MARK = b"[lab] this log reached SERVER_LOG_MAX"
TAIL = 4096                  # the note is within this many bytes of the end
CHUNK = 1 << 16


def write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def copy(source: int, fd: int, cap: int) -> int:
    """Append what `source` gives to the log open at `fd` (closed at the end)
    up to `cap` bytes in all, the rest read and discarded; returns how many
    bytes were discarded."""
    try:
        size, dropped = os.fstat(fd).st_size, 0
        while chunk := os.read(source, CHUNK):
            room = max(0, cap - size)
            if room:
                write_all(fd, chunk[:room])
                size += min(room, len(chunk))
            if len(chunk) > room:
                if not dropped:
                    write_all(fd, b"\n" + MARK + b" (" + str(cap).encode()
                              + b" bytes): what the server wrote after this was discarded\n")
                dropped += len(chunk) - room
        if dropped:
            write_all(fd, f"[lab] {dropped:,} bytes discarded past the cap\n".encode())
        return dropped
    finally:
        os.close(fd)


def start(log: int, cap: int, cpus: tuple[int, ...] = ()) -> tuple[int, subprocess.Popen[bytes]]:
    """The reader, started (pinned to `cpus`, beside the server, in a session of
    its own the step's keeper watches) with the log open at `log` (closed
    here: the reader keeps its copy): the write end of its pipe, to give the
    server as its stdout and stderr and then close, and the reader itself."""
    read, write = os.pipe()
    os.set_inheritable(write, False)
    argv = [sys.executable, "-m", "lab.host.logcap", str(log), str(cap)]
    try:
        reader = subprocess.Popen(procs.pinned(argv, cpus) if cpus else argv, stdin=read,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  cwd=Path(__file__).resolve().parents[2],
                                  start_new_session=True, pass_fds=(log,))
    except BaseException:
        os.close(write)
        raise
    finally:
        os.close(read)
        os.close(log)
    procs.Keeper.watch(reader.pid)
    return write, reader


def finish(reader: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """Wait for the reader to drain what is left (the server's end is closed)."""
    try:
        reader.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    procs.kill_group(reader.pid)


def capped(log: Path) -> bool:
    """The log reached its cap (its note is near the end)."""
    try:
        with log.open("rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - TAIL))
            return MARK in f.read()
    except OSError:
        return False


def main(argv: list[str]) -> int:
    copy(sys.stdin.fileno(), int(argv[0]), int(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
