"""TOPOLOGY ssh, what goes to a host and where it is there: the checkout's
lab/, client/ and servers/ folders and the parts of the lab cache a server
start reads, copied with rsync into REMOTE_DIR; this host's paths and
environment rewritten to that copy."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from lab.setup import paths
from lab.host import procs
from lab.setup.params import ConfigError, Params
from lab.measure.topologies.ssh.session import SshLink, Remote, key, last_line
from lab.setup.servers import LAB_VARIABLES, Server, artifact_path, found_here, lookup

ROOT = paths.ROOT
SHIPPED = ("lab", "servers", "client")      # what of the checkout goes to the server host
# Tools the lab only builds with, on this host: the server host gets the builds.
BUILD_TOOLS = {"mvn", "javac", "debootstrap", "gprbuild"}
# Besides the lab's own variables, what a remote start is given of this environment.
PASSED = ("JAVA_OPTS", "ADA_TOOLCHAIN")


class PathMap:
    """This host's paths, rewritten to where the same files are there: the
    checkout, the lab cache, server folders from LAB_SERVER_PATH."""

    def __init__(self, pairs: Iterable[tuple[Path | str, str]]) -> None:
        self.pairs = sorted(((str(a), b) for a, b in pairs), key=lambda p: -len(p[0]))
        # (?:...): the look-ahead (a whole path component, not a sibling that
        # shares the prefix) applies to every alternative, not only the last
        self.pattern = re.compile("(?:" + "|".join(re.escape(a) for a, _ in self.pairs)
                                  + r")(?![A-Za-z0-9._-])") if self.pairs else None
        self.to = dict(self.pairs)

    def __call__(self, text: str) -> str:
        if self.pattern is None:
            return text
        return self.pattern.sub(lambda m: self.to[m.group(0)], text)


def extra_server_dirs() -> list[Path]:
    """LAB_SERVER_PATH folders (test doubles, a user's own servers)."""
    return paths.server_path()


def path_map(remote: Remote) -> PathMap:
    pairs: list[tuple[Path | str, str]] = [(ROOT, remote.root), (paths.cache_dir(), remote.cache)]
    for d in extra_server_dirs():
        if not d.is_relative_to(ROOT):
            pairs.append((d, f"{remote.base}/extra/{key(str(d))}"))
    return PathMap(pairs)


def remote_env(env: dict[str, str], mapped: PathMap, passed: Iterable[str] = ()
               ) -> dict[str, str]:
    """What a remote command gets of `env`: the lab's own variables, those the
    lab set or changed, JAVA_OPTS, ADA_TOOLCHAIN and `passed` (the servers'
    manifest env); paths rewritten. Not this shell's other variables (PATH,
    HOME are the host's)."""
    names = {*LAB_VARIABLES, procs.MARKER, *PASSED, *passed}
    keep = {k: v for k, v in env.items()
            if (k in names or os.environ.get(k) != v)
            and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)}
    keep.pop("LAB_SCRATCH", None)              # made there, per start
    return {k: mapped(v) for k, v in keep.items()}


def env_words(env: dict[str, str]) -> str:
    return " ".join(shlex.quote(f"{k}={v}") for k, v in sorted(env.items()))


def chosen_servers(params: Params) -> list[Server]:
    found = found_here(ROOT)
    return [lookup(found, n) for n in params.servers]


def client_tool(params: Params) -> Path | None:
    """A client tool the lab built into its cache (vegeta): shipped, not needed there."""
    from lab.measure.clients import clients
    binary = getattr(clients()[params.client](), "binary", None)
    if isinstance(binary, Path) and binary.is_relative_to(paths.cache_dir()):
        return binary
    return None


def cache_parts(server: Server) -> set[str]:
    """Top folders of the lab cache a start of `server` reads: its build
    artifact's, and those of the cache paths the artifact names (the Ada
    servers' stamp names their binary inside the Debian 11 root)."""
    cache = paths.cache_dir()
    values = {"port": "0", "workers": "0", "backlog": "0", "bind": "", "root": str(ROOT),
              "cache": str(cache)}
    art = artifact_path(server, values)
    if art is None or not art.is_relative_to(cache) or not art.is_file():
        return set()
    parts = {art.relative_to(cache).parts[0]}
    if art.stat().st_size < 65536:
        for text in re.findall(r"/[^\s'\"=:]+", art.read_text(errors="replace")):
            p = Path(text)
            if p.is_relative_to(cache) and p != cache:
                parts.add(p.relative_to(cache).parts[0])
    return parts


def rsync(link: SshLink, sources: list[str], cwd: Path, there: str, extra: Iterable[str] = ()
          ) -> None:
    """rsync -a --delete of `sources` (relative to cwd, kept relative) into `there`."""
    made = link.run(f"mkdir -p {shlex.quote(there)}")
    if made.returncode != 0:
        raise ConfigError(f"{link.dest}: cannot make {there}: {last_line(made.stderr)}")
    argv = ["rsync", "-aR", "--delete", "--exclude=__pycache__",
            "--exclude=.mypy_cache", "--exclude=.pytest_cache", *extra,
            "-e", link.rsync_shell(), *sources, f"{link.dest}:{there}/"]
    out = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise ConfigError(f"{link.dest}: copying {', '.join(sources)} failed: "
                          f"{last_line(out.stderr)}")


def ship_to(params: Params, link: SshLink, base: str, to_server: bool, servers: list[Server],
            dest: str) -> list[str]:
    """Copy what runs on this host (rsync: a second run copies only changes)."""
    role = "SERVER_HOST" if to_server else "CLIENT_HOST"
    root = f"{base}/root"
    what = ["lab"]
    if to_server:
        what = list(SHIPPED)
        for d in extra_server_dirs():
            if d.is_relative_to(ROOT):
                what.append(str(d.relative_to(ROOT)))
    rsync(link, [f"./{w}" for w in what], ROOT, root)
    if to_server:
        for d in extra_server_dirs():
            if not d.is_relative_to(ROOT):
                rsync(link, ["./"], d, f"{base}/extra/{key(str(d))}")
    cache = paths.cache_dir()
    parts = sorted(set().union(*(cache_parts(s) for s in servers))) if to_server else []
    tool = client_tool(params)
    if tool is not None and (dest in params.client_hosts):
        parts.append(str(tool.parent.relative_to(cache)))
    if parts:
        print(f"topology: copying {', '.join(parts)} of the lab cache to {dest} "
              "(only changes after the first time)", file=sys.stderr, flush=True)
        rsync(link, [f"./{p}" for p in parts], cache, f"{base}/cache", ["-H", "--numeric-ids"])
    for p in parts:                 # a Debian root is entered with chroot: it must work there
        if (cache / p / "etc" / "os-release").exists():
            tried = link.run(f"chroot {shlex.quote(f'{base}/cache/{p}')} /bin/true", timeout=60)
            if tried.returncode != 0:
                raise ConfigError(f"{role}={dest}: the servers' Debian root ({p}) is entered "
                                  f"with chroot, which failed there "
                                  f"({last_line(tried.stderr) or tried.returncode}): log in "
                                  "as root (SERVER_HOST=root@...) or use servers without it")
    return what + [f"cache/{p}" for p in parts]
