"""A run folder's files: the one writer and the one reader of every file the
lab puts in (or reads from) a run folder, a results folder or its cache.

Writing never follows a link, symbolic or hard. Every file the lab writes
is created new: a temporary file of the writer's own (O_CREAT|O_EXCL), then
a rename that replaces the name, never what a link at that name points to
(a whole file, `write_atomic`; a streamed one, a client's output, is renamed
into place before its first byte, `open_binary`). An appended file (results.csv,
a log) is created the same way when it is new, else opened with O_NOFOLLOW
and must be a regular file with one name: a hard link made to it from
elsewhere is refused (`UnsafePath`), never appended to. Every folder between
the `root` given (the run folder) and the file is opened one level at a time
without following links, so a link planted inside a run folder (during the
run, too) is refused instead of written through. A run folder a step holds
(`hold`: from its creation, and from each step's start, to the step's end)
is written through its descriptor, and a write stops (`UnsafePath`) once
its name no longer leads to it (moved, or swapped for a link mid-run):
nothing is written elsewhere. A name that comes from a run folder or a
manifest is checked (`part`) before it becomes a path.

Reading takes only regular files (no FIFO, no device, no link), at most
MAX_BYTES, and JSON nested at most MAX_DEPTH deep; every failure is one
`RecordError` that names the file and what is wrong.
"""
from __future__ import annotations

import errno
import io
import json
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any

MAX_BYTES = 64 * 1024 * 1024      # the most the lab reads of one file of a run or its cache
MAX_DEPTH = 100                   # JSON nesting the lab reads (its own files nest < 10 deep)
# Room kept in a run folder while the run lives: on a full disk it is given up
# so that the manifest can still record what happened (write_atomic, spare=True).
RESERVE = ".lab-reserve"
RESERVE_BYTES = 128 * 1024


class RecordError(ValueError):
    """A run folder's file that cannot be read as this lab's record."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path, self.problem = Path(path), problem
        super().__init__(f"{path}: {problem}")


class UnsafePath(RecordError):
    """A write refused: it would go through a link, outside the run folder, or
    to a name no lab file has."""


# --------------------------------------------------------------------------- names

def part(name: str, where: Path | str = "") -> str:
    """`name` (read from a run folder or a manifest) as one path component:
    UnsafePath when it is empty, '.', '..', or holds a separator or a NUL."""
    if name in ("", ".", "..") or "/" in name or "\0" in name or "\\" in name:
        raise UnsafePath(where or name, f"{name!r} cannot be a file or folder name of a run "
                                        "(empty, '.', '..', or a path): refused")
    return name


def _relative(path: Path, root: Path) -> list[str]:
    try:
        rel = path.relative_to(root)
    except ValueError:
        raise UnsafePath(path, f"is outside {root}: the lab writes only inside it") from None
    parts = list(rel.parts)
    if not parts:
        raise UnsafePath(path, "is the folder itself, not a file in it")
    for p in parts:
        part(p, path)
    return parts


def _refusal(path: Path, e: OSError, what: str) -> OSError | UnsafePath:
    """The error a refused open becomes: UnsafePath for a link, a name that is
    not a folder or not a regular file; other errors (a full disk) as they are."""
    if e.errno in (errno.ELOOP, errno.EMLINK) or os.path.islink(path):
        return UnsafePath(path, f"is a link: the lab never writes through one ({what} refused)")
    if e.errno == errno.ENOTDIR:
        return UnsafePath(path, f"is not a folder ({what} refused)")
    if e.errno == errno.ENXIO:
        return UnsafePath(path, f"is not a regular file ({what} refused)")
    return e


# --------------------------------------------------------------------------- held folders

# A run folder this process holds: its descriptor and what it is (device, inode).
_held: dict[Path, tuple[int, int, int]] = {}


def hold(folder: Path) -> None:
    """Hold the run folder `folder` (not a link) for the rest of this process:
    every later write inside it goes through this descriptor, and stops with
    UnsafePath once the name `folder` no longer leads to it."""
    key = Path(os.path.abspath(folder))
    if key in _held:
        return
    try:
        fd = os.open(key, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise RecordError(key, "missing: no such run folder") from None
    except OSError as e:
        raise _refusal(key, e, "holding the run folder") from None
    st = os.fstat(fd)
    _held[key] = (fd, st.st_dev, st.st_ino)


def release_hold(folder: Path) -> None:
    """Let a held folder go (its descriptor closed)."""
    fd, _, _ = _held.pop(Path(os.path.abspath(folder)), (-1, 0, 0))
    if fd >= 0:
        os.close(fd)


def _start(root: Path) -> tuple[int, Path, list[str]]:
    """Where a walk down to `root` begins: a held folder's descriptor (a
    copy) and the parts from it to root, once its name is checked to still
    lead to it; else root itself, opened as it is named."""
    here = Path(os.path.abspath(root))
    for folder, (fd, dev, ino) in _held.items():
        if here != folder and folder not in here.parents:
            continue
        try:
            st = os.lstat(folder)
            same = stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) == (dev, ino)
        except OSError:
            same = False
        if not same:
            raise UnsafePath(folder, "is no longer the run folder the lab made (moved, "
                                     "removed or swapped for a link during the run): the "
                                     "lab stopped rather than write anywhere else")
        return os.dup(fd), folder, [part(p, root) for p in here.relative_to(folder).parts]
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), root, []


def _dir_fd(root: Path, parts: list[str], create: bool) -> int:
    """An open descriptor of root/parts..., each level opened without
    following a link (made when `create`); from a held run folder's
    descriptor when root is (inside) one."""
    fd, here, above = _start(root)
    try:
        for p in above + parts:
            here = here / p
            if create:
                try:
                    os.mkdir(p, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                nxt = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                              dir_fd=fd)
            except OSError as e:
                raise _refusal(here, e, "a folder on the way") from None
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def make_dirs(path: Path, root: Path | None = None) -> Path:
    """path (and the folders between root and it) made, none of them a link."""
    parts = _relative(path, root) if root is not None else []
    if root is None:
        root = path.parent
        parts = [part(path.name, path)]
    os.close(_dir_fd(root, parts, create=True))
    return path


# --------------------------------------------------------------------------- writing

def reserve(folder: Path) -> None:
    """Keep RESERVE_BYTES in `folder` (at most half the free space) for the
    manifest's last words on a full disk (best effort: none when there is no
    room even for that)."""
    try:
        st = os.statvfs(folder)
        size = min(RESERVE_BYTES, st.f_bavail * st.f_frsize // 2) // 4096 * 4096
        if size >= 8192:
            write_atomic(folder / RESERVE, bytes(size))
    except OSError:
        pass


_last_words: ContextVar[bool] = ContextVar("last_words", default=False)


@contextmanager
def last_words() -> Iterator[None]:
    """Within: a write that meets a full disk gives the folder's reserve up and
    tries once more (what a failing step records of its end)."""
    token = _last_words.set(True)
    try:
        yield
    finally:
        _last_words.reset(token)


def release(folder: Path) -> bool:
    """Give the reserve up; True when there was one."""
    try:
        os.unlink(folder / RESERVE)
        return True
    except OSError:
        return False


def write_atomic(path: Path, text: str | bytes | Iterable[str], root: Path | None = None,
                 spare: bool = False) -> Path:
    """`path` written whole or not at all: a temporary file of this writer's
    own (concurrent writers never share one), then a rename over the name (a
    link there is replaced, never followed). The folders from `root` (the run
    folder; default: the file's own folder) down to it are made as needed and
    must not be links. `spare`: on a full disk, the folder's RESERVE is given
    up and the write tried once more. `text` may be chunks of text, written as
    they come (a large output is never held whole); then no second try."""
    try:
        return _write_atomic(path, text, root)
    except OSError as e:
        if not ((spare or _last_words.get()) and e.errno == errno.ENOSPC
                and isinstance(text, (str, bytes)) and release(path.parent)):
            raise
        return _write_atomic(path, text, root)


def _write_atomic(path: Path, text: str | bytes | Iterable[str], root: Path | None) -> Path:
    root = path.parent if root is None else root
    parts = _relative(path, root)
    data = text.encode("utf-8") if isinstance(text, str) else text
    dfd = _dir_fd(root, parts[:-1], create=True)
    try:
        name = parts[-1]
        tmp = f".{name[:60]}.{os.urandom(6).hex()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644, dir_fd=dfd)
        try:
            with open(fd, "wb") as f:
                if isinstance(data, bytes):
                    f.write(data)
                else:
                    for chunk in data:
                        f.write(chunk.encode("utf-8"))
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            raise
    finally:
        os.close(dfd)
    return path


def write_json(path: Path, data: Any, root: Path | None = None, spare: bool = False) -> None:
    """JSON, written atomically."""
    write_atomic(path, json.dumps(data, indent=2, default=str) + "\n", root, spare)


def _create(dfd: int, name: str) -> int:
    """A new file at `name` in the folder `dfd`: made under a private name
    (O_EXCL) and renamed into place, so whatever was at `name` (a link, hard
    or symbolic) is replaced, never written through."""
    tmp = f".{name[:60]}.{os.urandom(6).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o644, dir_fd=dfd)
    try:
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
        raise
    return fd


def _append(dfd: int, name: str, path: Path) -> int:
    """`name` opened to append: created new (O_EXCL) when missing, else only a
    regular file with one name (not a link, not hard-linked from elsewhere)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        return os.open(name, flags | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=dfd)
    except FileExistsError:
        pass
    try:
        fd = os.open(name, flags, dir_fd=dfd)
    except OSError as e:
        raise _refusal(path, e, "appending") from None
    st = os.fstat(fd)
    problem = "is not a regular file" if not stat.S_ISREG(st.st_mode) else \
        f"has {st.st_nlink} names (a hard link made to it from elsewhere)" \
        if st.st_nlink != 1 else ""
    if problem:
        os.close(fd)
        raise UnsafePath(path, f"{problem}: the lab never writes through one (appending "
                               "refused)")
    return fd


def open_fd(path: Path, root: Path | None = None, append: bool = False) -> int:
    """`path` opened for writing, as a descriptor: a new file (`_create`: a
    link at its name, symbolic or hard, is replaced), or, with `append`, the
    lab's own file appended to (`_append`: created new when missing); the
    folders from `root` down made as needed, none a link."""
    root = path.parent if root is None else root
    parts = _relative(path, root)
    dfd = _dir_fd(root, parts[:-1], create=True)
    try:
        return _append(dfd, parts[-1], path) if append else _create(dfd, parts[-1])
    finally:
        os.close(dfd)


def open_binary(path: Path, root: Path | None = None, append: bool = False) -> IO[bytes]:
    """open_fd as a file object (what a child's stdout or stderr is given)."""
    return open(open_fd(path, root, append), "ab" if append else "wb")


def open_text(path: Path, root: Path | None = None, append: bool = False) -> IO[str]:
    """open_binary as UTF-8 text (newline='' for csv)."""
    return io.TextIOWrapper(open_binary(path, root, append), encoding="utf-8", newline="")


def rename(path: Path, new_name: str) -> Path:
    """A file the lab wrote renamed within its folder (a client's output kept
    aside), through the held run folder's descriptor like every write."""
    dfd = _dir_fd(path.parent, [], create=False)
    try:
        os.rename(part(path.name, path), part(new_name, path), src_dir_fd=dfd, dst_dir_fd=dfd)
    finally:
        os.close(dfd)
    return path.with_name(new_name)


def copy_into(source: Path, path: Path, root: Path | None = None) -> Path:
    """A file the lab made elsewhere (a private temporary folder: gnuplot's
    output) written to `path` as write_atomic does."""
    return write_atomic(path, read_bytes(source), root)


# --------------------------------------------------------------------------- reading

def read_bytes(path: Path, limit: int = MAX_BYTES) -> bytes:
    """A regular file's bytes (no link, FIFO or device; at most `limit`), or
    RecordError saying why not."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise RecordError(path, "missing") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise RecordError(path, "is a link: the lab reads only regular files of a run"
                              ) from None
        raise RecordError(path, f"cannot be read ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise RecordError(path, "is a folder, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise RecordError(path, "is not a regular file (a FIFO, device or socket): "
                                    "not read")
        if st.st_size > limit:
            raise RecordError(path, f"is {st.st_size} bytes, more than the {limit} the lab "
                                    "reads of one file")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise RecordError(path, f"grew past the {limit} bytes the lab reads of one file")
        return b"".join(chunks)
    except OSError as e:
        raise RecordError(path, f"cannot be read ({e.strerror or e})") from None
    finally:
        os.close(fd)


def read_text(path: Path, limit: int = MAX_BYTES) -> str:
    """read_bytes as UTF-8 text."""
    raw = read_bytes(path, limit)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RecordError(path, f"is not UTF-8 text (binary or corrupt at byte {e.start})"
                          ) from None


def depth(data: Any) -> int:
    """How deep lists and objects nest in `data` (0: a scalar), without recursion."""
    deepest, todo = 0, [(data, 1)]
    while todo:
        node, level = todo.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                return level
            todo.extend((x, level + 1) for x in node)
    return deepest


def parse_json(text: str, path: Path | str) -> Any:
    """JSON text as the lab reads it (nesting and number limits), or RecordError."""
    if not text.strip():
        raise RecordError(path, "is empty (the run was stopped while writing it?)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise RecordError(path, f"is not valid JSON (line {e.lineno}, column {e.colno}: "
                                f"{e.msg}): truncated or corrupt") from None
    except RecursionError:
        raise RecordError(path, f"nests deeper than the {MAX_DEPTH} levels the lab reads"
                          ) from None
    except ValueError as e:             # int's digit limit: a number thousands of digits long
        raise RecordError(path, f"holds a number the lab does not read ({e})") from None
    if depth(data) > MAX_DEPTH:
        raise RecordError(path, f"nests deeper than the {MAX_DEPTH} levels the lab reads")
    return data


def read_json(path: Path) -> Any:
    """A JSON file, or RecordError saying why it is not one."""
    raw = read_bytes(path)
    if not raw.strip():
        raise RecordError(path, "is empty (the run was stopped while writing it?)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RecordError(path, f"is not UTF-8 text (binary or corrupt at byte {e.start})"
                          ) from None
    return parse_json(text, path)
