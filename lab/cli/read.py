"""The steps that read a run made: its report and charts, its exports (BMF),
the USE table, a live view, and runs compared, tracked or checked for
agreement."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from lab.setup.paths import ROOT
from lab.record import files, folder, manifest, outputs, runlock, runrecord
from lab.present import report
from lab.setup.exits import Exit
from lab.setup.paths import cache_dir
from lab.setup.params import results_folder
from lab.cli.common import fail


def cmd_report(args: argparse.Namespace) -> int:
    from lab.present import reportpage
    run = Path(args.run)
    runrecord.load(run)                    # a folder that is not a readable run: exit 2
    files.hold(run)                        # not a link; a swap mid-step stops its writes
    runlock.refuse_busy(run, "make report")
    folder.mark_gone_runs(run.resolve().parent)    # this run's index says it too
    done, why = False, ""
    try:
        if manifest.read_manifest(run).status == "complete":   # written again: pending until done
            manifest.update(run, pend)
        with manifest.as_reported():
            print(report.write(run))
            code = reportpage.main_report(run)
        missing = [name for name in outputs.OUTPUTS if not (run / name).is_file()]
        if code == 0 and not missing:
            manifest.update(run, manifest.reported)
            done = True
            files.release(run)              # the run has ended: its reserve is not needed
        elif code == 0:
            why = f"not written: {', '.join(missing)}"
        return code
    except OSError as e:
        why = f"{e.strerror or e}"
        return fail(f"cannot write the report into {run}: {why}", Exit.FAILED)
    except KeyboardInterrupt:
        why = "interrupted"
        raise
    finally:
        if not done:
            try:
                with files.last_words():
                    manifest.update(run, lambda m: pend(m, why))
            except (OSError, files.RecordError):
                pass


def pend(m: manifest.Manifest, why: str = "") -> None:
    """A complete run whose report is being (re)written, or could not be: incomplete
    (REPORT_PENDING, and why) until every output is written."""
    if m.status == "complete":
        m.status = "incomplete"
    elif not manifest.pending(m):
        return                          # incomplete for its own reasons: they stand
    m.problems = [p for p in m.problems if not p.startswith(manifest.REPORT_PENDING)]
    m.problems.append(f"{manifest.REPORT_PENDING}{f' ({why})' if why else ''}")


def cmd_plot(args: argparse.Namespace) -> int:
    from lab.present import plot
    run = Path(args.run)
    runrecord.load(run)                    # a folder that is not a readable run: exit 2
    files.hold(run)                        # not a link; a swap mid-step stops its writes
    runlock.refuse_busy(run, "make plots")
    try:
        with manifest.as_reported():
            return plot.draw(run)
    except OSError as e:
        return fail(f"cannot write the charts into {run}: {e.strerror or e}", Exit.FAILED)


def cmd_bmf(args: argparse.Namespace) -> int:
    """A run in bencher.dev's metric format (lab.present.bmf): to --output,
    else stdout; what was left out (flagged levels, the ceiling) on stderr.
    Nothing left in: `{}` all the same, and exit 3 with the reason, as the
    gate exits when nothing was compared cleanly."""
    from lab.present import bmf
    run = Path(args.run)
    runrecord.load(run)                    # a folder that is not a readable run: exit 2
    data, left_out = bmf.of_run(run)
    for why in left_out:
        print(f"note: left out of the BMF export: {why}", file=sys.stderr)
    if args.output:
        bmf.write(Path(args.output), data)
        print(f"bmf: {args.output} ({len(data)} benchmarks)", file=sys.stderr)
    else:
        print(json.dumps(data, indent=2, sort_keys=True))
    if not data:
        print(f"bmf: nothing exported (exit {int(Exit.NOT_COMPARABLE)}): "
              f"{bmf.why_empty(left_out)}", file=sys.stderr)
        return int(Exit.NOT_COMPARABLE)
    return 0


def cmd_use(args: argparse.Namespace) -> int:
    """The USE method read off a run (lab.analyse.usemethod, worded by
    lab.present.usetable): a table per server and level."""
    from lab.present import usetable
    rec = runrecord.load(Path(args.run))       # not a readable run: exit 2
    if not rec.rows:
        return fail(f"{args.run} has no measured level to read", Exit.BAD_INPUT)
    print(usetable.markdown(rec.rows, rec.manifest.params.axis))
    return 0


def cmd_live(args: argparse.Namespace) -> int:
    """A line a second while a run's level is measured (lab.studies.live)."""
    from lab.studies import live
    return live.main(args.run, args.seconds)


def cmd_compare(args: argparse.Namespace) -> int:
    from lab.present import compare
    for run in (args.a, args.b):
        if run is not None:
            runlock.refuse_busy(Path(run), "make compare")
    params_root = ROOT / results_folder(os.environ)
    if args.b is None:                  # one paired run: its B against its A, by default at
        from lab.present import paircompare     # the run's own ALPHA and MIN_EFFECT
        recorded = paircompare.rule_settings(Path(args.a))
        settings = compare.gate_settings(
            lambda k, d: os.environ.get(k) or recorded.get(k) or d, cache_dir())
        return paircompare.main(Path(args.a), params_root, settings)
    settings = compare.gate_settings(os.environ.get, cache_dir())   # ConfigError: exit 2
    return compare.main(Path(args.a), Path(args.b), os.environ.get("FORCE") == "1", params_root,
                        settings)


def cmd_resample(args: argparse.Namespace) -> int:
    """A paired run's rule on draws of its recorded pairs (lab.analyse.resample)."""
    from lab.analyse import resample
    return resample.main(Path(args.run), args.pairs, args.draws, args.alpha, args.delta,
                         args.seed)


def cmd_history(args: argparse.Namespace) -> int:
    from lab.present import historytable
    return historytable.main(ROOT / results_folder(os.environ),
                             os.environ.get("SERVER", ""))


def cmd_agree(args: argparse.Namespace) -> int:
    """How many verdicts two runs share (lab.analyse.agree, lab.present.agreetable)."""
    from lab.present import agreetable
    return agreetable.main([args.run_a, args.run_b])
