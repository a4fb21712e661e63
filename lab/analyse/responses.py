"""What each server sends: its answer to GET /api as the run recorded it
when each start was verified (record.Response, lab.measure.verify.wire), and where
the servers differ.

Flagged: a missing Date or Server header (TechEmpower's verifier requires
both), another Content-Type or a parameter on it (ASF's `; charset=utf-8`),
a header value sent with odd spacing (EWS's `Content-Length:  27`), another
status line, and another byte count on the wire. Pure: reads a Manifest;
its Markdown and HTML are lab.present.sends' and lab.present.reportpage's."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from lab.record.manifest import Manifest, Response

REQUIRED = ("Date", "Server")      # what TechEmpower's verifier requires of every answer


@dataclass(frozen=True)
class Differs:
    """One thing flagged in a server's answer: its words, "{}" where what the
    server sent goes; `sent`: that text from outside the lab, to show as
    written (each format escapes it); `code`: as code (its spacing matters)."""
    said: str
    sent: str = ""
    code: bool = False

    def plain(self) -> str:
        """The flag as plain text (results.json, a badge's label)."""
        return self.said.replace("{}", self.sent)


@dataclass(frozen=True)
class ServerAnswer:
    """One server's answer, and how it differs from the others'."""
    server: str
    response: Response | None          # None: not recorded (an older run)
    starts: int                        # starts that recorded one
    varies: bool                       # the starts' answers differ among themselves
    differs: tuple[Differs, ...]       # what is flagged

    @property
    def bytes(self) -> int | None:
        return None if self.response is None or self.response.error else self.response.bytes


def same(a: Response, b: Response) -> bool:
    return (a.status_line, a.headers, a.bytes) == (b.status_line, b.headers, b.bytes)


def answers(m: Manifest, servers: list[str] | None = None) -> dict[str, ServerAnswer]:
    """Each server's recorded answer (its first start's), with its flags."""
    found: dict[str, tuple[Response | None, int, bool]] = {}
    for name in servers if servers is not None else list(m.servers):
        got = [s.response for s in m.server(name).starts if s.response is not None]
        good = [r for r in got if not r.error]
        first = good[0] if good else (got[0] if got else None)
        found[name] = (first, len(got), any(not same(good[0], r) for r in good[1:]))
    flags = differences({n: r for n, (r, _, _) in found.items()},
                        {n: unrecorded(m, n) for n, (r, _, _) in found.items() if r is None})
    return {n: ServerAnswer(n, r, k, v, tuple(flags.get(n, []))) for n, (r, k, v) in found.items()}


def unrecorded(m: Manifest, name: str) -> str:
    """Why a server's answer is not in the run: the kind of run, not its age,
    unless the run is one from before answers were recorded."""
    if m.extra.get("kind") == "cost":
        return ("not recorded: `make cost` runs each server under cachegrind and "
                "does not verify its answer")
    starts = m.server(name).starts
    if not starts:
        return "not recorded: no start of this server was verified"
    recorded = any(st.response is not None for rec in m.servers.values() for st in rec.starts)
    if recorded or any(st.status in ("failed", "not loaded", "interrupted") for st in starts):
        # this run records answers: this server's starts never reached the check
        return ("not recorded: no start of this server got as far as its verification "
                "(What failed says why)")
    return "not recorded (a run before the lab recorded answers)"


def odd_spacing(value: str) -> bool:
    """A header value not written as `Name: value` (one space after the colon)."""
    return value != " " + value.strip() and bool(value.strip())


def differences(responses: dict[str, Response | None],
                why_none: dict[str, str] | None = None) -> dict[str, list[Differs]]:
    """What each server's answer does differently: against HTTP habits (Date,
    Server, spacing) always; against the others (Content-Type, status line,
    size) where most servers agree or, for the size, against the smallest.
    What the server sent is kept apart from the words (Differs.sent)."""
    good = {n: r for n, r in responses.items() if r is not None and not r.error}
    out: dict[str, list[Differs]] = {n: [] for n in responses}
    for n, r in responses.items():
        if r is None:
            out[n].append(Differs((why_none or {}).get(
                n, "not recorded (a run before the lab recorded answers)")))
        elif r.error:
            out[n].append(Differs("not read: {}", r.error))
    ctypes = Counter(r.header("Content-Type") for r in good.values())
    lines = Counter(r.status_line for r in good.values())
    common_ctype = ctypes.most_common(1)[0][0] if ctypes else None
    common_line = lines.most_common(1)[0][0] if lines else None
    sizes = [r.bytes for r in good.values() if r.bytes is not None]
    smallest = min(sizes) if sizes else None
    for n, r in good.items():
        for h in REQUIRED:
            if r.header(h) is None:
                out[n].append(Differs(f"no {h} header"))
        ctype = r.header("Content-Type")
        if ctype is not None and ";" in ctype:
            out[n].append(Differs("Content-Type parameter {}", ctype.split(';', 1)[1].strip(),
                                  code=True))
        elif len(good) > 1 and ctype != common_ctype:
            out[n].append(Differs("another Content-Type: {}", str(ctype)))
        if len(good) > 1 and r.status_line != common_line:
            out[n].append(Differs("another status line: {}", r.status_line))
        for k, v in r.headers:
            if odd_spacing(v):
                out[n].append(Differs("{} (spacing)", f"{k}:{v}", code=True))
        if smallest is not None and r.bytes is not None and r.bytes != smallest:
            out[n].append(Differs(f"{r.bytes - smallest} bytes more than the smallest answer"))
    return out


def size_note(a: str, b: str, found: dict[str, ServerAnswer]) -> str:
    """'ews's answer is 38 bytes smaller than aws's (127 vs 165 bytes on the
    wire)' when the two differ in size; '' otherwise or when unknown."""
    x, y = found.get(a), found.get(b)
    if x is None or y is None or x.bytes is None or y.bytes is None or x.bytes == y.bytes:
        return ""
    small, big = (x, y) if x.bytes < y.bytes else (y, x)
    assert small.bytes is not None and big.bytes is not None
    return (f"{small.server}'s answer is {big.bytes - small.bytes} bytes smaller than "
            f"{big.server}'s ({small.bytes} vs {big.bytes} bytes on the wire)")


def header_text(r: Response) -> str:
    """Every header as sent, one `Name:value` after another."""
    return " · ".join(f"{k}:{v}" for k, v in r.headers)


HEAD = ["server", "status line", "headers (as sent; Date masked)", "bytes on the wire",
        "differs"]
VARIES = Differs("its starts' answers differ")


def flags(a: ServerAnswer) -> list[Differs]:
    """The table's last column: what is flagged, and whether the starts' answers differ."""
    return list(a.differs) + ([VARIES] if a.varies and a.response is not None
                              and not a.response.error else [])


def rows(found: dict[str, ServerAnswer]) -> list[list[str]]:
    """The table's rows as text but the last column (`flags`): one per server;
    "–" where nothing was read."""
    out = []
    for a in found.values():
        r = a.response
        if r is None or r.error:
            out.append([a.server, "–", "–", "–"])
            continue
        size = f"{r.bytes} ({r.head_bytes} head + {r.body_bytes} body)"
        out.append([a.server, r.status_line, header_text(r), size])
    return out


def request(found: dict[str, ServerAnswer]) -> str:
    """The request the answers were read with."""
    return next((a.response.request for a in found.values()
                 if a.response is not None and a.response.request), "")
