"""How a run's verdicts were reached, in one sentence for its reports
(summary.md, report.html): the rule for starts (lab.analyse.decide) or for
start pairs (lab.analyse.paired); the method and its arithmetic:
docs/methodology.md."""
from __future__ import annotations

from lab.analyse.policy import PAIRED_WORDS

STARTS_TEST = "an exact Wilcoxon-Mann-Whitney rank test"
PAIRS_TEST = "an exact Wilcoxon signed-rank test"
STARTS = (f"each start's figure (mean log over the levels) compared by {STARTS_TEST}; "
          "\"faster\" when it rejects at α and the "
          "Hodges-Lehmann shift is at least δ, \"equivalent\" when the 1-2α interval lies "
          "inside ±δ, else \"undecided\"; α is split over the pairs (Bonferroni) and, with "
          "REPEAT=auto, over the looks (lab.analyse.policy, docs/methodology.md).")
PAIRS = ("each start pair's figure is the log ratio of A's figure to B's, both measured "
         f"at the same moment, tested by {PAIRS_TEST}; \"faster\" "
         "when it rejects at α and the Hodges-Lehmann one-sample shift is at least δ, "
         "\"equivalent\" when the 1-2α interval lies inside ±δ (two one-sided tests, "
         "TOST), else \"undecided\"; α is split over the pairs of servers (Bonferroni) "
         "and, with REPEAT=auto, over the looks.")


def test_name(paired_mode: str) -> str:
    """The test alone, for a line that links the method: "an exact Wilcoxon
    signed-rank test under duet (both measured at the same moment)"."""
    if not paired_mode:
        return STARTS_TEST
    return f"{PAIRS_TEST} {PAIRED_WORDS.get(paired_mode, paired_mode)}"


def said(paired_mode: str) -> str:
    """The sentence for a run's rule: "" (one server at a time), duet or rmit."""
    if not paired_mode:
        return STARTS
    return f"{PAIRS} Pairs {PAIRED_WORDS.get(paired_mode, paired_mode)}."
