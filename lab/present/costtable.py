"""make cost's figure in words (lab.analyse.costview's facts): the notes, the
head and cells of its table, its titles, written once for summary.md and
report.html; and its Markdown section of summary.md."""
from __future__ import annotations

from lab.analyse.costview import CostAnalysis, ServerCost
from lab.analyse.metrics import Spread
from lab.analyse.wording import DASH, median_range
from lab.setup.markdown import Table

TITLE = "Instructions per request (cachegrind)"
KERNEL_NOTE = ("Instructions are counted in user space only: the kernel's work for the "
               "server (TCP, syscalls) is not in this figure. The CPU µs/request beside it "
               "come from a plain start (no valgrind) and /proc, which splits user and "
               "kernel time; they move with the host's load, the instruction count does not.")
FUNCTIONS_NOTE = ("cachegrind's function view of the extra requests: cg_merge of each "
                  "start's processes, cg_diff of the two starts, cg_annotate, divided by the "
                  "extra requests (first repetition); ??? is code without a symbol.")
HEAD = ["server", "c", "instructions/request (user space)", "spread (max/min)",
        "CPU µs/req user (plain start)", "CPU µs/req kernel (plain start)",
        "req/s (plain start, noisy)"]
FUNCTIONS_HEAD = ["function", "instructions/request"]


def functions_title(server: str, level: int) -> str:
    return f"{server}: instructions per request by function (c={level})"


def pct(s: Spread) -> str:
    return f"{100 * (s.ratio - 1):.2f}%" if s.n > 1 else DASH


def rows(found: list[ServerCost]) -> list[list[str]]:
    """Plain-text cells of HEAD's columns."""
    out = []
    for s in found:
        if not s.applicable:
            out.append([s.server, DASH, s.reason, "", "", "", ""])
        elif s.error and not s.levels:
            out.append([s.server, DASH, f"failed: {s.error}", "", "", "", ""])
        for x in s.levels:
            out.append([s.server, str(x.level), median_range(x.per_request, fmt=",.1f"),
                        pct(x.per_request), median_range(x.user_us, fmt=".1f"),
                        median_range(x.sys_us, fmt=".1f"), median_range(x.rate_rps)])
    return out


def markdown(c: CostAnalysis) -> list[str]:
    lines = [f"## {TITLE}", "", KERNEL_NOTE, "",
             f"Conditions: {c.condition}.", "",
             *Table(HEAD, rows(c.servers), right=range(1, len(HEAD))).escaped().lines()]
    if c.verdicts:
        lines += ["", "### Verdicts on instructions per request", ""]
        lines += [f"- c={v.level}: {v.a} vs {v.b}: {v.text}" for v in c.verdicts]
    for s in c.servers:
        for level, found in sorted(s.functions.items())[:1]:
            lines += ["", f"### {functions_title(s.server, level)}", "", FUNCTIONS_NOTE, ""]
            lines += Table(FUNCTIONS_HEAD,
                           [[f"`{name}`", f"{ir:,.1f}"] for name, ir in found], right={1}).lines()
    errors = [f"- {s.server}: {s.error}" for s in c.servers if s.error]
    if errors:
        lines += ["", "Failed:", *errors]
    return lines
