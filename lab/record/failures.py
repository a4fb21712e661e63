"""What failed, and how: a level's failed requests by kind, in the client's own words.

Each client reads its own report into `Failure`s (lab/measure/clients/);
this module names the kinds, sorts a client's error text into one, and says
the result in one line for the summary, the report and the warnings.

What each client can tell (docs/run-folder.md says more):
- wrk counts socket errors by the call that failed (connect, read, write),
  timeouts, and non-2xx/3xx answers without their status;
- vegeta gives each status code's count and its distinct error strings,
  without a count per string;
- Siege 4.0.7 prints an error line when it cannot connect or times out, and
  nothing for a connection closed or reset before the answer, an empty
  answer or a 5xx (its `echo`, verbose mode only): those it counts alike.
None of them checks the body, so "wrong body" is never reported by them.
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


KINDS: dict[str, str] = {
    "ports": "no local port left (cannot assign requested address)",
    "refused": "could not connect (refused)",
    "reset": "reset or closed by the server",
    "timeout": "timed out",
    "status": "non-2xx answer",
    "body": "wrong body",
    "unanswered": "no answer (the client does not say why)",
    "mixed": "several of: refused, reset or closed, timed out (the client does not count "
             "them apart)",
    "other": "other",
}

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


def label(key: str) -> str:
    """A by_kind key in words: 'reset or closed by the server', 'non-2xx answer 503'."""
    if key.startswith("status "):
        return f"{KINDS['status']} {key.split(' ', 1)[1]}"
    return KINDS.get(key, key)


def said(found: Iterable[Failure]) -> str:
    """What failed, by kind with counts, the client's words beside each:
    'reset or closed by the server (566: wrk: read errors)'."""
    parts = []
    for key, group in by_kind(found).items():
        words = "; ".join(f"{f.said}" + (f" {f.count:,}" if len(group) > 1 else "")
                          for f in group)
        parts.append(f"{label(key)} ({sum(f.count for f in group):,}: {words})")
    return ", ".join(parts)


def line(where: str, failed: int, attempts: int, found: list[Failure]) -> str:
    """'aws c=50: 566 of 100,525 failed: reset or closed by the server (566: ...)'."""
    head = f"{where}: {failed:,} of {attempts:,} failed"
    if not found:
        return head + " (how is not recorded: a run made before the lab kept the kinds)"
    return f"{head}: {said(found)}"
