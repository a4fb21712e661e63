"""A small validator for the part of JSON Schema that docs/results.schema.json
uses (type, required, properties, additionalProperties, items, enum, const,
anyOf): the standard library only. Any other keyword is an error, so the
schema cannot grow past what is checked here."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

KNOWN = {"$schema", "$id", "title", "description", "type", "required", "properties",
         "additionalProperties", "items", "enum", "const", "anyOf"}
TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
    "null": (type(None),), "integer": (int,), "number": (int, float)}
SCHEMA = Path(__file__).resolve().parents[1] / "docs" / "results.schema.json"
CLAIMS_SCHEMA = SCHEMA.with_name("claims.schema.json")


def of_type(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    return isinstance(value, TYPES[name])


def errors(value: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """Every place where value does not fit schema, as 'where: why'."""
    unknown = set(schema) - KNOWN
    if unknown:
        return [f"{where}: the schema uses {sorted(unknown)}, which this checker does not know"]
    out: list[str] = []
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(of_type(value, n) for n in names):
            return [f"{where}: expected {' or '.join(names)}, found {type(value).__name__}"]
    if "const" in schema and value != schema["const"]:
        out.append(f"{where}: expected {schema['const']!r}, found {value!r}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "anyOf" in schema and all(errors(value, s, where) for s in schema["anyOf"]):
        out.append(f"{where}: fits none of {len(schema['anyOf'])} alternatives")
    if isinstance(value, dict):
        out += [f"{where}: missing {k!r}" for k in schema.get("required", []) if k not in value]
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for k, v in value.items():
            if k in props:
                out += errors(v, props[k], f"{where}.{k}")
            elif extra is False:
                out.append(f"{where}: unexpected {k!r}")
            elif isinstance(extra, dict):
                out += errors(v, extra, f"{where}.{k}")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            out += errors(v, schema["items"], f"{where}[{i}]")
    return out


def check_file(path: Path, against: Path = SCHEMA) -> list[str]:
    schema = json.loads(against.read_text())
    return [f"{path}: {e}" for e in errors(json.loads(path.read_text()), schema)]
