"""lab.present.firstline: a page's first line, the run's verdict in words."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lab.analyse import analysis
from lab.present import firstline

pytestmark = pytest.mark.unit

LANDED = Path(__file__).parent / "fixtures" / "runs" / "20261124-071349-sturdy+paced-landed"


def test_a_run_of_a_variant_alone_says_its_peak() -> None:
    """A variant (jersey.jetty) is a server measured like any other: a run of
    it alone gives its peak, not "nothing was measured"."""
    rec, a = analysis.of(LANDED)
    name, levels = next(iter(a.stats.items()))
    alone = dataclasses.replace(a, stats={"jersey.jetty": levels}, verdicts=[], primary=[])
    said = firstline.run_verdict(rec.manifest, alone)
    assert said.startswith("no verdict between servers") and "jersey.jetty peaked at" in said
    gone = dataclasses.replace(a, stats={}, verdicts=[], primary=[])
    assert firstline.run_verdict(rec.manifest, gone) == "nothing was measured"
