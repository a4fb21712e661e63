"""lab.analyse.claims on constructed inputs: ratio claims reproduced, not reproduced
and inconclusive (noise, client-bound, missing component, too few
repetitions, not measured), orderings reproduced, reversed and overlapping,
the Markdown table, the real docs/claims.toml against the servers/ folders,
and clear errors for malformed claims files."""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from lab.analyse import claims, claimsfile, levelrow, metrics, verdicts
from lab.present import claimsmd
from lab.record.level import Level
from lab.record.rows import Row
from lab.setup.servers import discover

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
CLAIMS = ROOT / "docs" / "claims.toml"

WHERE = levelrow.Where(server="a", rep=1, axis="concurrency", value=8, concurrency=8,
                       offered_rps=None, workers=8, backlog=512, duration_s=10,
                       server_cpus=1, client_cpus=1, lab_cpus=2)
LEVEL = Level(transactions=10000, successful=10000, failed=0, availability_pct=100.0,
              elapsed_s=10.0, rate_rps=1000.0, resp_ms=8.0, in_flight=8.0, longest_ms=20.0,
              data_mb=0.3)
MEASURED = levelrow.Measured(server_cpu_s=7.0, rss_end_kb=2048, rss_peak_kb=4096, threads_end=3,
                             threads_peak=4, client_cpu_s=5.0, wall_s=10.0, host_busy_s=12.0,
                             host_steal_s=0.0, sampler_cpu_s=0.05, time_wait=3)


def rows(server: str, value: int, rates: list[float], flags: str = "",
         rss: list[int] | None = None) -> list[Row]:
    base = levelrow.make_row(dataclasses.replace(WHERE, server=server, value=value),
                             LEVEL, MEASURED)
    return [dataclasses.replace(base, rep=i + 1, rate_rps=r, flags=flags,
                                client_bound="client-bound" in flags,
                                rss_end_kb=rss[i] if rss else base.rss_end_kb)
            for i, r in enumerate(rates)]


def stats(*groups: list[Row]) -> list[metrics.LevelStats]:
    return metrics.level_stats([r for g in groups for r in g])


def claim(kind: str = "ratio", metric: str = "peak_rps",
          servers: tuple[str, ...] = ("a", "b"), published: float | None = 1.07,
          accept: tuple[float, float] | None = (1.07 * 0.85, 1.07 * 1.15),
          at: int | None = None, requires: tuple[str, ...] | None = None,
          unavailable: dict[str, str] | None = None) -> claimsfile.Claim:
    return claimsfile.Claim(
        id="c1", study="s", text="a is faster than b", kind=kind, metric=metric,
        servers=servers, published=published, accept=accept, tolerance="±15%", at=at,
        requires=requires if requires is not None
        else tuple(dict.fromkeys(claimsfile.spec_of(s).name for s in servers)),
        figures="", source="Someone, a blog", date="2017", unavailable=unavailable or {})


AB = {"a", "b", "c", "d"}


# ---------------------------------------------------------------- ratios

def test_ratio_reproduced_when_the_whole_range_is_inside_the_tolerance() -> None:
    s = {"a": stats(rows("a", 2, [900, 905, 910]), rows("a", 8, [1070, 1075, 1080])),
         "b": stats(rows("b", 2, [980, 1000, 1010]), rows("b", 8, [995, 1000, 1005]))}
    r = claims.evaluate(claim(), s, AB)
    assert r.verdict == claims.REPRODUCED, r.reason
    assert r.measured is not None
    assert r.measured.median == pytest.approx(1.075)           # peak medians 1075 / 1000
    # each server's peak level is used: a at 8; b ties at 1000 and keeps its first (2)
    assert (r.measured.lo, r.measured.hi) == pytest.approx((1070 / 1010, 1080 / 980))
    assert r.published == 1.07


def test_ratio_range_is_a_lo_over_b_hi_to_a_hi_over_b_lo() -> None:
    s = {"a": stats(rows("a", 8, [1050, 1070, 1090])), "b": stats(rows("b", 8, [990, 1000, 1010]))}
    m = claims.evaluate(claim(), s, AB).measured
    assert m is not None and m.n == 3
    assert (m.median, m.lo, m.hi) == pytest.approx((1.07, 1050 / 1010, 1090 / 990))


def test_ratio_not_reproduced_when_the_whole_range_is_outside() -> None:
    s = {"a": stats(rows("a", 8, [700, 710, 720])), "b": stats(rows("b", 8, [990, 1000, 1010]))}
    r = claims.evaluate(claim(), s, AB)
    assert r.verdict == claims.NOT_REPRODUCED
    assert "below" in r.reason


def test_ratio_straddling_the_boundary_is_inconclusive_noise() -> None:
    # median 0.93 sits just inside 0.9095..1.2305, but min-max reaches below it
    s = {"a": stats(rows("a", 8, [800, 930, 1000])), "b": stats(rows("b", 8, [950, 1000, 1050]))}
    r = claims.evaluate(claim(), s, AB)
    assert r.verdict == claims.INCONCLUSIVE
    assert r.reason.startswith("noise") and "straddles" in r.reason


def test_client_bound_point_makes_a_throughput_claim_inconclusive() -> None:
    s = {"a": stats(rows("a", 8, [1070, 1075, 1080], flags="client-bound")),
         "b": stats(rows("b", 8, [995, 1000, 1005]))}
    r = claims.evaluate(claim(), s, AB)
    assert r.verdict == claims.INCONCLUSIVE
    assert r.reason == "not comparable (client-bound: a at 8)"     # the gate's words


def test_client_bound_levels_not_used_do_not_matter() -> None:
    s = {"a": stats(rows("a", 2, [500, 500, 500], flags="client-bound"),
                    rows("a", 8, [1070, 1075, 1080])),
         "b": stats(rows("b", 8, [995, 1000, 1005]))}
    assert claims.evaluate(claim(), s, AB).verdict == claims.REPRODUCED


def test_missing_component_is_inconclusive_and_says_which() -> None:
    c = claim(servers=("asf", "b"), unavailable={"asf": "ASF not packaged"})
    r = claims.evaluate(c, {"b": stats(rows("b", 8, [1000, 1000, 1000]))}, AB)
    assert r.verdict == claims.INCONCLUSIVE
    assert r.reason == "component unavailable (ASF not packaged)"
    assert r.measured is None


def test_available_but_unmeasured_server_or_level_is_inconclusive() -> None:
    r = claims.evaluate(claim(), {"a": stats(rows("a", 8, [1000] * 3))}, AB)
    assert r.verdict == claims.INCONCLUSIVE and r.reason == "not measured: b"
    c = claim(metric="rps_at", at=128)
    s = {"a": stats(rows("a", 8, [1000] * 3)), "b": stats(rows("b", 8, [1000] * 3))}
    assert claims.evaluate(c, s, AB).reason == "not measured: a at 128"


def test_too_few_repetitions_is_inconclusive() -> None:
    s = {"a": stats(rows("a", 8, [1070, 1075])), "b": stats(rows("b", 8, [1000, 1000]))}
    r = claims.evaluate(claim(), s, AB)
    assert r.verdict == claims.INCONCLUSIVE and r.reason == verdicts.too_few(2)


def test_rss_ratio_uses_the_last_level_and_ignores_client_bound() -> None:
    s = {"a": stats(rows("a", 2, [1, 1, 1], rss=[1000, 1000, 1000]),
                    rows("a", 50, [1, 1, 1], flags="client-bound", rss=[160000, 161000, 162000])),
         "b": stats(rows("b", 50, [1, 1, 1], rss=[1000, 1000, 1000]))}
    c = claim(metric="rss_end", published=161.0, accept=(80.5, 322.0))
    r = claims.evaluate(c, s, AB)
    assert r.verdict == claims.REPRODUCED and r.measured is not None
    assert r.measured.median == pytest.approx(161.0)


def test_flatness_is_the_share_of_the_peak_reached_at_level_2() -> None:
    flat = {"a": stats(rows("a", 1, [5000] * 3), rows("a", 2, [7900, 8000, 8100]),
                       rows("a", 50, [7950, 8000, 8050]))}
    c = claim(kind="value", metric="flatness", servers=("a",), published=1.0,
              accept=(0.85, math.inf), at=2)
    r = claims.evaluate(c, flat, AB)
    assert r.verdict == claims.REPRODUCED and r.measured is not None
    assert r.measured.median == pytest.approx(1.0)
    scaling = {"a": stats(rows("a", 2, [2000] * 3), rows("a", 50, [8000] * 3))}
    r = claims.evaluate(c, scaling, AB)
    assert r.verdict == claims.NOT_REPRODUCED and r.measured is not None
    assert r.measured.median == pytest.approx(0.25)


def test_worker_variants_are_keyed_by_name_and_required_by_base() -> None:
    c = claim(servers=("a@16", "a"), published=1.0, accept=(0.0, 1.05))
    assert c.requires == ("a",)
    s = {"a@16": stats(rows("a", 8, [990, 1000, 1010])), "a": stats(rows("a", 8, [995, 1000, 1005]))}
    assert claims.evaluate(c, s, AB).verdict == claims.REPRODUCED


# ---------------------------------------------------------------- orderings

ORDER = claim(kind="ordering", metric="rps_at", at=128, servers=("a", "b", "c"),
              published=None, accept=None)


def test_ordering_reproduced_when_every_adjacent_pair_is_separated() -> None:
    s = {"a": stats(rows("a", 128, [2700, 2730, 2760, 2715, 2745])),
         "b": stats(rows("b", 128, [2400, 2470, 2500, 2435, 2485])),
         "c": stats(rows("c", 128, [2100, 2130, 2150, 2115, 2140]))}
    r = claims.evaluate(ORDER, s, AB)
    assert r.verdict == claims.REPRODUCED, r.reason
    assert [name for name, _ in r.order] == ["a", "b", "c"]
    assert r.published == ("a", "b", "c")


def test_ordering_reversed_pair_is_not_reproduced() -> None:
    s = {"a": stats(rows("a", 128, [2700, 2730, 2760, 2715, 2745])),
         "b": stats(rows("b", 128, [1800, 1850, 1880, 1825, 1865])),
         "c": stats(rows("c", 128, [2100, 2130, 2150, 2115, 2140]))}
    r = claims.evaluate(ORDER, s, AB)
    assert r.verdict == claims.NOT_REPRODUCED and "c above b" in r.reason


def test_ordering_overlapping_ranges_is_inconclusive() -> None:
    s = {"a": stats(rows("a", 128, [2700, 2730, 2760, 2715, 2745])),
         "b": stats(rows("b", 128, [2400, 2470, 2710, 2750, 2600])),
         "c": stats(rows("c", 128, [2100, 2130, 2150, 2115, 2140]))}
    r = claims.evaluate(ORDER, s, AB)
    assert r.verdict == claims.INCONCLUSIVE
    assert r.reason.startswith("not separated: a and b (undecided (a better by [")


def test_ordering_client_bound_is_inconclusive() -> None:
    s = {"a": stats(rows("a", 128, [2700] * 5)), "b": stats(rows("b", 128, [2400] * 5)),
         "c": stats(rows("c", 128, [2100] * 5, flags="client-bound"))}
    r = claims.evaluate(ORDER, s, AB)
    assert r.verdict == claims.INCONCLUSIVE
    assert r.reason.startswith("not comparable (client-bound: c, [")


def test_ordering_with_only_the_higher_side_client_bound_still_holds() -> None:
    # as in a run's verdicts: a client-bound figure is a lower bound of the server's
    s = {"a": stats(rows("a", 128, [2700] * 5, flags="client-bound")),
         "b": stats(rows("b", 128, [2400] * 5)), "c": stats(rows("c", 128, [2100] * 5))}
    assert claims.evaluate(ORDER, s, AB).verdict == claims.REPRODUCED


# ---------------------------------------------------------------- table

def test_table_has_one_row_per_claim_with_source_date_and_range() -> None:
    s = {"a": stats(rows("a", 8, [1050, 1070, 1090])), "b": stats(rows("b", 8, [990, 1000, 1010]))}
    results = [claims.evaluate(claim(), s, AB),
               claims.evaluate(claim(servers=("x", "b"), unavailable={"x": "X | not packaged"}),
                               s, AB)]
    text = claimsmd.table(results)
    lines = text.splitlines()
    assert lines[0] == "| claim | published | measured | verdict | reason |"
    assert len(lines) == 4
    assert "1.07 (±15%); Someone, a blog, 2017" in lines[2]
    assert "1.07 [1.04–1.1]" in lines[2] and "| reproduced |" in lines[2]
    assert "| — | inconclusive | component unavailable (X \\| not packaged) |" in lines[3]
    assert all(line.count(" | ") == 4 for line in lines[:1] + lines[2:])   # \| stays in its cell


# ---------------------------------------------------------------- the real file

def lab_servers() -> set[str]:
    return set(discover(ROOT))


# The jersey variants (jersey.undertow, jersey.jetty, jersey.tomcat) are
# declared by the `variants` branch. Until it is merged, discover() does not
# find them and the first test below fails for those three names alone; the
# other tests check the file against the lab's servers plus these names.
JERSEY_VARIANTS = {"jersey.undertow", "jersey.jetty", "jersey.tomcat"}


def test_real_claims_file_loads_and_names_only_lab_or_unavailable_servers() -> None:
    studies = claimsfile.load(CLAIMS)            # names checked against discover(ROOT)
    assert {s.id for s in studies} == {"ada-vs-java", "java-containers"}
    lab = lab_servers()
    assert {"aws", "ada-mini", "jersey", "grizzly", "undertow", "jetty", "tomcat"} <= lab
    assert JERSEY_VARIANTS <= lab
    for study in studies:
        missing = {u.name for u in study.unavailable}
        assert not missing & lab, f"{study.id}: listed unavailable but present"
        assert set(study.setup.servers) <= lab
        assert set(study.setup.workers) <= lab
        assert study.setup.ceiling in lab
        for stand in study.stands_for:
            assert stand.lab in lab, stand
        for c in study.claims:
            for name in {claimsfile.spec_of(s).name for s in c.servers} | set(c.requires):
                assert name in lab or name in missing, f"{c.id}: {name}"
            if c.kind != "ordering":
                assert c.accept is not None and c.published is not None
                assert c.accept[0] <= c.published <= c.accept[1]


def test_ada_vs_java_names_are_lab_servers_now() -> None:
    (study,) = [s for s in claimsfile.load(CLAIMS, only="ada-vs-java") if s.id == "ada-vs-java"]
    assert set(claimsfile.study_names(study)) == {"aws", "asf", "ews", "simple-components",
                                              "jersey", "ada-mini", "nginx"}
    assert study.unavailable == ()                   # every published component is real
    stands = {s.lab: s for s in study.stands_for}
    assert {"aws", "asf", "ews", "jersey"} <= set(stands)
    assert not any(s.stand_in for s in stands.values())
    assert study.setup.workers["asf"] == study.setup.workers["aws"] == 8
    assert study.setup.workers["ews"] == 1 and study.setup.workers["jersey"] == 62


def test_real_claims_carry_the_published_values() -> None:
    lab = lab_servers() | JERSEY_VARIANTS
    by_id = {c.id: c for s in claimsfile.load(CLAIMS, lab) for c in s.claims}
    assert by_id["aws-over-grizzly-rps"].published == 1.07
    assert by_id["asf-over-aws-rps"].published == 0.96
    assert by_id["asf-over-aws-rps"].unavailable == {}
    assert by_id["grizzly-over-aws-rss"].published == 161.0       # 580 / 3.6
    assert by_id["asf-over-aws-rss"].published == 1.56            # 5.6 / 3.6
    assert by_id["aws-over-ews-rss"].published == 3.6             # 3.6 / 1
    assert by_id["rss-order"].servers == ("jersey", "asf", "aws", "ews")
    assert by_id["single-task-flat"].servers == ("ews",)
    assert by_id["java-container-order"].servers == ("jersey", "jersey.undertow", "jersey.jetty",
                                                     "jersey.tomcat")
    assert by_id["tomcat-over-grizzly-rps"].servers == ("jersey.tomcat", "jersey")
    assert by_id["tomcat-over-grizzly-rps"].accept == pytest.approx((0.67 * 0.85, 0.67 * 1.15))
    r = claims.evaluate(by_id["asf-over-aws-rps"], {}, lab)
    assert r.verdict == claims.INCONCLUSIVE and "unavailable" not in r.reason   # not measured
    (java,) = [s for s in claimsfile.load(CLAIMS, lab) if s.id == "java-containers"]
    assert java.setup.workers == {"jersey": 32, "jersey.undertow": 32, "jersey.jetty": 32,
                                  "jersey.tomcat": 32, "nginx": 1}
    assert all(not s.stand_in and "Jersey without Spring Boot" in s.note
               for s in java.stands_for)


# ---------------------------------------------------------------- names against the lab

def test_a_name_that_is_no_lab_server_is_an_error_naming_where() -> None:
    lab = lab_servers() | JERSEY_VARIANTS
    with pytest.raises(claimsfile.ClaimsError, match=r"\[setup\] servers names 'jersey.tomcat', "
                                                 "which is neither a lab server"):
        claimsfile.load(CLAIMS, lab - {"jersey.tomcat"})
    with pytest.raises(claimsfile.ClaimsError, match="claim `aws-more-tasks-not-faster`|"
                                                 r"\[setup\] servers names 'aws'"):
        claimsfile.load(CLAIMS, lab - {"aws"})


def test_only_checks_the_names_of_one_study() -> None:
    lab = lab_servers() - JERSEY_VARIANTS
    studies = claimsfile.load(CLAIMS, lab, only="ada-vs-java")        # java-containers unchecked
    assert len(studies) == 2
    with pytest.raises(claimsfile.ClaimsError, match="jersey.undertow"):
        claimsfile.load(CLAIMS, lab, only="java-containers")
    with pytest.raises(claimsfile.ClaimsError, match="unknown study 'x'; known: ada-vs-java, "
                                                 "java-containers"):
        claimsfile.load(CLAIMS, lab, only="x")
    assert claimsfile.ids(CLAIMS) == ["ada-vs-java", "java-containers"]


def test_an_unavailable_name_that_is_a_lab_server_is_an_error(tmp_path: Path) -> None:
    listed = tmp_path / "claims.toml"
    listed.write_text(CLAIMS.read_text().replace(
        '[[study.claim]]\nid = "aws-over-grizzly-rps"',
        '[[study.unavailable]]\nname = "grizzly"\npublished = "G"\nreason = "not packaged"\n\n'
        '[[study.claim]]\nid = "aws-over-grizzly-rps"'))
    with pytest.raises(claimsfile.ClaimsError, match="listed under \\[\\[study.unavailable\\]\\] "
                                                 "but found as a lab server: grizzly"):
        claimsfile.load(listed, lab_servers() | JERSEY_VARIANTS)


# ---------------------------------------------------------------- malformed files

GOOD = CLAIMS.read_text()


@pytest.mark.parametrize("change, message", [
    (lambda t: t.replace('kind = "ordering"', 'kind = "ranking"'),
     "claim `rss-order`: unknown kind 'ranking'"),
    (lambda t: t.replace('metric = "rss_end"', 'metric = "rss"'),
     "claim `grizzly-over-aws-rss`: unknown metric 'rss'"),
    (lambda t: t.replace('published = 1.07\n', ''),
     "claim `aws-over-grizzly-rps`: missing key `published`"),
    (lambda t: t.replace('factor = 2.0\n', 'factor = 2.0\ntolerance = 0.5\n'),
     "give exactly one of `tolerance`"),
    (lambda t: t.replace('servers = ["asf", "aws"]', 'servers = ["asf2", "aws"]'),
     "server 'asf2' is neither one of the study's lab servers"),
    (lambda t: t.replace('published = 0.96', 'published = "0.96"'),
     "`published` must be int or float, found '0.96'"),
    (lambda t: t.replace('connection = "close"', 'connection = "sometimes"'),
     "study `ada-vs-java` [setup]: `connection` must be one of close, keep-alive"),
    (lambda t: t.replace('levels = [128]', 'levels = []'),
     "`levels` must be a non-empty list of positive integers"),
    (lambda t: t.replace('servers = ["jersey.undertow", "jersey"]',
                         'servers = ["jersey.undertow"]'),
     "a ratio claim names exactly 2 servers, found 1"),
    (lambda t: t.replace('at = 128\nservers = ["jersey",', 'servers = ["jersey",'),
     "metric rps_at needs `at`"),
    (lambda t: t.replace('id = "jetty-over-grizzly-rps"', 'id = "undertow-over-grizzly-rps"'),
     "claim id `undertow-over-grizzly-rps` appears twice"),
    (lambda t: t + "\n[[study]\n", "not valid TOML"),
    (lambda t: t.replace('warmup_s = "auto"', 'warmup_s = "soon"'),
     "study `ada-vs-java` [setup]: `warmup_s` must be \"auto\" or a whole number of seconds "
     "(0: none), found 'soon'"),
    (lambda t: t.replace('warmup_s = "auto"', 'warmup_s = -5'),
     "`warmup_s` must be \"auto\" or a whole number of seconds (0: none), found -5"),
    (lambda t: t.replace('warmup_s = "auto"', 'warmup_s = 5.5'),
     "found 5.5"),
    (lambda t: t.replace('warmup_max_s = 60 ', 'warmup_max_s = 0 '),
     "`warmup_max_s` must be 1 or more (WARMUP=auto loads in slices of 1 s), found 0"),
    (lambda t: t.replace('warmup_max_s = 60 ', 'warmup_max_s = "60s" '),
     "`warmup_max_s` must be int, found '60s'"),
    (lambda t: t.replace('warmup_s = 60 ', 'warmup_s = 60\nwarmup_max_s = 90 '),
     "study `java-containers` [setup]: `warmup_max_s` is the cap of `warmup_s = \"auto\"`"),
])
def test_malformed_claims_file_gives_a_clear_error(tmp_path: Path, change: object,
                                                  message: str) -> None:
    assert callable(change)
    bad = tmp_path / "claims.toml"
    text = change(GOOD)
    assert text != GOOD
    bad.write_text(text)
    with pytest.raises(claimsfile.ClaimsError) as e:
        claimsfile.load(bad)
    assert message in str(e.value)
    assert str(bad) in str(e.value)


def test_a_study_warm_up_is_auto_with_its_cap_or_fixed_seconds() -> None:
    lab = lab_servers() | JERSEY_VARIANTS
    by_id = {s.id: s for s in claimsfile.load(CLAIMS, lab)}
    ada, java = by_id["ada-vs-java"].setup.warmup, by_id["java-containers"].setup.warmup
    assert ada == claimsfile.Warmup(auto=True, max_s=60)
    assert ada.settings() == {"WARMUP": "auto", "WARMUP_MAX": "60s"}
    assert ada.text() == "auto (cap 60 s)"
    assert java == claimsfile.Warmup(auto=False, seconds=60)
    assert java.settings() == {"WARMUP": "60s"} and java.text() == "60 s"
    assert claimsfile.Warmup(auto=True).settings() == {"WARMUP": "auto"}   # the lab's cap
    assert claimsfile.Warmup(auto=False).settings() == {"WARMUP": "0"}


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(claimsfile.ClaimsError, match="no such file"):
        claimsfile.load(tmp_path / "nope.toml")


def test_ada_vs_java_with_the_real_components_on_constructed_inputs() -> None:
    """Figures shaped like the published ones (AWS 7% over Grizzly, ASF 4% under
    AWS, EWS flat near 8,000 req/s, RSS 580 / 5.6 / 3.6 / 1 MB) reproduce every
    claim but the 16-task one. ASF's memory put below AWS's (3.0 MB) breaks the
    order, and not the ASF/AWS memory ratio: 0.83 is inside the claim's
    factor of 2 around the published 1.56 (0.78-3.12), so that one still
    reproduces."""
    lab = lab_servers() | JERSEY_VARIANTS
    (study,) = [s for s in claimsfile.load(CLAIMS, lab) if s.id == "ada-vs-java"]
    mb = 1024

    def server(name: str, peak: float, rss_mb: float, flat: bool = False) -> list[metrics.LevelStats]:
        low = peak if flat else peak * 0.5
        rss = [int(rss_mb * mb)] * 5
        return stats(rows(name, 1, [low * 0.9] * 5, rss=rss), rows(name, 2, [low] * 5, rss=rss),
                     rows(name, 50, [peak * 0.99, peak, peak * 1.01, peak * 0.995,
                                     peak * 1.005], rss=rss))

    measured = {"aws": server("aws", 10_700, 3.6), "asf": server("asf", 10_270, 5.6),
                "jersey": server("jersey", 10_000, 580), "ews": server("ews", 8_000, 1.0, True)}
    verdicts = {c.id: claims.evaluate(c, measured, lab).verdict for c in study.claims}
    assert verdicts == {"aws-over-grizzly-rps": claims.REPRODUCED,
                        "asf-over-aws-rps": claims.REPRODUCED,
                        "grizzly-over-aws-rss": claims.REPRODUCED,
                        "asf-over-aws-rss": claims.REPRODUCED,
                        "aws-over-ews-rss": claims.REPRODUCED,
                        "rss-order": claims.REPRODUCED,
                        "single-task-flat": claims.REPRODUCED,
                        "aws-more-tasks-not-faster": claims.INCONCLUSIVE}   # aws@16 not run
    measured["asf"] = server("asf", 10_270, 3.0)          # ASF below AWS in memory
    judged = {c.id: claims.evaluate(c, measured, lab) for c in study.claims}
    assert judged["rss-order"].verdict == claims.NOT_REPRODUCED
    assert judged["rss-order"].reason == "separated in the opposite order: aws above asf"
    ratio = judged["asf-over-aws-rss"]
    assert ratio.verdict == claims.REPRODUCED, ratio.reason
    assert ratio.measured is not None and ratio.measured.median == pytest.approx(3072 / 3686)
    assert ratio.reason.startswith("whole range [0.833–0.833] inside 0.78–3.12"), ratio.reason
