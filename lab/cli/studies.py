"""The steps that run a study of their own (lab.studies): calibrate, noise,
the workshop's preparation, reproduce, claims, cost and profile."""
from __future__ import annotations

import argparse
import os

from lab.setup.paths import ROOT
from lab.studies import calibrate
from lab.setup.paths import cache_dir
from lab.cli.common import servers_found


def cmd_calibrate(_: argparse.Namespace) -> int:
    return calibrate.run(ROOT, cache_dir(), servers_found())


def cmd_noise(_: argparse.Namespace) -> int:
    from lab.studies import noise
    return noise.main()


def cmd_workshop_prepare(_: argparse.Namespace) -> int:
    """make workshop-prepare (lab.studies.workshop)."""
    from lab.studies import workshop
    return workshop.prepare()


def cmd_workshop_host(_: argparse.Namespace) -> int:
    """make workshop-check's first step: is this host quiet enough for the
    lessons to show (lab.studies.quiethost)."""
    from lab.studies import quiethost
    return quiethost.main()


def cmd_reproduce(args: argparse.Namespace) -> int:
    from lab.studies import reproduce
    return reproduce.main(args.study, os.environ)


def cmd_claims(args: argparse.Namespace) -> int:
    from lab.studies import claimruns
    return claimruns.main(args.study, args.runs, os.environ)


def cmd_cost(args: argparse.Namespace) -> int:
    """make cost: instructions per request under cachegrind (lab.studies.cost)."""
    from lab.studies import cost
    return cost.main(["--check"] if args.check else [])


def cmd_profile(args: argparse.Namespace) -> int:
    """make profile: CPU profiles of a run's servers at one level (lab.studies.profile)."""
    from lab.studies import profile
    return profile.main([args.run] + (["--check"] if args.check else []))
