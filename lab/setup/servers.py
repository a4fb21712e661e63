"""Servers, discovered from their `server.toml` manifests.

A server is one folder under servers/ with its code and a manifest; the lab
knows nothing else about it (see servers/README.md for the format). A
manifest may also declare variants, `[variants.<v>]`: each is a server of its
own, named `<server>.<v>`, that inherits the manifest and overrides a few keys.
"""
from __future__ import annotations

import errno
import os
import re
import stat
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from lab.setup.names import ENTRIES as ENTRIES
from lab.setup.names import WORKER_COUNTS as WORKER_COUNTS
from lab.setup.names import why_not_a_server_name

SERVER_TOML = "server.toml"
SKIP_DIRS = {"target", "obj", "bin", "__pycache__", ".cache"}
ROLES = ("server", "ceiling")
# What a [variants.<v>] table may set; everything else is inherited.
VARIANT_KEYS = {"summary", "framework", "version", "env", "run", "build", "workers"}
VARIANT_TABLE_KEYS = {"run": {"command", "dir", "ready_timeout", "wrap"},
                      "build": {"command", "dir", "artifact", "inputs"},
                      "workers": {"default", "meaning", "fixed", "beyond"}}
# The lab sets these for every start; a manifest's env must not shadow them.
LAB_VARIABLES = {"PORT", "WORKERS", "BIND", "BACKLOG", "LAB_ROOT", "LAB_CACHE", "LAB_SCRATCH"}
# Variables a manifest may not set: the lab's own tools (taskset, the client)
# are found on PATH and run with the server's environment, and a preloaded
# library would change what is measured (or run code in the lab's processes).
REFUSED_VARIABLES = {"PATH"}
REFUSED_PREFIXES = ("LD_",)
MAX_MANIFEST_BYTES = 1024 * 1024
# [run] wrap: who puts a tool's words (LAB_WRAPPER: make cost's valgrind)
# before the server's executable. Absent: the lab, when the run command's
# executable is a native binary (lab.measure.launch.wrapped_by), else the
# command itself.
WRAPS = {"lab": "the lab puts them before the whole run command",
         "command": "the run command puts LAB_WRAPPER before its executable itself"}



class ServerSpecError(ValueError):
    """A SERVER word whose @N or #K is out of range: str() says which word and
    rule (`part`: "@" or "#"); `hint` is an example of the right form."""

    def __init__(self, message: str, part: str, hint: str) -> None:
        super().__init__(message)
        self.part = part
        self.hint = hint


@dataclass(frozen=True)
class ServerSpec:
    """A server as the lab names it from the command line to the report,
    NAME[@N][#K]: the discovered server `name` (a variant's included:
    jersey.jetty is variant `jetty` of `jersey`) started with N `workers`
    (the knob NAME@N sets, whatever WORKERS says), as the K-th entry (`alias`,
    K 2-9) of one run: the same server and build again under its own name
    (make noise's A/A). The one parser of the form; its ranges are checked
    here only. A name read back from a run parses too (lab.setup.names.RECORDED
    allows no other)."""
    name: str
    workers: int | None = None
    alias: int | None = None

    @classmethod
    def parse(cls, word: str) -> ServerSpec:
        """'aws@016#2' -> ServerSpec('aws', 16, 2); ServerSpecError when N or K is
        out of range or not written in digits."""
        plain, hash_, entry = word.rpartition("#")
        if hash_:
            if not (re.fullmatch(r"[0-9]", entry) and int(entry) in ENTRIES):
                raise ServerSpecError(f"{word}: after # comes an entry number from "
                                      f"{ENTRIES[0]} to {ENTRIES[-1]}", "#",
                                      "the same server again, e.g. aws#2")
            inner = cls.parse(plain)
            if inner.alias is not None:
                raise ServerSpecError(f"{word}: one #K at most", "#",
                                      "the same server again, e.g. aws#2")
            return cls(inner.name, inner.workers, int(entry))
        name, at, count = word.partition("@")
        if not at:
            return cls(word)
        if not (re.fullmatch(r"[0-9]+", count) and int(count) in WORKER_COUNTS):
            raise ServerSpecError(f"{word}: after @ comes a worker count from "
                                  f"{WORKER_COUNTS[0]} to {WORKER_COUNTS[-1]}", "@",
                                  "e.g. aws@16")
        return cls(name, int(count))

    @property
    def variant(self) -> str | None:
        """The variant's own part of the name (jersey.jetty -> jetty), None
        when the server is no variant."""
        return self.name.partition(".")[2] or None

    @property
    def family(self) -> str:
        """The server whose manifest this is: a variant's base (jersey.jetty ->
        jersey), else the name itself."""
        return self.name.partition(".")[0]

    @property
    def unaliased(self) -> str:
        """NAME or NAME@N: the entry an alias repeats."""
        return self.name if self.workers is None else f"{self.name}@{self.workers}"

    def __str__(self) -> str:
        """The word written plainly (aws@016 -> aws@16)."""
        return self.unaliased + ("" if self.alias is None else f"#{self.alias}")


class ManifestError(ValueError):
    """A manifest that does not follow servers/README.md."""


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]
    dir: Path


@dataclass(frozen=True)
class Server:
    name: str
    folder: Path
    language: str
    framework: str
    version: str
    role: str
    summary: str
    workers_default: int | None        # None: as shipped (the lab passes no WORKERS)
    workers_meaning: str
    run: Command
    ready_timeout: float
    requires: dict[str, str] = field(default_factory=dict)
    setup: Command | None = None
    build: Command | None = None
    artifact: str | None = None
    inputs: tuple[str, ...] = ()
    facts: Command | None = None
    workers_fixed: int | None = None     # NAME@N in SERVER: this start's workers, whatever WORKERS says
    has_workers: bool = True             # False: [workers] fixed = true, WORKERS has no effect
    env: dict[str, str] = field(default_factory=dict)   # extra variables for run/build/facts
    base: str | None = None              # a variant: the server it derives from ...
    variant: str | None = None           # ... and its own part of the name (base.variant)
    workers_beyond: str = ""             # [workers] beyond: what it does with connections
                                         # past its workers (the failures warning says it)
    alias_of: str | None = None          # NAME#K in SERVER: the same server and build, a second
                                         # entry of one run (make noise's A/A)
    docker: bool = True                  # False (`docker = false`): no image, no compose
                                         # service; RUNTIME=docker cannot run it
    wrap: str | None = None              # [run] wrap (WRAPS): who puts LAB_WRAPPER before
                                         # the executable; None: decided by the executable

    def workers(self, asked: int | None) -> int | None:
        """The worker count a start is given: NAME@N, else WORKERS, else the
        manifest's default; None: none, the library's own default (as shipped)."""
        return self.workers_fixed or asked or self.workers_default

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "folder": str(self.folder), "language": self.language,
                "framework": self.framework, "version": self.version, "role": self.role,
                "summary": self.summary, "workers_default": self.workers_default,
                "workers_meaning": self.workers_meaning, "run": list(self.run.argv),
                "env": dict(self.env),
                "variant": (None if self.variant is None
                            else {"base": self.base, "name": self.variant}),
                **({"workers_beyond": self.workers_beyond} if self.workers_beyond else {}),
                **({"wrap": self.wrap} if self.wrap else {}),
                **({"alias_of": self.alias_of} if self.alias_of else {})}


def _table(data: dict[str, object], key: str, path: Path, required: bool) -> dict[str, object]:
    value = data.get(key)
    if value is None:
        if required:
            raise ManifestError(f"{path}: missing [{key}] table")
        return {}
    if not isinstance(value, dict):
        raise ManifestError(f"{path}: [{key}] must be a table")
    return value


def _str(data: dict[str, object], key: str, path: Path, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str) or not value:
        raise ManifestError(f"{path}: '{key}' must be a non-empty string")
    return value


def _command(table: dict[str, object], folder: Path, path: Path, what: str) -> Command:
    argv = table.get("command")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
        raise ManifestError(f"{path}: [{what}] command must be a non-empty list of strings")
    rel = table.get("dir", ".")
    if not isinstance(rel, str):
        raise ManifestError(f"{path}: [{what}] dir must be a string")
    return Command(tuple(argv), (folder / rel).resolve())


def _env(data: dict[str, object], path: Path, where: str) -> dict[str, str]:
    """An `env` table: variable names to string values, none of the lab's own."""
    table = _table(data, "env", path, required=False)
    for k, v in table.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
            raise ManifestError(f"{path}: {where}env: '{k}' is not an environment variable name")
        if k in LAB_VARIABLES:
            raise ManifestError(f"{path}: {where}env: {k} is set by the lab for every start; "
                                "a manifest cannot set it")
        if k in REFUSED_VARIABLES or k.startswith(REFUSED_PREFIXES):
            raise ManifestError(f"{path}: {where}env: {k} may not be set by a manifest (the "
                                "lab's own tools run with it, and it changes what runs); "
                                "set it in the run command's script instead")
        if not isinstance(v, str):
            raise ManifestError(f"{path}: {where}env: {k} must be a string")
    return {k: str(v) for k, v in table.items()}


def read_text(path: Path) -> str:
    """A manifest's text: a regular file only (no folder, FIFO or device; never
    waits), at most MAX_MANIFEST_BYTES, UTF-8; else ManifestError saying why."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise ManifestError(f"{path}: cannot be read ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ManifestError(f"{path}: is a folder, not a manifest file")
        if not stat.S_ISREG(st.st_mode):
            raise ManifestError(f"{path}: is not a regular file (a FIFO, device or socket)")
        if st.st_size > MAX_MANIFEST_BYTES:
            raise ManifestError(f"{path}: is {st.st_size} bytes, more than a manifest "
                                f"({MAX_MANIFEST_BYTES})")
        raw = os.read(fd, MAX_MANIFEST_BYTES + 1)
    except OSError as e:
        what = "is a folder" if e.errno == errno.EISDIR else f"cannot be read ({e.strerror or e})"
        raise ManifestError(f"{path}: {what}") from None
    finally:
        os.close(fd)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ManifestError(f"{path}: is not UTF-8 text (binary or corrupt at byte "
                            f"{e.start})") from None


def _read(path: Path) -> dict[str, object]:
    try:
        return tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as e:
        raise ManifestError(f"{path}: not valid TOML: {e}") from e
    except RecursionError:
        raise ManifestError(f"{path}: not valid TOML: nested too deep") from None


def load(path: Path) -> Server:
    """The manifest's own server (its variants: load_all)."""
    return _parse(_read(path), path)


def load_all(path: Path) -> list[Server]:
    """The manifest's server, then one server per [variants.<v>] table."""
    data = _read(path)
    base = _parse(data, path)
    variants = _table(data, "variants", path, required=False)
    return [base] + [_variant(data, base, vname, vdata, path)
                     for vname, vdata in variants.items()]


def _variant(data: dict[str, object], base: Server, vname: str, vdata: object,
             path: Path) -> Server:
    """Variant vname: the base manifest's data with the variant's keys laid over
    it (tables key by key, so [variants.v.run] may change only the command),
    parsed and checked like any manifest."""
    where = f"[variants.{vname}]"
    if not re.fullmatch(r"[A-Za-z0-9_-]+", vname):
        why = ("a dot would make the name ambiguous" if "." in vname else
               "@ introduces a worker count in SERVER" if "@" in vname else
               "use letters, digits, - and _")
        raise ManifestError(f"{path}: variant name '{vname}' is not allowed: {why}")
    if not isinstance(vdata, dict):
        raise ManifestError(f"{path}: {where} must be a table")
    unknown = sorted(set(vdata) - VARIANT_KEYS)
    if unknown:
        raise ManifestError(f"{path}: {where}: unknown key(s) {', '.join(unknown)}; a variant "
                            f"may set {', '.join(sorted(VARIANT_KEYS))}")
    merged = {k: v for k, v in data.items() if k != "variants"}
    for key in ("summary", "framework", "version"):
        if key in vdata:
            merged[key] = vdata[key]
    for key, allowed in VARIANT_TABLE_KEYS.items():
        if key not in vdata:
            continue
        table = _table(vdata, key, path, required=False)
        extra = sorted(set(table) - allowed)
        if extra:
            raise ManifestError(f"{path}: {where}.{key}: unknown key(s) {', '.join(extra)}; "
                                f"allowed: {', '.join(sorted(allowed))}")
        merged[key] = {**_table(data, key, path, required=False), **table}
    if "build" in vdata:
        # Sharing the base's artifact would let one build pass for the other
        # (is_built compares only times), so a rebuilt variant names its own.
        artifact = _table(vdata, "build", path, required=False).get("artifact")
        if not isinstance(artifact, str) or artifact == base.artifact:
            raise ManifestError(f"{path}: {where}.build must name its own artifact "
                                f"(not the base's {base.artifact})")
    merged["env"] = {**base.env, **_env(vdata, path, f"{where}.")}
    try:
        server = _parse(merged, path, name=f"{base.name}.{vname}")
    except ManifestError as e:      # say which variant the inherited check failed in
        raise ManifestError(f"{path}: {where}: {str(e).removeprefix(f'{path}: ')}") from None
    return replace(server, base=base.name, variant=vname)


def _parse(data: dict[str, object], path: Path, name: str | None = None) -> Server:
    """One server from manifest data; name is given for a variant (else the folder's)."""
    folder = path.parent.resolve()
    own = _str(data, "name", path)
    if own != folder.name:
        raise ManifestError(f"{path}: name '{own}' must equal its folder name '{folder.name}'")
    if "." in own or "@" in own:
        raise ManifestError(f"{path}: name '{own}' may contain neither '.' (it separates a "
                            "variant) nor '@' (it introduces a worker count)")
    why = why_not_a_server_name(own)
    if why:
        raise ManifestError(f"{path}: {why}")
    role = _str(data, "role", path, "server")
    if role not in ROLES:
        raise ManifestError(f"{path}: role '{role}' must be one of {', '.join(ROLES)}")

    run = _table(data, "run", path, required=True)
    workers = _table(data, "workers", path, required=False)   # absent: as shipped
    default = workers.get("default")
    if default is not None and (not isinstance(default, int) or isinstance(default, bool)
                                or default < 1):
        raise ManifestError(f"{path}: [workers] default must be a positive integer (or "
                            "absent: the library's own default, as shipped)")
    fixed = workers.get("fixed", False)
    if not isinstance(fixed, bool):
        raise ManifestError(f"{path}: [workers] fixed must be true or false")
    run_dir = run.get("dir", ".")
    if isinstance(run_dir, str) and not (folder / run_dir).resolve().is_dir() and \
            not (folder / run_dir).resolve().is_relative_to(folder):
        raise ManifestError(f"{path}: [run] dir '{run_dir}' does not exist (only a folder "
                            "inside the server's, which its build may make, can be missing)")
    timeout = run.get("ready_timeout", 30)
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ManifestError(f"{path}: [run] ready_timeout must be a positive number")
    wrap = run.get("wrap")
    if wrap is not None and (not isinstance(wrap, str) or wrap not in WRAPS):
        raise ManifestError(f"{path}: [run] wrap must be " + " or ".join(
            f'"{k}" ({v})' for k, v in WRAPS.items()) + "; absent: the lab wraps a native "
            "binary, a script wraps itself")

    requires = _table(data, "requires", path, required=False)
    if not all(isinstance(v, str) for v in requires.values()):
        raise ManifestError(f"{path}: [requires] maps a command to a Debian package name")

    build_t = _table(data, "build", path, required=False)
    build = _command(build_t, folder, path, "build") if build_t else None
    artifact = build_t.get("artifact") if build_t else None
    inputs = build_t.get("inputs", ["."]) if build_t else []
    if build is not None and not isinstance(artifact, str):
        raise ManifestError(f"{path}: [build] needs an 'artifact' path")
    if not isinstance(inputs, list) or not all(isinstance(i, str) for i in inputs):
        raise ManifestError(f"{path}: [build] inputs must be a list of paths")

    docker = data.get("docker", True)
    if not isinstance(docker, bool):
        raise ManifestError(f"{path}: 'docker' must be true or false (false: the server has "
                            "no Dockerfile and no compose.yaml service)")

    setup_t = _table(data, "setup", path, required=False)
    facts_t = _table(data, "facts", path, required=False)
    return Server(
        name=name or own, folder=folder,
        language=_str(data, "language", path), framework=_str(data, "framework", path),
        version=_str(data, "version", path), role=role,
        summary=str(data.get("summary", "")),
        workers_default=default, workers_meaning=str(workers.get("meaning", "")),
        workers_beyond=str(workers.get("beyond", "")), has_workers=not fixed,
        run=_command(run, folder, path, "run"), ready_timeout=float(timeout),
        requires={str(k): str(v) for k, v in requires.items()},
        setup=_command(setup_t, folder, path, "setup") if setup_t else None,
        build=build, artifact=artifact if isinstance(artifact, str) else None,
        inputs=tuple(inputs),
        facts=_command(facts_t, folder, path, "facts") if facts_t else None,
        env=_env(data, path, ""), docker=docker,
        wrap=wrap if isinstance(wrap, str) else None,
    )


def manifests(root: Path, extra: str = "", skipped: list[str] | None = None) -> list[Path]:
    """Every manifest under root/servers and the folders of `extra` (a
    colon-separated LAB_SERVER_PATH), build outputs left out (each one left
    out is said in `skipped`, when given)."""
    tops = [root / "servers"] + [Path(p) for p in extra.split(":") if p]
    found = []
    for top in tops:
        for path in sorted(top.rglob(SERVER_TOML)):
            inside = SKIP_DIRS & set(path.relative_to(top).parts)
            if not inside:
                found.append(path)
            elif skipped is not None:
                skipped.append(f"{path}: skipped: a folder named {', '.join(sorted(inside))} "
                               f"is a build output ({', '.join(sorted(SKIP_DIRS))}); rename "
                               "the server's folder to use it")
    return found


class Discovered(dict[str, Server]):
    """The servers found, by name; and the manifests that could not be used
    (`broken`: folder name -> the one-line reason; `skipped`: notes)."""

    def __init__(self) -> None:
        super().__init__()
        self.broken: dict[str, str] = {}
        self.skipped: list[str] = []

    def why_unusable(self, spec: str) -> str | None:
        """Why a SERVER word names a server whose manifest cannot be used, or None."""
        try:
            return self.broken.get(ServerSpec.parse(spec).family)
        except ServerSpecError:     # a bad count: SERVER's own check says so
            return None


def add(found: dict[str, Server], path: Path, servers: list[Server]) -> None:
    """One manifest's servers (load_all) into found; a name used twice is an
    error (and none of the manifest's servers is added)."""
    for server in servers:
        if server.name in found:
            raise ManifestError(f"{path}: server name '{server.name}' is also used by "
                                f"{found[server.name].folder}")
    for server in servers:
        found[server.name] = server


def discover(root: Path, extra: str = "") -> Discovered:
    """Every server under root/servers (and the folders of `extra`, a
    colon-separated LAB_SERVER_PATH), variants included, by name; duplicates
    are an error."""
    found = Discovered()
    for path in manifests(root, extra, found.skipped):
        try:
            add(found, path, load_all(path))
        except ManifestError as e:          # this server unusable, never the others
            found.broken.setdefault(path.parent.name, str(e))
    return found


def found_here(root: Path) -> Discovered:
    """discover() over root/servers and LAB_SERVER_PATH's folders."""
    from lab.setup.paths import server_path
    return discover(root, ":".join(map(str, server_path())))


def outside(chosen: Iterable[str], found: Mapping[str, Server]) -> str:
    """The LAB_SERVER_PATH folders (colon-separated) that hold the chosen
    servers ("aws@16", "x#2" as SERVER names them): what a reproduce line must
    carry for a server outside the lab; "" when every one is the lab's own."""
    from lab.setup.paths import server_path
    folders, used = server_path(), []
    for spec in chosen:
        s = found.get(ServerSpec.parse(spec).name)
        where = s.folder.resolve() if s is not None else None
        for top in folders:
            if where is not None and where.is_relative_to(top) and top not in used:
                used.append(top)
    return ":".join(map(str, used))


def lookup(found: dict[str, Server], spec: str) -> Server:
    """The server a SERVER word names (ServerSpec): NAME, or NAME@N (that server
    with N workers, under the name NAME@N in results); either with #K: the same
    server and build again, as a separate entry under the name NAME#K (make
    noise). Bad counts raise ServerSpecError; an unknown NAME, KeyError."""
    word = ServerSpec.parse(spec)
    server = found[word.name]
    if word.workers is not None:
        server = replace(server, name=word.unaliased, workers_fixed=word.workers)
    return server if word.alias is None else replace(server, name=str(word),
                                                     alias_of=word.unaliased)


def expand(argv: tuple[str, ...], values: dict[str, str]) -> list[str]:
    """Fill {port} {workers} {root} {cache} in each token."""
    return [a.format(**values) for a in argv]


def artifact_path(server: Server, values: dict[str, str]) -> Path | None:
    if server.artifact is None:
        return None
    return (server.folder / server.artifact.format(**values)).resolve()


def newest_input(server: Server) -> float:
    """mtime of the newest file under the server's build inputs."""
    newest = 0.0
    for rel in server.inputs:
        top = (server.folder / rel).resolve()
        if top.is_file():
            newest = max(newest, top.stat().st_mtime)
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
            for f in filenames:
                newest = max(newest, os.stat(os.path.join(dirpath, f)).st_mtime)
    return newest


def is_built(server: Server, values: dict[str, str]) -> bool:
    """True when there is nothing to build or the artifact is newer than every input."""
    artifact = artifact_path(server, values)
    if artifact is None:
        return True
    return artifact.exists() and artifact.stat().st_mtime >= newest_input(server)
