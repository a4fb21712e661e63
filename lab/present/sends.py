"""What each server sends, in summary.md: the table of each server's answer
(lab.analyse.responses) with what differs flagged, each flag said once
(`said`) for Markdown here and HTML in lab.present.reportpage."""
from __future__ import annotations

from collections.abc import Callable

from lab.analyse.responses import HEAD, Differs, ServerAnswer, flags, request, rows
from lab.setup.markdown import Table, md_code, md_text


def said(d: Differs, code: Callable[[str], str], text: Callable[[str], str]) -> str:
    """A flag in a format: its words as text, what the server sent as code or
    text (`code`, `text`: the format's escapers)."""
    words = [text(w) for w in d.said.split("{}")]
    return (code(d.sent) if d.code else text(d.sent)).join(words)


def markdown(found: dict[str, ServerAnswer]) -> list[str]:
    """The section: a row per server, the headers as a code span (their
    spacing kept), text from outside the lab escaped."""
    if not found:
        return []
    asked = request(found)
    cells = [[md_code(c) if i == 2 and c != "–" else md_text(c) for i, c in enumerate(row)]
             + ["; ".join(said(d, md_code, md_text) for d in flags(a)) or "–"]
             for row, a in zip(rows(found), found.values())]
    return ["## What each server sends", "",
            f"Its answer to {md_code(asked or 'GET /api')} when each start was verified.", "",
            *Table(HEAD, cells).lines()]
