"""What failed, in words: the one builder of the "What failed" lines that
summary.md (lab.present.report), report.html (lab.present.reportpage) and
results.json's `failed` show, each in its own format.

The analysis gives facts (lab.analyse.whatfailed: counts, kinds, the
client's own words, the kernel's kinds); here each is said once. A server's
levels that failed the same way (the same kinds and client's words, as
Siege's silence at every level) make one line with each level's count, and
a mechanism the docs explain is pointed at (`Item.see`) rather than said
again; a kernel kind's mechanism is said at its first line of the run.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

from lab.analyse import serverside
from lab.analyse.analysis import at_value
from lab.analyse.metrics import FAILED_SHARE_PCT
from lab.analyse.serverside import KernelSeen
from lab.analyse.whatfailed import LevelFailed, ServerFailed
from lab.record import failures
from lab.record.failures import Failure
from lab.record.tcpkinds import BY_KEY

# each failure kind of lab.record.failures.KINDS, in words
KIND_WORDS: dict[str, str] = {
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
NOT_RECORDED = "how is not recorded (a run made before the lab kept the kinds)"
# where the docs say what each client can and cannot tell of a failure
SEE_CLIENTS = "docs/analysis.md#what-each-client-can-tell"
SILENT = ("unanswered", "mixed")          # kinds whose why that section explains
# where the docs say what each kernel kind counts, and why it is never added to the client's
SEE_KERNEL = "docs/analysis.md#the-kernels-kinds"

# each kernel kind of lab.record.tcpkinds.KINDS: its mechanism, in one sentence
MECHANISM: dict[str, str] = {
    "listen": "the accept queue was full (the server did not accept as fast as connections "
              "came), so the kernel dropped their handshake and the client had to send it "
              "again or give up",
    "unread": "a socket was closed with data it had not read (a request never read), so the "
              "kernel reset the connection instead of closing it",
    "aborted": "a socket was closed with SO_LINGER 0, or data came after it was closed, so "
               "the kernel reset the connection",
    "resets": "every reset the kernel sent: those of the two kinds above, and the answer to a "
              "segment for a connection already closed or never open (a request that came "
              "after the server closed its connection, a refused connection)",
    "failed": "handshakes that ended in a reset, and established connections reset by either "
              "end",
    "retrans": "segments sent again after a loss or a stalled peer (timeouts beside): a "
               "retransmission is not a failed request",
}


@dataclass(frozen=True)
class Item:
    """One line of "What failed": the server and levels it covers, its text
    (plain: each format escapes it), and the docs section that explains its
    mechanism (docs/<file>.md#<anchor>; "": none)."""
    server: str
    values: tuple[int, ...]
    text: str
    see: str = ""
    brief: str = ""     # summary.md's: the figures without the words `see` explains
                        # ("": the text); report.html and results.json keep the text

    def plain(self) -> str:
        return self.text + (f" (why: {self.see})" if self.see else "")


def label(key: str) -> str:
    """A by_kind key in words: 'reset or closed by the server', 'non-2xx answer 503'."""
    if key.startswith("status "):
        return f"{KIND_WORDS['status']} {key.split(' ', 1)[1]}"
    return KIND_WORDS.get(key, key)


def said(found: Iterable[Failure]) -> str:
    """What failed, by kind with counts, the client's words beside each:
    'reset or closed by the server (566: wrk: read errors)'."""
    parts = []
    for key, group in failures.by_kind(found).items():
        words = "; ".join(f"{f.said}" + (f" {f.count:,}" if len(group) > 1 else "")
                          for f in group)
        parts.append(f"{label(key)} ({sum(f.count for f in group):,}: {words})")
    return ", ".join(parts)


def levels_said(values: list[int], at: Callable[[int], str], every: list[int]) -> str:
    """'c=30–50' for a run of more than two consecutive swept levels, else 'c=3, c=8'."""
    if len(values) > 2 and every[every.index(values[0]):every.index(values[-1]) + 1] == values:
        return f"{at(values[0])}–{at(values[-1]).split('=', 1)[-1]}"
    return ", ".join(at(v) for v in values)


def level_at(axis: str) -> Callable[[int], str]:
    """A level's value in words on `axis`: 'c=8', 'rate=500/s'."""
    return partial(at_value, axis)


def how(lv: LevelFailed) -> tuple[tuple[str, str], ...]:
    """What a level's failures say, without their counts: its kinds and the
    client's words. Levels alike in this make one line."""
    return tuple(sorted((key, f.said) for key, group in failures.by_kind(lv.failures).items()
                        for f in group))


def reps(lv: LevelFailed) -> str:
    return " + ".join(f"{n:,}" for n in lv.by_rep)


def level_items(f: ServerFailed) -> list[Item]:
    """A line per way the server's levels failed: one level's as 'aws c=50 (3
    repetitions: 1 + 2 + 3 failed): 6 of 100 failed: <kinds>'; several
    levels' as 'aws at 3 levels, c=10–50: 60 of 900 failed (c=10 10 of 300;
    ...): <kinds>', their kinds and the client's words said once."""
    at, every = level_at(f.axis), list(f.values)
    groups: dict[tuple[tuple[str, str], ...], list[LevelFailed]] = {}
    for lv in f.levels:
        groups.setdefault(how(lv), []).append(lv)
    out = []
    for group in groups.values():
        found = [x for lv in group for x in lv.failures]
        values = [lv.value for lv in group]
        failed, attempts = sum(lv.failed for lv in group), sum(lv.attempts for lv in group)
        if len(group) == 1:
            [lv] = group
            split = f" ({len(lv.by_rep)} repetitions: {reps(lv)} failed)" if lv.by_rep else ""
            head = f"{f.server} {at(lv.value)}{split}: {failed:,} of {attempts:,} failed"
        else:
            each = "; ".join(f"{at(lv.value)} {lv.failed:,} of {lv.attempts:,}"
                             + (f" ({reps(lv)})" if lv.by_rep else "") for lv in group)
            head = (f"{f.server} at {len(group)} levels, {levels_said(values, at, every)}: "
                    f"{failed:,} of {attempts:,} failed ({each})")
        text = f"{head}: {said(found) if found else NOT_RECORDED}"
        bad = [lv for lv in group if lv.unranked]
        if len(group) == 1 and bad:
            text += (f"; {bad[0].worst_pct:.1f}% failed in the worst repetition (more than "
                     f"{FAILED_SHARE_PCT:g}%): not ranked")
        elif bad:
            where = "any of them" if len(bad) == len(group) else \
                levels_said([lv.value for lv in bad], at, every)
            text += (f"; not ranked at {where}: more than {FAILED_SHARE_PCT:g}% failed in the worst "
                     f"repetition ({', '.join(f'{lv.worst_pct:.1f}%' for lv in bad)})")
        see = SEE_CLIENTS if any(x.kind in SILENT for x in found) else ""
        out.append(Item(f.server, tuple(values), text, see, brief(f, group, found)))
    return out


def brief(f: ServerFailed, group: list[LevelFailed], found: list[Failure]) -> str:
    """A level item for summary.md: 'aws at c=40, c=50: 567 of 54,742 failed: no
    answer 567; not ranked at c=50 (1.1% failed, over 1%)'; each level's count,
    the repetitions' and the client's words are report.html's."""
    at, every = level_at(f.axis), list(f.values)
    failed, attempts = sum(lv.failed for lv in group), sum(lv.attempts for lv in group)
    kinds = ", ".join(f"{label(key).split(' (')[0]} {sum(x.count for x in xs):,}"
                      for key, xs in failures.by_kind(found).items()) or NOT_RECORDED
    bad = [lv for lv in group if lv.unranked]
    unranked = (f"; not ranked at {levels_said([lv.value for lv in bad], at, every)} (over "
                f"{FAILED_SHARE_PCT:g}% failed)" if bad else "")
    return (f"{f.server} at {levels_said([lv.value for lv in group], at, every)}: {failed:,} "
            f"of {attempts:,} failed: {kinds}{unranked}")


def compared(k: KernelSeen) -> str:
    """The kernel's count beside the client's, never added."""
    if k.compare == serverside.EQUAL:
        return f"as many as the client's failed requests there ({k.failed:,})"
    if k.compare == serverside.WITHIN:
        return (f"the client counted {k.failed:,} failed requests there: {k.count - k.failed:,} "
                f"fewer, at most {k.most:,} at a level, no more than the connections open "
                "as it ended (a reset also answers what comes after a close as the client "
                "stops): the counts match to within that, never added")
    if k.compare == serverside.DIFFER:
        return (f"the client counted {k.failed:,} failed requests there: the counts "
                f"differ (a count of {'connections' if k.server_alone else 'both ends'}, not "
                "of requests), never added")
    return ""


def kernel_item(f: ServerFailed, k: KernelSeen, first: str) -> Item:
    """'aws, its kernel (own namespace): connections closed with the request
    unread: 1,020 at c=30–50 (TcpExtTCPAbortOnClose 1,020): <mechanism>; <the
    client's count beside>'. `first`: the server whose line said this kind's
    mechanism already ("": none, say it here)."""
    where = ("own namespace" if k.own_netns else "namespace shared with its clients: "
             + ("the server's alone" if k.server_alone else "both ends' and any other process's"))
    mechanism = f"its mechanism as under {first}" if first else MECHANISM[k.kind]
    why = ""
    if k.workers:
        n, beyond = k.workers
        why = f"; {f.server} had {n} worker{'s' * (n != 1)} there: {beyond}"
    counters = ", ".join(f"{c} {n:,}" for c, n in k.counters.items())
    beside = compared(k)
    at = level_at(f.axis)
    text = (f"{f.server}, its kernel ({where}): {BY_KEY[k.kind].label}: {k.count:,} at "
            f"{levels_said(list(k.values), at, list(f.values))} ({counters}): {mechanism}{why}"
            + (f"; {beside}" if beside else ""))
    short = {serverside.EQUAL: "as many as the client's failed requests",
             serverside.WITHIN: f"the client counted {k.failed:,}: within the connections "
                                "open at the end",
             serverside.DIFFER: f"the client counted {k.failed:,}: not the same count"}
    brief = (f"{f.server}'s kernel ({'own' if k.own_netns else 'shared'} namespace): "
             f"{BY_KEY[k.kind].label}: {k.count:,} at "
             f"{levels_said(list(k.values), at, list(f.values))}"
             + (f"; {short[k.compare]}" if k.compare in short else ""))
    return Item(f.server, k.values, text, SEE_KERNEL, brief)


def build(failed: dict[str, ServerFailed]) -> list[Item]:
    """Every line of a run's "What failed", server by server: the levels
    whose answers were wrong, the ways its levels failed, the kernel's kinds."""
    out: list[Item] = []
    said_by: dict[str, str] = {}          # kernel kind: the server whose line said it
    for f in failed.values():
        out += [Item(f.server, (w.value,), f"{f.server} {at_value(f.axis, w.value)}: answers "
                     f"during the load were wrong, not ranked: {'; '.join(w.why)}")
                for w in f.wrong]
        out += level_items(f)
        for k in f.kernel:
            out.append(kernel_item(f, k, said_by.get(k.kind, "")))
            said_by.setdefault(k.kind, f.server)
    return out


def plain(items: list[Item]) -> dict[str, list[str]]:
    """results.json's `failed`: server to its lines, in plain text."""
    out: dict[str, list[str]] = {}
    for i in items:
        out.setdefault(i.server, []).append(i.plain())
    return out
