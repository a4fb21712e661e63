"""The one writer of CSV: results.csv (a row appended per level), the
per-second series and levels.csv. A missing figure is an empty cell; a cell
of a file meant for spreadsheets (levels.csv) that a spreadsheet would run
as a formula is defused. Every file goes through lab.record.files (never
through a link, whole or appended). Reading back stays with each file's
owner (rows.read_rows, series.read_series), which knows its types."""
from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from lab.record import files

Cell = object


def text(value: Cell) -> Cell:
    """A cell as written: None is empty."""
    return "" if value is None else value


def spreadsheet_cell(value: Cell) -> Cell:
    """A cell of a CSV the lab writes for spreadsheets (levels.csv): text that
    a spreadsheet would run as a formula (it starts with =, +, -, @, a tab or
    a carriage return; OWASP's CSV injection advice) gets a leading ' ; a
    number, or text that reads as one ("-1.5"), stays as it is."""
    if not isinstance(value, str) or not value or value[0] not in "=+-@\t\r" \
            or re.fullmatch(r"[+-](?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", value):
        return text(value)
    return "'" + value


def append_row(path: Path, root: Path, columns: Sequence[str], row: Mapping[str, Cell]) -> None:
    """One row appended (the header first when the file is new)."""
    new = not os.path.lexists(path)
    with files.open_text(path, root, append=True) as f:
        w = csv.DictWriter(f, fieldnames=list(columns))
        if new:
            w.writeheader()
        w.writerow({k: text(v) for k, v in row.items()})


def write(path: Path, header: Sequence[str], rows: Iterable[Sequence[Cell]],
          root: Path | None = None) -> None:
    """A whole file: the header, then each row (a file the lab writes anew)."""
    with files.open_text(path, root) as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows([text(c) for c in r] for r in rows)


def write_for_spreadsheets(path: Path, header: Sequence[str],
                           rows: Iterable[Sequence[Cell]]) -> None:
    """A whole file written at once (atomically), each cell defused."""
    f = io.StringIO(newline="")
    w = csv.writer(f)
    w.writerow(header)
    w.writerows([spreadsheet_cell(c) for c in r] for r in rows)
    files.write_atomic(path, f.getvalue())
