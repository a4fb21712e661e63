"""The answers during the load, checked by their size: a level's bytes per
response, as its client counted them, against the size of the verified
answer to that client's own request (lab.measure.verify.as_client).

The contract is checked before each start and after each level; a server
can still answer wrongly only while it is loaded (issue 44). Every response
of a level is counted by the client, so its byte count says whether the
answers had the verified size: a wrong body of another length, an error
body with status 200, a gzipped answer. A wrong body of the same length is
not seen by its size.

What each client counts (Level.counted): wrk every byte it read, heads and
bodies; Siege and vegeta the bodies. What may differ without a wrong answer:
Siege's figure is rounded to 0.01 MB (Level.counted_slack), and wrk counts
the part of an answer it had read when the level ended, at most one answer
a connection (Level.counted_partial). A level with failed requests is not
checked this way: the failed ones' sizes are not known (it is flagged
`failures`).

Pure: the verdict is `size_check`; the sweep records it in the level's row
(flag `wrong-answers`, lab.analyse.levelrow).
"""
from __future__ import annotations

from dataclasses import dataclass

from lab.record.level import Answers, Level

MIB = 1024 * 1024        # Level.data_mb's unit


@dataclass(frozen=True)
class Expected:
    """The verified answer to the load client's request: its bytes as received."""
    head_bytes: int
    body_bytes: int
    request: str            # which request it answered (the record's words)

    @classmethod
    def of(cls, record: dict[str, object]) -> Expected | None:
        """From the start's recorded answer (lab.measure.verify.recorded); None
        when it could not be read."""
        head, body = record.get("head_bytes"), record.get("body_bytes")
        if not isinstance(head, int) or not isinstance(body, int) or record.get("error"):
            return None
        return cls(head, body, str(record.get("request", "")))

    def size(self, counted: str) -> int:
        """What a client that counts `counted` counts for one right answer."""
        return self.head_bytes + self.body_bytes if counted == "wire" else self.body_bytes


def size_check(level: Level, expected: Expected | None, connections: int, client: str) -> str:
    """Why the level's answers were not the verified answer's size, or "" when
    they were (or cannot be told: no answer recorded, a client that counts
    nothing, failed requests, no response)."""
    if expected is None or not level.counted or level.failed or not level.transactions:
        return ""
    size = expected.size(level.counted)
    got = level.data_mb * MIB
    want = level.transactions * size
    low = want - level.counted_slack
    high = want + level.counted_slack + (connections * size if level.counted_partial else 0)
    if low <= got <= high:
        return ""
    what = "heads and bodies" if level.counted == "wire" else "bodies"
    per = got / level.transactions
    diff = got - want
    more = "more" if diff > 0 else "fewer"
    return (f"{client} counted {per:,.1f} bytes per response ({what}) where the verified answer "
            f"to its request has {size:,} ({abs(diff):,.0f} bytes {more}"
            f" over {level.transactions:,} responses"
            + (f", beyond its rounding of {level.counted_slack:,.0f}"
               if level.counted_slack else "")
            + (f" and {connections:,} answers read in part when the level ended"
               if level.counted_partial and diff > 0 else "")
            + "): answers of another size")


def sampled(answers: Answers | None, client: str, seconds: float) -> str:
    """Why the answers the client checked itself at the level's load (its check
    slice, lab.measure.clients.Checks) were wrong, with the count and the
    first wrong one; "" when none was (or none was checked)."""
    if answers is None or not answers.wrong:
        return ""
    shown = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in answers.example)
    example = f", e.g. {shown}" if shown else ""       # one line, whatever the server sent
    return (f"{answers.wrong:,} of {answers.checked:,} answers {client} checked at the same "
            f"load for {seconds:g} s after the level were successes (2xx/3xx) other than "
            f"status 200 with the exact body{example}")
