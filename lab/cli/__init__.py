"""`python3 -m lab STEP`: the steps run-benchmark.sh calls, top-down.

Exit codes: lab/setup/exits.py (`python3 -m lab exits`): 0 done, 1 a failure
while running (results kept, marked incomplete), 2 bad input or missing
prerequisites (nothing started), 3 compare: nothing comparable, 130
interrupted.
"""
from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, NoReturn

from lab.host import procs
from lab.record import files
from lab.setup.exits import Exit
from lab.setup.params import ConfigError
from lab.setup.servers import ManifestError
from lab.cli.common import CLOSING_VARIABLE, STOP_SIGNALS, Stopped, fail


def step(family: str, name: str) -> Callable[[argparse.Namespace], int]:
    """A step's function, imported from lab/cli/<family>.py when it runs: a
    step pays only for its own imports (each lab step is a process of its own;
    importing every family cost ~0.6 s a step here)."""
    def run(args: argparse.Namespace) -> int:
        fn: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module(f"lab.cli.{family}"), name)
        return fn(args)
    run.__name__ = name
    return run


cmd_build, cmd_check, cmd_check_servers, cmd_deps, cmd_exits, cmd_list, \
    cmd_settings = (step("prepare", n) for n in (
        "cmd_build", "cmd_check", "cmd_check_servers", "cmd_deps", "cmd_exits", "cmd_list",
        "cmd_settings"))
cmd_down, cmd_finish, cmd_gone, cmd_guard, cmd_images, cmd_new_run, cmd_next, cmd_probe, \
    cmd_rerun, cmd_sweep, cmd_up = (step("run", n) for n in (
        "cmd_down", "cmd_finish", "cmd_gone", "cmd_guard", "cmd_images", "cmd_new_run",
        "cmd_next", "cmd_probe", "cmd_rerun", "cmd_sweep", "cmd_up"))
cmd_agree, cmd_bmf, cmd_compare, cmd_history, cmd_live, cmd_plot, cmd_report, cmd_resample, \
    cmd_use = (step("read", n) for n in (
        "cmd_agree", "cmd_bmf", "cmd_compare", "cmd_history", "cmd_live", "cmd_plot",
        "cmd_report", "cmd_resample", "cmd_use"))
cmd_calibrate, cmd_claims, cmd_cost, cmd_noise, cmd_profile, cmd_reproduce, \
    cmd_workshop_host, cmd_workshop_prepare = (step("studies", n) for n in (
        "cmd_calibrate", "cmd_claims", "cmd_cost", "cmd_noise", "cmd_profile", "cmd_reproduce",
        "cmd_workshop_host", "cmd_workshop_prepare"))

def run_folder(text: str) -> str:
    """A run folder as given (RUN=, A=, B=, RUNS=): made absolute once, here,
    against the folder the command was typed in, so that `results/<run>`,
    `results/<run>/` and `$PWD/results/<run>` are the same run in every step
    (perf, given a folder inside a relative RUN, ran elsewhere and failed).
    Symbolic links are left as they are (os.path.abspath); "" stays "" (lab
    live: the newest run)."""
    return os.path.abspath(text) if text else text


def bounded(kind: type[int] | type[float], lo: float, hi: float, what: str,
            lo_open: bool = False) -> Callable[[str], int | float]:
    """An argparse type: a number of `kind` from lo to hi (lo excluded when
    lo_open), else argparse's own error (exit 2) saying the range."""
    def parse(text: str) -> int | float:
        try:
            x = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number ({what})") from None
        if not (lo < x if lo_open else lo <= x) or not x <= hi:     # nan fails both
            edge = f"above {lo:g}" if lo_open else f"from {lo:g}"
            raise argparse.ArgumentTypeError(f"{text} is out of range: {what}, {edge} "
                                             f"to {hi:g}")
        return x
    return parse


class Unparsed(Exception):
    """What Strict raises where argparse would print an error and exit."""


class Strict(argparse.ArgumentParser):
    """A parser that raises Unparsed on bad arguments instead of printing."""

    def error(self, message: str) -> NoReturn:
        raise Unparsed(message)


def parser(step: str = "") -> argparse.ArgumentParser:
    """The command line. With `step`, only that step's parser is made (and bad
    arguments raise Unparsed): making all ~40 cost 10-25 ms of each step."""
    p = (Strict if step else argparse.ArgumentParser)(
        prog="python3 -m lab", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="step", required=True)
    others = argparse.ArgumentParser(add_help=False, conflict_handler="resolve")

    def add(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, **kwargs) if not step or name == step else others
    add("list", help="servers found from their manifests").set_defaults(fn=cmd_list)
    add("check", help="validate the settings (exit 2 when bad), print the servers SERVER "
        "names").set_defaults(fn=cmd_check)
    sp = add("check-servers", help="each server's checklist: manifest, Maven module "
             "or Ada project, build inputs, Dockerfile and compose service (exit 2 "
             "with one line per problem)")
    sp.add_argument("folder", nargs="?", default="", help="one server folder (default: all)")
    sp.set_defaults(fn=cmd_check_servers)
    sp = add("settings", help="every setting the lab reads (make help)")
    sp.add_argument("--markdown", action="store_true", help="docs/settings.md's table")
    sp.set_defaults(fn=cmd_settings)
    sp = add("exits", help="the lab's exit codes (make help)")
    sp.add_argument("--markdown", action="store_true", help="docs/settings.md's table")
    sp.set_defaults(fn=cmd_exits)
    sp = add("next", help="print the next round of starts of a run (ABBA), "
             "nothing when done (REPEAT=auto: only undecided pairs)")
    sp.add_argument("run", type=run_folder)
    sp.add_argument("servers", nargs="*")
    sp.set_defaults(fn=cmd_next)
    for name, fn, text in (("deps", cmd_deps, "install missing system packages"),
                           ("build", cmd_build, "set up toolchains and build what changed")):
        sp = add(name, help=text)
        sp.add_argument("servers", nargs="*")
        sp.set_defaults(fn=fn)
    add("up", help="set up the topology (namespaces, links, ssh master)"
        ).set_defaults(fn=cmd_up)
    add("down", help="undo `up` (always safe to run)").set_defaults(fn=cmd_down)
    add("guard", help="run-benchmark.sh's guard: lab down and the run marked "
        "interrupted when the script and its steps vanish").set_defaults(fn=cmd_guard)
    sp = add("gone", help="a vanished step's keeper: mark its run interrupted "
             "(lab.record.runlock.guard)")
    sp.add_argument("run", type=run_folder)
    sp.add_argument("--remove", default="", help="a partial folder inside the run")
    sp.add_argument("--problem", default="", help="what to record in the manifest")
    sp.set_defaults(fn=cmd_gone)
    add("images", help="RUNTIME=docker: make debian:bullseye and debian:bookworm "
        "locally (debootstrap, docker import) unless they exist"
        ).set_defaults(fn=cmd_images)
    add("new-run", help="make a run folder, print its path").set_defaults(fn=cmd_new_run)
    sp = add("probe", help="robustness probe of one server (a separate start)")
    sp.add_argument("run", type=run_folder)
    sp.add_argument("server")
    sp.set_defaults(fn=cmd_probe)
    sp = add("sweep", help="verify, warm up and sweep one server, one repetition (PAIRED: "
             "A+B, one start pair)")
    sp.add_argument("run", type=run_folder)
    sp.add_argument("server")
    sp.add_argument("rep", type=int, nargs="?", default=1)
    sp.set_defaults(fn=cmd_sweep)
    add("calibrate", help="what each installed client drives against the ceiling"
        ).set_defaults(fn=cmd_calibrate)
    sp = add("compare", help="run B against run A, with noise-aware verdicts; one paired "
             "run: its second server against its first")
    sp.add_argument("a", type=run_folder)
    sp.add_argument("b", nargs="?", type=run_folder)
    sp.set_defaults(fn=cmd_compare)
    add("noise", help="this host's A/A noise of SERVER: the same server twice in "
        "one run; its floor kept for compare (make noise)").set_defaults(fn=cmd_noise)
    add("history", help="SERVER across the runs in RESULTS, as a table "
        "(make history)").set_defaults(fn=cmd_history)
    sp = add("resample", help="a paired run's rule on draws of fewer pairs: how often it "
             "decides (A/A: the realized false alarms and equivalents)")
    sp.add_argument("run", type=run_folder)
    # bounded: each draw runs the exact test, whose null distribution grows with
    # the pairs cubed, so the work a call may ask for is bounded too
    sp.add_argument("--pairs", type=bounded(int, 0, 100, "pairs a draw"), default=0,
                    help="pairs a draw, up to 100 (0: as recorded)")
    sp.add_argument("--draws", type=bounded(int, 1, 100_000, "draws"), default=1000,
                    help="draws, 1 to 100,000")
    sp.add_argument("--alpha", type=bounded(float, 0, 0.5, "α as a fraction", lo_open=True),
                    default=None, help="a fraction above 0 up to 0.5 (0.01); default: "
                    "the run's ALPHA")
    sp.add_argument("--delta", type=bounded(float, 0, 100, "δ in percent", lo_open=True),
                    default=None, help="percent above 0 up to 100; default: the run's "
                    "MIN_EFFECT")
    sp.add_argument("--seed", type=int, default=1)
    sp.set_defaults(fn=cmd_resample)
    sp = add("finish", help="mark a run complete or incomplete")
    sp.add_argument("run", type=run_folder)
    sp.add_argument("status", type=int)
    sp.set_defaults(fn=cmd_finish)
    for name, fn, text in (("plot", cmd_plot, "draw the charts of a run"),
                           ("report", cmd_report, "summarise a run"),
                           ("rerun", cmd_rerun, "run again with a run's recorded settings")):
        sp = add(name, help=text)
        sp.add_argument("run", type=run_folder)
        sp.set_defaults(fn=fn)
    sp = add("bmf", help="a run in bencher.dev's metric format (BMF JSON), one "
             "measure per gated figure")
    sp.add_argument("run", type=run_folder)
    sp.add_argument("--output", default="", help="the file to write (default: stdout)")
    sp.set_defaults(fn=cmd_bmf)
    sp = add("use", help="the USE method read off a run: utilisation, saturation "
             "and errors of each resource (make use)")
    sp.add_argument("run", type=run_folder)
    sp.set_defaults(fn=cmd_use)
    sp = add("live", help="a line a second (rate, server and client CPU, run "
             "queue, TIME_WAIT) while a run measures")
    sp.add_argument("run", nargs="?", default="", type=run_folder,
                    help="a run folder (default: the newest running one in RESULTS)")
    sp.add_argument("--seconds", type=int, default=0, help="stop after this many (0: when "
                    "the run ends)")
    sp.set_defaults(fn=cmd_live)
    add("workshop-prepare", help="build, install and calibrate everything "
        "docs/workshop.md uses, then say ready (make workshop-prepare)"
        ).set_defaults(fn=cmd_workshop_prepare)
    add("workshop-host", help="whether this host is quiet enough for the workshop's "
        "lessons to show: its calibration, and a look now (make workshop-check)"
        ).set_defaults(fn=cmd_workshop_host)
    sp = add("cost", help="instructions per request under cachegrind, "
             "separate starts (make cost)")
    sp.add_argument("--check", action="store_true",
                    help="validate only; print the native servers to build")
    sp.set_defaults(fn=cmd_cost)
    sp = add("profile", help="CPU profiles of a run's servers at PROFILE_AT "
             "(separate starts; make profile)")
    sp.add_argument("run", type=run_folder)
    sp.add_argument("--check", action="store_true", help="validate only")
    sp.set_defaults(fn=cmd_profile)
    sp = add("reproduce", help="a published study, with two clients; claims judged")
    sp.add_argument("study", nargs="?", default="", help="a study id from docs/claims.toml")
    sp.set_defaults(fn=cmd_reproduce)
    sp = add("claims", help="a study's claims judged on runs made earlier")
    sp.add_argument("--study", default="", help="a study id from docs/claims.toml")
    sp.add_argument("runs", nargs="*", type=run_folder,
                    help="run folders (or make reproduce folders)")
    sp.set_defaults(fn=cmd_claims)
    sp = add("agree", help="the verdicts two runs share (an A/A or a rerun check)")
    sp.add_argument("run_a", type=run_folder)
    sp.add_argument("run_b", type=run_folder)
    sp.set_defaults(fn=cmd_agree)
    return p


def on_stop(signum: int, frame: FrameType | None) -> None:
    """The first INT, TERM or HUP interrupts the step (KeyboardInterrupt: it
    stops its server and client and saves what it has); repeats are ignored,
    so that the cleanup is not cut short (a Ctrl-C reaches the step both from
    the terminal and through run-benchmark.sh)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    raise Stopped(signum)


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 11):
        return fail("the lab needs Python 3.11 or newer (tomllib)", Exit.BAD_INPUT)
    closing = os.environ.get(CLOSING_VARIABLE) == "1"
    for sig in STOP_SIGNALS:         # INT too: a background step starts with it ignored
        signal.signal(sig, signal.SIG_IGN if closing else on_stop)
    try:                             # the step's parser alone; on bad arguments the
        args = parser(argv[0] if argv and not argv[0].startswith("-") else ""
                      ).parse_args(argv)
    except Unparsed:                 # whole one says it, as ever
        args = parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except (ConfigError, ManifestError, procs.PortBusy, files.RecordError) as e:
        return fail(str(e), Exit.BAD_INPUT)
    except OSError as e:               # a full disk, a folder that cannot be written: one line
        where = f"{e.filename}: " if e.filename else ""
        return fail(f"{where}{e.strerror or e}", Exit.FAILED)
    except KeyboardInterrupt:
        return fail("interrupted", Exit.INTERRUPTED)
