"""The one Markdown writer (lab.setup.markdown): its tables, and the tables
of the modules that hand it their rows, byte for byte as before it existed
(the expected texts were written by each module's own code, then kept).
Each module's rows are replaced here by fixed ones, with a | and an empty
cell among them, so what is checked is the Markdown, not the figures."""
from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conftest import ROOT
from lab.record.hostfacts import HostFacts
from lab.setup import markdown
from lab.setup.markdown import Span, Table

pytestmark = pytest.mark.unit

ROWS = [["a", "b|c", ""], ["1", "2", "3"]]


def test_a_table_is_its_head_its_rule_and_a_line_per_row() -> None:
    t = Table(["x", "y", "z"], ROWS, right={1})
    assert t.lines() == ["| x | y | z |", "|---|---:|---|", "| a | b|c |  |", "| 1 | 2 | 3 |"]
    assert t.escaped().lines()[2] == "| a | b\\|c |  |"
    assert Table(["x", "y", "z"], [Span(1, "*h*")]).lines()[2] == "| | *h* | |"


def test_outside_text_cannot_leave_its_cell() -> None:
    assert markdown.md_text("a|b\n*c*") == "a\\|b \\*c\\*"
    assert markdown.md_code("x`y|z") == "``x`y\\|z``"
    assert markdown.md_cell("a|b\nc") == "a\\|b c"


def test_costview_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.analyse import costview
    from lab.present import costtable
    monkeypatch.setattr(costtable, "rows", lambda servers: [["s|1", "–", "failed: x", "", "", "", ""]])
    c = costview.CostAnalysis(condition="cond", servers=[], verdicts=[])
    assert costtable.markdown(c)[6:] == [
        "| server | c | instructions/request (user space) | spread (max/min) | CPU µs/req user "
        "(plain start) | CPU µs/req kernel (plain start) | req/s (plain start, noisy) |",
        "|---|---:|---:|---:|---:|---:|---:|", "| s\\|1 | – | failed: x |  |  |  |  |"]


def test_use_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.present import usetable
    monkeypatch.setattr(usetable, "tables", lambda rows: [("nginx", 4, [["cpu", "1|2", "", "–"]])])
    assert usetable.markdown([], "concurrency") == (
        "## nginx, c=4\n\n| resource | utilisation | saturation | errors |\n|---|---|---|---|\n"
        "| cpu | 1\\|2 |  | – |\n")


def test_memsplit_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.present import memtable
    monkeypatch.setattr(memtable, "rows", lambda m, stats: [["a", "4", "1", "", "2", "3", "4", "5"]])
    got = memtable.markdown(Any, {}, "c")   # type: ignore[arg-type]
    assert got[2:5] == [
        "| server | c | RSS MB (/proc/PID/stat) | PSS MB | private MB | shared MB | "
        "anonymous MB | private share |", "|---|---|---|---|---|---|---|---|",
        "| a | 4 | 1 |  | 2 | 3 | 4 | 5 |"] and got[-1] == memtable.SHORT_NOTE


def test_profile_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.present import profiletable
    monkeypatch.setattr(profiletable, "described", lambda info, summary: "Said.")
    monkeypatch.setattr(profiletable, "top_rows", lambda summary: [["f|g", "1.0", "h", "2.0"]])
    got = SimpleNamespace(info=SimpleNamespace(flamegraph="flame.svg"), summary=None)
    assert profiletable.markdown({"a": got, "b": "gone"}) == [   # type: ignore[dict-item]
        "## Where the time goes (CPU profiles, a separate start each)", "",
        "### a", "", "Said. Flame graph: [flame.svg](flame.svg)", "",
        "| function (self) | % of samples | function (on the stack) | % of samples |",
        "|---|---:|---|---:|", "| `f|g` | 1.0 | `h` | 2.0 |", "",
        "### b", "", "Profile unreadable: gone", ""]


def test_agree_table() -> None:
    from lab.analyse import agree
    from lab.present import agreetable
    o = agree.Outcome("faster", "a", 3.0, "a faster")
    p = agree.Pair(4, "a", "b", (o, o), (o, o))
    assert agreetable.report([p], ("r1", "r2"))[:4] == [
        "# Agreement of r1 and r2", "",
        "| level | pair | req/s (1) | req/s (2) | CPU/req (1) | CPU/req (2) |",
        "|---|---|---|---|---|---|"]
    assert agreetable.report([p], ("r1", "r2"))[4] == \
        "| 4 | a vs b | a faster | a faster | a faster | a faster |"


def test_calibrate_table() -> None:
    from lab.studies import calibrate
    x = SimpleNamespace(rate_rps=1234.5, client_cpu_pct=50.0, host_busy_pct=None, steal_pct=1.0)
    got = SimpleNamespace(version="4.1", modes={"close": {1: x}}, refused={"close": {2: "busy|x"}})
    cal = SimpleNamespace(levels=[1, 2], extra={}, ceiling="nginx", duration_s=2,
                          pinning=SimpleNamespace(server_cpus="0", client_cpus="1"),
                          topology="local x", host=HostFacts(cpu_model="m"), clients={"siege": got})
    assert calibrate.table(cal).splitlines()[2:] == [   # type: ignore[arg-type]
        "| client | connection | c=1 | c=2 |", "|---|---|---|---|",
        "| siege 4.1 | close | 1,234 req/s (client CPU 50%, host busy 0%, steal 1%) | "
        "– (not saved: busy|x) |",
        "| siege 4.1 | keep-alive | – | – |"]


def test_noise_table(capsys: pytest.CaptureFixture[str]) -> None:
    from lab.studies import noise
    noise.print_floors("a", [1, 2], {"rate": 1.5})
    assert capsys.readouterr().out == \
        "| metric | A/A floor (a vs a#2, largest over levels 1 2) |\n|---|---|\n| rate | 1.50% |\n"


def test_only_the_markdown_module_writes_a_table_rule() -> None:
    """No module but lab/setup/markdown.py writes a table's '|---' rule."""
    found = []
    for path in sorted((ROOT / "lab").rglob("*.py")):
        if path == ROOT / "lab" / "setup" / "markdown.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and "---|" in node.value:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found

