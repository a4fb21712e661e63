"""Each study page (docs/reproduction-*.md) and docs/claims.toml agree: the
page's `make reproduce STUDY=<id>` names a study of the file and passes no
setting the study does not give (or, where the study is silent, the lab's
default), except a shorter DURATION or fewer REPEAT on a page whose title
says it is shortened; every run the page quotes (its fenced `make bench` commands) has
the settings `make reproduce` gives that run: client, connection, levels,
duration, repetitions, warm-up and its cap, duets; each `WARMUP=` the page
names is a warm-up the reproduction uses; and the page gives the wall time
`make reproduce` estimates for itself. A planted disagreement fails."""
from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path

import pytest

from conftest import ROOT
from lab.analyse import claimsfile
from lab.setup.params import default, parse_duration
from lab.setup.servers import ServerSpec, discover
from lab.studies import reproduce

pytestmark = pytest.mark.unit

PAGES = sorted((ROOT / "docs").glob("reproduction-*.md"))
# the java-containers study's variants (as tests/test_reproduce.py): not all
# of them are found by discover() on every branch
LAB = set(discover(ROOT)) | {"jersey.undertow", "jersey.jetty", "jersey.tomcat"}
# the settings a run of the page and a run of the plan must share
COMPARED = ("CLIENT", "KEEPALIVE", "CONCURRENCY", "DURATION", "REPEAT", "WARMUP",
            "WARMUP_MAX", "PAIRED")
DURATIONS = ("DURATION", "WARMUP", "WARMUP_MAX")
FENCE = re.compile(r"^(```|~~~)")
INLINE = re.compile(r"`(make [^`]+)`")
SAME = "<the same>"
# what a page may shorten, saying so in its title (a study at its published
# length can take longer than a session here: java-containers about 14 h)
SHORTENED = ("DURATION", "REPEAT")


def fenced_lines(text: str) -> list[str]:
    """The lines of the page's fenced blocks, continuations (`\\`) joined."""
    out, fenced, held = [], False, ""
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            continue
        if line.rstrip().endswith("\\"):
            held += line.rstrip()[:-1] + " "
            continue
        out.append(held + line.strip())
        held = ""
    return out


def settings_of(command: str) -> dict[str, str]:
    """`make bench SERVER="a b" REPEAT=3` -> {"SERVER": "a b", "REPEAT": "3"}."""
    words = shlex.split(command)
    return dict(w.split("=", 1) for w in words[2:] if "=" in w)


def commands(text: str, verb: str, inline: bool) -> list[dict[str, str]]:
    """Each `make <verb> ...` of the fenced blocks (and, with `inline`, of
    inline code) as its settings, `<the same>` as the previous command's."""
    found = [line for line in fenced_lines(text) if line.startswith(f"make {verb} ")]
    if inline:
        found += [m.group(1) for m in INLINE.finditer(text)
                  if m.group(1).startswith(f"make {verb} ")]
    out: list[dict[str, str]] = []
    for line in found:
        s = settings_of(line)
        for k, v in s.items():
            if v == SAME and out:
                s[k] = out[-1].get(k, v)
        out.append(s)
    return out


def norm(key: str, value: str) -> str:
    """A setting as the lab reads it: 10 == 10s, 0 == 0s, 1m == 60s, levels by their words."""
    value = value.strip()
    if key in DURATIONS and value != "auto":
        return f"{parse_duration(key, value, allow_zero=True)}s"
    return " ".join(value.split())


def value(settings: Mapping[str, str], key: str) -> str:
    return norm(key, settings.get(key, "").strip() or default(key))


def same_servers(page: str, plan: str) -> list[str]:
    """The page's servers missing from the plan's run, or started there with
    another worker count (a plain name on the page takes the study's)."""
    started = [ServerSpec.parse(s) for s in plan.split()]
    missing = []
    for word in page.split():
        spec = ServerSpec.parse(word)
        if not any(x.name == spec.name and (spec.workers is None or x.workers == spec.workers)
                   for x in started):
            missing.append(word)
    return missing


def page_run(plan: reproduce.Plan, run: Mapping[str, str]) -> reproduce.RunPlan | None:
    """The plan's run that a page's `make bench` stands for: the duet of the
    same two servers, or the sweep with the same client."""
    names = {ServerSpec.parse(s).name for s in run.get("SERVER", "").split()}
    for r in plan.runs:
        if run.get("PAIRED") and r.paired and \
                {ServerSpec.parse(s).name for s in r.settings["SERVER"].split()} == names:
            return r
        if not run.get("PAIRED") and not r.paired and r.client == run.get("CLIENT"):
            return r
    return None


def shorter(key: str, given: str, study: str) -> bool:
    """A DURATION or REPEAT below the study's."""
    if key == "DURATION":
        return parse_duration(key, given) < parse_duration(key, study)
    return given.isdigit() and study.isdigit() and int(given) < int(study)


def disagreements(text: str, claims_path: Path) -> list[str]:
    """What a study page and the claims file disagree on ([] when they agree)."""
    problems: list[str] = []
    mine = commands(text, "reproduce", inline=True)
    if not mine:
        return ["no `make reproduce STUDY=<id>` on the page"]
    known = claimsfile.ids(claims_path)
    shortened = "shortened" in text.splitlines()[0].lower()
    plans = []
    for given in mine:
        sid = given.pop("STUDY", "")
        if sid not in known:
            problems.append(f"make reproduce STUDY={sid!r}: no such study ({', '.join(known)})")
            continue
        (study,) = [s for s in claimsfile.load(claims_path, LAB, only=sid) if s.id == sid]
        base = reproduce.make_plan(study, {})
        for key, v in given.items():
            want = base.runs[0].settings.get(key, "").strip() or default(key)
            if norm(key, v) == norm(key, want):
                continue
            if key in SHORTENED and shortened and shorter(key, v, want):
                continue
            problems.append(f"make reproduce STUDY={sid} passes {key}={v}; the study "
                            f"(or the lab's default) gives {want}")
        plans.append(reproduce.make_plan(study, given))
    if not plans:
        return problems
    plan = plans[0]
    for run in commands(text, "bench", inline=False):
        r = page_run(plan, run)
        what = f"make bench SERVER={run.get('SERVER', '')!r}"
        if r is None:
            problems.append(f"{what}: no run of make reproduce STUDY={plan.study.id} is like it")
            continue
        for key in COMPARED:
            if value(run, key) != value(r.settings, key):
                problems.append(f"{what}: {key}={value(run, key)}, make reproduce's "
                                f"{r.client} ({r.role}) run has {value(r.settings, key)}")
        missing = same_servers(run.get("SERVER", ""), r.settings["SERVER"])
        if missing:
            problems.append(f"{what}: make reproduce does not start {' '.join(missing)}")
    used = {value(r.settings, "WARMUP") for r in plan.runs}
    for named in sorted(set(re.findall(r"WARMUP=([\w]+)", text))):
        if norm("WARMUP", named) not in used:
            problems.append(f"the page names WARMUP={named}; make reproduce "
                            f"STUDY={plan.study.id} warms up with {', '.join(sorted(used))}")
    wall = f"estimated {reproduce.plan_estimate(plan).text()}"
    if wall not in " ".join(text.split()):
        problems.append(f"the page does not give make reproduce's wall time ({wall!r})")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_each_study_page_and_claims_toml_agree(page: Path) -> None:
    assert disagreements(page.read_text(), reproduce.CLAIMS) == []


def test_there_is_a_study_page() -> None:
    assert [p.name for p in PAGES] == ["reproduction-ada-vs-java.md",
                                       "reproduction-java-containers.md"]


ADA = ROOT / "docs" / "reproduction-ada-vs-java.md"
JAVA = ROOT / "docs" / "reproduction-java-containers.md"


def planted(tmp_path: Path, old: str, new: str, *, claims: bool,
            also: tuple[tuple[str, str], ...] = (), page_path: Path = ADA) -> list[str]:
    """The page and the claims file, one of them with `old` replaced by `new`
    (and each pair of `also`)."""
    page, toml = page_path.read_text(), reproduce.CLAIMS.read_text()
    changed = toml if claims else page
    for a, b in ((old, new), *also):
        assert a in changed, a
        changed = changed.replace(a, b, 1)
    path = tmp_path / "claims.toml"
    path.write_text(changed if claims else toml)
    return disagreements(page if claims else changed, path)


def test_a_planted_fixed_warm_up_in_claims_toml_fails(tmp_path: Path) -> None:
    found = planted(tmp_path, 'warmup_s = "auto"         #',
                    'warmup_s = 5              #', claims=True,
                    also=(("\nwarmup_max_s = 60         #", "\n#"),))
    found = [p for p in found if "WARMUP" in p]
    assert found and any("WARMUP=auto" in p for p in found), found


def test_planted_repetitions_in_claims_toml_fail(tmp_path: Path) -> None:
    found = planted(tmp_path, "repetitions = 3           #", "repetitions = 5           #",
                    claims=True)
    assert any("REPEAT=3" in p and "has 5" in p for p in found), found


def test_a_planted_setting_on_the_pages_command_fails(tmp_path: Path) -> None:
    found = planted(tmp_path, "make reproduce STUDY=ada-vs-java\n",
                    "make reproduce STUDY=ada-vs-java WARMUP=5s\n", claims=False)
    assert any("passes WARMUP=5s" in p for p in found), found


def test_a_planted_unknown_study_fails(tmp_path: Path) -> None:
    found = planted(tmp_path, "make reproduce STUDY=ada-vs-java\n",
                    "make reproduce STUDY=ada-vs-jav\n", claims=False)
    assert any("no such study" in p for p in found), found


def test_a_planted_run_of_another_length_fails(tmp_path: Path) -> None:
    found = planted(tmp_path, 'CONCURRENCY="5 15 50" DURATION=10s REPEAT=8',
                    'CONCURRENCY="5 15 50" DURATION=5s REPEAT=8', claims=False)
    assert any("DURATION=5" in p and "has 10" in p for p in found), found


def test_a_planted_wall_time_fails(tmp_path: Path) -> None:
    found = planted(tmp_path, "estimated 3 h 00 min", "estimated 2 h 30 min", claims=False)
    assert any("wall time" in p for p in found), found


def test_a_page_without_the_command_fails(tmp_path: Path) -> None:
    found = planted(tmp_path, "make reproduce STUDY=ada-vs-java\n", "\n", claims=False)
    assert found == ["no `make reproduce STUDY=<id>` on the page"]


def test_a_shortened_run_on_a_page_that_does_not_say_so_fails(tmp_path: Path) -> None:
    title = JAVA.read_text().splitlines()[0]
    found = planted(tmp_path, title, "# The java-containers study", claims=False,
                    page_path=JAVA)
    assert any("passes DURATION=" in p for p in found), found


def test_a_shortened_page_may_not_lengthen_its_repetitions(tmp_path: Path) -> None:
    found = planted(tmp_path, "make reproduce STUDY=ada-vs-java\n",
                    "make reproduce STUDY=ada-vs-java REPEAT=9\n", claims=False,
                    also=(("# The Ada-vs-Java study at its published length",
                           "# The Ada-vs-Java study, shortened"),))
    assert any("passes REPEAT=9" in p for p in found), found
