"""What failed, and how: a level's failed requests by kind, in the client's own words.

Each client reads its own report into `Failure`s (lab/measure/clients/);
this module names the kinds, sorts a client's error text into one and groups
them: facts, no sentences (lab.present.failedwords says them). What each
client can tell: docs/analysis.md#what-each-client-can-tell.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lab.record.files import RecordError


@dataclass(frozen=True)
class Failure:
    """Failed requests of one kind at one level, as the client reported them.

    kind: one of KINDS; status: the HTTP status of a non-2xx
    answer when the client says which (None otherwise); said: the client's
    own words (its error string, or the counter it keeps)."""
    kind: str
    count: int
    said: str
    status: int | None = None


def encode_failures(found: list[Failure] | tuple[Failure, ...]) -> str:
    """A results.csv cell: a JSON list of [kind, count, said, status]; "" for none."""
    if not found:
        return ""
    return json.dumps([[f.kind, f.count, f.said, f.status] for f in found],
                      separators=(",", ":"), ensure_ascii=False)


def decode_failures(text: str, path: Path) -> list[Failure]:
    """The cell back; RecordError (naming `path`, the results.csv it was read
    from) when it is not what encode_failures writes."""
    if not text:
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    ok = isinstance(data, list) and all(
        isinstance(x, list) and len(x) == 4 and isinstance(x[0], str)
        and isinstance(x[1], int) and isinstance(x[2], str)
        and (x[3] is None or isinstance(x[3], int)) for x in data)
    if not ok:
        raise RecordError(path, f"`failure_kinds` is {text[:80]!r}, not a list of "
                                "[kind, count, words, status]")
    return [Failure(x[0], x[1], x[2], x[3]) for x in data]


# ports: no local port left on the client's host; status: a non-2xx answer;
# unanswered: the client does not say why; mixed: several of refused, reset,
# timeout, not counted apart (their words: lab.present.failedwords.KIND_WORDS)
KINDS: tuple[str, ...] = ("ports", "refused", "reset", "timeout", "status", "body",
                          "unanswered", "mixed", "other")

# the client's words, in the order tried: the first match names the kind
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # EADDRNOTAVAIL: the client's host has no local port left (Siege says it
    # after "unable to connect": first)
    ("ports", re.compile(r"cannot assign requested address|eaddrnotavail", re.I)),
    ("refused", re.compile(r"connection refused|unable to connect|econnrefused", re.I)),
    ("timeout", re.compile(r"timed? ?out|timeout|deadline exceeded", re.I)),
    ("reset", re.compile(r"reset by peer|connection reset|broken pipe|\bEOF\b|"
                         r"server closed|connection closed|closed by the server", re.I)),
)


def kind_of(words: str) -> str:
    """The kind a client's error text says, "other" when it says none the lab knows."""
    return next((kind for kind, pattern in PATTERNS if pattern.search(words)), "other")


def merged(found: Iterable[Failure]) -> list[Failure]:
    """Failures of several repetitions or client hosts: counts summed for the
    same kind, status and words, in the order first seen."""
    out: dict[tuple[str, int | None, str], int] = {}
    for f in found:
        key = (f.kind, f.status, f.said)
        out[key] = out.get(key, 0) + f.count
    return [Failure(kind, n, said, status) for (kind, status, said), n in out.items()]


def by_kind(found: Iterable[Failure]) -> dict[str, list[Failure]]:
    """Kind (a non-2xx answer: per status) to its failures, biggest first."""
    groups: dict[str, list[Failure]] = {}
    for f in merged(found):
        key = f"status {f.status}" if f.kind == "status" and f.status is not None else f.kind
        groups.setdefault(key, []).append(f)
    return dict(sorted(groups.items(), key=lambda kv: -sum(f.count for f in kv[1])))
