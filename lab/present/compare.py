"""`make compare A=results/<x> B=results/<y>`: two runs side by side, and the gate.

Per server and swept value measured in both runs, the ratio B/A of the median
requests/s (and of p99 latency, RSS at the end and server CPU µs per request),
with a verdict that respects the spread of repetitions (lab.analyse.diff), and
the regression gate (lab.analyse.gate). Runs whose conditions decide the
figures are refused unless FORCE=1; lesser differences are listed.

Writes results/compare-<A>-vs-<B>[-N]/: compare.md, compare.json, compare.xml (JUnit),
compare.png/.svg (plots/compare.gp) and compare.html, and prints the table.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

from lab.setup.paths import PLOTS
from lab.analyse import analysis, diff, gate
from lab.analyse.diff import Comparison, Difference, Stats
from lab.analyse.gate import Gate, GateSettings
from lab.analyse.wording import axis_label, gp_quote, ratio as times, median_range, xlabel
from lab.present import comparepage, indexpage, junit, firstline
from lab.record import files, folder
from lab.record.manifest import Manifest
from lab.setup.exits import Exit
from lab.setup.markdown import Table, md_text
from lab.setup.whynot import Reason

EXIT_REFUSED = int(Exit.BAD_INPUT)


# ---- text ---------------------------------------------------------------------

def level_column(m: Manifest) -> str:
    """The tables' column of the swept axis a manifest records ("c", ...)."""
    return axis_label(m.params.axis or "level")


def row_said(c: Comparison, g: Gate | None) -> tuple[str, str]:
    """A row's verdict and its colour class, worded from the gate where the
    gate refused the level (not measured cleanly, no verdict possible): a
    ratio beside a refused level is a figure, never "faster by N%". The
    colour comes from the gate's outcome only (red: a regression)."""
    if g is None:
        return c.said(), KIND_CLASS.get(c.kind, "")
    mine = [k for k in g.checks if k.server == c.server and k.value == c.value
            and not k.levels and k.metric in ("rate", "p99")
            and k.outcome != gate.NOT_APPLICABLE]
    refused = [k for k in mine if k.outcome not in (gate.PASS, gate.REGRESSION)]
    if refused:
        return f"not judged by the gate: {refused[0].text}", ""
    if not mine and g.outcome == gate.OUTCOMES[Exit.NOT_COMPARABLE]:
        why = next((k.text for k in g.checks if k.server == c.server and k.value == c.value
                    and not k.levels),
                   "no gated figure at this level")
        return f"not gated: {why}", ""
    worse = any(k.outcome == gate.REGRESSION for k in mine)
    return c.said(), GATE_CLASS[gate.REGRESSION] if worse else ""


def table(rows: list[Comparison], level: str, g: Gate | None = None) -> list[str]:
    return Table(["server", level, "A req/s median [min–max]", "B req/s median [min–max]",
                  "B/A", "verdict"],
                 [[c.server, str(c.value), median_range(c.a), median_range(c.b),
                   times(c.ratios.get('rate')), row_said(c, g)[0]] for c in rows]).lines()


def other_ratios(rows: list[Comparison], level: str) -> list[str]:
    return Table(["server", level, "p99 ms B/A", "RSS end B/A", "CPU µs/req B/A"],
                 [[c.server, str(c.value), times(c.ratios.get('p99_ms')),
                   times(c.ratios.get('rss_end_kb')), times(c.ratios.get('cpu_us_per_req'))]
                  for c in rows if c.kind != "missing"]).lines()


def conditions(m: Manifest) -> str:
    return analysis.conditions(m)


def lead_line(m: Manifest, g: Gate | None) -> str:
    """The first line of compare.md and compare.html (lab.present.firstline)."""
    return firstline.compare_line(m, g)


def run_id(run: Path, m: Manifest) -> str:
    return m.run_id or run.name


NOTE = ("Verdicts: by requests/s (open loop: by p99 latency), through the lab's one "
        "decision rule: an exact rank test of the starts; \"faster\"/\"slower\" when it "
        "rejects at α and the shift is at least δ, \"equivalent\" when the interval lies "
        "inside ±δ, else \"undecided\" with the reason (docs/methodology.md); a client-bound "
        "figure is a lower bound.")


def markdown(ids: tuple[str, str], ms: tuple[Manifest, Manifest], rows: list[Comparison],
             diffs: list[Difference], forced: bool, g: Gate | None = None) -> str:
    level = level_column(ms[0])
    lines = [f"# Compare {md_text(ids[0])} (A) vs {md_text(ids[1])} (B)", "",
             md_text(lead_line(ms[0], g)), "",
             f"A: {md_text(conditions(ms[0]))}.", f"B: {md_text(conditions(ms[1]))}.", ""]
    hard = [d for d in diffs if d.matters]
    if forced and hard:
        lines += [f"- Warning (FORCE=1): {md_text(d.text())} — the figures may not be "
                  "comparable." for d in hard] + [""]
    lines += table(rows, level, g) + ["", "## Other ratios (B/A of medians)", ""]
    lines += other_ratios(rows, level)
    lines += ["", "## Differences in conditions", ""]
    soft = [d for d in diffs if not d.matters]
    lines += [f"- {md_text(d.text())}" for d in hard + soft] or ["- none recorded"]
    lines += ["", NOTE, ""]
    return "\n".join(lines)


def gate_lines(g: Gate) -> list[str]:
    """The gate's part of compare.md (and of what compare prints)."""
    lines = [f"## Gate: {g.outcome} (exit {g.code})", "",
             f"Gated on {' '.join(g.metrics)}; MIN_EFFECT={g.min_effect_pct:g}% (δ); "
             f"ALPHA={100 * g.alpha:g}% for the compare: half for the checks across the "
             f"levels, half for those at each level ({100 * g.alpha_each:.2g}% a level check; "
             f"Bonferroni). {g.reason}.",
             ""]
    lines += [f"- noise floor for {name}: {note}" for name, note in g.floors.items()]
    lines += [f"- {g.matched}"] if g.matched else []
    lines += [""] + Table(
        comparepage.GATE_HEAD,
        [[c.server, c.where(), c.metric, c.outcome,
          against_a(c.worse_pct),
          '–' if c.threshold_pct is None else f'{c.threshold_pct:.1f}%',
          c.text.replace('|', '/')] for c in g.checks]).lines()
    return lines


def against_a(worse_pct: float | None) -> str:
    """The gate table's cell of B against A: "worse by 5.2%" or "better by
    88.1%" (never a negative "worse"), "–" where nothing was measured."""
    if worse_pct is None:
        return "–"
    return f"worse by {worse_pct:.1f}%" if worse_pct >= 0 else f"better by {-worse_pct:.1f}%"


def as_json(ids: tuple[str, str], runs: tuple[Path, Path], ms: tuple[Manifest, Manifest],
            rows: list[Comparison], diffs: list[Difference], forced: bool) -> dict[str, Any]:
    side = [{"run_id": ids[i], "path": str(runs[i]), "conditions": conditions(ms[i])}
            for i in (0, 1)]
    return {"made": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "a": side[0], "b": side[1], "axis": ms[0].params.axis,
            "forced": forced,
            "warnings": [d.text() for d in diffs if d.matters],
            "differences": [asdict(d) for d in diffs],
            "comparisons": [asdict(c) for c in rows]}


# ---- chart --------------------------------------------------------------------

def num(x: float) -> str:
    return f"{x:g}"


def export(out: Path, stats: Stats, side: str, servers: list[str]) -> None:
    """data/<side>-<server>.dat: value median min max client_bound host_busy
    (host-busy: a level the gate refuses, marked on the chart)."""
    data = out / "data"
    for name in servers:
        lines = ["# value rate rate_lo rate_hi client_bound host_busy"]
        lines += [f"{s.value} {num(s.rate.median)} {num(s.rate.lo)} {num(s.rate.hi)} "
                  f"{int(s.client_bound)} {int(bool(s.flags.get('host-busy', 0)))}"
                  for s in stats[name]]
        files.write_atomic(data / f"{side}-{files.part(name)}.dat", "\n".join(lines) + "\n",
                           out)


def chart(out: Path, stats: tuple[Stats, Stats], ids: tuple[str, str],
          ms: tuple[Manifest, Manifest]) -> Reason:
    """Draw compare.png and compare.svg: why they could not be drawn, or None
    when they were."""
    servers = [n for n in stats[0] if stats[1].get(n) and stats[0][n]]
    if not servers:
        return "no server was measured in both runs"
    export(out, stats[0], "a", servers)
    export(out, stats[1], "b", servers)
    axis = ms[0].params.axis
    ticks = " ".join(str(v) for v in sorted({s.value for st in stats for n in servers
                                             for s in st[n]}))
    for fmt in ("png", "svg"):
        setup = (f"dir={gp_quote(str(out))}; servers={gp_quote(' '.join(servers))}; "
                 f"label_a={gp_quote(ids[0])}; label_b={gp_quote(ids[1])}; "
                 f"cond_a={gp_quote(f'A: {conditions(ms[0])}')}; "
                 f"cond_b={gp_quote(f'B: {conditions(ms[1])}')}; "
                 f"xlabel={gp_quote(xlabel(axis))}; xticks={gp_quote(ticks)}; fmt='{fmt}'")
        try:
            done = subprocess.run(["gnuplot", "-e", setup, str(PLOTS / "compare.gp")],
                                  capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"gnuplot could not run: {e}"
        if done.returncode != 0:
            return f"gnuplot compare.gp failed: {done.stderr.strip()[-500:]}"
    return None


# ---- HTML (lab.present.comparepage) ----------------------------------------------

KIND_CLASS = {"faster": "better", "faster-at-least": "better", "slower": "worse",
              "slower-at-least": "worse"}


def page(ids: tuple[str, str], ms: tuple[Manifest, Manifest], rows: list[Comparison],
         diffs: list[Difference], forced: bool, chart_path: Path | None,
         chart_problem: Reason, g: Gate | None = None) -> str:
    said = [row_said(c, g) for c in rows]
    return comparepage.render(comparepage.ComparePage(
        ids=ids, conditions=(conditions(ms[0]), conditions(ms[1])),
        lead=lead_line(ms[0], g),
        warnings=[f"FORCE=1: {d.text()} — the figures may not be comparable."
                  for d in diffs if d.matters and forced],
        level=level_column(ms[0]),
        rows=[comparepage.RateRow(c.server, c.value, median_range(c.a), median_range(c.b),
                                  times(c.ratios.get("rate")), text, cls)
              for c, (text, cls) in zip(rows, said)],
        others=[comparepage.RatioRow(c.server, c.value, times(c.ratios.get("p99_ms")),
                                     times(c.ratios.get("rss_end_kb")),
                                     times(c.ratios.get("cpu_us_per_req")))
                for c in rows if c.kind != "missing"],
        note=NOTE, chart=chart_path, chart_problem=chart_problem,
        differences=[d.text() for d in diffs],
        gate=None if g is None else comparepage.GateView(
            outcome=g.outcome, summary=f"{g.outcome} (exit {g.code}): {g.reason}",
            notes=[f"GATE={' '.join(g.metrics)}, MIN_EFFECT={g.min_effect_pct:g}% (δ), "
                   f"ALPHA={100 * g.alpha:g}% (half across the levels, half at each level: "
                   f"{100 * g.alpha_each:.2g}% a level check)"]
            + [f"noise floor for {n}: {t}" for n, t in g.floors.items()]
            + ([g.matched] if g.matched else []),
            rows=[comparepage.GateRow(
                c.server, c.where(), c.metric, c.outcome, GATE_CLASS.get(c.outcome, ""),
                against_a(c.worse_pct),
                "–" if c.threshold_pct is None else f"{c.threshold_pct:.1f}%", c.text)
                for c in g.checks])))


GATE_CLASS = {"regression": "worse", "pass": "better"}


# ---- the command ---------------------------------------------------------------

def refusal(diffs: list[Difference]) -> str:
    hard = [d for d in diffs if d.matters]
    return ("error: these runs were measured under conditions that decide the figures, "
            "so they are not compared:\n" + "\n".join(f"  - {d.text()}" for d in hard)
            + "\nFORCE=1 compares them anyway, with a warning for each difference.")


def main(a: Path, b: Path, force: bool, out_root: Path,
         settings: GateSettings = GateSettings()) -> int:
    """Compare run B against run A: 0 B no worse, 1 B worse beyond the noise
    (or the chart failed with the gate passed), 2 refused (bad input), 3
    nothing compared cleanly (lab.setup.exits)."""
    got = [diff.load(a), diff.load(b)]
    errors = [g for g in got if isinstance(g, str)]
    if errors:
        print("\n".join(f"error: {x}" for x in errors), file=sys.stderr)
        return EXIT_REFUSED
    (ma, sa, ca), (mb, sb, cb) = [g for g in got if not isinstance(g, str)]
    same = diff.why_not_two_runs(a, b, ma, mb)
    if same is not None and not same.startswith("warning:"):
        print(f"error: {same}", file=sys.stderr)
        return EXIT_REFUSED
    if same is not None:
        print(same, file=sys.stderr)
    diffs = diff.differences(ma, mb)
    if any(d.matters for d in diffs) and not force:
        print(refusal(diffs), file=sys.stderr)
        return EXIT_REFUSED
    ids, ms = (run_id(a, ma), run_id(b, mb)), (ma, mb)
    rows = diff.compare_stats(sa, sb)
    g = gate.of(sa, sb, (ca, cb), ms, settings)
    if not any(c.kind != "missing" for c in rows) and not g.checks:
        print(f"error: {ids[0]} and {ids[1]} have no server measured at the same level in "
              f"both: nothing to compare (no folder made){cost_hint(ca, cb, settings)}",
              file=sys.stderr)
        return int(Exit.NOT_COMPARABLE)
    out = folder.new_folder(out_root, f"compare-{ids[0]}-vs-{ids[1]}")
    try:
        text = markdown(ids, ms, rows, diffs, force, g) + "\n".join(gate_lines(g)) + "\n"
        files.write_atomic(out / "compare.md", text)
        problem = chart(out, (sa, sb), ids, ms) if rows else None
        svg = out / "compare.svg"
        files.write_atomic(out / "compare.html", page(ids, ms, rows, diffs, force,
                                                     svg if svg.is_file() else None, problem,
                                                     g))
        junit.write(out / "compare.xml", g, ids, level_column(ms[0]))
        # compare.json last: the index lists a folder with it as a finished comparison
        files.write_json(out / "compare.json",
                          {**as_json(ids, (a, b), ms, rows, diffs, force), "gate": asdict(g)})
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)     # a failed comparison leaves no folder
        raise
    shown(text, out, out_root)
    for name, note in g.floors.items():
        print(f"noise floor for {name}: {note}", file=sys.stderr)
    if g.matched:
        print(g.matched, file=sys.stderr)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
    last_line(g)
    if problem and g.code == Exit.OK:
        return int(Exit.FAILED)
    return g.code


def cost_hint(ca: diff.Costs, cb: diff.Costs, settings: GateSettings) -> str:
    """Where both runs are cost runs: how the gate matches their servers."""
    if ca is None or cb is None:
        return ""
    names = [", ".join(s.server for s in c.servers if s.applicable and not s.error) or "none"
             for c in (ca, cb)]
    how = ("" if "instructions" in settings.metrics else
           "; instructions per request are gated with GATE=instructions")
    return (f". Two cost runs (A counted {names[0]}, B {names[1]}) are compared server by "
            "server by name, or, where each counted one server, those two (a base's build "
            f"against the change's: docs/ci.md){how}")


def shown(text: str, out: Path, out_root: Path) -> None:
    """A comparison written: its text printed, its folder and the index said
    (the index rewritten; a results folder where it cannot be is noted)."""
    print(text)
    print(f"comparison: {out}", file=sys.stderr)
    try:
        index = indexpage.write_index(out_root)
    except OSError as e:
        print(f"note: no index written in {out_root}: {e.strerror or e}", file=sys.stderr)
        return
    if index is not None:
        print(f"index: {index}", file=sys.stderr)


def last_line(g: Gate) -> None:
    """The gate's arithmetic, then its last line: `gate: <outcome> (exit N):
    <one-line reason>` (what a CI log shows last), for both gates."""
    if g.detail:
        print(f"why: {g.detail}", file=sys.stderr)
    print(f"gate: {g.outcome} (exit {g.code}): {g.reason}", file=sys.stderr)


def gate_settings(environ: Callable[[str, str], str], cache: Path | None) -> GateSettings:
    """GATE and MIN_EFFECT from the environment, checked by their registry
    entries (ConfigError: exit 2)."""
    from lab.setup.params import SETTINGS, check_alpha, check_gate, check_min_effect
    unset = "\0"                        # GATE not in the environment: its default
    given = environ("GATE", unset)
    wanted = check_gate(SETTINGS["GATE"].default if given == unset else given)
    effect = check_min_effect(environ("MIN_EFFECT", SETTINGS["MIN_EFFECT"].default))
    alpha = check_alpha(environ("ALPHA", SETTINGS["ALPHA"].default))
    assert isinstance(wanted, tuple) and isinstance(effect, float) and isinstance(alpha, float)
    return GateSettings(tuple(str(w) for w in wanted), effect, cache, alpha, chosen=given != unset)
