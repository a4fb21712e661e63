"""Markdown: the one writer of the lab's Markdown tables and the one escaper
of outside text in Markdown, as hyperfine's exporters are one per format.

A module that shows something as a table (summary.md, compare.md, claims.md,
`make history`, the probe's table, docs/settings.md's tables, ...) builds a
typed `Table` of its rows, each cell already worded, and hands it here; only
this module writes a table's bars and its `|---|` line. It sits in setup/,
the bottom of the import graph, because every role writes Markdown.

Text from outside the lab (server.toml's fields, a server's headers, a
manifest's values) goes through `md_text` or `md_code` before it is a cell;
`md_cell` keeps a cell of the lab's own words in its cell.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

# Markdown's specials that text from outside the lab could use: code spans,
# emphasis, links and images, HTML tags and entities, a table's cell bar.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|&~!#])")


def md_text(value: object) -> str:
    """Text from outside the lab as Markdown that shows it as written, in
    running text or a table cell: each special backslash-escaped, a line
    break a space."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(value).splitlines()))


def md_code(value: object) -> str:
    """Outside text as a code span that holds whatever backticks it has (a
    fence longer than its longest run) and stays in a table cell (| is \\|,
    which GitHub's tables read inside a code span too)."""
    text = " ".join(str(value).splitlines()).replace("|", "\\|")
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_cell(text: str) -> str:
    """The lab's own Markdown safe inside a table cell (a | stays in its
    cell, a line break is a space); its other Markdown still works."""
    return text.replace("|", "\\|").replace("\n", " ")


@dataclass(frozen=True)
class Span:
    """A row of one cell, the others left blank: a heading inside a table
    (`make history`'s conditions)."""
    column: int
    text: str


Row = Sequence[str] | Span


@dataclass(frozen=True)
class Table:
    """A Markdown table: its head, its rows (each a cell per column, worded
    by the caller), and the columns of figures aligned right."""
    head: Sequence[str]
    rows: Sequence[Row] = ()
    right: Collection[int] = field(default_factory=frozenset)

    def lines(self) -> list[str]:
        """The table's lines: head, rule, a line per row."""
        rule = "|" + "".join("---:|" if i in self.right else "---|" for i in range(len(self.head)))
        return [row(self.head), rule] + [row(r, len(self.head)) for r in self.rows]

    def escaped(self, escape: Callable[[str], str] = md_cell) -> Table:
        """The same table with every cell, its head's too, through `escape`."""
        return Table([escape(c) for c in self.head],
                     [r if isinstance(r, Span) else [escape(c) for c in r] for r in self.rows],
                     self.right)

    def text(self) -> str:
        """The table as one text, a line break after each line but the last."""
        return "\n".join(self.lines())


def row(cells: Row, width: int = 0) -> str:
    """One table line: '| a | b |'; a Span, its text in its column of `width`."""
    if isinstance(cells, Span):
        return "|" + "".join(f" {cells.text} |" if i == cells.column else " |"
                             for i in range(width))
    return "| " + " | ".join(cells) + " |"
