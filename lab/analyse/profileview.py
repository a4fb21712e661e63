"""Reading a run's CPU profiles (written by `make profile`, lab.studies.profile):
folded stacks ("frame;frame;frame count" per line, kernel frames ending in
`_[k]`, as perf's stackcollapse and async-profiler write them) turned into
the top functions, the user/kernel split (typed facts, which
lab.present.profiletable words), and a flame graph as a plain SVG
(rectangles with <title> tooltips, no script), which the report links.

Debian packages no flame-graph renderer and the lab takes no third-party
Python, so the SVG is drawn here: one rectangle per frame, its width its
share of the samples, children above their parent."""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from html import escape
from pathlib import Path

from lab.record import files
from lab.record.profiles import FOLDED, Profile, read_folded

FLAMEGRAPH = "flamegraph.svg"
KERNEL = "_[k]"
TOP = 12


@dataclass(frozen=True)
class Summary:
    samples: int
    kernel: int                     # samples whose leaf frame is in the kernel
    top_self: list[tuple[str, int]]     # leaf frames (where the CPU was)
    top_total: list[tuple[str, int]]    # frames anywhere on the stack (inclusive)

    @property
    def kernel_pct(self) -> float:
        return 100.0 * self.kernel / self.samples if self.samples else 0.0


def summarize(stacks: list[tuple[list[str], int]], thread_root: bool = False,
              top: int = TOP) -> Summary:
    """thread_root: each stack starts with its thread's name (perf's stackcollapse)."""
    own: dict[str, int] = {}
    total: dict[str, int] = {}
    samples = kernel = 0
    for frames, n in stacks:
        if thread_root and len(frames) > 1:
            frames = frames[1:]
        samples += n
        leaf = frames[-1]
        kernel += n if leaf.endswith(KERNEL) else 0
        own[leaf] = own.get(leaf, 0) + n
        for f in set(frames):
            total[f] = total.get(f, 0) + n
    def best(d: dict[str, int]) -> list[tuple[str, int]]:
        return sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return Summary(samples, kernel, best(own), best(total))


# ---------------------------------------------------------------- the flame graph

@dataclass
class Node:
    name: str
    count: int = 0
    children: dict[str, "Node"] | None = None


def tree(stacks: list[tuple[list[str], int]]) -> Node:
    root = Node("all", 0, {})
    for frames, n in stacks:
        root.count += n
        node = root
        for f in frames:
            assert node.children is not None
            child = node.children.get(f)
            if child is None:
                child = node.children[f] = Node(f, 0, {})
            child.count += n
            node = child
    return root


def color(name: str) -> str:
    """Kernel frames blue-grey, user frames warm; the hue fixed by the name."""
    h = zlib.crc32(name.encode()) % 40
    if name.endswith(KERNEL):
        return f"hsl({200 + h // 2},35%,{62 + h % 10}%)"
    return f"hsl({10 + h},80%,{55 + h % 12}%)"


def svg(stacks: list[tuple[list[str], int]], title: str, width: int = 1200,
        row: int = 17) -> str:
    root = tree(stacks)
    rects: list[str] = []
    depth_max = 0

    def draw(node: Node, x: float, depth: int) -> None:
        nonlocal depth_max
        w = width * node.count / root.count if root.count else 0
        if w < 0.3:
            return
        depth_max = max(depth_max, depth)
        pct = 100.0 * node.count / root.count
        label = escape(node.name)
        text = escape(node.name[: int(w / 7)]) if w > 21 else ""
        rects.append(f'<g><title>{label} ({node.count} samples, {pct:.2f}%)</title>'
                     f'<rect x="{x:.1f}" y="{{y{depth}}}" width="{w:.1f}" height="{row - 1}" '
                     f'fill="{color(node.name)}" rx="2"/>'
                     + (f'<text x="{x + 3:.1f}" y="{{t{depth}}}">{text}</text>' if text else "")
                     + "</g>")
        cx = x
        for child in sorted((node.children or {}).values(), key=lambda c: c.name):
            draw(child, cx, depth + 1)
            cx += width * child.count / root.count
    draw(root, 0.0, 0)
    top = 40
    height = top + (depth_max + 1) * row + 10
    body = "".join(rects)
    for d in range(depth_max + 1):          # children above their parent: the root at the bottom
        y = height - 10 - (d + 1) * row
        body = body.replace(f"{{y{d}}}", str(y)).replace(f"{{t{d}}}", str(y + row - 5))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="11">'
            f'<rect width="100%" height="100%" fill="#fdfdfd"/>'
            f'<text x="4" y="16" font-size="14">{escape(title)}</text>'
            f'<text x="4" y="32" fill="#555">{root.count} samples; width: share of the '
            f'samples; blue-grey: kernel frames (_[k]); hover a frame for its figures</text>'
            f"{body}</svg>\n")


def write_flamegraph(folder: Path, title: str, thread_root: bool = False) -> str:
    """folder/flamegraph.svg from folder/profile.folded; returns the file's name.
    thread_root: each stack starts with its thread's name, dropped here so that
    the threads' (AWS's tasks') identical stacks merge."""
    stacks = read_folded(folder / FOLDED)
    if thread_root:
        stacks = [(frames[1:] if len(frames) > 1 else frames, n) for frames, n in stacks]
    files.write_atomic(folder / FLAMEGRAPH, svg(stacks, title))
    return FLAMEGRAPH


# ---------------------------------------------------------------- the analysis and summary

@dataclass(frozen=True)
class ProfileSummary:
    info: Profile
    summary: Summary


def analyse(profiles: dict[str, Profile | str]) -> dict[str, ProfileSummary | str]:
    return {name: p if isinstance(p, str) else
            ProfileSummary(p, summarize(p.stacks, p.thread_root)) for name, p in profiles.items()}
