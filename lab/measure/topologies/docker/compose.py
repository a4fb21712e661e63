"""compose.yaml as the lab reads it: its services, their build and profiles.

Python's standard library reads no YAML, so this reads the subset the lab's
own compose.yaml is written in: block mappings and lists by indentation,
plain and quoted scalars, flow lists (`[a, b]`), comments, anchors on a
mapping (`x-server: &server`) and merge keys (`<<: *server`). Anything else
(multi-line scalars, flow mappings, tags) is an error that names the line,
so the file cannot silently mean something else to the lab than to Compose.
The docker tests compare what this reads with `docker-compose config`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Union

from lab.setup.paths import ROOT

FILE = ROOT / "compose.yaml"

Value = Union[str, list["Value"], dict[str, "Value"]]


class ComposeFileError(ValueError):
    """compose.yaml uses YAML the lab does not read, or lacks what it needs."""


@dataclass(frozen=True)
class Line:
    number: int
    indent: int
    text: str


def _strip_comment(text: str) -> str:
    """The line without a trailing `# comment` (a # inside quotes stays)."""
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


def _lines(text: str) -> list[Line]:
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise ComposeFileError(f"line {n}: a tab in the indentation")
        body = _strip_comment(raw)
        if body.strip():
            out.append(Line(n, len(body) - len(body.lstrip(" ")), body.strip()))
    return out


def _scalar(text: str, line: Line) -> Value:
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [_scalar(part.strip(), line) for part in inner.split(",")] if inner else []
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if text[:1] in "{|>!&*" or text.startswith("[") or text.startswith('"') \
            or text.startswith("'"):
        raise ComposeFileError(f"line {line.number}: the lab does not read {text!r} here")
    return text


KEY = re.compile(r"(<<|[A-Za-z0-9_.-]+|\"[^\"]*\"|'[^']*'):(?:\s+(.*))?$")


class _Reader:
    def __init__(self, lines: list[Line]) -> None:
        self.lines = lines
        self.i = 0
        self.anchors: dict[str, Value] = {}

    def block(self, indent: int) -> Value:
        line = self.lines[self.i]
        if line.text.startswith("- ") or line.text == "-":
            return self.sequence(line.indent)
        return self.mapping(line.indent)

    def sequence(self, indent: int) -> list[Value]:
        items: list[Value] = []
        while self.i < len(self.lines) and self.lines[self.i].indent == indent \
                and self.lines[self.i].text.startswith("-"):
            line = self.lines[self.i]
            rest = line.text[1:].strip()
            self.i += 1
            if not rest:
                items.append(self.nested(indent, line))
            elif KEY.match(rest):
                raise ComposeFileError(f"line {line.number}: the lab does not read a mapping "
                                       "inside a list")
            else:
                items.append(_scalar(rest, line))
        return items

    def nested(self, indent: int, line: Line) -> Value:
        if self.i >= len(self.lines) or self.lines[self.i].indent <= indent:
            return ""
        return self.block(self.lines[self.i].indent)

    def mapping(self, indent: int) -> dict[str, Value]:
        out: dict[str, Value] = {}
        merged: dict[str, Value] = {}
        while self.i < len(self.lines) and self.lines[self.i].indent == indent:
            line = self.lines[self.i]
            m = KEY.match(line.text)
            if not m:
                raise ComposeFileError(f"line {line.number}: expected 'key: value', "
                                       f"got {line.text!r}")
            key, rest = m.group(1).strip("\"'"), (m.group(2) or "").strip()
            self.i += 1
            anchor = None
            if rest.startswith("&"):
                anchor, _, rest = rest[1:].partition(" ")
                rest = rest.strip()
            if key == "<<":
                if not rest.startswith("*") or rest[1:] not in self.anchors:
                    raise ComposeFileError(f"line {line.number}: merge of an unknown anchor "
                                           f"{rest!r}")
                base = self.anchors[rest[1:]]
                if not isinstance(base, dict):
                    raise ComposeFileError(f"line {line.number}: {rest} is not a mapping")
                merged.update(base)
                continue
            if rest.startswith("*"):
                if rest[1:] not in self.anchors:
                    raise ComposeFileError(f"line {line.number}: unknown anchor {rest!r}")
                value = self.anchors[rest[1:]]
            elif rest:
                value = _scalar(rest, line)
            else:
                value = self.nested(indent, line)
            if anchor:
                self.anchors[anchor] = value
            if key in out:
                raise ComposeFileError(f"line {line.number}: key {key!r} given twice")
            out[key] = value
        if self.i < len(self.lines) and self.lines[self.i].indent > indent:
            line = self.lines[self.i]
            raise ComposeFileError(f"line {line.number}: unexpected indentation")
        return {**merged, **out}          # keys written out win over merged ones


def parse(text: str) -> dict[str, Value]:
    """The document as nested dicts, lists and strings."""
    lines = _lines(text)
    if not lines:
        return {}
    reader = _Reader(lines)
    doc = reader.block(0)
    if reader.i != len(lines):
        raise ComposeFileError(f"line {lines[reader.i].number}: unexpected indentation")
    if not isinstance(doc, dict):
        raise ComposeFileError("the top level must be a mapping")
    return doc


@dataclass(frozen=True)
class Service:
    """One service of compose.yaml, as far as the lab uses it."""
    name: str
    image: str
    profiles: tuple[str, ...]
    context: Path | None            # build context (None: no build)
    dockerfile: Path | None         # the Dockerfile it builds from
    args: dict[str, str]            # its build arguments (SERVER: the module a shared
                                    # Dockerfile builds, as the Java servers' one)
    environment: dict[str, str]     # what the container is given (before interpolation)
    cpuset: str
    mem_limit: str
    ports: tuple[str, ...]
    network_mode: str

    @property
    def folder(self) -> Path | None:
        """The server's folder: the one its SERVER build argument names in the
        context, else its Dockerfile's."""
        if self.context is not None and "SERVER" in self.args:
            return self.context / self.args["SERVER"]
        return self.dockerfile.parent if self.dockerfile else None

    def dockerfile_text(self) -> str:
        """Its Dockerfile with the build arguments put in (${NAME} and $NAME)."""
        if self.dockerfile is None:
            return ""
        return re.sub(r"\$\{(\w+)\}|\$(\w+)",
                      lambda m: self.args.get(m.group(1) or m.group(2), m.group(0)),
                      self.dockerfile.read_text())


def _strs(value: Value, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(str(v) for v in value)
    raise ComposeFileError(f"{where}: expected a list of strings")


def services(path: Path = FILE) -> dict[str, Service]:
    """Every service of the file, by name."""
    try:
        doc = parse(path.read_text())
    except OSError as e:
        raise ComposeFileError(f"cannot read {path}: {e}") from e
    except ComposeFileError as e:
        raise ComposeFileError(f"{path}: {e}") from None
    table = doc.get("services")
    if not isinstance(table, dict):
        raise ComposeFileError(f"{path}: no services")
    top = path.parent
    found = {}
    for name, spec in table.items():
        if not isinstance(spec, dict):
            raise ComposeFileError(f"{path}: service {name} is not a mapping")
        build = spec.get("build")
        context = dockerfile = None
        args: Value = {}
        if isinstance(build, str):
            context, dockerfile = top / build, top / build / "Dockerfile"
        elif isinstance(build, dict):
            ctx = build.get("context", ".")
            df = build.get("dockerfile", "Dockerfile")
            if not isinstance(ctx, str) or not isinstance(df, str):
                raise ComposeFileError(f"{path}: service {name}: build context and dockerfile "
                                       "must be strings")
            context, dockerfile = top / ctx, top / ctx / df
            args = build.get("args", {})
            if not isinstance(args, dict) or not all(isinstance(v, str)
                                                     for v in args.values()):
                raise ComposeFileError(f"{path}: service {name}: build args must map names "
                                       "to strings")
        env = spec.get("environment", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise ComposeFileError(f"{path}: service {name}: environment must map names to "
                                   "strings")
        found[name] = Service(
            name=name, image=str(spec.get("image", "")),
            profiles=_strs(spec.get("profiles", []), f"{path}: service {name}: profiles"),
            context=context.resolve() if context else None,
            dockerfile=dockerfile.resolve() if dockerfile else None,
            args={k: str(v) for k, v in args.items()} if isinstance(args, dict) else {},
            environment={k: str(v) for k, v in env.items()},
            cpuset=str(spec.get("cpuset", "")), mem_limit=str(spec.get("mem_limit", "")),
            ports=_strs(spec.get("ports", []), f"{path}: service {name}: ports"),
            network_mode=str(spec.get("network_mode", "")))
    return found


FROM = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?\s*$", re.I)


def base_images(dockerfile: Path) -> list[str]:
    """The images a Dockerfile starts from (its FROM lines, not its own stages)."""
    stages: set[str] = set()
    bases: list[str] = []
    for line in dockerfile.read_text().splitlines():
        m = FROM.match(line)
        if not m:
            continue
        image, stage = m.group(1), m.group(2)
        if image.lower() not in stages and image not in bases:
            bases.append(image)
        if stage:
            stages.add(stage.lower())
    return bases
