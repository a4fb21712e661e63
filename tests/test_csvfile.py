"""lab.record.csvfile: the one writer of CSV."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from lab.record import csvfile

pytestmark = pytest.mark.unit


def test_rows_appended_get_one_header_and_empty_cells_for_missing_figures(
        tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    csvfile.append_row(path, tmp_path, ["a", "b"], {"a": 1, "b": None})
    csvfile.append_row(path, tmp_path, ["a", "b"], {"a": 2.5, "b": "x,y"})
    assert path.read_bytes() == b'a,b\r\n1,\r\n2.5,"x,y"\r\n'
    assert list(csv.DictReader(path.open(newline=""))) == [{"a": "1", "b": ""},
                                                           {"a": "2.5", "b": "x,y"}]


def test_a_whole_file_is_its_header_then_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "series.csv"
    csvfile.write(path, ["second", "rps"], ([i, None if i else 3.5] for i in range(2)))
    assert path.read_bytes() == b"second,rps\r\n0,3.5\r\n1,\r\n"


def test_a_file_for_spreadsheets_defuses_formulas_and_keeps_numbers(tmp_path: Path) -> None:
    path = tmp_path / "levels.csv"
    csvfile.write_for_spreadsheets(path, ["server", "flags", "rate"],
                                   [["=HYPERLINK(1)", "-1.5", -2], ["@x", None, "+3e4"]])
    rows = list(csv.reader(path.open(newline="")))
    assert rows[1:] == [["'=HYPERLINK(1)", "-1.5", "-2"], ["'@x", "", "+3e4"]]
