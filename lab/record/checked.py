"""The checked-JSON reader every format of lab.record parses with: a JSON object
read with its place, so that a wrong value is named ('manifest.json:
`servers.aws.status` should be text, found a number'), and the writer that
puts a record's kept keys (`extra`) back after its fields."""
from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from lab.record.files import RecordError


class Obj:
    """A JSON object read with its place, for messages: 'manifest.json: servers.aws.status ...'."""

    def __init__(self, data: Any, path: Path, where: str) -> None:
        if not isinstance(data, dict):
            raise RecordError(path, f"{where or 'the top level'} should be an object, "
                                    f"found {kind(data)}")
        self.data: dict[str, Any] = data
        self.path, self.where = path, where

    def _at(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, want: str) -> RecordError:
        return RecordError(self.path, f"`{self._at(key)}` should be {want}, "
                                      f"found {kind(self.data[key])}")

    def need(self, key: str, why: str = "") -> None:
        if key not in self.data:
            raise RecordError(self.path, f"lacks `{self._at(key)}`{why}")

    def text(self, key: str, default: str | None = "") -> str:
        value = self.data.get(key)
        if value is None:
            if default is None:
                self.need(key)
            return default or ""
        if not isinstance(value, str):
            raise self.fail(key, "text")
        return value

    def opt_int(self, key: str) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, "a whole number")
        return value

    def integer(self, key: str, default: int | None = None) -> int:
        value = self.opt_int(key)
        if value is not None:
            return value
        if default is None:
            self.need(key)
            raise self.fail(key, "a whole number")
        return default

    def opt_num(self, key: str) -> float | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(key, "a number")
        return float(value)

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.data.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, "true or false")
        return value

    def opt_flag(self, key: str) -> bool | None:
        return None if self.data.get(key) is None else self.flag(key)

    def obj(self, key: str, required: bool = False) -> Obj:
        if key not in self.data or self.data[key] is None:
            if required:
                self.need(key)
            return Obj({}, self.path, self._at(key))
        return Obj(self.data[key], self.path, self._at(key))

    def raw_obj(self, key: str) -> dict[str, Any]:
        return self.obj(key).data

    def items(self, key: str) -> list[Any]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(key, "a list")
        return value

    def texts(self, key: str) -> list[str]:
        value = self.items(key)
        if not all(isinstance(v, str) for v in value):
            raise self.fail(key, "a list of texts")
        return list(value)

    def ints(self, key: str) -> list[int]:
        value = self.items(key)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise self.fail(key, "a list of whole numbers")
        return list(value)

    def rest(self, known: set[str]) -> dict[str, Any]:
        return {k: v for k, v in self.data.items() if k not in known}


def obj(data: Any, path: Path, where: str) -> Obj:
    """`data` (tuples become lists, as JSON has them) to be parsed by a
    record's `parse`, as found at `where` of `path`."""
    return Obj(json.loads(json.dumps(data, default=str)), path, where)


def kind(value: Any) -> str:
    """A JSON value's kind in words, for messages."""
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "text", bool: "true/false",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def names(cls: type) -> set[str]:
    """A dataclass's field names (what `rest` leaves out)."""
    return {f.name for f in fields(cls)}


def dump(obj: Any) -> Any:
    """A record as JSON: fields, then the keys it kept (`extra`) after them."""
    if hasattr(obj, "__dataclass_fields__"):
        out: dict[str, Any] = {}
        for f in fields(obj):
            value = getattr(obj, f.name)
            if f.name != "extra" and not (value is None and f.default is None):
                out[f.name] = dump(value)
        extra = getattr(obj, "extra", {})
        return {**out, **{k: v for k, v in extra.items() if k not in out}}
    if isinstance(obj, dict):
        return {str(k): dump(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [dump(v) for v in obj]
    return obj
