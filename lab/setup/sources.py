"""Pinned upstream sources of the Ada servers' libraries (servers/ada/sources.toml).

    python3 -m lab.setup.sources fetch NAME... --into DIR [--stage DIR2]
                                                      check, then unpack each into DIR
                                                      (and copy it to DIR2/NAME.tar.gz)
    python3 -m lab.setup.sources check [NAME...]            check only
    python3 -m lab.setup.sources facts NAME...              key=value lines for a run manifest

Where an archive comes from: with ADA_SOURCES=DIR (relative: to the repository
root), the file named `archive` in that folder; without it, the lab's cache
($LAB_CACHE/sources/), where it is downloaded from `url` once. An archive that
passed its check is kept in the cache, whichever way it came (a copy of the
mirror's, or the download), so that later commands without ADA_SOURCES work
offline; one that failed is never kept.

What is checked: a digest of the archive's content, not of the archive file,
so that a mirror's `git archive` and the upstream host's archive of the same
commit pass the same check (their gzip bytes differ). The digest is sha256 over
every member below the archive's single top folder, sorted by path: for a file
its path, executable bit and content sha256; for a symbolic link its path and
target. Paths listed in `omit` are left out of the digest and not unpacked
(the Simple Components mirror leaves out sqlite3.c, which the HTTP server does
not use). Every archive is checked before any is unpacked; a missing archive or
a failed check exits 2 and names the archive.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tarfile
import tempfile
import tomllib
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from lab.setup.paths import ROOT, cache_dir

PINS = ROOT / "servers" / "ada" / "sources.toml"
STAMP = ".lab-sources"             # written last inside an unpacked tree


class SourceError(Exception):
    """A source that cannot be used: the message names the archive and what to do."""


@dataclass(frozen=True)
class Source:
    name: str
    url: str
    commit: str
    version: str
    license: str
    archive: str                   # the file name, in ADA_SOURCES or the cache
    content_sha256: str            # the check (see the module's docstring)
    archive_sha256: str            # the mirror's archive file, for the record
    omit: tuple[str, ...]

    @property
    def folder(self) -> str:
        """What it unpacks to: REPO-COMMIT, like an upstream archive."""
        return self.archive.removesuffix(".tar.gz")


def load(path: Path = PINS) -> dict[str, Source]:
    with path.open("rb") as f:
        data = tomllib.load(f)
    found: dict[str, Source] = {}
    for name, t in data.items():
        if not isinstance(t, dict):
            raise SourceError(f"{path}: {name} must be a table")
        try:
            omit = t.get("omit", [])
            found[name] = Source(
                name=name, url=str(t["url"]), commit=str(t["commit"]),
                version=str(t["version"]), license=str(t["license"]),
                archive=str(t["archive"]), content_sha256=str(t["content_sha256"]),
                archive_sha256=str(t["archive_sha256"]),
                omit=tuple(str(o) for o in omit))
        except KeyError as e:
            raise SourceError(f"{path}: [{name}] lacks {e.args[0]}") from e
    return found


def mirror(env: dict[str, str] | None = None) -> Path | None:
    """ADA_SOURCES as a folder (relative: to the repository root), or None."""
    text = (env if env is not None else dict(os.environ)).get("ADA_SOURCES", "").strip()
    return (ROOT / text).resolve() if text else None


def _members(tar: tarfile.TarFile, src: Source) -> list[tuple[str, tarfile.TarInfo]]:
    """(path below the top folder, member), refusing anything unsafe."""
    out = []
    tops = set()
    for m in tar.getmembers():
        p = PurePosixPath(m.name)
        if p.is_absolute() or ".." in p.parts or not p.parts:
            raise SourceError(f"{src.archive}: unsafe member path {m.name!r}")
        tops.add(p.parts[0])
        rel = "/".join(p.parts[1:])
        if m.isdir() or m.name == "pax_global_header" or not rel:
            continue
        if not (m.isfile() or m.issym()):
            raise SourceError(f"{src.archive}: member {m.name!r} is neither a file nor a link")
        if rel in src.omit:
            continue
        out.append((rel, m))
    tops.discard("pax_global_header")
    if len(tops) != 1:
        raise SourceError(f"{src.archive}: expected one top folder, found {sorted(tops)}")
    return sorted(out, key=lambda x: x[0])


def content_digest(archive: Path, src: Source) -> str:
    h = hashlib.sha256()
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for rel, m in _members(tar, src):
                if m.issym():
                    h.update(f"L {rel}\0{m.linkname}\0".encode())
                    continue
                f = tar.extractfile(m)
                if f is None:
                    raise SourceError(f"{src.archive}: cannot read {m.name!r}")
                data = hashlib.sha256(f.read()).hexdigest()
                h.update(f"F {rel}\0{'x' if m.mode & 0o111 else '-'}\0{data}\0".encode())
    except (tarfile.TarError, OSError, EOFError) as e:
        raise SourceError(f"{src.archive}: not a readable .tar.gz ({e})") from e
    return h.hexdigest()


def locate(src: Source, env: dict[str, str] | None = None) -> Path:
    """The archive's path: from ADA_SOURCES, else the cache (downloaded once)."""
    folder = mirror(env)
    if folder is not None:
        path = folder / src.archive
        if not path.is_file():
            raise SourceError(f"{src.archive}: not in ADA_SOURCES={folder}. Put the archive "
                              f"of {src.name} at commit {src.commit} there ({src.url})")
        return path
    cached = cached_path(src)
    if cached.is_file():
        return cached
    cached.parent.mkdir(parents=True, exist_ok=True)
    print(f"lab.setup.sources: downloading {src.url}", file=sys.stderr)
    part = cached                  # (none yet)
    try:
        fd, name = new_part(cached)
        part = Path(name)
        with urllib.request.urlopen(src.url, timeout=60) as r, os.fdopen(fd, "wb") as f:
            shutil.copyfileobj(r, f)
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        if part != cached:
            part.unlink(missing_ok=True)
        raise SourceError(
            f"{src.archive}: cannot download {src.url} ({e}). Offline? Put the archive "
            f"in a folder and set ADA_SOURCES to it, or copy it to {cached}") from e
    return part                    # kept under its own name once it passed its check


def new_part(cached: Path) -> tuple[int, str]:
    """A new file of this process's own beside `cached` (O_EXCL, a random
    name ending .part): never a name a link could be planted at first."""
    fd, name = tempfile.mkstemp(prefix=f".{cached.name}.", suffix=".part", dir=cached.parent)
    os.fchmod(fd, 0o644)           # an archive of the cache, as a copy would make it
    return fd, name


def is_part(path: Path, cached: Path) -> bool:
    """`path` is a download of `cached` made by new_part."""
    return path.parent == cached.parent and path.name.startswith(f".{cached.name}.") \
        and path.name.endswith(".part")


def cached_path(src: Source) -> Path:
    return cache_dir() / "sources" / src.archive


def keep(src: Source, checked: Path) -> Path:
    """An archive that passed its check, kept in the cache: a download is
    renamed into place; a mirror's archive is copied there (a temporary file,
    then a rename) unless the cache has one already, which is never
    overwritten. Returns where the archive is now. A cache that cannot be
    written only warns: the archive in hand is good."""
    cached = cached_path(src)
    if checked == cached:
        return cached
    try:
        if is_part(checked, cached):
            checked.rename(cached)
            return cached
        if cached.exists():
            return checked
        cached.parent.mkdir(parents=True, exist_ok=True)
        fd, name = new_part(cached)
        part = Path(name)
        try:
            with os.fdopen(fd, "wb") as out, checked.open("rb") as f:
                shutil.copyfileobj(f, out)
            part.rename(cached)
        finally:
            part.unlink(missing_ok=True)
        print(f"lab.setup.sources: {src.archive}: kept in {cached.parent} for later runs",
              file=sys.stderr)
    except OSError as e:
        print(f"lab.setup.sources: warning: {src.archive} not kept in the cache ({e}); later runs "
              "will need ADA_SOURCES or a download again", file=sys.stderr)
    return checked


def check(src: Source, env: dict[str, str] | None = None) -> Path:
    """The archive, checked and kept in the cache (SourceError when it fails:
    a failed download is deleted, a mirror's archive left as it is)."""
    path = locate(src, env)
    try:
        got = content_digest(path, src)
    except SourceError:
        if is_part(path, cached_path(src)):
            path.unlink(missing_ok=True)
        raise
    if got != src.content_sha256:
        if is_part(path, cached_path(src)):
            path.unlink(missing_ok=True)
        raise SourceError(f"{src.archive} ({path}): content digest {got} is not the pinned "
                          f"{src.content_sha256}: not {src.name} at commit {src.commit}")
    return keep(src, path)


def unpack(src: Source, archive: Path, into: Path) -> Path:
    """Unpack below `into` as REPO-COMMIT/ (skipping `omit`); a stamp marks it complete."""
    dest = into / src.folder
    stamp = dest / STAMP
    if stamp.is_file() and stamp.read_text().strip() == src.content_sha256:
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    part = into / (src.folder + ".part")
    if part.exists():
        shutil.rmtree(part)
    part.mkdir(parents=True)
    with tarfile.open(archive, "r:gz") as tar:
        for rel, m in _members(tar, src):
            target = part / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if m.issym():
                resolved = (target.parent / m.linkname).resolve()
                if not resolved.is_relative_to(part.resolve()):
                    raise SourceError(f"{src.archive}: link {rel} points outside the tree")
                target.symlink_to(m.linkname)
                continue
            f = tar.extractfile(m)
            assert f is not None
            with target.open("wb") as out:
                shutil.copyfileobj(f, out)
            target.chmod(0o755 if m.mode & 0o111 else 0o644)
    (part / STAMP).write_text(src.content_sha256 + "\n")
    part.rename(dest)
    return dest


def select(names: list[str]) -> list[Source]:
    known = load()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SourceError(f"unknown source {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[n] for n in names] if names else list(known.values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m lab.setup.sources")
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch")
    f.add_argument("names", nargs="+")
    f.add_argument("--into", required=True, type=Path)
    f.add_argument("--stage", type=Path, help="also copy each checked archive here as "
                   "NAME.tar.gz (a Docker build context takes them from there)")
    c = sub.add_parser("check")
    c.add_argument("names", nargs="*")
    fa = sub.add_parser("facts")
    fa.add_argument("names", nargs="+")
    args = ap.parse_args(argv)
    try:
        chosen = select(args.names)
        if args.cmd == "facts":
            for s in chosen:
                key = s.name.replace("-", "_")
                print(f"{key}_version={s.version}\n{key}_commit={s.commit}\n"
                      f"{key}_content_sha256={s.content_sha256}")
            return 0
        archives = [(s, check(s)) for s in chosen]        # every check before any unpack
        for s, path in archives:
            print(f"lab.setup.sources: {s.archive}: verified ({path})", file=sys.stderr)
        if args.cmd == "fetch":
            args.into.mkdir(parents=True, exist_ok=True)
            for s, path in archives:
                print(unpack(s, path, args.into))
                if args.stage is not None:
                    args.stage.mkdir(parents=True, exist_ok=True)
                    staged = args.stage / f"{s.name}.tar.gz"
                    if not staged.is_file() or staged.stat().st_size != path.stat().st_size:
                        shutil.copy2(path, staged)      # keeps the archive's mtime
    except SourceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
