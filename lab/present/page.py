"""What every page of the lab shares: the one page builder (`page`), its
stylesheet, escaping, tables, and a chart as a figure. The report
(lab.present.reportpage), the compare page (lab.present.comparepage) and the
index (lab.present.indexpage) are built from these; no page has JavaScript,
and every figure, name and setting is escaped with html.escape."""
from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape
from pathlib import Path

from lab.analyse.wording import DASH, link_target
from lab.present.svg import inline_svg

# The gate's outcome as the pages show it (compare.json's gate.outcome): its CSS class.
GATE_LOOK = {"pass": "", "regression": "worse", "not-comparable": "warn"}

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2127;
 max-width:1180px;margin:0 auto;padding:12px 20px 40px;background:#fff}
h1{font-size:1.5em;margin:.3em 0}h2{font-size:1.2em;margin:1.4em 0 .4em;
 border-bottom:1px solid #d8dde3;padding-bottom:2px}h3{font-size:1.05em;margin:1em 0 .3em}
table{border-collapse:collapse;margin:.4em 0 .8em;font-size:13px}
th,td{border:1px solid #d8dde3;padding:3px 7px;vertical-align:top;text-align:left}
th{background:#f1f3f6;font-weight:600}table.kv th{font-weight:400;white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums;
 white-space:nowrap}tr:nth-child(even) td{background:#fafbfc}
.status{padding:8px 12px;border-radius:4px;margin:.5em 0;font-weight:600}
.complete{background:#f1f3f6;border:1px solid #c5ccd6;color:#1d2127;font-weight:400}
.incomplete{background:#fde8e8;border:3px solid #c81e1e;color:#8a1010;font-size:1.15em}
.incomplete ul{margin:.3em 0 0;font-weight:400}
.flag{display:inline-block;font-size:11px;font-weight:600;padding:0 5px;margin:1px 0 1px 4px;
 border-radius:3px;background:#fff1c2;border:1px solid #e0b400;color:#5c4700;white-space:nowrap}
.flag.bad{background:#fde0e0;border-color:#d04040;color:#7a1010}
.flagged{display:block;text-align:left;white-space:normal;max-width:300px;margin:2px 0 0 auto;
 font-size:11px;color:#4a515c}.flagged .flag{margin-left:0}
dl.legend{display:grid;grid-template-columns:max-content 1fr;
 gap:3px 10px;margin:.4em 0}dl.legend dd{margin:0}
figure{margin:.6em 0 1.2em;max-width:900px}figcaption{font-weight:600;margin-bottom:2px}
svg.chart{display:block;width:100%;height:auto;border:1px solid #e3e6ea}

pre{background:#f5f6f8;border:1px solid #d8dde3;padding:8px;overflow-x:auto;
 white-space:pre-wrap;word-break:break-all;user-select:all}
.muted{color:#5a6270}.facts{margin:.2em 0 .5em}code{background:#f1f3f6;padding:0 3px}
ul.warn li{margin:.2em 0}.better{color:#1a7f37}.worse{color:#b42318}
ol.history li.change{list-style:none;margin-left:-1.2em}
.warnbox{background:#fff4e5;border-left:4px solid #f79009;padding:4px 8px}
p.lead{font-size:1.05em;background:#f5f7fa;border-left:4px solid #8a94a3;padding:6px 10px}
.gate.warn{background:#fff4e5;border-left:4px solid #f79009;padding:2px 6px}
.gate.worse{color:#b42318;font-weight:600}
details.internals{margin:.4em 0}details.internals summary{cursor:pointer;color:#5a6270}
"""


def escaped(value: object) -> str:
    """`value` as HTML text (quotes too, for attributes)."""
    return escape(str(value), quote=True)


def href(path: str = "", fragment: str = "") -> str:
    """Every href and src of a page: lab.analyse.wording.link_target (a
    relative path down from the page, each part URL-quoted; ValueError for
    anything else), escaped for the attribute."""
    return escaped(link_target(path, fragment))


def cell(content: str, numeric: bool = False) -> str:
    """A table cell: content is HTML already."""
    return f'<td class="n">{content}</td>' if numeric else f"<td>{content}</td>"


def table(head: list[str], rows: list[list[str]], numeric: set[int] | None = None,
          cls: str = "") -> str:
    """head is plain text; rows are HTML cells' contents; numeric: columns to right-align."""
    num = numeric or set()
    ths = "".join(f"<th>{escaped(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(cell(c, i in num) for i, c in enumerate(r)) + "</tr>"
                   for r in rows)
    klass = f' class="{escaped(cls)}"' if cls else ""
    return f"<table{klass}><thead><tr>{ths}</tr></thead><tbody>{body}</tbody></table>"


def worded(v: object) -> object:
    """A value as a person reads it: no None, True or long float."""
    if v is None:
        return DASH
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.2f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:,.0f}"
    return v


def kv_table(pairs: Sequence[tuple[str, object]], cls: str = "") -> str:
    """Two columns, name and value, without a header row."""
    rows = "".join(f"<tr><th>{escaped(k)}</th><td>{escaped(worded(v))}</td></tr>"
                   for k, v in pairs)
    return f'<table class="kv {escaped(cls)}"><tbody>{rows}</tbody></table>'


def page(title: str, body: str) -> str:
    """The one page builder: a run's report, the index, a comparison."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escaped(title)}</title><style>{CSS}</style></head>"
            f"<body>{body}</body></html>\n")


def chart_figure(path: Path, title: str) -> str:
    """One SVG chart file as a <figure>, inlined with inline_svg."""
    name = re.sub(r"[^A-Za-z0-9_-]", "-", path.stem)
    try:
        svg = inline_svg(name, path.read_text(errors="replace"))
    except OSError as err:
        return f'<p class="muted">{escaped(path.name)} unreadable: {escaped(err.strerror or err)}</p>'
    return (f'<figure id="chart-{escaped(name)}"><figcaption>{escaped(title)} '
            f'<span class="muted">({escaped(path.name)})</span></figcaption>{svg}</figure>')
