"""make profile's figure (lab.analyse.profileview's facts) in words: the
section's title, each profile's description, the top functions' head and
cells, written once for summary.md and report.html; and its Markdown
section of summary.md."""
from __future__ import annotations

from lab.analyse.profileview import ProfileSummary, Summary
from lab.analyse.wording import link_target
from lab.record.profiles import Profile
from lab.setup.markdown import Table, md_text

HEAD = ["function (self)", "% of samples", "function (on the stack)", "% of samples"]
TITLE = "Where the time goes (CPU profiles, a separate start each)"


def unreadable(why: str) -> str:
    return f"Profile unreadable: {why}"


def rate(p: Profile) -> str:
    return "unknown" if p.rate_rps is None else f"{p.rate_rps:,.0f} req/s"


def described(p: Profile, s: Summary) -> str:
    return (f"{p.profiler}: {p.settings}; {p.seconds}s at {p.axis} {p.level} ({p.client}), "
            f"rate while profiled {rate(p)}. {s.samples} samples: "
            f"{100 - s.kernel_pct:.0f}% in user space, {s.kernel_pct:.0f}% in the kernel.")


def top_rows(s: Summary) -> list[list[str]]:
    """function (self), %, function (on the stack), %."""
    n = max(s.samples, 1)
    return [[a, f"{100 * na / n:.1f}", b, f"{100 * nb / n:.1f}"]
            for (a, na), (b, nb) in zip(s.top_self, s.top_total)]


def markdown(found: dict[str, ProfileSummary | str]) -> list[str]:
    if not found:
        return []
    lines = [f"## {TITLE}", ""]
    for name, got in found.items():
        if isinstance(got, str):
            lines += [f"### {name}", "", unreadable(got), ""]
            continue
        lines += [f"### {name}", "", described(got.info, got.summary) +
                  f" Flame graph: [{md_text(got.info.flamegraph)}]"
                  f"({link_target(got.info.flamegraph)})", "",
                  *Table(HEAD, [[f"`{a}`", x, f"`{b}`", y] for a, x, b, y in top_rows(got.summary)],
                         right={1, 3}).lines()]
        lines.append("")
    return lines
