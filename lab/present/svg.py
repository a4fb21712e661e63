"""A gnuplot SVG made safe to inline into a page: nothing it could fetch or
run, no namespace declarations, ids unique to the chart, scaled to the page.
The report, the compare page and the index inline their charts with it."""
from __future__ import annotations

import re
from html import escape

_PROLOG = re.compile(r"<\?xml.*?\?>|<!DOCTYPE[^>]*>|<!--.*?-->", re.S)
_SCRIPT = re.compile(r"<script\b.*?(?:/>|</script\s*>)", re.S | re.I)
_HANDLER = re.compile(r"""\s+on[a-z]+\s*=\s*(?:"[^"]*"|'[^']*')""", re.I)
_HREF = re.compile(r"""\s+((?:xlink:)?href)\s*=\s*(["'])(.*?)\2""", re.S | re.I)
_ID = re.compile(r"""\bid\s*=\s*(["'])(.*?)\1""")
_URL = re.compile(r"url\(\s*#([^)\s]+)\s*\)")
_ROOT = re.compile(r"<svg\b[^>]*>", re.S)
_XMLNS = re.compile(r"""\s+xmlns(?::\w+)?\s*=\s*(?:"[^"]*"|'[^']*')""")


def _local_href(name: str, match: re.Match[str]) -> str:
    """Keep a link within the chart (renamed); drop any other."""
    attr, quote_, target = match.group(1), match.group(2), match.group(3).strip()
    if target.startswith("#"):
        return f" {attr}={quote_}#{name}-{target[1:]}{quote_}"
    return ""


def _root_tag(name: str, tag: str) -> str:
    """The outer <svg>: no fixed size, a viewBox, the chart class."""
    width = re.search(r'\swidth\s*=\s*["\']([\d.]+)', tag)
    height = re.search(r'\sheight\s*=\s*["\']([\d.]+)', tag)
    tag = re.sub(r'\s(?:width|height|class|style)\s*=\s*(["\']).*?\1', "", tag)
    if "viewBox" not in tag and width and height:
        tag = tag.replace("<svg", f'<svg viewBox="0 0 {width.group(1)} {height.group(1)}"', 1)
    return tag.replace("<svg", f'<svg class="chart" role="img" aria-label="{escape(name, quote=True)}"'
                       ' preserveAspectRatio="xMidYMid meet"', 1)


def inline_svg(name: str, text: str) -> str:
    """A gnuplot SVG made fit to sit inside the page: nothing it could fetch
    or run, no namespace declarations (the HTML parser puts inline svg and
    xlink: attributes in their namespaces itself), ids unique to the chart,
    scaling to the page width."""
    text = _PROLOG.sub("", text)
    text = _XMLNS.sub("", text)          # HTML knows svg and xlink: no namespace URL is named
    text = _SCRIPT.sub("", text)
    text = _HANDLER.sub("", text)
    text = _HREF.sub(lambda mt: _local_href(name, mt), text)
    text = _ID.sub(lambda mt: f"id={mt.group(1)}{name}-{mt.group(2)}{mt.group(1)}", text)
    text = _URL.sub(lambda mt: f"url(#{name}-{mt.group(1)})", text)
    text = _ROOT.sub(lambda mt: _root_tag(name, mt.group(0)), text, count=1)
    return text.strip()
