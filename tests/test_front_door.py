"""The front door's summary.md (issue 53): `make bench` of one server with a
short sweep writes a summary of at most 80 lines, no prose line over 200
characters, the peak in its first 15 lines. The session's short run of one
server (conftest's short_run: 2 levels of 1 s, siege) is read, not remade."""
from __future__ import annotations

from pathlib import Path

import pytest

from lab.analyse import analysis
from test_answer import HEAD, LONGEST, peak_in_head, prose

pytestmark = pytest.mark.fault

MOST_LINES = 80


def test_a_short_run_of_one_server_writes_an_answer_of_at_most_80_lines(short_run: Path) -> None:
    text = (short_run / "summary.md").read_text()
    lines = text.splitlines()
    assert len(lines) <= MOST_LINES, text
    assert [x for x in prose(text) if len(x) > LONGEST] == [], text
    _, a = analysis.of(short_run)
    assert len(a.stats) == 1 and peak_in_head(text, a.stats), lines[:HEAD]
    assert any(x.startswith("- Limit: ") for x in lines[:HEAD]), lines[:HEAD]
    assert "report.html" in "\n".join(lines[:HEAD])
